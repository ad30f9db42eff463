"""Erasure of people from every file of the warehouse, all or nothing (GDPR article 17).

One erasure, for a person or a list of people (`Subject`):

1. **Stage.** Each archived file holding their rows is written again without them
   (`rewrite.rewrite_records`) under its new hash, beside the old copy; a new raw file,
   `raw.duckdb.erasing`, gets the manifest (each rewritten file's `archive_path` and
   `archive_sha256` now the new copy's, `file_id` still the delivered file's hash so that the
   same file delivered again is recognised as loaded), the erasure log with this erasure's
   row, and every export and the quarantine read again from the archive. Nothing the
   warehouse reads has changed yet.
2. **Commit.** `raw.duckdb.erasing` is renamed onto `raw.duckdb`: one atomic rename.
3. **Clean up.** Archive copies the manifest no longer names are deleted, the build file
   (`build/talent.duckdb`, which the next run builds again from scratch) and the quality
   folder (kept outcomes and Data Docs, which quote rows) are removed; the caller then runs the
   nightly, which rebuilds the marts and publishes them.

A journal (`<warehouse>/erasure.json`, the erasure's id and reference, nothing about the
person) exists from before step 1 until step 3 is done. A run or an erasure that finds it
(`recover`) looks whether `raw.duckdb` holds that erasure: if not, it was killed before the
commit, and the staged files are removed (the warehouse is as it was); if so, it was killed
after, and the clean-up is finished. Either way it says so.

A new file (a database rewritten from the start, never a table deleted from in place) means the
erased rows are not left in the freed blocks of a database file.
"""

from __future__ import annotations

import getpass
import json
import os
import shutil
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.lib import db
from pipelines.lib.failpoints import failpoint
from pipelines.lib.ingest.loader import archive_relpath, rebuild_raw_from_archive, sha256_hex
from pipelines.lib.ingest.manifest import ensure_raw_schema
from pipelines.lib.ingest.reader import FileError
from pipelines.lib.privacy.crypto import cipher_of
from pipelines.lib.privacy.rewrite import FieldEdit, Matcher, blank_mentions, rewrite_records
from pipelines.lib.privacy.subjects import (
    SUBJECT_COLUMNS,
    Subject,
    quarantined_lines,
    referring_files,
    subject_lines,
)
from pipelines.lib.settings import Settings

JOURNAL = "erasure.json"
STAGED_RAW = "raw.duckdb.erasing"

ERASURES_DDL = """
CREATE TABLE IF NOT EXISTS erasures (
    erasure_id VARCHAR NOT NULL,       -- one per erasure
    erased_at TIMESTAMP NOT NULL,      -- UTC
    reason VARCHAR NOT NULL,           -- request (talent erase) or retention
    reference VARCHAR,                 -- the request's reference (a ticket), as the operator gave it
    requested_by VARCHAR,              -- who ran it
    kind VARCHAR NOT NULL,             -- id, email or name
    value_hash VARCHAR NOT NULL,       -- keyed hash (subjects.keyed_hash); never the value
    rows_removed BIGINT,               -- raw rows of the erasure, on its first row
    files_rewritten BIGINT             -- archived files written again, on its first row
)
"""


class ErasureError(RuntimeError):
    """An erasure cannot go ahead; nothing was changed."""


@dataclass
class ErasureResult:
    erasure_id: str
    rows_removed: int = 0
    files_rewritten: int = 0
    notes: list[str] = field(default_factory=list)


@dataclass
class Edits:
    """What an erasure does to a file: `drop` the person's records (by line), or edit fields
    (`own`: the person's records, `other`: everyone else's)."""

    matcher: Matcher
    drop_own: bool = True
    own: FieldEdit | None = None
    other: FieldEdit | None = None
    # whether the staged raw file must hold none of the person's rows (not after a salary
    # removal, which leaves the person)
    verify: bool = True
    # rows for `raw.retained_names` (retained full name -> name_key of the original name), kept
    # with the erasure's log row (retention only)
    retained_names: dict[str, str] = field(default_factory=dict)


def ensure_erasures(con: duckdb.DuckDBPyConnection) -> None:
    con.execute(ERASURES_DDL)


