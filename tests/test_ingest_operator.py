"""The README's operator examples for the restricted raw layer, run as written with the DuckDB
command line the project ships (`.venv/bin/duckdb`, PyPI's duckdb-cli) against a loaded
warehouse: the raw file must be in a storage format that CLI reads."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.ingest import ingest_all
from pipelines.lib.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
VENDORS = Path(__file__).parent / "fixtures" / "vendors"
CLI = Path(sys.executable).parent / "duckdb"


def readme_raw_example() -> tuple[list[str], str]:
    """The command line and the `D ` queries of the README block that opens raw.duckdb."""
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)
    (block,) = [b for b in blocks if "warehouse/raw.duckdb" in b]
    lines = block.strip().splitlines()
    command = shlex.split(lines[0])
    queries = [line[2:] for line in lines[1:] if line.startswith("D ")]
    assert command[0] == "./.venv/bin/duckdb" and queries
    return command, "\n".join(queries) + "\n"


def run_as_written(cwd: Path) -> subprocess.CompletedProcess:
    command, queries = readme_raw_example()
    return subprocess.run(
        [str(CLI), *command[1:]],  # the checkout's .venv/bin/duckdb is this environment's
        input=queries,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def loaded(tmp_path: Path) -> Settings:
    """A warehouse/ folder in the layout `make run` gives, loaded from vendor exports with a
    bad row (BambooHR's 13/45/2021) and our own format."""
    sources = tmp_path / "sources"
    for folder in ("hris", "lms", "incidents", "fleet"):
        (sources / folder).mkdir(parents=True)
    shutil.copyfile(VENDORS / "Employee Report.csv", sources / "hris" / "Employee Report.csv")
    shutil.copyfile(VENDORS / "incidents.csv", sources / "incidents" / "incidents.csv")
    (sources / "fleet" / "gpu_fleet_2024-03.csv").write_text(
        "cluster,as_of_date,site,gpu_model,gpu_count\ndgx-muc-1,2024-03-31,Munich,H100,64\n"
    )
    settings = Settings(sources_dir=sources, warehouse_dir=tmp_path / "warehouse", settle_seconds=0)
    ingest_all(settings)
    return settings


@pytest.mark.skipif(not CLI.exists(), reason="the duckdb CLI is installed by make setup")
def test_readme_raw_layer_queries_run_with_the_shipped_cli(loaded):
    proc = run_as_written(loaded.warehouse_dir.parent)
    assert proc.returncode == 0, proc.stderr
    assert "Error" not in proc.stderr
    out = proc.stdout
    assert "13/45/2021" in out  # raw.quarantine: the bad hire date, with its line
    assert "Employee Report.csv" in out and "BambooHR" in out and "PagerDuty" in out  # manifest


@pytest.mark.skipif(not CLI.exists(), reason="the duckdb CLI is installed by make setup")
def test_the_cli_cannot_read_a_raw_file_in_the_librarys_own_format(loaded, tmp_path):
    """The reason the raw layer is written in an older storage format: the same file in the
    format DuckDB 2.0 writes by default is refused by the shipped CLI."""
    other = tmp_path / "newer" / "warehouse"
    other.mkdir(parents=True)
    with duckdb.connect(":memory:") as con:
        con.execute(f"ATTACH '{loaded.raw_db}' AS cur (READ_ONLY)")
        con.execute(f"ATTACH '{other / 'raw.duckdb'}' AS raw")
        con.execute("COPY FROM DATABASE cur TO raw")
    proc = run_as_written(other.parent)
    assert proc.returncode != 0 and "newer version" in proc.stderr
