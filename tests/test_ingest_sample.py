"""Ingestion over the sample company: what the generator planted is what the raw layer shows.

The generator records its planted dirt and row counts in ground_truth.json; this test checks
the loader against that record, so the two cannot drift apart silently.
"""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest import ingest_all
from pipelines.lib.settings import Settings


def test_sample_company_loads_completely_with_planted_dirt_where_planted(tmp_path: Path):
    generate = pytest.importorskip("tools.generate")
    sources = tmp_path / "sample"
    generate.generate_company(
        sources, 200, 2, date(2026, 9, 30), 7, progress=False, garbage_rows=True
    )
    truth = json.loads((sources / "ground_truth.json").read_text())
    settings = Settings(sources_dir=sources, warehouse_dir=tmp_path / "wh", settle_seconds=0)
    results = ingest_all(settings)

    assert all(not r.files_failed and not r.unknown_files for r in results.values())
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        # the operations and recruiting exports arrive as the tools' own files (Slurm, Grafana,
        # ServiceNow, Jira, Greenhouse): their rows are checked against the generator's own
        # counts of what it wrote
        ops = truth["operations"]["counts"]
        operations = {
            "gpu_usage": ("record_type = 'job'", ops["jobs"]),
            "changes": ("true", ops["changes"]),
            "capacity_changes": ("true", ops["capacity_projects"]),
            # the Greenhouse openings report of the recruiting pass, one row per requisition
            "requisitions": ("true", truth["recruiting"]["requisitions"]),
        }
        for export, (where, expected) in operations.items():
            loaded = con.execute(f'SELECT count(*) FROM "{export}" WHERE {where}').fetchone()[0]
            assert loaded == expected, export
        for export in (e for e in EXPORTS if e not in operations):
            duplicates = sum(
                d.get("rows", 0)
                for d in truth["dirt"]
                if d["export"] == export and d["kind"] == "exact_duplicates"
            )
            current = con.execute(
                f'SELECT count(*) FROM "{export}" t JOIN manifest m '
                "ON m.file_id = t._file_id AND m.status = 'active'"
            ).fetchone()[0]
            assert current == truth["counts"]["rows"][export] + duplicates, export
        garbage = [d for d in truth["dirt"] if d["kind"] == "garbage_rows"]
        assert garbage, "the generator planted no garbage rows"
        for d in garbage:
            lines = con.execute(
                "SELECT line_number FROM quarantine WHERE file_name = ? ORDER BY 1", [d["file"]]
            ).fetchall()
            assert [n for (n,) in lines] == d["lines"]
        assert con.execute("SELECT count(*) FROM quarantine").fetchone()[0] == sum(
            len(d["lines"]) for d in garbage
        )
        for d in truth["dirt"]:
            if d["kind"] == "corrected_redelivery":
                status = con.execute(
                    "SELECT status FROM manifest WHERE file_name = ?", [d["superseded"]]
                ).fetchone()
                assert status == ("superseded",)
