"""Render `dbt_project/models/staging/_sources.yml` from the export contracts.

The raw tables dbt reads are the contracts' tables (`pipelines/lib/contracts.py`) plus the
lineage columns ingestion adds, the manifest and the quarantine; this writes their dbt source
declarations so the two never drift apart (`tests/test_dbt_project.py` checks the file).

    .venv/bin/python -m tools.dbt_sources          # rewrite the file
    .venv/bin/python -m tools.dbt_sources --check  # exit 1 when it is stale
"""

from __future__ import annotations

import sys
from pathlib import Path

import yaml

from pipelines.lib.contracts import EXPORTS, Column, Export
from pipelines.lib.project_files import DBT_PROJECT_DIR

SOURCES_PATH = DBT_PROJECT_DIR / "models" / "staging" / "_sources.yml"
HEADER = (
    "# Generated from pipelines/lib/contracts.py by `python -m tools.dbt_sources`; do not edit.\n"
    "# tests/test_dbt_project.py checks it stays in step.\n"
)
LINEAGE = {
    "_file_id": "sha256 of the delivered file; joins raw.manifest.file_id",
    "_line": "physical line number in the file (header = 1)",
    "_period": "period of the delivering file",
    "_version": "delivery version of the file",
    "_extra": "JSON of columns the contract does not know, or null",
}
BOOKKEEPING = [
    {
        "name": "manifest",
        "description": "One row per delivered file: status active / superseded / duplicate / "
        "failed. Only rows of active files count.",
        "columns": [
            {"name": "file_id", "description": "sha256 of the file"},
            {"name": "status", "description": "active, superseded, duplicate or failed"},
        ],
    },
    {
        "name": "quarantine",
        "description": "Rows rejected by ingestion with the reason (line number and raw text).",
        "columns": [
            {"name": "file_id", "description": "sha256 of the file"},
            {"name": "reason", "description": "why the row was rejected"},
        ],
    },
]


def _column(c: Column) -> dict[str, str]:
    text = c.description or c.name.replace("_", " ")
    if c.personal:
        text += " (PERSONAL: restricted raw layer only)"
    return {"name": c.name, "description": text}


def _table(export: Export) -> dict[str, object]:
    return {
        "name": export.name,
        "description": f"{export.description} Natural key: {', '.join(export.key)}. "
        f"Folder: {export.folder}/.",
        "columns": [_column(c) for c in export.columns]
        + [{"name": k, "description": v} for k, v in LINEAGE.items()],
    }


def render() -> str:
    doc = {
        "version": 2,
        "sources": [
            {
                "name": "raw",
                "description": "Restricted raw layer (warehouse/raw.duckdb, attached read-only "
                "as catalog raw): typed contract columns of every export plus lineage columns. "
                "Holds names, e-mails and salaries; never published.",
                "database": "raw",
                "schema": "main",
                "tables": [_table(e) for e in EXPORTS.values()] + BOOKKEEPING,
            }
        ],
    }
    return HEADER + yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=True)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if SOURCES_PATH.read_text(encoding="utf-8") != text:
            print(f"{SOURCES_PATH.name} is stale: run `.venv/bin/python -m tools.dbt_sources`")
            return 1
        return 0
    SOURCES_PATH.write_text(text, encoding="utf-8")
    print(f"wrote {Path(SOURCES_PATH).name}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
