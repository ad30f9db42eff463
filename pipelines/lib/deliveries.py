"""`marts.source_deliveries`: what the published warehouse was built from, one row per export.

Only the employees export is required. A company without a fleet export, contractor hours or a
course catalogue still gets every mart its data supports; this table says which exports were
delivered (files, rows loaded and quarantined, periods, vendor profiles) and, for each export
nobody delivered, what the warehouse and the report cannot show because of it. The run summary
and the report's first page read the same facts.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import pyarrow as pa

from pipelines.lib import db
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest.check import MISSING_CONSEQUENCE

TABLE = "marts.source_deliveries"
REQUIRED_EXPORTS = ("employees",)

DESCRIPTION = (
    "What this warehouse was built from (grain: one row per export of the contract). Delivered "
    "files, rows loaded and quarantined, the periods covered, the vendor profiles that read "
    "them and the tools they came from; for an export nobody delivered, what cannot be shown "
    "without it."
)
COLUMNS = {
    "export": "export of the contract (raw table name), e.g. employees, incidents, gpu_fleet",
    "folder": "sources sub-folder the export is delivered to: hris, lms, incidents or fleet",
    "required": "true for the one export every run needs (employees)",
    "delivered": "true when at least one active delivery loaded at least one row",
    "active_files": "delivered files whose rows are current (not superseded by a re-delivery)",
    "superseded_files": "files replaced by a later re-delivery of the same tool and period",
    "rows_loaded": "rows of the active files that loaded",
    "rows_quarantined": "rows of the active files kept in raw.quarantine with their reason "
    "(restricted layer)",
    "first_period": "earliest delivery period (YYYY-MM or YYYY-MM-DD), NULL when not delivered",
    "last_period": "latest delivery period, NULL when not delivered",
    "vendor_profiles": "vendor profiles that read the files (comma-separated; 'contract' = "
    "delivered in the project's own export contract)",
    "source_systems": "the tools whose files count (comma-separated, each with its number of "
    "active files), e.g. 'PagerDuty (1), ServiceNow (1)'; two tools of one export each keep "
    "their own deliveries, both count, and a record both describe (same natural key) counts "
    "once (for the same period: the tool sources.yml ranks first, else the latest delivery; "
    "marts.source_conflicts counts their differences)",
    "if_missing": "for an export not delivered: what the warehouse and the report cannot show; "
    "NULL when delivered",
}

_SUMMARY = """
select
    export,
    count(*) filter (where status = 'active') as active_files,
    count(*) filter (where status = 'superseded') as superseded_files,
    coalesce(sum(rows_loaded) filter (where status = 'active'), 0) as rows_loaded,
    coalesce(sum(rows_quarantined) filter (where status = 'active'), 0) as rows_quarantined,
    min(period) filter (where status = 'active') as first_period,
    max(period) filter (where status = 'active') as last_period,
    string_agg(distinct coalesce(profile, 'contract'), ', ' order by coalesce(profile, 'contract'))
        filter (where status = 'active') as vendor_profiles
from manifest
group by export
"""

# files per tool; a manifest written before tools were recorded has no source_system column
_SYSTEMS = """
select export, string_agg(source_system || ' (' || files || ')', ', ' order by source_system)
from (
    select export, coalesce(source_system, 'unknown') as source_system, count(*) as files
    from manifest where status = 'active' and rows_loaded > 0
    group by all
)
group by export
"""


def delivery_table(raw_db: Path) -> pa.Table:
    """One row per export of the contract, from the raw layer's manifest (empty when none)."""
    found: dict[str, dict] = {}
    if Path(raw_db).is_file():
        with db.connect(raw_db, read_only=True) as con:
            has_manifest = con.execute(
                "select count(*) from duckdb_tables() where table_name = 'manifest'"
            ).fetchone()[0]
            if has_manifest:
                cur = con.execute(_SUMMARY)
                names = [d[0] for d in cur.description]
                found = {row[0]: dict(zip(names, row, strict=True)) for row in cur.fetchall()}
                has_systems = con.execute(
                    "select count(*) from duckdb_columns() where table_name = 'manifest' "
                    "and column_name = 'source_system'"
                ).fetchone()[0]
                if has_systems:
                    for export, systems in con.execute(_SYSTEMS).fetchall():
                        found.setdefault(export, {})["source_systems"] = systems
    rows = []
    for name, export in EXPORTS.items():
        got = found.get(name, {})
        delivered = got.get("rows_loaded", 0) > 0 and got.get("active_files", 0) > 0
        rows.append(
            {
                "export": name,
                "folder": export.folder,
                "required": name in REQUIRED_EXPORTS,
                "delivered": delivered,
                "active_files": int(got.get("active_files", 0)),
                "superseded_files": int(got.get("superseded_files", 0)),
                "rows_loaded": int(got.get("rows_loaded", 0)),
                "rows_quarantined": int(got.get("rows_quarantined", 0)),
                "first_period": got.get("first_period"),
                "last_period": got.get("last_period"),
                "vendor_profiles": got.get("vendor_profiles"),
                "source_systems": got.get("source_systems"),
                "if_missing": None if delivered else MISSING_CONSEQUENCE[name],
            }
        )
    schema = pa.schema(
        [
            ("export", pa.string()),
            ("folder", pa.string()),
            ("required", pa.bool_()),
            ("delivered", pa.bool_()),
            ("active_files", pa.int64()),
            ("superseded_files", pa.int64()),
            ("rows_loaded", pa.int64()),
            ("rows_quarantined", pa.int64()),
            ("first_period", pa.string()),
            ("last_period", pa.string()),
            ("vendor_profiles", pa.string()),
            ("source_systems", pa.string()),
            ("if_missing", pa.string()),
        ]
    )
    return pa.Table.from_pylist(rows, schema=schema)


def write_source_deliveries(con: duckdb.DuckDBPyConnection, raw_db: Path) -> list[str]:
    """(Re)write `marts.source_deliveries` in the build file; returns the exports not delivered."""
    deliveries = delivery_table(raw_db)
    con.execute("create schema if not exists marts")
    con.execute(f"create or replace table {TABLE} as select * from deliveries")
    db.describe(con, TABLE, DESCRIPTION, COLUMNS)
    return [
        name
        for name, delivered in zip(
            deliveries["export"].to_pylist(), deliveries["delivered"].to_pylist(), strict=True
        )
        if not delivered
    ]
