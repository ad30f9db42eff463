"""Smoke run of the benchmark harness at a tiny scale: it runs and reports, nothing is timed.

The harness's two runs (the last day held back, then delivered) are also warehouse A of
tests/test_incremental.py; the session fixture `bench_run` (tests/conftest.py) runs it once.
"""

from __future__ import annotations

import os

import pytest

from tests.conftest import BENCH_EMPLOYEES as EMPLOYEES
from tests.conftest import BENCH_YEARS as YEARS
from tests.conftest import EARLIER_SCALE_RUN
from tools import bench

pytestmark = pytest.mark.slow


def test_phase_of_maps_step_keys_onto_phases():
    assert bench.phase_of("raw__employees") == "ingest"
    assert bench.phase_of("warehouse_dbt") == "dbt"
    assert bench.phase_of("raw_quality_suites") == "checks"
    assert bench.phase_of("certification_statistics") == "statistics"
    assert bench.phase_of("roi_tables") == "roi"
    assert bench.phase_of("warehouse__published") == "publish"
    assert bench.phase_of("report__quarterly_talent_report") == "report"


def test_harness_writes_results_with_positive_figures(bench_run):
    results, _ = bench_run
    for key in (
        "full_run_s",
        "incremental_run_s",
        "full_run_cpu_s",
        "incremental_run_cpu_s",
        "unchanged_run_cpu_s",
        "peak_rss_mb",
        "sql_only_s",
        "sql_only_cpu_s",
    ):
        assert results[key] > 0, key
    assert results["scale"]["employees"] == EMPLOYEES and results["scale"]["years"] == YEARS
    assert results["scale"]["infrastructure_engineers"] > 0
    assert results["machine"]["cores"] >= 1
    # the incremental run had the held-back day to load, and both runs were split into phases
    assert results["held_back_files"] > 0
    for run in ("full", "incremental"):
        phases = results[run]["phases_s"]
        assert phases["ingest"] > 0 and phases["dbt"] > 0 and phases["publish"] > 0, (run, phases)
    assert results["full"]["phases_s"]["report"] > 0
    assert results["plain_script_cpu_s"] > 0
    assert results["full_over_plain_script_cpu"] == round(
        results["full_run_cpu_s"] / results["plain_script_cpu_s"], 2
    )
    assert set(results["targets"]) == {"full_run_under_5_min", "peak_rss_at_most_2_5_gb"}
    assert results["budgets"] == {}  # --no-floor: nothing measured on the sample
    assert results["floor_cpu_s"] is None and results["floor"] is None  # --no-floor
    assert results["scale_run"] == EARLIER_SCALE_RUN  # the file's last scale run is kept


def test_targets_include_the_sample_floor_when_it_was_measured():
    figures = {
        "full_run_s": 70.0,
        "full_run_cpu_s": 80.0,
        "plain_script_cpu_s": 4.0,
        "incremental_run_cpu_s": 12.0,
        "peak_rss_mb": 1300.0,
    }
    without = bench.targets(figures)
    assert "sample_run_at_most_40_cpu_s" not in without
    # the ratios to the plain script (20 x) and of the nightly (0.15) are figures, not targets
    assert set(without) == {"full_run_under_5_min", "peak_rss_at_most_2_5_gb"}
    assert without["full_run_under_5_min"] == {"measured": 70.0, "target": "< 300 s", "met": True}
    assert not bench.targets({**figures, "peak_rss_mb": 2500.1})["peak_rss_at_most_2_5_gb"]["met"]
    met = bench.targets({**figures, "floor_cpu_s": 39.9})["sample_run_at_most_40_cpu_s"]
    missed = bench.targets({**figures, "floor_cpu_s": 40.1})["sample_run_at_most_40_cpu_s"]
    assert (met["met"], missed["met"]) == (True, False)
    assert missed["measured"] == 40.1


def test_budgets_give_what_the_sample_costs_when_it_was_measured():
    figures = {"full_run_cpu_s": 80.0, "plain_script_cpu_s": 4.4}
    assert bench.budgets(figures) == {}
    measured = {**figures, "floor_cpu_s": 39.1, "dbt_rebuild_sample_cpu_s": 11.6}
    assert bench.budgets(measured) == {
        "sample_run_cpu_s": 39.1,
        "sample_dbt_rebuild_cpu_s": 11.6,
    }


