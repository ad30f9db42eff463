"""Fingerprints of a step's inputs: a step whose inputs did not change keeps its output tables.

A fingerprint covers the content of the input tables (row count and an order-independent sum of
row hashes), the code that computes the output (the source files of its package) and any other
input passed as text (settings, an assumptions file). It is stored beside the outputs, in the
same DuckDB file (`main._step_fingerprints`), so a rebuilt file has none and the step runs.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import duckdb

TABLE = "main._step_fingerprints"


def package_source(package: str) -> str:
    """A digest of the package's Python files, found without importing the package."""
    spec = importlib.util.find_spec(package)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(package)
    digest = hashlib.sha256()
    folder = Path(spec.origin).parent
    for path in sorted(folder.rglob("*.py")):
        digest.update(path.relative_to(folder).as_posix().encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def inputs_fingerprint(con: duckdb.DuckDBPyConnection, tables: Iterable[str], *extra: str) -> str:
    """The fingerprint of `tables` (schema.table) and the `extra` texts."""
    return queries_fingerprint(con, {table: f"select * from {table}" for table in tables}, *extra)


def all_tables_fingerprint(con: duckdb.DuckDBPyConnection, *extra: str) -> str:
    """The fingerprint of every table in the connection's `main` schema (content, by name) and
    the `extra` texts: for a step that reads a whole file, such as the raw layer."""
    tables = [
        f'main."{name}"'
        for (name,) in con.execute(
            "select table_name from duckdb_tables() where schema_name = 'main' order by 1"
        ).fetchall()
    ]
    return inputs_fingerprint(con, tables, *extra)


def queries_fingerprint(
    con: duckdb.DuckDBPyConnection, queries: Mapping[str, str], *extra: str
) -> str:
    """The fingerprint of what each select in `queries` (name -> SQL) returns, and the `extra`
    texts: for a step that reads part of its tables (some columns, some rows)."""
    digest = hashlib.sha256()
    for name, sql in queries.items():
        ((rows, hashed),) = con.execute(
            f"select count(*), coalesce(sum(hash(t)::hugeint), 0) from ({sql}) as t"
        ).fetchall()
        digest.update(f"{name}\t{rows}\t{hashed}\n".encode())
    for text in extra:
        digest.update(hashlib.sha256(text.encode()).digest())
    return digest.hexdigest()


def _exists(con: duckdb.DuckDBPyConnection, table: str) -> bool:
    schema, name = table.split(".", 1)
    found = con.execute(
        "select count(*) from information_schema.tables where table_schema = ? and table_name = ?",
        [schema, name],
    ).fetchall()
    return bool(found[0][0])


def is_current(
    con: duckdb.DuckDBPyConnection, step: str, fingerprint: str, outputs: Sequence[str]
) -> bool:
    """True when every output table exists and was computed from inputs with this fingerprint."""
    if not _exists(con, TABLE) or not all(_exists(con, t) for t in outputs):
        return False
    rows = con.execute(f"select fingerprint from {TABLE} where step = ?", [step]).fetchall()
    return bool(rows) and rows[0][0] == fingerprint


def remember(con: duckdb.DuckDBPyConnection, step: str, fingerprint: str) -> None:
    """Record the fingerprint of the inputs `step` just computed its outputs from."""
    con.execute(
        f"create table if not exists {TABLE} (step varchar primary key, fingerprint varchar)"
    )
    con.execute(f"insert or replace into {TABLE} values (?, ?)", [step, fingerprint])


def forget(con: duckdb.DuckDBPyConnection, step: str) -> None:
    """Drop `step`'s fingerprint: its outputs are about to change, and until it succeeds they
    were computed from no known inputs."""
    if _exists(con, TABLE):
        con.execute(f"delete from {TABLE} where step = ?", [step])
