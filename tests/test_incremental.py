"""Incremental nightly runs give the same published marts as one run over everything.

Warehouse A is the benchmark harness's tiny run (tests/test_bench.py): a company generated with
its last day in daily files, run with that day held back, then again once the day is delivered.
Warehouse B runs once over everything. Every mart in the two published files must hold the same
rows, to the last bit of every double (row count and an order-independent content hash;
`publish_info` is ignored): the marts' sums do not depend on the order DuckDB adds rows in
(`exact_sum`), and the statistics sort their inputs. A nightly
with nothing new leaves the marts as they were, and the one-day nightly loads only the new files.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import duckdb
import pytest

from tests.conftest import talent_run
from tools.bench import child_env

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def talent_run_recorded(sources: Path, warehouse: Path, work: Path) -> dict:
    """`talent run --skip-report` with the bytecode cache the harness warmed in `work`; returns
    the run's record (warehouse/runs/last_nightly.json) with what it printed (`output`)."""
    proc = talent_run(sources, warehouse, env=child_env(work))
    record = json.loads((warehouse / "runs" / "last_nightly.json").read_text())
    return {**record, "output": proc.stdout + proc.stderr}


def mart_fingerprints(published: Path, schema: str = "marts") -> dict[str, tuple[int, str]]:
    """table -> (rows, sha256 of the sorted rows): independent of row order."""
    out: dict[str, tuple[int, str]] = {}
    with duckdb.connect(str(published), read_only=True) as con:
        tables = [
            r[0]
            for r in con.execute(
                "select table_name from duckdb_tables() where schema_name = ? order by 1",
                [schema],
            ).fetchall()
        ]
        for table in tables:
            rows = con.execute(f'select * from {schema}."{table}"').fetchall()
            lines = sorted(repr(row) for row in rows)
            out[table] = (len(rows), hashlib.sha256("\n".join(lines).encode()).hexdigest())
    return out


def manifest_load_times(warehouse: Path) -> list[tuple[str, object]]:
    with duckdb.connect(str(warehouse / "raw.duckdb"), read_only=True) as con:
        return con.execute(
            "select file_name, loaded_at from manifest order by loaded_at"
        ).fetchall()


def dbt_build_args(warehouse: Path) -> dict:
    """The arguments of the warehouse's last dbt invocation (its run_results.json)."""
    results = warehouse / "build" / "dbt-target" / "run_results.json"
    return json.loads(results.read_text())["args"]


@pytest.fixture(scope="module")
def runs(bench_run, tmp_path_factory) -> dict:
    results, work = bench_run
    sources, wa = work / "sources", work / "warehouse"
    day = json.loads((work / "params.json").read_text())["end_date"]
    wb = tmp_path_factory.mktemp("incremental") / "B"
    b_first = talent_run_recorded(sources, wb, work)
    b_run_id = b_first["run_id"]
    b_full = mart_fingerprints(wb / "talent.duckdb")
    b_staging = mart_fingerprints(wb / "build" / "talent.duckdb", "staging")
    no_change = talent_run_recorded(sources, wb, work)
    return {
        "day_files": sorted(p.name for p in sources.rglob(f"*_{day}.csv")),
        "source_files": sorted(p.name for p in sources.rglob("*.csv")),
        "held_back_files": results["held_back_files"],
        "a_loads": manifest_load_times(wa),
        # the one-day nightly (the harness then runs a night without new files)
        "a_nightly": results["incremental"],
        "a": mart_fingerprints(wa / "talent.duckdb"),
        # the staging tables of the build files, and how each warehouse's last dbt build ran
        "a_staging": mart_fingerprints(wa / "build" / "talent.duckdb", "staging"),
        "b_staging": b_staging,
        "a_build": dbt_build_args(wa),
        "b_build": dbt_build_args(wb),
        "b": b_full,
        "b_again": mart_fingerprints(wb / "talent.duckdb"),
        "no_change": no_change,
        "b_first": b_first,
        "b_run_id": b_run_id,
    }


def test_one_day_nightly_loads_only_the_new_files(runs):
    assert runs["day_files"] and len(runs["day_files"]) == runs["held_back_files"]
    names = [name for name, _ in runs["a_loads"]]
    # every delivered file was recorded once: nothing of the first run was loaded again
    assert sorted(names) == runs["source_files"]
    # and the day's files were loaded after everything else, by the second run
    assert sorted(names[-len(runs["day_files"]) :]) == runs["day_files"]
    assert (
        runs["a_loads"][-len(runs["day_files"])][1]
        > runs["a_loads"][-len(runs["day_files"]) - 1][1]
    )


