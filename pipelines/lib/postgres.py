"""PostgreSQL as a target: the published marts for analysts, and raw tables for dbt-postgres.

Three movements of tables between a local DuckDB file and a PostgreSQL database, each inside one
transaction so that a reader never sees half of one:

- `stage_publish`: schema `marts` of the (already checked) published file into the serving
  database. Each mart whose columns are unchanged is emptied and refilled in place (`delete`,
  then COPY), new marts are created, each with its grain as primary key or unique constraint;
  the caller commits after the DuckDB file is swapped in too (`pipelines.lib.publish`). Until
  the commit every other session reads the previous rows; no reader's lock conflicts with a
  refill, so readers never wait on the publish nor the publish on them, and views analysts
  built on the marts (`analyst_views`) stay valid. A mart whose columns changed is replaced
  (`pipelines.lib.serving.replace_table`). A publish that fails or is killed midway is rolled
  back by the server.
- `load_raw`: the raw tables into schema `raw` of the database dbt-postgres builds in
  (`--build-target postgres`): ingestion stays local, dbt reads its sources there.
- `mirror_to_duckdb`: the tables dbt built there back into the local build file, where the
  statistics, ROI and report steps read them as after a DuckDB build.

Data travels as CSV through COPY (psycopg2's `copy_expert`), the fastest path PostgreSQL offers,
with explicit column types on both sides. Passwords never appear here: a DSN names host, port,
user and database, and libpq takes the password from PGPASSWORD (or ~/.pgpass).
"""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import psycopg2
import psycopg2.extensions
from psycopg2 import sql

from pipelines.lib import db
from pipelines.lib.failpoints import failpoint

PUBLISHED_SCHEMA = "marts"
STAGING_SUFFIX = "__publishing"
# Schemas that hold restricted data: never in the database analysts connect to.
RESTRICTED_SCHEMAS = ("raw", "staging", "intermediate", "restricted")
# The longest any statement of a publish may wait for a lock before the publish gives up (and
# rolls back: the previous marts stay). Refreshing a mart in place takes no lock a reader's
# conflicts with; replacing one (its columns changed) asks without waiting (`serving`).
LOCK_TIMEOUT = "5s"


class PostgresError(RuntimeError):
    """A PostgreSQL step failed; the message says which database and what to do."""


def dsn_problem(dsn: str) -> str | None:
    """Why `dsn` cannot be used (None when it can): unparseable, or it carries a password."""
    try:
        parts = psycopg2.extensions.parse_dsn(dsn)
    except psycopg2.ProgrammingError as exc:
        return f"is not a PostgreSQL connection string ({str(exc).strip()})"
    if parts.get("password"):
        return (
            "contains a password; leave it out and set PGPASSWORD in the environment (or use "
            "~/.pgpass), so that it never lands in a file, a log or a process list"
        )
    if not parts.get("dbname"):
        return "names no database (postgresql://user@host:port/DATABASE)"
    return None


def describe(dsn: str) -> str:
    """user@host:port/database of a DSN, for messages (it holds no password: see dsn_problem)."""
    p = psycopg2.extensions.parse_dsn(dsn)
    host = p.get("host", "localhost")
    return f"{p.get('user', '')}@{host}:{p.get('port', '5432')}/{p.get('dbname', '')}"


def connect(dsn: str, application: str = "talent-metrics"):
    """A connection (autocommit off) or a PostgresError that says what to check."""
    try:
        return psycopg2.connect(dsn, application_name=application, connect_timeout=15)
    except psycopg2.OperationalError as exc:
        raise PostgresError(
            f"cannot connect to PostgreSQL {describe(dsn)}: {str(exc).strip()}\n"
            "Check that the server runs (`make postgres` starts a local one), that the role and "
            "database exist, and that PGPASSWORD holds the role's password."
        ) from None


# --- types -----------------------------------------------------------------------------------