def erase(
    settings: Settings,
    subject: Subject,
    reference: str | None,
    reason: str = "request",
    edits: Edits | None = None,
    requested_by: str | None = None,
) -> ErasureResult:
    """Stage, commit and clean up one erasure (the caller holds the warehouse lock and has
    called `recover`). The marts are rebuilt by the next nightly."""
    edits = edits or Edits(subject, other=blank_mentions(subject))
    result = ErasureResult(uuid.uuid4().hex)
    journal = settings.warehouse_dir / JOURNAL
    _write_journal(journal, result.erasure_id, reference, reason)
    staged = settings.warehouse_dir / STAGED_RAW
    _checkpoint(settings.raw_db)
    with db.connect(settings.raw_db, read_only=True) as con:
        moves = _rewrite_archive(con, settings, subject, edits, result)
        result.rows_removed = _rows_of(con, subject)
    _stage_raw(settings, staged, moves, subject, reference, (reason, requested_by), edits, result)
    if edits.verify:
        _verify_gone(staged, subject, reason)
    failpoint("erase:staged")
    os.replace(staged, settings.raw_db)  # the commit
    failpoint("erase:committed")
    clean_up(settings)
    journal.unlink(missing_ok=True)
    return result


def _write_journal(journal: Path, erasure_id: str, reference: str | None, reason: str) -> None:
    tmp = journal.with_suffix(".part")
    tmp.write_text(json.dumps({"erasure_id": erasure_id, "reference": reference, "reason": reason}))
    os.replace(tmp, journal)


def _checkpoint(raw_db: Path) -> None:
    """Fold a write-ahead log left by a killed load into the file: the staged copy replaces
    the file, and a log left beside it would be replayed onto the wrong file."""
    if raw_db.with_name(raw_db.name + ".wal").exists():
        with db.connect(raw_db, storage_version=db.CLI_STORAGE_VERSION) as con:
            con.execute("CHECKPOINT")


def _rewrite_archive(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    subject: Subject,
    edits: Edits,
    result: ErasureResult,
) -> dict[str, tuple[str, str]]:
    """old archive path -> (new archive path, its sha256), for every archived file that names
    the person; the new copies are written, the old ones left until the commit."""
    lines = subject_lines(con, subject) if edits.drop_own else {}
    own = subject_lines(con, subject) if edits.own else {}
    for file_id, found in quarantined_lines(con, subject).items():
        lines.setdefault(file_id, set()).update(found)
    touched = set(lines) | set(own) | referring_files(con, subject)
    rows = con.execute(
        "SELECT DISTINCT file_id, export, file_name, archive_path, status FROM manifest "
        "WHERE archive_path IS NOT NULL ORDER BY archive_path"
    ).fetchall()
    loaded = {f for (f,) in con.execute("SELECT DISTINCT _file_id FROM employees").fetchall()}
    loaded |= {
        f
        for (f,) in con.execute(
            "SELECT DISTINCT file_id FROM manifest WHERE status IN ('active', 'superseded')"
        ).fetchall()
    }
    cipher = cipher_of(settings)
    moves: dict[str, tuple[str, str]] = {}
    for file_id, export, name, path, status in rows:
        if path in moves or not (settings.warehouse_dir / path).is_file():
            continue
        unloaded = status in ("failed", "duplicate") and file_id not in loaded
        if file_id not in touched and not unloaded:
            continue
        data = cipher.read(settings.warehouse_dir / path, settings.warehouse_dir)
        drop = lines.get(file_id, set())
        new = _rewritten(data, name, drop, own.get(file_id, set()), edits, unloaded)
        if new is None or new == data:
            continue
        digest = sha256_hex(new)
        suffix = ".csv" if path.endswith(".xlsx") else Path(path).suffix
        target = archive_relpath(export, digest, suffix)
        cipher.write(settings.warehouse_dir / target, new)
        moves[path] = (target, digest)
        result.files_rewritten += 1
    return moves


def _rewritten(
    data: bytes, name: str, drop: set[int], own: set[int], edits: Edits, unloaded: bool
) -> bytes | None:
    own_edits = dict.fromkeys(own, edits.own) if edits.own else None
    other = edits.other or (lambda value: None)
    try:
        new, _ = rewrite_records(
            data, name, drop, other, edits.matcher, own_edits, unloaded and edits.drop_own
        )
    except FileError:
        # a file that failed as a whole (nothing of it was loaded): its lines that name the
        # person go, the rest stays as delivered
        text = data.decode("utf-8", errors="surrogateescape")
        kept = [line for line in text.split("\n") if not edits.matcher.mentioned_in(line)]
        new = "\n".join(kept).encode("utf-8", errors="surrogateescape")
    return new


