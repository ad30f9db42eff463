"""Opening the project's DuckDB files: one function, one message when a file is busy.

DuckDB allows one read-write process *or* many read-only processes per file. When another
process holds the file, DuckDB says "Could not set lock on file ... Conflicting lock is held in
<program> (PID n)"; `connect` turns that into advice that names the file and the holder.

Files operators open with the DuckDB command line the project ships (`.venv/bin/duckdb`, from
PyPI's duckdb-cli, which lags the library) are kept in an older storage format it reads:
`connect(path, storage_version=CLI_STORAGE_VERSION)` creates them in it and rewrites one that a
newer library wrote (the DuckDB library keeps a file's format when it writes to it later).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import duckdb

# the storage format the shipped DuckDB CLI (duckdb-cli 1.5, formats up to v1.5) reads; the
# published warehouse is written in the same one (pipelines/lib/publish.py)
CLI_STORAGE_VERSION = "v1.2.0"


class WarehouseBusyError(RuntimeError):
    """Another process holds a lock on a warehouse file."""


_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def connect(
    path: Path | str, *, read_only: bool = False, storage_version: str | None = None
) -> duckdb.DuckDBPyConnection:
    """Open `path` (created when missing, unless read-only).

    With `storage_version` (read-write only), a missing file is created in that storage format
    and a file written in a newer one is rewritten in it first (`keep_storage_version`).
    """
    try:
        if storage_version is not None and not read_only:
            return keep_storage_version(Path(path), storage_version)
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise
        raise WarehouseBusyError(busy_message(Path(path), str(exc), read_only)) from None


def _version(text: str | None) -> tuple[int, ...]:
    """`v1.2.0+` -> (1, 2, 0); unknown -> ()."""
    return tuple(int(n) for n in re.findall(r"\d+", text or "")[:3])


def storage_version_of(con: duckdb.DuckDBPyConnection) -> str | None:
    """The storage format of the connection's database file (`v1.2.0+`), as DuckDB tags it."""
    row = con.execute(
        "select tags from duckdb_databases() where database_name = current_database()"
    ).fetchone()
    return (row[0] or {}).get("storage_version") if row else None


def keep_storage_version(path: Path, version: str) -> duckdb.DuckDBPyConnection:
    """A read-write connection to `path` in storage format `version` or older.

    A missing file is created in `version`. A file in a newer format (written by this library
    before it was pinned) is checkpointed, copied into a new file in `version` beside it and
    swapped in with `os.replace`: the same tables, rows and constraints; a crash before the swap
    leaves the old file as it was.
    """
    if not path.exists():
        with memory() as con:
            con.execute(
                f"attach {_literal(str(path))} as created (storage_version {_literal(version)})"
            )
    con = duckdb.connect(str(path))
    found = storage_version_of(con)
    if not _version(found) or _version(found) <= _version(version):
        return con
    con.close()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.rewrite")
    tmp.unlink(missing_ok=True)
    with memory() as copy:
        copy.execute(f"attach {_literal(str(path))} as old")
        copy.execute("checkpoint old")
        copy.execute(f"attach {_literal(str(tmp))} as new (storage_version {_literal(version)})")
        copy.execute("copy from database old to new")
        copy.execute("detach new")
        copy.execute("detach old")
    with open(tmp, "rb") as fh:
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    return duckdb.connect(str(path))


def memory() -> duckdb.DuckDBPyConnection:
    """A private in-memory database (CSV sniffing, copying between files)."""
    return duckdb.connect(":memory:")


def busy_message(path: Path, error: str, read_only: bool) -> str:
    match = _HOLDER.search(error)
    holder = f"{match['program']} (pid {match['pid']})" if match else "another process"
    if read_only:
        return (
            f"{path} is being written by {holder}; read it again when that run has finished, "
            "or read the published warehouse file, which runs never write in place."
        )
    return (
        f"{path} is held open by {holder}, so this run cannot write it. Close that connection "
        "(a notebook, a DuckDB CLI or BI tool should open the published file read-only, never "
        "this one) and run again."
    )


def describe(
    con: duckdb.DuckDBPyConnection, table: str, description: str, columns: dict[str, str]
) -> None:
    """Attach a table's and its columns' descriptions as DuckDB comments (publishing copies
    them into the analyst-facing file)."""
    con.execute(f"comment on table {table} is {_literal(description)}")
    present = {r[0] for r in con.execute(f"select * from {table} limit 0").description}
    for column, text in columns.items():
        if column in present:
            con.execute(f'comment on column {table}."{column}" is {_literal(text)}')


def _literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