_DUCKDB_TO_PG = {
    "BOOLEAN": "boolean",
    "TINYINT": "smallint",
    "SMALLINT": "smallint",
    "INTEGER": "integer",
    "BIGINT": "bigint",
    "HUGEINT": "numeric(38, 0)",
    "UBIGINT": "numeric(20, 0)",
    "UINTEGER": "bigint",
    "USMALLINT": "integer",
    "UTINYINT": "smallint",
    "FLOAT": "real",
    "DOUBLE": "double precision",
    "VARCHAR": "text",
    "DATE": "date",
    "TIME": "time",
    "TIMESTAMP": "timestamp",
    # pandas writes nanosecond timestamps (the Python marts); PostgreSQL keeps microseconds
    "TIMESTAMP_NS": "timestamp",
    "TIMESTAMP_MS": "timestamp",
    "TIMESTAMP_S": "timestamp",
    "TIMESTAMP WITH TIME ZONE": "timestamptz",
    "INTERVAL": "interval",
    "UUID": "uuid",
    "JSON": "jsonb",
    "BLOB": "bytea",
}


def pg_type(duckdb_type: str) -> str:
    """The PostgreSQL type a DuckDB column becomes (lists become arrays)."""
    t = duckdb_type.strip().upper()
    if t.endswith("[]"):
        return pg_type(t[:-2]) + "[]"
    if t in _DUCKDB_TO_PG:
        return _DUCKDB_TO_PG[t]
    m = re.fullmatch(r"DECIMAL\((\d+),\s*(\d+)\)", t)
    if m:
        return f"numeric({m.group(1)}, {m.group(2)})"
    raise PostgresError(f"no PostgreSQL type for the DuckDB type {duckdb_type}")


_PG_TO_DUCKDB = {
    "boolean": "BOOLEAN",
    "smallint": "SMALLINT",
    "integer": "INTEGER",
    "bigint": "BIGINT",
    "real": "FLOAT",
    "double precision": "DOUBLE",
    "text": "VARCHAR",
    "character varying": "VARCHAR",
    "character": "VARCHAR",
    "date": "DATE",
    "timestamp without time zone": "TIMESTAMP",
    "timestamp with time zone": "TIMESTAMPTZ",
    "timestamp": "TIMESTAMP",
    "timestamptz": "TIMESTAMPTZ",
    "time": "TIME",
    "interval": "INTERVAL",
    "bytea": "BLOB",
    "jsonb": "JSON",
    "json": "JSON",
    "uuid": "UUID",
}


def duckdb_type(pg_data_type: str, numeric_precision: int | None, numeric_scale: int | None) -> str:
    """The DuckDB type of a PostgreSQL column (`format_type` spelling; arrays as lists).

    numeric without a declared precision (sums, averages) has no DuckDB equivalent of unbounded
    precision: it becomes DOUBLE, which is what DuckDB computes for the same expressions.
    """
    t = pg_data_type.strip().lower()
    if t.endswith("[]"):
        return duckdb_type(t[:-2], None, None) + "[]"
    if t in _PG_TO_DUCKDB:
        return _PG_TO_DUCKDB[t]
    m = re.fullmatch(r"(?:numeric|decimal)\((\d+),\s*(\d+)\)", t)
    if m and int(m.group(1)) <= 38:
        return f"DECIMAL({m.group(1)}, {m.group(2)})"
    if t.startswith("numeric") or t.startswith("decimal"):
        return "DOUBLE"
    if t.startswith("character varying") or t.startswith("character"):
        return "VARCHAR"
    raise PostgresError(f"no DuckDB type for the PostgreSQL type {pg_data_type}")


# --- DuckDB -> PostgreSQL ----------------------------------------------------------------------


def _duck_quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def create_table(cur, target: sql.Composed, columns) -> None:
    """Create `target` with the PostgreSQL types of `columns` ((name, duckdb type) pairs)."""
    cur.execute(
        sql.SQL("create table {} ({})").format(
            target,
            sql.SQL(", ").join(
                sql.SQL("{} {}").format(sql.Identifier(name), sql.SQL(pg_type(t)))
                for name, t in columns
            ),
        )
    )


