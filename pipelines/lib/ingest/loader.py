"""Load a sources folder into the restricted raw layer exactly once.

Per file, in one DuckDB transaction: typed rows into `<export>`, rejected rows into
`quarantine`, the manifest row, and the supersede marks on earlier deliveries of the same
(export, period). A file that cannot be read is recorded as `failed` and changes nothing else,
so one bad delivery never blocks or destroys good data. The archive keeps a content-addressed
copy of every delivery; `rebuild_raw_from_archive` replays it.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pyarrow as pa

from pipelines.lib import db
from pipelines.lib.contracts import EXPORTS, parse_file_name
from pipelines.lib.failpoints import failpoint
from pipelines.lib.ingest.manifest import (
    QUARANTINE_DDL,
    active_deliveries,
    ensure_raw_schema,
    export_table_ddl,
    known_deliveries,
)
from pipelines.lib.ingest.reader import (
    FileError,
    ParsedFile,
    SplitFile,
    split_export_bytes,
    type_split_files,
)
from pipelines.lib.settings import Settings


class SourcesNotFound(FileNotFoundError):
    """The configured sources folder does not exist."""


@dataclass
class IngestResult:
    export: str
    files_seen: int = 0
    files_loaded: int = 0
    files_skipped: int = 0
    files_superseded: int = 0
    files_failed: list[tuple[str, str]] = field(default_factory=list)  # (file name, message)
    rows_loaded: int = 0
    rows_quarantined: int = 0
    unknown_files: list[str] = field(default_factory=list)  # relative to the sources folder

    @property
    def quarantine_share(self) -> float:
        total = self.rows_loaded + self.rows_quarantined
        return self.rows_quarantined / total if total else 0.0


@dataclass(frozen=True)
class Delivery:
    export: str
    period: str
    version: int
    path: Path

    @property
    def sort_key(self) -> tuple[str, str, int, str]:
        return (self.export, self.period, self.version, self.path.name)


# --- discovery -------------------------------------------------------------------------------


def discover(sources_dir: Path, export: str) -> tuple[list[Delivery], list[str]]:
    """Contract files of `export` in its folder, in load order, and the folder's unknown files.

    A file whose name matches no contract (or a contract of another folder) is reported, never
    dropped silently: it is usually a misnamed delivery that someone expects to see loaded.
    """
    if not sources_dir.is_dir():
        raise SourcesNotFound(
            f"sources folder {sources_dir} does not exist. Set TALENT_SOURCES to the folder "
            "holding hris/ lms/ incidents/ fleet/, or run `python -m tools generate` (in a checkout) to write a synthetic company."
        )
    folder = EXPORTS[export].folder
    directory = sources_dir / folder
    deliveries: list[Delivery] = []
    unknown: list[str] = []
    if not directory.is_dir():
        return deliveries, unknown
    for path in sorted(directory.iterdir()):
        if path.name.startswith(".") or not path.is_file():
            continue
        parsed = parse_file_name(path.name)
        if parsed is None or EXPORTS[parsed[0]].folder != folder:
            unknown.append(f"{folder}/{path.name}")
        elif parsed[0] == export:
            deliveries.append(Delivery(parsed[0], parsed[1], parsed[2], path))
    deliveries.sort(key=lambda d: d.sort_key)
    return deliveries, unknown


# --- archive ---------------------------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def archive_relpath(export: str, file_id: str) -> str:
    return f"archive/{export}/{file_id}.csv"


def archive_copy(settings: Settings, export: str, file_id: str, data: bytes) -> str:
    """Write the delivered bytes once under their hash; atomic, so a crash leaves no half file."""
    rel = archive_relpath(export, file_id)
    target = settings.warehouse_dir / rel
    if not target.exists():
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(".part")
        tmp.write_bytes(data)
        os.replace(tmp, target)
    return rel


# --- inserting one parsed file ----------------------------------------------------------------


def _insert_rows(
    con: duckdb.DuckDBPyConnection,
    parsed: ParsedFile,
    file_id: str,
    period: str,
    version: int,
    loaded_at: datetime,
) -> None:
    """Bulk-insert typed rows and rejected rows (Arrow, never row by row)."""
    rows = parsed.rows
    con.register("_ingest_rows", rows)
    try:
        con.execute(
            f'INSERT INTO "{parsed.export}" BY NAME '
            "SELECT *, ? AS _file_id, ? AS _period, ? AS _version FROM _ingest_rows",
            [file_id, period, version],
        )
    finally:
        con.unregister("_ingest_rows")
    if parsed.rejected:
        n = len(parsed.rejected)
        quarantine = pa.table(
            {
                "file_id": [file_id] * n,
                "export": [parsed.export] * n,
                "file_name": [parsed.file_name] * n,
                "line_number": pa.array([r.line_number for r in parsed.rejected], type=pa.int64()),
                "raw_line": [r.raw_line for r in parsed.rejected],
                "reason": [r.reason for r in parsed.rejected],
                "quarantined_at": pa.array([loaded_at] * n, type=pa.timestamp("us")),
            }
        )
        con.register("_ingest_quarantine", quarantine)
        try:
            con.execute("INSERT INTO quarantine BY NAME SELECT * FROM _ingest_quarantine")
        finally:
            con.unregister("_ingest_quarantine")


def _insert_manifest(con: duckdb.DuckDBPyConnection, **row: object) -> None:
    cols = list(row)
    con.execute(
        f"INSERT INTO manifest ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        list(row.values()),
    )


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


@dataclass
class _Plan:
    """What to do with one delivery, decided before the bulk typing step."""

    delivery: Delivery
    file_id: str
    size_bytes: int
    archive_path: str
    split: SplitFile | None = None  # new content, read (until typed)
    error: str | None = None  # new content that cannot be read
    parsed: ParsedFile | None = None  # new content, typed; all three None = a duplicate


def plan_deliveries(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    deliveries: list[Delivery],
    result: IngestResult,
) -> list[_Plan]:
    """Hash every file, skip what the manifest already holds, archive and split the rest."""
    plans: list[_Plan] = []
    new_in_run: set[str] = set()
    for delivery in deliveries:
        data = delivery.path.read_bytes()
        file_id = sha256_hex(data)
        name = delivery.path.name
        seen = known_deliveries(con, file_id)
        same_name = next((m for m in seen if m.file_name == name), None)
        if same_name is not None:  # this very delivery was handled by an earlier run
            if same_name.status == "failed":
                result.files_failed.append((name, same_name.message or "failed earlier"))
            else:
                result.files_skipped += 1
            continue
        plan = _Plan(delivery, file_id, len(data), archive_relpath(delivery.export, file_id))
        if not seen and file_id not in new_in_run:
            new_in_run.add(file_id)
            plan.archive_path = archive_copy(settings, delivery.export, file_id, data)
            try:
                plan.split = split_export_bytes(data, delivery.export, name)
            except FileError as e:
                plan.error = str(e)
        plans.append(plan)
    return plans


def load_plan(con: duckdb.DuckDBPyConnection, plan: _Plan, result: IngestResult) -> None:
    """Record one delivery in ONE transaction: rows, quarantine, manifest, supersede marks."""
    delivery, file_id, name = plan.delivery, plan.file_id, plan.delivery.path.name
    loaded_at = _now()
    base = dict(
        file_id=file_id,
        export=delivery.export,
        file_name=name,
        source_path=str(delivery.path),
        archive_path=plan.archive_path,
        period=delivery.period,
        version=delivery.version,
        size_bytes=plan.size_bytes,
        loaded_at=loaded_at,
    )
    empty = dict(rows_total=0, rows_loaded=0, rows_quarantined=0)
    con.begin()
    try:
        if plan.parsed is None and plan.error is None:
            # same bytes as a delivery already recorded (earlier run or earlier in this run)
            first = known_deliveries(con, file_id)[0]
            if first.status == "failed":
                status, message = "failed", f"same content as {first.file_name}: {first.message}"
                result.files_failed.append((name, message))
            else:
                status = "duplicate"
                message = (
                    f"same content as {first.file_name} (status {first.status}); nothing loaded"
                )
                result.files_skipped += 1
            _insert_manifest(con, **base, **empty, status=status, message=message)
        elif plan.error is not None:
            _insert_manifest(con, **base, **empty, status="failed", message=plan.error)
            result.files_failed.append((name, plan.error))
        else:
            _load_parsed(con, plan, base, result)
            failpoint("ingest:before_commit")
        con.commit()
    except BaseException:
        con.rollback()
        raise


def _load_parsed(
    con: duckdb.DuckDBPyConnection, plan: _Plan, base: dict, result: IngestResult
) -> None:
    delivery, parsed = plan.delivery, plan.parsed
    assert parsed is not None
    active = active_deliveries(con, delivery.export, delivery.period)
    newer = [m for m in active if m.version > delivery.version]
    status, superseded_by = "active", None
    if newer:
        # a late re-delivery of an older version: kept for history, never counted
        status, superseded_by = "superseded", newer[-1].file_id
        result.files_superseded += 1
    elif active:
        con.execute(
            "UPDATE manifest SET status = 'superseded', superseded_by = ? "
            "WHERE export = ? AND period = ? AND status = 'active' AND version <= ?",
            [plan.file_id, delivery.export, delivery.period, delivery.version],
        )
        result.files_superseded += len(active)
    _insert_rows(con, parsed, plan.file_id, delivery.period, delivery.version, base["loaded_at"])
    notes = []
    if parsed.ignored_columns:
        notes.append(
            "columns not in the contract kept in _extra: " + ", ".join(parsed.ignored_columns)
        )
    if superseded_by:
        notes.append("arrived after a higher version of the same period; kept as superseded")
    _insert_manifest(
        con,
        **base,
        rows_total=parsed.rows_total,
        rows_loaded=parsed.rows.num_rows,
        rows_quarantined=len(parsed.rejected),
        encoding=parsed.encoding,
        locale=parsed.locale,
        delimiter=parsed.delimiter,
        status=status,
        superseded_by=superseded_by,
        message="; ".join(notes) or None,
    )
    result.files_loaded += 1
    result.rows_loaded += parsed.rows.num_rows
    result.rows_quarantined += len(parsed.rejected)


def load_deliveries(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    deliveries: list[Delivery],
    result: IngestResult,
) -> None:
    """Plan, type all new files in bulk, then record each file in its own transaction."""
    plans = plan_deliveries(con, settings, deliveries, result)
    readable = [p for p in plans if p.split is not None]
    if readable:
        for plan, parsed in zip(
            readable, type_split_files([p.split for p in readable], con), strict=True
        ):
            plan.parsed = parsed
            plan.split = None  # free the text
    for plan in plans:
        load_plan(con, plan, result)


# --- public API ------------------------------------------------------------------------------


def ingest_export(settings: Settings, export: str) -> IngestResult:
    """Load every new delivery of one export; the connection is closed before returning."""
    if export not in EXPORTS:
        raise KeyError(f"unknown export {export!r}; known: {', '.join(EXPORTS)}")
    deliveries, unknown = discover(settings.sources_dir, export)
    result = IngestResult(export=export, files_seen=len(deliveries), unknown_files=unknown)
    settings.warehouse_dir.mkdir(parents=True, exist_ok=True)
    with db.connect(settings.raw_db) as con:
        ensure_raw_schema(con)
        load_deliveries(con, settings, deliveries, result)
    return result


def ingest_all(settings: Settings) -> dict[str, IngestResult]:
    """`ingest_export` for every export of the contracts, in contract order."""
    return {name: ingest_export(settings, name) for name in EXPORTS}


def table_row_count(settings: Settings, table: str) -> int:
    with db.connect(settings.raw_db, read_only=True) as con:
        return con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


def rebuild_raw_from_archive(settings: Settings) -> dict[str, int]:
    """Drop and recreate the export tables and the quarantine from the archived files.

    The manifest is the list to replay (active and superseded deliveries, in load order); it is
    left as it is. Every archive file is checked against its hash before anything is dropped,
    so a missing or altered archive aborts with the data untouched. Returns rows per export.
    """
    with db.connect(settings.raw_db) as con:
        ensure_raw_schema(con)
        plan = con.execute(
            "SELECT file_id, export, file_name, archive_path, period, version, loaded_at "
            "FROM manifest WHERE status IN ('active', 'superseded') "
            "ORDER BY export, period, version, file_name"
        ).fetchall()
        payloads: list[tuple[tuple, bytes]] = []
        for row in plan:
            file_id, export, file_name, archive_path = row[:4]
            path = settings.warehouse_dir / archive_path
            if not path.is_file():
                raise FileNotFoundError(
                    f"archive copy of {file_name} ({archive_path}) is missing; the raw layer "
                    "was not changed. Restore the archive folder from backup before rebuilding."
                )
            data = path.read_bytes()
            if sha256_hex(data) != file_id:
                raise ValueError(
                    f"archive copy of {file_name} ({archive_path}) does not match its sha256; "
                    "the raw layer was not changed. Restore the archive folder from backup."
                )
            payloads.append((row, data))
        con.begin()
        try:
            for export in EXPORTS.values():
                con.execute(f'DROP TABLE IF EXISTS "{export.name}"')
                con.execute(export_table_ddl(export))
            con.execute("DROP TABLE IF EXISTS quarantine")
            con.execute(QUARANTINE_DDL)
            for export in EXPORTS:
                mine = [(row, data) for row, data in payloads if row[1] == export]
                if not mine:
                    continue
                splits = [split_export_bytes(data, export, row[2]) for row, data in mine]
                for (row, _), parsed in zip(mine, type_split_files(splits, con), strict=True):
                    file_id, _, _, _, period, version, loaded_at = row
                    _insert_rows(con, parsed, file_id, period, version, loaded_at)
            con.commit()
        except BaseException:
            con.rollback()
            raise
        return {
            name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in EXPORTS
        }
