"""The restricted raw layer's tables: one per export, the manifest and the quarantine.

The manifest is the memory that makes loading exactly-once: a file's sha256 is its identity,
so a re-run, a renamed copy or a re-delivery of the same bytes never loads a row twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from pipelines.lib.contracts import EXPORTS, Export
from pipelines.lib.ingest.reader import duckdb_type

STATUSES = ("active", "superseded", "duplicate", "failed")

MANIFEST_DDL = """
CREATE TABLE IF NOT EXISTS manifest (
    file_id VARCHAR NOT NULL,          -- sha256 of the delivered bytes (hex)
    export VARCHAR NOT NULL,
    file_name VARCHAR NOT NULL,
    source_path VARCHAR,
    archive_path VARCHAR,              -- relative to the warehouse directory
    period VARCHAR NOT NULL,
    version BIGINT NOT NULL,
    size_bytes BIGINT NOT NULL,
    rows_total BIGINT NOT NULL,
    rows_loaded BIGINT NOT NULL,
    rows_quarantined BIGINT NOT NULL,
    encoding VARCHAR,
    locale VARCHAR,
    delimiter VARCHAR,
    loaded_at TIMESTAMP NOT NULL,
    status VARCHAR NOT NULL CHECK (status IN ('active', 'superseded', 'duplicate', 'failed')),
    superseded_by VARCHAR,
    message VARCHAR,                   -- one row per (file_id, export, file_name): the loader checks it
    profile VARCHAR,                   -- vendor profile that read the file; NULL = our own format
    period_source VARCHAR              -- where the period came from: file name, sources.yml, data
)
"""

# columns added after the first release: existing raw layers get them on the next run
MANIFEST_MIGRATIONS = (
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS profile VARCHAR",
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS period_source VARCHAR",
)

QUARANTINE_DDL = """
CREATE TABLE IF NOT EXISTS quarantine (
    file_id VARCHAR NOT NULL,
    export VARCHAR NOT NULL,
    file_name VARCHAR NOT NULL,
    line_number BIGINT NOT NULL,
    raw_line VARCHAR,
    reason VARCHAR NOT NULL,
    quarantined_at TIMESTAMP NOT NULL
)
"""


def export_table_ddl(export: Export) -> str:
    cols = [f'"{c.name}" {duckdb_type(c)}' for c in export.columns]
    cols += [
        "_file_id VARCHAR NOT NULL",
        "_line BIGINT NOT NULL",
        "_period VARCHAR NOT NULL",
        "_version BIGINT NOT NULL",
        "_extra JSON",
    ]
    return f'CREATE TABLE IF NOT EXISTS "{export.name}" (\n    ' + ",\n    ".join(cols) + "\n)"


def ensure_raw_schema(con: duckdb.DuckDBPyConnection) -> None:
    """Create the manifest, the quarantine and one table per export if they do not exist."""
    con.execute(MANIFEST_DDL)
    for statement in MANIFEST_MIGRATIONS:
        con.execute(statement)
    con.execute(QUARANTINE_DDL)
    for export in EXPORTS.values():
        con.execute(export_table_ddl(export))


@dataclass(frozen=True)
class ManifestRow:
    file_id: str
    file_name: str
    period: str
    version: int
    status: str
    message: str | None


def known_deliveries(
    con: duckdb.DuckDBPyConnection, file_id: str, export: str | None = None
) -> list[ManifestRow]:
    """Earlier deliveries of these bytes (as `export`, when given)."""
    rows = con.execute(
        "SELECT file_id, file_name, period, version, status, message FROM manifest "
        "WHERE file_id = ? AND (? IS NULL OR export = ?) ORDER BY loaded_at, file_name",
        [file_id, export, export],
    ).fetchall()
    return [ManifestRow(*r) for r in rows]


def deliveries_by_content(
    con: duckdb.DuckDBPyConnection, exports: Iterable[str]
) -> dict[tuple[str, str], list[ManifestRow]]:
    """Every recorded delivery of `exports`, by (content hash, export): `known_deliveries` for
    many files in one query (the manifest holds one row per file ever delivered)."""
    exports = sorted(set(exports))
    found: dict[tuple[str, str], list[ManifestRow]] = {}
    if not exports:
        return found
    rows = con.execute(
        "SELECT export, file_id, file_name, period, version, status, message FROM manifest "
        "WHERE list_contains(?, export) ORDER BY loaded_at, file_name",
        [exports],
    ).fetchall()
    for export, *row in rows:
        found.setdefault((row[0], export), []).append(ManifestRow(*row))
    return found


def active_deliveries(
    con: duckdb.DuckDBPyConnection, export: str, period: str
) -> list[ManifestRow]:
    rows = con.execute(
        "SELECT file_id, file_name, period, version, status, message FROM manifest "
        "WHERE export = ? AND period = ? AND status = 'active' ORDER BY version, file_name",
        [export, period],
    ).fetchall()
    return [ManifestRow(*r) for r in rows]
