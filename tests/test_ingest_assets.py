"""The ingestion assets in Dagster, and the export documentation generated from the contracts."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs import ingestion
from pipelines.lib.contracts import EXPORTS
from tests.conftest import talent_resources
from tools import contract_docs

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"


def asset_for(export: str) -> dg.AssetsDefinition:
    return next(a for a in ingestion.ingest_assets if a.key == dg.AssetKey(["raw", export]))


@pytest.fixture
def resources(tmp_path: Path) -> dict[str, object]:
    for folder in ("hris", "lms", "incidents", "fleet"):
        (tmp_path / "sources" / folder).mkdir(parents=True)
    return talent_resources(sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "warehouse")


def test_one_asset_per_export_in_the_ingestion_group():
    keys = {a.key for a in ingestion.ingest_assets}
    assert keys == {dg.AssetKey(["raw", e]) for e in EXPORTS}
    for export in EXPORTS.values():
        spec = next(iter(asset_for(export.name).specs))
        assert spec.group_name == "ingestion"
        assert spec.kinds == {"duckdb", "csv"}
        assert export.description in spec.description
        assert asset_for(export.name).op.retry_policy.max_retries == 2
    from pipelines.definitions import defs

    graph = defs.resolve_asset_graph()
    loaded = {k for k in graph.materializable_asset_keys if k.path[0] == "raw"}
    assert loaded == keys


def test_materialisation_reports_what_was_loaded(resources, tmp_path):
    src = tmp_path / "sources" / "incidents"
    shutil.copyfile(FIXTURES / "incidents_garbage.csv", src / "incidents_2024-03.csv")
    (src / "notes.txt").write_text("not an export")
    result = dg.materialize([asset_for("incidents")], resources=resources)
    assert result.success
    (mat,) = result.asset_materializations_for_node("raw__incidents")
    meta = {k: v.value for k, v in mat.metadata.items()}
    assert meta["files_seen"] == 1 and meta["files_loaded"] == 1 and meta["files_failed"] == 0
    assert meta["rows_loaded"] == 3 and meta["rows_quarantined"] == 4
    assert meta["quarantine_share"] == pytest.approx(4 / 7, abs=1e-6)
    assert meta["table_row_count"] == 3
    assert meta["unknown_files"] == ["incidents/notes.txt"]


def test_a_bad_file_fails_the_asset_after_loading_the_good_ones_without_retries(
    resources, tmp_path
):
    src = tmp_path / "sources" / "hris"
    shutil.copyfile(FIXTURES / "employees_bom_crlf.csv", src / "employees_2024-01.csv")
    shutil.copyfile(FIXTURES / "employees_missing_column.csv", src / "employees_2024-02.csv")
    result = dg.materialize([asset_for("employees")], resources=resources, raise_on_error=False)
    assert not result.success
    failures = [e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_FAILURE]
    assert len(failures) == 1  # content errors are not retried
    retries = [
        e for e in result.all_events if e.event_type == dg.DagsterEventType.STEP_UP_FOR_RETRY
    ]
    assert retries == []
    description = failures[0].step_failure_data.user_failure_data.description
    assert "employees_2024-02.csv" in description and "hire_date" in description
    meta = {k: v.value for k, v in failures[0].step_failure_data.user_failure_data.metadata.items()}
    assert meta["files_loaded"] == 1 and meta["rows_loaded"] == 3 and meta["table_row_count"] == 3


def test_sources_readme_is_generated_from_the_contracts():
    readme = contract_docs.README_PATH.read_text(encoding="utf-8")
    assert readme == contract_docs.render_readme(), (
        "sources/README.md is out of date: run python -m tools.contract_docs"
    )


def test_readme_documents_every_column_and_the_conventions():
    text = contract_docs.render_readme()
    for export in EXPORTS.values():
        assert f"### `{export.name}`" in text
        for col in export.columns:
            assert f"| `{col.name}` |" in text
    assert "last day worked" in text and "supersede" in text and "Windows-1252" in text
    assert contract_docs.main(["--check"]) == 0
