"""Smoke run of the benchmark harness at a tiny scale: it runs and reports, nothing is timed.

The harness's two runs (the last day held back, then delivered) are also warehouse A of
tests/test_incremental.py; the session fixture `bench_run` (tests/conftest.py) runs it once.
"""

from __future__ import annotations

import pytest

from tests.conftest import BENCH_EMPLOYEES as EMPLOYEES
from tests.conftest import BENCH_YEARS as YEARS
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
        "peak_rss_mb",
        "sql_only_s",
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
    assert set(results["targets"]) == {
        "full_run_under_5_min",
        "incremental_under_quarter_of_full",
        "peak_rss_under_4_gb",
        "sql_at_least_half_of_full",
    }
