"""Opening the project's DuckDB files: one function, one message when a file is busy.

DuckDB allows one read-write process *or* many read-only processes per file. When another
process holds the file, DuckDB says "Could not set lock on file ... Conflicting lock is held in
<program> (PID n)"; `connect` turns that into advice that names the file and the holder.
"""

from __future__ import annotations

import re
from pathlib import Path

import duckdb


class WarehouseBusyError(RuntimeError):
    """Another process holds a lock on a warehouse file."""


_HOLDER = re.compile(r"Conflicting lock is held in (?P<program>.+?) \(PID (?P<pid>\d+)\)")


def connect(path: Path | str, *, read_only: bool = False) -> duckdb.DuckDBPyConnection:
    """Open `path` (created when missing, unless read-only)."""
    try:
        return duckdb.connect(str(path), read_only=read_only)
    except duckdb.IOException as exc:
        if "lock" not in str(exc).lower():
            raise
        raise WarehouseBusyError(busy_message(Path(path), str(exc), read_only)) from None


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