def test_the_table_puts_the_sample_beside_the_three_runs(bench_run):
    results, _ = bench_run
    assert "bundled sample" not in bench._table(results)  # --no-floor
    floor = {**results["full"], "cpu_s": 39.1}
    table = bench._table({**results, "floor": floor, "dbt_rebuild_sample_cpu_s": 11.6})
    lines = table.splitlines()
    assert lines[0].split()[-3:] == ["bundled", "sample", "(s)"]
    cpu = next(line for line in lines if line.startswith("CPU, process tree"))
    assert cpu.split()[-1] == "39.1"
    rebuild = next(line for line in lines if line.startswith("one more dbt build"))
    assert rebuild.split()[-1] == "11.6"


# The plain script's marts against the pipeline's published marts (same definitions): the
# benchmark's comparison is only fair when both compute the same figures.
# The marts' unsuppressed detail (schema restricted of the build file): the plain script does not
# suppress small groups either.
PIPELINE_FIGURES = {
    "attrition_monthly": (
        "select period_start as month, headcount_start, separations, headcount_end, "
        "turnover_rate from restricted.attrition where period_type = 'month' "
        "and segment_type = 'all' order by 1"
    ),
    "coverage_monthly": (
        "select month_end, headcount, any_cert_headcount, required_cert_compliant_headcount "
        "from restricted.certification_coverage where segment_type = 'all' order by 1"
    ),
    "incident_rates": (
        "select certification_status, engineers, engineer_months, incidents, "
        "incidents_per_100_engineer_months from restricted.incident_rates "
        "where breakdown = 'status' order by 1"
    ),
}


@pytest.mark.parametrize("mart", sorted(PIPELINE_FIGURES))
def test_plain_script_computes_the_figures_of_the_marts(bench_run, mart):
    import duckdb
    from polars.testing import assert_frame_equal

    _, work = bench_run
    build = work / "warehouse" / "build" / "talent.duckdb"
    with duckdb.connect(str(build), read_only=True) as con:
        expected = con.sql(PIPELINE_FIGURES[mart]).pl()
    with duckdb.connect(str(work / "plain_script.duckdb"), read_only=True) as con:
        got = con.sql(f"select * from {mart} order by 1").pl()
    assert expected.height > 0 and expected.select(expected.columns[1]).sum().item() > 0
    assert_frame_equal(got, expected, check_dtypes=False)


def _size(n: int, full_cpu: float, plain_cpu: float, peak: float, wall: float = 60.0) -> dict:
    run = {"cpu_s": full_cpu, "wall_s": wall, "peak_rss_mb": peak}
    return {
        "full": run,
        "incremental": {**run, "wall_s": wall / 10},
        "plain_script": {"cpu_s": plain_cpu},
        "generate_s": 30.0,
    }


def test_the_scale_summary_prices_what_grows_with_the_data_against_the_plain_script():
    sizes = {
        50_000: _size(50_000, 75.0, 4.0, 1300.0),
        200_000: _size(200_000, 210.0, 14.0, 2200.0),
        1_000_000: _size(1_000_000, 1288.0, 93.0, 8200.0, wall=1090.0),
    }
    out = bench.scale_summary(sizes)
    # (210 - 75) / (14 - 4) and (1288 - 210) / (93 - 14)
    assert out["marginal_cost_ratio"] == 13.5
    assert out["marginal_cost_ratio_200000_to_1000000"] == round(1078 / 79, 2)
    t = out["targets"]
    assert not t["marginal_cost_ratio_at_most_4"]["met"]
    assert not t["full_run_at_1000000_under_15_min"]["met"]  # 1,090 s
    assert not t["peak_rss_at_1000000_under_6_gb"]["met"]
    assert t["one_day_nightly_at_1000000_under_2_min"]["met"]  # 109 s
    # 900 MB for 150,000 more people (6 MB per 1,000), then 6,000 MB for 800,000 more (7.5)
    assert out["memory_mb_per_1000_more_employees"] == [6.0, 7.5]
    assert not t["memory_grows_no_faster_than_linearly"]["met"]
    assert out["memory_mb_per_1000_employees"]["50000"] == 26.0


