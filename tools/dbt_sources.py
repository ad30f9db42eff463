"""Render the dbt source declarations that describe tables dbt does not build, and the
contracts' exports as a dbt macro.

`dbt_project/models/staging/_sources.yml`: the raw tables dbt reads are the contracts' tables
(`pipelines/lib/contracts.py`) plus the lineage columns ingestion adds, the manifest, the
quarantine and the retained names. `dbt_project/models/python/_python_marts.yml`: the marts the
statistics, deliveries and ROI assets write, with the table and column descriptions those assets
also attach as DuckDB comments (`pipelines.lib.db.describe`), so the dbt docs site shows them and
nothing is written twice. `dbt_project/macros/contract_exports.sql`: each export's natural key and
other contract columns, for models that loop over every export (`marts/source_conflicts`).
`tests/test_dbt_project.py` checks the files stay in step.

    .venv/bin/python -m tools.dbt_sources          # rewrite the files
    .venv/bin/python -m tools.dbt_sources --check  # exit 1 when one is stale
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import yaml

from pipelines.lib.contracts import EXPORTS, Column, Export
from pipelines.lib.project_files import DBT_PROJECT_DIR

SOURCES_PATH = DBT_PROJECT_DIR / "models" / "staging" / "_sources.yml"
CONTRACT_MACRO_PATH = DBT_PROJECT_DIR / "macros" / "contract_exports.sql"
PYTHON_MARTS_PATH = DBT_PROJECT_DIR / "models" / "python" / "_python_marts.yml"
HEADER = (
    "# Generated from pipelines/lib/contracts.py by `python -m tools.dbt_sources`; do not edit.\n"
    "# tests/test_dbt_project.py checks it stays in step.\n"
)
PYTHON_HEADER = (
    "# Generated from the descriptions in pipelines/lib/effects/result.py,\n"
    "# pipelines/lib/careers/result.py, pipelines/lib/deliveries.py,\n"
    "# pipelines/lib/roi/warehouse.py, pipelines/lib/plan/build.py and backtest.py by\n"
    "# `python -m tools.dbt_sources`; do not edit.\n"
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
    {
        "name": "retained_names",
        "description": "One row per full name the retention policy pseudonymised: the name_key "
        "of the name it replaced, so stg_hris__person_names counts a retained leaver with the "
        "people who still bear their name (empty until the policy runs; no name in clear).",
        "columns": [
            {
                "name": "retained_name",
                "description": "the pseudonymised full name as it stands in the exports",
            },
            {
                "name": "name_key",
                "description": "pseudonym of the original normalised full name "
                "(as stg_hris__person_names.name_key)",
            },
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
                # DuckDB attaches raw.duckdb as catalog `raw` (schema main); on PostgreSQL and
                # Spark the raw tables are copied into schema `raw` of the build database
                # (pipelines/lib/targets.py)
                "database": "{{ 'raw' if target.type != 'postgres' else target.database }}",
                "schema": "{{ 'main' if target.type == 'duckdb' else 'raw' }}",
                "tables": [_table(e) for e in EXPORTS.values()] + BOOKKEEPING,
            }
        ],
    }
    return HEADER + yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=True)


def python_marts() -> list[tuple[str, str, dict[str, str]]]:
    """(table, description, column descriptions) of every mart a Python asset writes."""
    from pipelines.lib import deliveries
    from pipelines.lib.careers.result import MART_DESCRIPTIONS
    from pipelines.lib.effects import operations, result
    from pipelines.lib.plan import backtest
    from pipelines.lib.plan import build as plan
    from pipelines.lib.roi.warehouse import COLUMN_COMMENTS, TABLE_COMMENTS

    return (
        [
            ("certification_effect", result.EFFECT_TABLE, result.CERTIFICATION_EFFECT_DESCRIPTIONS),
            (
                "certification_event_study",
                result.EVENT_STUDY_TABLE,
                result.EVENT_STUDY_DESCRIPTIONS,
            ),
            (
                "operations_effect",
                operations.OPERATIONS_EFFECT_TABLE,
                operations.OPERATIONS_EFFECT_DESCRIPTIONS,
            ),
            ("source_deliveries", deliveries.DESCRIPTION, deliveries.COLUMNS),
        ]
        + [(name, *MART_DESCRIPTIONS[name]) for name in MART_DESCRIPTIONS]
        + [(name, TABLE_COMMENTS[name], COLUMN_COMMENTS[name]) for name in TABLE_COMMENTS]
        + [
            ("workforce_plan", plan.PLAN_DESCRIPTION, plan.PLAN_COLUMNS),
            ("workforce_plan_rates", plan.RATES_DESCRIPTION, plan.RATES_COLUMNS),
            ("workforce_plan_backtest", backtest.BACKTEST_DESCRIPTION, backtest.BACKTEST_COLUMNS),
        ]
    )


def render_python_marts() -> str:
    tables = [
        {
            "name": name,
            "description": description,
            "columns": [{"name": c, "description": text} for c, text in columns.items()],
        }
        for name, description, columns in python_marts()
    ]
    doc = {
        "version": 2,
        "sources": [
            {
                "name": "python_marts",
                "description": "Marts written by the pipeline's Python assets into schema marts "
                "of the build file after dbt (statistics: certification_effect, "
                "certification_event_study, operations_effect, time_to_certify, "
                "programme_comparison, programme_costs, time_in_level, promotion_effect; "
                "deliveries: source_deliveries; ROI: roi_*; plan: workforce_plan, "
                "workforce_plan_rates, workforce_plan_backtest) and "
                "published with the dbt marts.",
                "schema": "marts",
                "tables": tables,
            }
        ],
    }
    return PYTHON_HEADER + yaml.safe_dump(doc, sort_keys=False, width=100, allow_unicode=True)


def render_contract_macro() -> str:
    """`contract_exports()`: [{name, key, columns}] per export, columns = the contract columns
    outside the natural key."""
    exports = [
        {
            "name": e.name,
            "key": list(e.key),
            "columns": [c for c in e.column_names if c not in e.key],
        }
        for e in EXPORTS.values()
    ]
    body = ",\n".join(f"        {json.dumps(e)}" for e in exports)
    return (
        "{#- Generated from pipelines/lib/contracts.py by `python -m tools.dbt_sources`; do not\n"
        "    edit. Each export's natural key and its other contract columns. -#}\n"
        "{% macro contract_exports() -%}\n"
        f"    {{{{ return([\n{body}\n    ]) }}}}\n"
        "{%- endmacro %}\n"
    )


def main(argv: list[str]) -> int:
    stale = 0
    files = (
        (SOURCES_PATH, render()),
        (PYTHON_MARTS_PATH, render_python_marts()),
        (CONTRACT_MACRO_PATH, render_contract_macro()),
    )
    for path, text in files:
        if "--check" in argv:
            if not path.is_file() or path.read_text(encoding="utf-8") != text:
                print(f"{path.name} is stale: run `.venv/bin/python -m tools.dbt_sources`")
                stale = 1
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {Path(path).name}")
    return stale


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