def copy_rows(duck, source: str, cur, target: sql.Composed, columns) -> int:
    """COPY the rows of DuckDB relation `source` into the existing table `target`; returns the
    number of rows. `columns`: (name, duckdb type) pairs, in the target's order."""
    select = ", ".join(
        # a list travels as a PostgreSQL array literal
        f"'{{' || array_to_string(list_transform({_duck_quote(n)}, x -> '\"' || "
        f"replace(replace(x::varchar, '\\', '\\\\'), '\"', '\\\"') || '\"'), ',') || '}}'"
        if t.endswith("[]")
        else _duck_quote(n)
        for n, t in columns
    )
    names = sql.SQL(", ").join(sql.Identifier(n) for n, _ in columns)
    with tempfile.NamedTemporaryFile(suffix=".csv") as tmp:
        duck.execute(
            f"copy (select {select} from {source}) to '{tmp.name}' (format csv, header false)"
        )
        with open(tmp.name, encoding="utf-8") as fh:
            cur.copy_expert(
                sql.SQL("copy {} ({}) from stdin with (format csv)").format(target, names), fh
            )
    return cur.rowcount


def copy_duckdb_table(duck, source: str, cur, target: sql.Composed, columns) -> int:
    """Create `target` with the columns' PostgreSQL types and COPY the rows of DuckDB relation
    `source` into it; returns the number of rows. `columns`: (name, duckdb type) pairs."""
    create_table(cur, target, columns)
    return copy_rows(duck, source, cur, target, columns)


def _duck_tables(duck, catalog: str, schema: str) -> list[tuple[str, str | None]]:
    return duck.execute(
        "select table_name, comment from duckdb_tables() where database_name = ? and "
        "schema_name = ? order by table_name",
        [catalog, schema],
    ).fetchall()


def _duck_columns(duck, catalog: str, schema: str, table: str) -> list[tuple[str, str, str | None]]:
    return duck.execute(
        "select column_name, data_type, comment from duckdb_columns() where database_name = ? "
        "and schema_name = ? and table_name = ? order by column_index",
        [catalog, schema, table],
    ).fetchall()


@dataclass
class PendingPublish:
    """A publish loaded into the marts inside an open transaction: `commit()` makes it visible.
    `notes`: what the publish did to analysts' sessions and views, one line each (run summary)."""

    connection: object
    where: str
    tables: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def commit(self) -> None:
        self.connection.commit()
        self.connection.close()

    def abandon(self) -> None:
        if not self.connection.closed:
            self.connection.rollback()
            self.connection.close()


def _check_serving_database(cur, dsn: str, reader_role: str) -> None:
    """Refuse a database that holds raw or restricted schemas, or lacks the analysts' role."""
    cur.execute(
        "select nspname from pg_namespace where nspname = any(%s) order by 1",
        [list(RESTRICTED_SCHEMAS)],
    )
    restricted = [r[0] for r in cur.fetchall()]
    if restricted:
        raise PostgresError(
            f"refusing to publish into {describe(dsn)}: it holds schema(s) "
            f"{', '.join(restricted)}, and analysts must reach no raw or restricted data. "
            "Publish into a database of its own (dbt builds in another: TALENT_BUILD_DSN)."
        )
    cur.execute("select 1 from pg_roles where rolname = %s", [reader_role])
    if cur.fetchone() is None:
        raise PostgresError(
            f"the role {reader_role!r} that analysts read with does not exist in "
            f"{describe(dsn)}: `talent analysts add NAME` creates it with a first login (README: "
            '"Logins for analysts"), or set TALENT_PUBLISH_READER_ROLE to the existing one.'
        )


@dataclass(frozen=True)
class Grain:
    """A mart's grain: the columns that identify a row; `primary` when none of them is ever NULL
    (a primary key), else a unique constraint treating NULLs as equal, as dbt's test does."""

    columns: tuple[str, ...]
    primary: bool


def _layout(columns, grain: Grain | None) -> tuple:
    """What must match for a table to be refreshed in place: column names and PostgreSQL
    types in order, and the grain constraint."""
    return (
        tuple((n, _normal_type(pg_type(t))) for n, t in columns),
        (grain.columns, grain.primary) if grain else None,
    )