def _rows_of(con: duckdb.DuckDBPyConnection, subject: Subject) -> int:
    return sum(len(v) for v in subject_lines(con, subject).values())


def _stage_raw(
    settings: Settings,
    staged: Path,
    moves: dict[str, tuple[str, str]],
    subject: Subject,
    reference: str | None,
    by: tuple[str, str | None],
    edits: Edits,
    result: ErasureResult,
) -> None:
    """The new raw file: manifest (pointing at the new copies), other tables, the erasure log
    with this erasure and the names it retained, then every export and the quarantine read
    from the archive. `by`: the reason and who asked."""
    for leftover in (staged, staged.with_name(staged.name + ".wal")):
        leftover.unlink(missing_ok=True)
    with db.connect(staged, storage_version=db.CLI_STORAGE_VERSION) as con:
        quoted = str(settings.raw_db).replace("'", "''")
        con.execute(f"ATTACH '{quoted}' AS old (READ_ONLY)")
        ensure_raw_schema(con)
        ensure_erasures(con)
        (here,) = con.execute("SELECT current_database()").fetchone()
        ours = {t for (t,) in con.execute(_TABLES, [here]).fetchall()}
        skip = {"quarantine", *_export_tables()}
        for (table,) in con.execute(_TABLES, ["old"]).fetchall():
            if table in skip:
                continue
            if table in ours:
                con.execute(f'INSERT INTO "{table}" BY NAME SELECT * FROM old."{table}"')
            else:
                con.execute(f'CREATE TABLE "{table}" AS SELECT * FROM old."{table}"')
        for old, (new, digest) in moves.items():
            con.execute(
                "UPDATE manifest SET archive_path = ?, archive_sha256 = ? WHERE archive_path = ?",
                [new, digest, old],
            )
        _log_erasure(con, settings, subject, reference, *by, result)
        _keep_retained_names(con, edits.retained_names)
        con.execute("DETACH old")
    rebuild_raw_from_archive(settings, raw_db=staged)
    with db.connect(staged) as con:
        _recount(con, sorted(new for new, _ in moves.values()))


def _recount(con: duckdb.DuckDBPyConnection, paths: list[str]) -> None:
    """The rows each rewritten copy gives now, in its manifest rows (what `source_deliveries`
    and the raw data versions count), as a load of that copy would have recorded them."""
    if not paths:
        return
    for export in _export_tables():
        con.execute(
            f"""
            UPDATE manifest AS m SET
                rows_loaded = (SELECT count(*) FROM "{export}" AS r WHERE r._file_id = m.file_id),
                rows_quarantined = (SELECT count(*) FROM quarantine AS q
                                    WHERE q.file_id = m.file_id AND q.export = m.export)
            WHERE m.export = ? AND list_contains(?, m.archive_path)
              AND m.status IN ('active', 'superseded')
            """,
            [export, paths],
        )
    con.execute(
        "UPDATE manifest SET rows_total = rows_loaded + rows_quarantined "
        "WHERE list_contains(?, archive_path) AND status IN ('active', 'superseded')",
        [paths],
    )


_TABLES = "SELECT table_name FROM duckdb_tables() WHERE database_name = ?"


def _export_tables() -> list[str]:
    from pipelines.lib.contracts import EXPORTS

    return list(EXPORTS)


def _log_erasure(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    subject: Subject,
    reference: str | None,
    reason: str,
    requested_by: str | None,
    result: ErasureResult,
) -> None:
    now = datetime.now(UTC).replace(tzinfo=None)
    who = requested_by or _user()
    hashes = subject.hashes(settings.pseudonym_key) or [("none", "")]
    for i, (kind, value_hash) in enumerate(hashes):
        con.execute(
            "INSERT INTO erasures VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                result.erasure_id,
                now,
                reason,
                reference,
                who,
                kind,
                value_hash,
                result.rows_removed if i == 0 else None,
                result.files_rewritten if i == 0 else None,
            ],
        )


