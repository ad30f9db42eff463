"""The restricted raw layer's tables: one per export, the manifest, the quarantine and the
retained names (empty until the retention policy pseudonymises a leaver).

The manifest is the memory that makes loading exactly-once: a file's sha256 is its identity,
so a re-run, a renamed copy or a re-delivery of the same bytes never loads a row twice.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from pipelines.lib.contracts import EXPORTS, Export
from pipelines.lib.ingest.profiles import CONTRACT_SOURCE
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
    period_source VARCHAR,             -- where the period came from: file name, sources.yml, data
    source_system VARCHAR,             -- the tool that wrote it (profile vendor, talent-metrics)
    replaced_rows BIGINT,              -- rows of the deliveries it superseded on loading
    replaced_files VARCHAR,            -- their file names
    archive_sha256 VARCHAR             -- sha256 of the archive copy when an erasure rewrote it
)
"""

# columns added after the first release: existing raw layers get them on the next run
MANIFEST_MIGRATIONS = (
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS profile VARCHAR",
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS period_source VARCHAR",
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS source_system VARCHAR",
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS replaced_rows BIGINT",
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS replaced_files VARCHAR",
    "ALTER TABLE manifest ADD COLUMN IF NOT EXISTS archive_sha256 VARCHAR",
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


# One row per full name the retention policy pseudonymised (`privacy.retention`): the retained
# form as it stands in the exports and the keyed pseudonym of the original normalised full name,
# as `stg_hris__person_names` computes `name_key` (never the name in clear). The link table
# counts the people of a retained name together with those who still bear the original name,
# so a name shared before retention stays ambiguous after it.
RETAINED_NAMES_DDL = """
CREATE TABLE IF NOT EXISTS retained_names (
    retained_name VARCHAR NOT NULL,    -- the pseudonymised full name (subjects.retained_value)
    name_key VARCHAR NOT NULL          -- pseudonym of the original normalised full name
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


def ensure_raw_schema(
    con: duckdb.DuckDBPyConnection, vendors: dict[str, str] | None = None
) -> None:
    """Create the manifest, the quarantine, the retained names and one table per export if they
    do not exist.

    Deliveries recorded before the manifest knew source systems get theirs from the profile
    that read them (`vendors`: profile name -> vendor; a profile not listed stands for itself)
    or, read by the contract, our own format.
    """
    con.execute(MANIFEST_DDL)
    for statement in MANIFEST_MIGRATIONS:
        con.execute(statement)
    unset = con.execute(
        "SELECT DISTINCT profile FROM manifest WHERE source_system IS NULL"
    ).fetchall()
    for (profile,) in unset:
        if profile is None or profile.startswith("contract-"):
            system = CONTRACT_SOURCE
        else:
            system = (vendors or {}).get(profile, profile)
        con.execute(
            "UPDATE manifest SET source_system = ? WHERE source_system IS NULL "
            "AND profile IS NOT DISTINCT FROM ?",
            [system, profile],
        )
    con.execute(QUARANTINE_DDL)
    con.execute(RETAINED_NAMES_DDL)
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
    rows_loaded: int = 0


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
    con: duckdb.DuckDBPyConnection, export: str, source_system: str, period: str
) -> list[ManifestRow]:
    """The active deliveries of one delivery series: (export, source system, period)."""
    rows = con.execute(
        "SELECT file_id, file_name, period, version, status, message, rows_loaded FROM manifest "
        "WHERE export = ? AND source_system = ? AND period = ? AND status = 'active' "
        "ORDER BY version, file_name",
        [export, source_system, period],
    ).fetchall()
    return [ManifestRow(*r) for r in rows]