_TYPE_ALIASES = {
    "timestamp": "timestamp without time zone",
    "timestamptz": "timestamp with time zone",
    "time": "time without time zone",
}


def _normal_type(text: str) -> str:
    t = text.replace(", ", ",").strip()
    base, array = (t[:-2], "[]") if t.endswith("[]") else (t, "")
    return _TYPE_ALIASES.get(base, base) + array


def _existing_layouts(cur, schema: str) -> dict[str, tuple]:
    """The layout (`_layout`) of every table now in `schema` of the serving database."""
    cur.execute(
        "select c.relname, a.attname, format_type(a.atttypid, a.atttypmod) from pg_class c "
        "join pg_namespace n on n.oid = c.relnamespace join pg_attribute a on a.attrelid = c.oid "
        "where n.nspname = %s and c.relkind = 'r' and a.attnum > 0 and not a.attisdropped "
        "order by c.relname, a.attnum",
        [schema],
    )
    columns: dict[str, list] = {}
    for table, column, pg_t in cur.fetchall():
        columns.setdefault(table, []).append((column, _normal_type(pg_t)))
    cur.execute(
        "select c.relname, k.contype, array(select a.attname from unnest(k.conkey) with "
        "ordinality as u(attnum, i) join pg_attribute a on a.attrelid = c.oid and a.attnum = "
        "u.attnum order by u.i) from pg_constraint k join pg_class c on c.oid = k.conrelid "
        "join pg_namespace n on n.oid = c.relnamespace where n.nspname = %s "
        "and k.conname = c.relname || '_grain'",
        [schema],
    )
    keys = {t: (tuple(cols), kind == "p") for t, kind, cols in cur.fetchall()}
    return {t: (tuple(cols), keys.get(t)) for t, cols in columns.items()}


def _add_grain(cur, target: sql.Composed, table: str, grain: Grain) -> None:
    cols = sql.SQL(", ").join(sql.Identifier(c) for c in grain.columns)
    kind = sql.SQL("primary key" if grain.primary else "unique nulls not distinct")
    cur.execute(
        sql.SQL("alter table {} add constraint {} {} ({})").format(
            target, sql.Identifier(f"{table}_grain"), kind, cols
        )
    )


def _comment(cur, target: sql.Composed, column: str | None, text: str | None) -> None:
    """Set a table's or column's comment when it differs (a comment takes a lock no reader's
    does conflict with, and is skipped when nothing changed)."""
    if column is None:
        cur.execute("select obj_description(%s::regclass, 'pg_class')", [target.as_string(cur)])
        what = target
    else:
        cur.execute(
            "select col_description(%s::regclass, (select attnum from pg_attribute where "
            "attrelid = %s::regclass and attname = %s))",
            [target.as_string(cur), target.as_string(cur), column],
        )
        what = sql.SQL("{}.{}").format(target, sql.Identifier(column))
    if (cur.fetchone()[0] or None) != (text or None):
        kind = sql.SQL("table" if column is None else "column")
        cur.execute(sql.SQL("comment on {} {} is {}").format(kind, what, sql.Literal(text)))


