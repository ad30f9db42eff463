"""The report asset: key, group, quarter partitions, and a real materialisation."""

from __future__ import annotations

import sys
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs import report
from tests.conftest import talent_resources

sys.path.insert(0, str(Path(__file__).parent))
from test_report import build_published_fixture  # noqa: E402


def test_asset_key_group_and_dependency():
    spec = report.quarterly_talent_report
    key = dg.AssetKey(["report", "quarterly_talent_report"])
    assert spec.keys == {key}
    assert spec.group_names_by_key[key] == "report"
    assert dg.AssetKey(["warehouse", "published"]) in spec.asset_deps[key]


def test_partitions_are_quarter_starts():
    keys = report.quarterly_partitions.get_partition_keys()
    assert keys[:5] == ["2015-01-01", "2015-04-01", "2015-07-01", "2015-10-01", "2016-01-01"]
    assert keys[0] == report.REPORT_START
    assert {k[5:] for k in keys} == {"01-01", "04-01", "07-01", "10-01"}
    assert report.quarter_of_partition("2026-07-01") == "2026-Q3"


@pytest.mark.slow
def test_materialise_one_quarter(tmp_path, monkeypatch):
    warehouse = tmp_path / "warehouse"
    warehouse.mkdir()
    build_published_fixture(warehouse / "talent.duckdb")
    result = dg.materialize(
        [report.quarterly_talent_report],
        partition_key="2026-07-01",
        resources=talent_resources(
            warehouse_dir=warehouse, reports_dir_override=tmp_path / "reports"
        ),
    )
    assert result.success
    assert (tmp_path / "reports" / "2026-Q3" / "talent-report.pdf").is_file()
    mat = result.asset_materializations_for_node("report__quarterly_talent_report")[0]
    assert mat.metadata["quarter"].value == "2026-Q3"