def test_the_marginal_cost_ratio_is_split_by_phase_and_priced_against_the_sql_alone():
    def size(n: int, steps: dict[str, float], total: float, plain: float, sql: float) -> dict:
        out = _size(n, total, plain, 1000.0)
        out["full"]["steps"] = {
            k: {"cpu_s": v, "wall_s": v, "peak_rss_mb": 1.0} for k, v in steps.items()
        }
        out["sql_only"] = {"cpu_s": sql, "wall_s": sql / 2}
        return out

    small = {
        "raw__employees": 2.0,
        "raw__incidents": 3.0,
        "raw_quality_suites": 10.0,
        "warehouse_dbt": 20.0,
        "certification_statistics": 4.0,
        "programme_career_statistics": 9.0,
        "report__quarterly_talent_report": 5.0,
    }
    large = {
        "raw__employees": 6.0,
        "raw__incidents": 9.0,
        "raw_quality_suites": 30.0,
        "warehouse_dbt": 40.0,
        "certification_statistics": 16.0,
        "programme_career_statistics": 25.0,
        "report__quarterly_talent_report": 7.0,
    }
    # the runs' CPU: the steps' and 8 s (then 10 s) outside them
    sizes = {
        50_000: size(50_000, small, sum(small.values()) + 8.0, 4.0, 10.0),
        200_000: size(200_000, large, sum(large.values()) + 10.0, 14.0, 28.0),
    }
    out = bench.scale_summary(sizes)
    parts = out["marginal_cost_ratio_by_phase"]
    # growth over the plain script's 10 s: ingest (6 + 9 - 2 - 3), checks 20, dbt 20,
    # statistics (16 + 25 - 4 - 9), report 2, outside the steps 2; the SQL alone 18
    assert parts["ingest"] == 1.0 and parts["checks"] == 2.0 and parts["dbt"] == 2.0
    assert parts["statistics"] == 2.8 and parts["report"] == 0.2
    assert parts["outside steps"] == 0.2 and parts["roi"] == 0.0
    assert parts["dbt SQL alone"] == 1.8
    assert out["marginal_cost_ratio"] == 8.2
    assert sum(v for k, v in parts.items() if k != "dbt SQL alone") == pytest.approx(8.2)
    # an earlier scale run without the SQL alone: the phases still add up, no floor beside them
    for s in sizes.values():
        del s["sql_only"]
    assert "dbt SQL alone" not in bench.scale_summary(sizes)["marginal_cost_ratio_by_phase"]


def test_the_sampler_gives_each_step_its_time_cpu_and_peak_memory(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("[    1 s] ingest     raw__employees                     done in 1.0 s\n")
    sampler = bench.TreeRssSampler(os.getpid(), log)
    sampler._new_step_ends(1.0)  # the sampler sees each line when it appears
    with open(log, "a") as fh:
        fh.write("[    4 s] dbt        warehouse_dbt                      started\n")
        fh.write("[    6 s] dbt        warehouse_dbt                      done in 2.0 s\n")
    sampler._new_step_ends(6.0)
    # samples (seconds, RSS bytes, CPU seconds) as the thread would have taken them
    sampler.series = [(t / 10, (500 if 40 <= t <= 60 else 100) * 10**6, t / 20) for t in range(70)]
    steps = sampler.steps()
    assert steps["warehouse_dbt"] == {"wall_s": 2.0, "cpu_s": 1.0, "peak_rss_mb": 500.0}
    assert steps["raw__employees"]["peak_rss_mb"] == 100.0


def test_a_step_s_cpu_is_not_lost_to_a_sample_that_read_less(tmp_path):
    """The run's last step ends as the run does: a sample taken while a process had exited
    without being waited for reads less CPU than the samples before it; the step's CPU is still
    what the tree used while it ran."""
    log = tmp_path / "run.log"
    sampler = bench.TreeRssSampler(os.getpid(), log)
    log.write_text("[    6 s] report     report__quarterly_talent_report    done in 2.0 s\n")
    sampler._new_step_ends(6.0)
    # the tree used 0.05 CPU s every 0.1 s; the last sample before the line was read missed it
    sampler.series = [(t / 10, 10**8, t / 20) for t in range(60)] + [(5.95, 10**8, 0.1)]
    assert sampler.steps()["report__quarterly_talent_report"]["cpu_s"] == 0.95