def _load_schema(
    cur, source_db: Path, schema: str, grains: dict[str, Grain]
) -> tuple[dict[str, int], list[str]]:
    """Every table of `schema` in the DuckDB file into the serving database: a table whose
    layout is unchanged is emptied and refilled in place in `schema` (readers hold no lock that
    conflicts, and see the old rows until the commit); a new table is created there; a table
    whose layout changed is loaded into the staging schema, for `_replace_changed`. Returns
    rows per table and the tables to replace."""
    loaded: dict[str, int] = {}
    changed: list[str] = []
    existing = _existing_layouts(cur, schema)
    staging = sql.Identifier(schema + STAGING_SUFFIX)
    cur.execute(sql.SQL("drop schema if exists {} cascade").format(staging))
    cur.execute(sql.SQL("create schema {}").format(staging))
    with db.connect(source_db, read_only=True) as duck:
        catalog = duck.execute("select current_database()").fetchone()[0]
        tables = _duck_tables(duck, catalog, schema)
        if not tables:
            raise PostgresError(f"{source_db} has no tables in schema {schema}: nothing to publish")
        for i, (table, comment) in enumerate(tables):
            columns = _duck_columns(duck, catalog, schema, table)
            pairs = [(n, t) for n, t, _ in columns]
            grain = grains.get(table)
            in_place = existing.get(table) == _layout(pairs, grain)
            home = sql.Identifier(schema) if in_place or table not in existing else staging
            target = sql.SQL("{}.{}").format(home, sql.Identifier(table))
            if in_place:
                cur.execute(sql.SQL("delete from {}").format(target))
            else:
                create_table(cur, target, pairs)
                if grain:
                    _add_grain(cur, target, table, grain)
                if table in existing:
                    changed.append(table)
            source = f"{_duck_quote(schema)}.{_duck_quote(table)}"
            rows = copy_rows(duck, source, cur, target, pairs)
            expected = duck.execute(f"select count(*) from {source}").fetchone()[0]
            if rows != expected:
                raise PostgresError(
                    f"{schema}.{table}: {rows} rows arrived in PostgreSQL, {expected} were sent"
                )
            loaded[f"{schema}.{table}"] = rows
            _comment(cur, target, None, comment)
            for name, _, col_comment in columns:
                _comment(cur, target, name, col_comment)
            if i == len(tables) // 2:
                failpoint("publish:postgres_half_loaded")
    gone = sorted(set(existing) - {t for t, _ in tables})
    return loaded, changed + gone


def _replace_changed(cur, schema: str, tables: list[str], reader_role: str) -> list[str]:
    """Swap in the marts whose layout changed (loaded into the staging schema) and drop those
    no longer published, last, so that the exclusive locks this takes are held only for the
    moment until the commit; the views on them are recreated. Lines for the run summary."""
    from pipelines.lib import serving

    notes: list[str] = []
    dropped_views: list[tuple] = []
    staging = sql.Identifier(schema + STAGING_SUFFIX)
    for table in tables:
        said, views = serving.replace_table(cur, schema, table, reader_role)
        notes += said
        dropped_views += views
        new = sql.SQL("{}.{}").format(staging, sql.Identifier(table))
        cur.execute("select to_regclass(%s)", [new.as_string(cur)])
        if cur.fetchone()[0] is None:
            notes.append(f"dropped {schema}.{table}, which is no longer published")
        else:
            cur.execute(sql.SQL("alter table {} set schema {}").format(new, sql.Identifier(schema)))
    cur.execute(sql.SQL("drop schema {}").format(staging))
    return notes + serving.recreate_views(cur, dropped_views)


def _grant(cur, database: str, schema: str, reader_role: str, note: str) -> None:
    """The reader may connect to the database and read the schema's tables, nothing else."""
    target, reader = sql.Identifier(schema), sql.Identifier(reader_role)
    cur.execute(sql.SQL("comment on schema {} is {}").format(target, sql.Literal(note)))
    cur.execute(sql.SQL("revoke all on schema {} from public").format(target))
    cur.execute(sql.SQL("grant usage on schema {} to {}").format(target, reader))
    # only tables the reader cannot read yet: a grant on a table a reader is reading waits
    cur.execute(
        "select quote_ident(c.relname) from pg_class c join pg_namespace n on "
        "n.oid = c.relnamespace where n.nspname = %s and c.relkind = 'r' and not "
        "has_table_privilege(%s, c.oid, 'select')",
        [schema, reader_role],
    )
    for (table,) in cur.fetchall():
        cur.execute(sql.SQL("grant select on {}.{} to {}").format(target, sql.SQL(table), reader))
    db_name = sql.Identifier(database)
    cur.execute(sql.SQL("revoke all on database {} from public").format(db_name))
    cur.execute(sql.SQL("grant connect on database {} to {}").format(db_name, reader))