def _keep_retained_names(con: duckdb.DuckDBPyConnection, names: dict[str, str]) -> None:
    """Each retained full name once, with the name_key of the name it replaced."""
    for retained, name_key in sorted(names.items()):
        con.execute(
            "INSERT INTO retained_names SELECT ?, ? WHERE NOT EXISTS "
            "(SELECT 1 FROM retained_names WHERE retained_name = ?)",
            [retained, name_key, retained],
        )


def _user() -> str:
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return "unknown"


def _verify_gone(staged: Path, subject: Subject, reason: str) -> None:
    """The staged raw file must hold none of the person's rows (else nothing is committed)."""
    with db.connect(staged, read_only=True) as con:
        left = _rows_of(con, subject) + sum(
            len(v) for v in quarantined_lines(con, subject).values()
        )
    if left:
        staged.unlink(missing_ok=True)
        raise ErasureError(
            f"after rewriting the archive, {left} row(s) of the person are still read from it "
            f"({reason}); nothing was changed. This is a defect: keep the warehouse as it is and "
            "report it."
        )


def clean_up(settings: Settings) -> list[str]:
    """What the committed erasure leaves to remove (idempotent): archive copies the manifest no
    longer names, the build file and the quality folder. Returns what was removed."""
    removed: list[str] = []
    with db.connect(settings.raw_db, read_only=True) as con:
        named = {
            p for (p,) in con.execute("SELECT DISTINCT archive_path FROM manifest").fetchall() if p
        }
    if settings.archive_dir.is_dir():
        for path in sorted(settings.archive_dir.rglob("*")):
            rel = path.relative_to(settings.warehouse_dir).as_posix()
            if path.is_file() and rel not in named:
                path.unlink()
                removed.append(rel)
    build = settings.build_db
    for path in (build, build.with_name(build.name + ".wal")):
        if path.exists():
            path.unlink()
            removed.append(str(path.relative_to(settings.warehouse_dir)))
    if settings.quality_dir.exists():
        shutil.rmtree(settings.quality_dir)
        removed.append(settings.quality_dir.name + "/")
    return removed


def recover(settings: Settings, say: Callable[[str], None]) -> None:
    """Finish or undo an erasure that was killed (its journal is still there), and say which."""
    journal = settings.warehouse_dir / JOURNAL
    if not journal.exists():
        return
    entry = json.loads(journal.read_text() or "{}")
    erasure_id, ref = entry.get("erasure_id"), entry.get("reference") or "no reference"
    staged = settings.warehouse_dir / STAGED_RAW
    for path in (staged, staged.with_name(staged.name + ".wal")):
        path.unlink(missing_ok=True)
    committed = False
    if settings.raw_db.exists():
        with db.connect(settings.raw_db, read_only=True) as con:
            tables = {
                t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()
            }
            if "erasures" in tables:
                committed = bool(
                    con.execute(
                        "SELECT count(*) FROM erasures WHERE erasure_id = ?", [erasure_id]
                    ).fetchone()[0]
                )
    if committed:
        clean_up(settings)
        say(
            f"an erasure ({entry.get('reason')}, {ref}, id {erasure_id}) was interrupted after it "
            "took effect: the person is out of the archive and the raw layer; its clean-up "
            "(old archive copies, the build file, the quality folder) is finished now and this "
            "run rebuilds the marts without them."
        )
    else:
        _drop_unnamed_archive(settings)
        say(
            f"an erasure ({entry.get('reason')}, {ref}, id {erasure_id}) was interrupted before "
            "it took effect: nothing of it was applied and the files it had staged are removed; "
            "the warehouse is as it was. Run `talent erase` again."
        )
    journal.unlink()


def _drop_unnamed_archive(settings: Settings) -> None:
    if not settings.raw_db.exists() or not settings.archive_dir.is_dir():
        return
    with db.connect(settings.raw_db, read_only=True) as con:
        named = {
            p for (p,) in con.execute("SELECT DISTINCT archive_path FROM manifest").fetchall() if p
        }
    for path in settings.archive_dir.rglob("*"):
        if path.is_file() and path.relative_to(settings.warehouse_dir).as_posix() not in named:
            path.unlink()


def subject_columns() -> dict[str, dict[str, str]]:
    return SUBJECT_COLUMNS