def test_incremental_marts_equal_one_run_over_everything(runs):
    a, b = runs["a"], runs["b"]
    assert "certification_coverage" in a and "attrition" in a  # the marts were published
    assert sorted(a) == sorted(b)
    differing = {t: (a[t], b[t]) for t in a if a[t] != b[t]}
    assert not differing, f"marts differ between incremental and full runs: {differing}"


def test_the_nightly_adds_the_new_files_to_the_incremental_staging_models(runs):
    """A night that brings only raw data builds the staging models incrementally (no
    --full-refresh), and they hold what the run over everything built in full."""
    # dbt records the flag only when it is given
    assert runs["a_build"]["which"] == "build" and not runs["a_build"].get("full_refresh")
    assert runs["b_build"]["which"] == "build" and runs["b_build"].get("full_refresh") is True
    a, b = runs["a_staging"], runs["b_staging"]
    assert {"stg_incidents__incidents", "stg_hris__job_history"} <= set(a)
    differing = {t: (a[t], b[t]) for t in a if a[t] != b.get(t)}
    assert sorted(a) == sorted(b) and not differing, differing


def test_nightly_without_new_files_leaves_the_marts_identical(runs):
    assert runs["no_change"]["success"]
    assert runs["b_again"] == runs["b"]
    # nothing new: after ingestion the decision found nothing stale, so the night was one run:
    # dbt did not rebuild the warehouse, nor were the statistics estimated again; each kept
    # asset names the run of the full night before that computed it
    assert runs["no_change"]["run_ids"] == []
    first_night = {runs["b_run_id"], *runs["b_first"]["run_ids"]}
    kept = runs["no_change"]["kept"]
    assert {"marts/certification_effect", "marts/certification_event_study"} <= set(kept)
    assert {"staging/stg_hris__employees", "marts/certification_coverage"} <= set(kept)
    assert {"warehouse/published", "warehouse/dbt_docs"} <= set(kept)
    assert set(kept.values()) <= first_night
    # no check was evaluated again, and none is reported as passed in this run: the summary
    # says whose evaluation stands
    checks_kept = runs["no_change"]["checks_kept"]
    assert any(c.startswith("raw/employees:") for c in checks_kept)
    assert any(c.startswith("marts/attrition:") for c in checks_kept)
    assert set(checks_kept.values()) <= first_night
    assert "not evaluated again" in runs["no_change"]["output"]
    # no step ended without the result of a blocking check it planned: Dagster said nothing
    assert "will proceed without gating" not in runs["no_change"]["output"]
    assert "Kept " in runs["no_change"]["output"]
    # and no step says why it computed: none did (the ingestion steps always look at the files)
    assert runs["no_change"]["computed_because"] == {}
    assert "Computed because" not in runs["no_change"]["output"]


def test_the_summary_says_why_each_step_computed(runs):
    """The run record and summary name, per step that computed, what changed: a first run
    computes what was never computed; the one-day nightly rebuilds dbt for the new raw data."""
    first = runs["b_first"]
    assert set(first["computed_because"].values()) == {"never computed"}
    assert {"warehouse_dbt", "certification_statistics", "warehouse__published"} <= set(
        first["computed_because"]
    )
    assert "Computed because: never computed before" in first["output"]
    nightly = runs["a_nightly"]["computed_because"]
    assert nightly["warehouse_dbt"].startswith("new data in raw/"), nightly
    # the statistics kept their estimates (below), so they say nothing
    assert "certification_statistics" not in nightly


def test_a_day_of_the_month_in_progress_keeps_the_statistics(runs):
    """The held-back day is the last day of the latest month, which the statistics leave out
    until the data reaches the next month: its files change no complete month, so the estimates
    are kept, and (test above) the published marts still equal a full rebuild's."""
    kept = set(runs["a_nightly"]["kept"])
    assert {"marts/certification_effect", "marts/certification_event_study"} <= kept
    # the new files did reach the warehouse: dbt rebuilt it
    assert not any(key.startswith(("staging/", "intermediate/")) for key in kept)