def stage_publish(
    source_db: Path,
    dsn: str,
    reader_role: str,
    note: str,
    schema: str = PUBLISHED_SCHEMA,
    grains: dict[str, Grain] | None = None,
) -> PendingPublish:
    """Load schema `schema` of DuckDB file `source_db` into the same schema of the database of
    `dsn`, without committing. `reader_role` gets `connect` on the database and `select` on the
    schema's tables, nothing else; `grains` (table -> Grain) become primary keys or unique
    constraints. Refuses a database that holds raw or restricted schemas."""
    con = connect(dsn, "talent-metrics publish")
    pending = PendingPublish(connection=con, where=f"{describe(dsn)} schema {schema}")
    try:
        cur = con.cursor()
        # nothing here waits on a reader (serving.replace_table asks for its locks without
        # queueing); this bounds any other wait
        cur.execute(sql.SQL("set local lock_timeout = {}").format(sql.Literal(LOCK_TIMEOUT)))
        _check_serving_database(cur, dsn, reader_role)
        cur.execute(sql.SQL("create schema if not exists {}").format(sql.Identifier(schema)))
        pending.tables, changed = _load_schema(cur, source_db, schema, grains or {})
        pending.notes = _replace_changed(cur, schema, changed, reader_role)
        _grant(cur, con.get_dsn_parameters()["dbname"], schema, reader_role, note)
        failpoint("publish:postgres_swapped")
    except psycopg2.Error as exc:
        pending.abandon()
        raise PostgresError(
            f"publishing to PostgreSQL {describe(dsn)} failed, nothing changed there: "
            f"{str(exc).strip()}"
        ) from None
    except BaseException:
        pending.abandon()
        raise
    return pending


def load_raw(raw_db: Path, dsn: str, schema: str = "raw") -> dict[str, int]:
    """Every table of the local raw file into schema `schema` of `dsn`, replaced in one
    transaction (dbt-postgres reads its sources there)."""
    con = connect(dsn, "talent-metrics raw load")
    loaded: dict[str, int] = {}
    try:
        cur = con.cursor()
        staging = sql.Identifier(schema + STAGING_SUFFIX)
        cur.execute(sql.SQL("drop schema if exists {} cascade").format(staging))
        cur.execute(sql.SQL("create schema {}").format(staging))
        with db.connect(raw_db, read_only=True) as duck:
            catalog = duck.execute("select current_database()").fetchone()[0]
            for table, _ in _duck_tables(duck, catalog, "main"):
                columns = [(n, t) for n, t, _ in _duck_columns(duck, catalog, "main", table)]
                loaded[table] = copy_duckdb_table(
                    duck,
                    f"main.{_duck_quote(table)}",
                    cur,
                    sql.SQL("{}.{}").format(staging, sql.Identifier(table)),
                    columns,
                )
        cur.execute(sql.SQL("drop schema if exists {} cascade").format(sql.Identifier(schema)))
        cur.execute(sql.SQL("alter schema {} rename to {}").format(staging, sql.Identifier(schema)))
        con.commit()
    except psycopg2.Error as exc:
        con.rollback()
        raise PostgresError(
            f"loading the raw tables into {describe(dsn)} failed: {str(exc).strip()}"
        ) from None
    finally:
        con.close()
    return loaded


@contextmanager
def _csv_file() -> Iterator[Path]:
    with tempfile.TemporaryDirectory(prefix="talent-pg-") as folder:
        yield Path(folder) / "table.csv"


