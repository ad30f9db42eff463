"""A run checks its input first: no exports, only unrelated files, no employees, or a warehouse
folder it cannot write are one paragraph of advice and exit code 2, within seconds."""

from __future__ import annotations

import shutil
from pathlib import Path

from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.lib.preflight import preflight
from pipelines.lib.settings import Settings

SAMPLE = Path(__file__).resolve().parent.parent / "sources" / "sample"


def _settings(sources: Path, warehouse: Path) -> Settings:
    return Settings(sources_dir=sources, warehouse_dir=warehouse)


def test_an_empty_folder_is_refused_with_what_was_expected(tmp_path):
    (tmp_path / "src").mkdir()
    (problem,) = preflight(_settings(tmp_path / "src", tmp_path / "wh"))
    assert f"No export files found in {tmp_path / 'src'}" in problem
    assert "hris/" in problem and "talent sources check" in problem


def test_unrelated_files_are_named(tmp_path):
    (tmp_path / "src" / "hris").mkdir(parents=True)
    (tmp_path / "src" / "hris" / "notes.csv").write_text("a,b\n1,2\n")
    (problem,) = preflight(_settings(tmp_path / "src", tmp_path / "wh"))
    assert "1 file(s) that match no export: hris/notes.csv" in problem


def test_exports_without_employees_are_refused(tmp_path):
    (tmp_path / "src" / "fleet").mkdir(parents=True)
    fleet = sorted((SAMPLE / "fleet").glob("gpu_fleet_*.csv"))[0]
    shutil.copy(fleet, tmp_path / "src" / "fleet" / fleet.name)
    (problem,) = preflight(_settings(tmp_path / "src", tmp_path / "wh"))
    assert "No employees export" in problem and "gpu_fleet" in problem


def test_a_warehouse_folder_that_cannot_be_written_is_refused(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    (problem,) = preflight(_settings(SAMPLE, blocker / "wh"))
    assert f"The warehouse folder {blocker / 'wh'} cannot be written" in problem


def test_the_sample_passes(tmp_path):
    assert preflight(_settings(SAMPLE, tmp_path / "wh")) == []


def test_talent_run_exits_2_with_the_advice_and_builds_nothing(tmp_path):
    (tmp_path / "src").mkdir()
    result = CliRunner().invoke(
        app, ["run", "--sources", str(tmp_path / "src"), "--warehouse-dir", str(tmp_path / "wh")]
    )
    assert result.exit_code == 2
    assert "No export files found" in result.output
    assert not (tmp_path / "wh" / "raw.duckdb").exists()


def test_exports_dropped_at_the_top_of_the_folder_are_named_with_where_to_put_them(tmp_path):
    from pipelines.lib.ingest.check import check_sources

    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "Employee Report.csv").write_text("Employee #,Work Email\n1,a@x.org\n")
    (tmp_path / "src" / "sources.yml").write_text("{}\n")
    (problem,) = preflight(_settings(tmp_path / "src", tmp_path / "wh"))
    assert "1 at its top: Employee Report.csv" in problem and "into hris/" in problem
    files = {f.path: f for f in check_sources(tmp_path / "src").files}
    assert set(files) == {"Employee Report.csv"}
    assert "not inside hris/" in files["Employee Report.csv"].note