def mirror_to_duckdb(dsn: str, build_db: Path, schemas: tuple[str, ...]) -> dict[str, int]:
    """Copy every table of `schemas` in `dsn` into the same schema of the DuckDB file `build_db`
    (replacing tables of the same name); returns rows per `schema.table`."""
    con = connect(dsn, "talent-metrics mirror")
    copied: dict[str, int] = {}
    try:
        cur = con.cursor()
        cur.execute(
            "select c.table_schema, c.table_name, c.column_name, "
            "format_type(a.atttypid, a.atttypmod) "
            "from information_schema.columns as c "
            "join pg_attribute as a on a.attrelid = (quote_ident(c.table_schema) || '.' || "
            "quote_ident(c.table_name))::regclass and a.attname = c.column_name "
            "join information_schema.tables as t on t.table_schema = c.table_schema "
            "and t.table_name = c.table_name and t.table_type = 'BASE TABLE' "
            "where c.table_schema = any(%s) order by 1, 2, c.ordinal_position",
            [list(schemas)],
        )
        layout: dict[tuple[str, str], list[tuple[str, str]]] = {}
        for schema, table, column, pg_t in cur.fetchall():
            layout.setdefault((schema, table), []).append((column, duckdb_type(pg_t, None, None)))
        with db.connect(build_db) as duck:
            for schema in schemas:
                duck.execute(f"create schema if not exists {_duck_quote(schema)}")
            for (schema, table), columns in layout.items():
                with _csv_file() as path:
                    select = sql.SQL(", ").join(
                        sql.SQL("array_to_json({})::text").format(sql.Identifier(n))
                        if t.endswith("[]")
                        else sql.Identifier(n)
                        for n, t in columns
                    )
                    with open(path, "w", encoding="utf-8") as fh:
                        cur.copy_expert(
                            sql.SQL(
                                "copy (select {} from {}.{}) to stdout with (format csv)"
                            ).format(select, sql.Identifier(schema), sql.Identifier(table)),
                            fh,
                        )
                    read_types = {n: ("VARCHAR" if t.endswith("[]") else t) for n, t in columns}
                    projection = ", ".join(
                        f"from_json({_duck_quote(n)}, '{json_list(t)}') as {_duck_quote(n)}"
                        if t.endswith("[]")
                        else _duck_quote(n)
                        for n, t in columns
                    )
                    types = "{" + ", ".join(f"'{n}': '{t}'" for n, t in read_types.items()) + "}"
                    # an empty table gives an empty file, which DuckDB's CSV sniffer refuses
                    source = (
                        f"read_csv('{path}', header = false, columns = {types}, delim = ',', "
                        "allow_quoted_nulls = false, quote = '\"', escape = '\"', "
                        "new_line = '\\n')"
                        if path.stat().st_size
                        else "(select "
                        + ", ".join(
                            f"cast(null as {t}) as {_duck_quote(n)}" for n, t in read_types.items()
                        )
                        + " where false)"
                    )
                    duck.execute(
                        f"create or replace table {_duck_quote(schema)}.{_duck_quote(table)} as "
                        f"select {projection} from {source}"
                    )
                    copied[f"{schema}.{table}"] = duck.execute(
                        f"select count(*) from {_duck_quote(schema)}.{_duck_quote(table)}"
                    ).fetchone()[0]
            _mirror_comments(cur, duck, schemas)
    except psycopg2.Error as exc:
        raise PostgresError(
            f"reading the built tables back from {describe(dsn)} failed: {str(exc).strip()}"
        ) from None
    finally:
        con.close()
    return copied


def _mirror_comments(cur, duck, schemas: tuple[str, ...]) -> None:
    """The table and column comments dbt persisted on PostgreSQL (persist_docs), onto the
    copies: publishing carries them to analysts as after a DuckDB build."""
    cur.execute(
        "select n.nspname, c.relname, null, obj_description(c.oid, 'pg_class') "
        "from pg_class as c join pg_namespace as n on n.oid = c.relnamespace "
        "where n.nspname = any(%s) and c.relkind = 'r' "
        "union all "
        "select n.nspname, c.relname, a.attname, col_description(c.oid, a.attnum) "
        "from pg_class as c join pg_namespace as n on n.oid = c.relnamespace "
        "join pg_attribute as a on a.attrelid = c.oid and a.attnum > 0 and not a.attisdropped "
        "where n.nspname = any(%s) and c.relkind = 'r'",
        [list(schemas), list(schemas)],
    )
    for schema, table, column, comment in cur.fetchall():
        if not comment:
            continue
        target = f"{_duck_quote(schema)}.{_duck_quote(table)}"
        literal = "'" + comment.replace("'", "''") + "'"
        if column is None:
            duck.execute(f"comment on table {target} is {literal}")
        else:
            duck.execute(f"comment on column {target}.{_duck_quote(column)} is {literal}")


def json_list(list_type: str) -> str:
    """from_json's structure for a DuckDB list type: VARCHAR[] -> ["VARCHAR"]."""
    return f'["{list_type[:-2]}"]'
