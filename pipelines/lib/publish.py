"""Publishing: hand analysts a complete, pseudonymised warehouse file, atomically.

DuckDB allows one read-write process or many read-only ones on a file, never both. So the run
never writes the file analysts open. It copies the analyst-facing schema (`marts`) from the
build file into a fresh temporary file beside the published one, checks it, CHECKPOINTs and
closes it, fsyncs, and only then `os.replace`s it onto the published path. Readers already
connected keep the old inode and see the old snapshot; new readers see the new one; a run killed
at any point leaves either the old file or the new one, never a half-written one.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from pipelines.lib import db
from pipelines.lib.failpoints import failpoint
from pipelines.lib.small_groups import mentions_pattern, small_group_mentions

PUBLISHED_SCHEMAS = ("marts",)
TMP_PREFIX = ".publishing-"
STORAGE_VERSION = "v1.2.0"

# Column names that must never reach the analyst-facing file (privacy by design).
FORBIDDEN_COLUMN = re.compile(
    r"(^|_)(first_name|last_name|full_name|name_first|name_last|e_?mail|salary|pay_rate)(_|$)",
    re.IGNORECASE,
)
# A value that looks like an e-mail address.
EMAIL_VALUE = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"
# Columns that count the people a published row is built from (each name means that in every
# mart). The marts suppress a row of 1..min_group_size-1 people (its count is NULL); publishing
# refuses a file where such a count is shown, whichever table it is in.
GROUP_SIZE_COLUMNS = (
    "headcount",
    "headcount_start",
    "headcount_end",
    "current_headcount",
    "engineers",
    "n_engineers",
    "participants",
    "responders",
    "engagements",
    "holders_ever",
    "leads",
    "implementers",
)
# How long an example value of a text column is quoted in a refusal.
EXAMPLE_CHARS = 160


class PublishError(RuntimeError):
    """The build cannot be published; the published file is left as it was."""


@dataclass
class PublishResult:
    published_path: Path
    tables: dict[str, int] = field(default_factory=dict)  # "schema.table" -> rows
    size_bytes: int = 0
    published_at: str = ""
    # user@host:port/database schema marts, when the marts were published to PostgreSQL too
    postgres: str = ""
    # what that publish did to analysts' sessions and views (a mart whose columns changed)
    postgres_notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PostgresPublish:
    """Publish the same marts into a PostgreSQL database as well (`TALENT_PUBLISH_DSN`)."""

    dsn: str
    reader_role: str = "talent_analysts"
    # mart -> its grain (pipelines.lib.serving.mart_grains): primary keys or unique constraints
    grains: dict = field(default_factory=dict)


def _quote(identifier: str) -> str:
    return '"' + identifier.replace('"', '""') + '"'


def privacy_violations(con: duckdb.DuckDBPyConnection, catalog: str) -> list[str]:
    """Columns in `catalog` that are named like personal data or hold e-mail-shaped values."""
    problems: list[str] = []
    cols = con.execute(
        "select schema_name, table_name, column_name, data_type from duckdb_columns() "
        "where database_name = ? and schema_name in (select unnest(?))",
        [catalog, list(PUBLISHED_SCHEMAS)],
    ).fetchall()
    for schema, table, column, data_type in cols:
        where = f"{schema}.{table}.{column}"
        if FORBIDDEN_COLUMN.search(column):
            problems.append(f"{where}: column name suggests personal data")
            continue
        if data_type == "VARCHAR":
            hit = con.execute(
                f"select count(*) from {_quote(catalog)}.{_quote(schema)}.{_quote(table)} "
                f"where regexp_matches({_quote(column)}, ?)",
                [EMAIL_VALUE],
            ).fetchone()[0]
            if hit:
                problems.append(f"{where}: {hit} value(s) look like e-mail addresses")
    return problems


def small_groups(con: duckdb.DuckDBPyConnection, catalog: str, min_group_size: int) -> list[str]:
    """Published counts of people that are 1..min_group_size-1 (a group the marts should have
    suppressed), one line per column with how many rows show one."""
    problems: list[str] = []
    cols = con.execute(
        "select schema_name, table_name, column_name from duckdb_columns() "
        "where database_name = ? and schema_name in (select unnest(?)) "
        "and column_name in (select unnest(?)) order by all",
        [catalog, list(PUBLISHED_SCHEMAS), list(GROUP_SIZE_COLUMNS)],
    ).fetchall()
    for schema, table, column in cols:
        hit = con.execute(
            f"select count(*) from {_quote(catalog)}.{_quote(schema)}.{_quote(table)} "
            f"where try_cast({_quote(column)} as double) >= 1 "
            f"and try_cast({_quote(column)} as double) < ?",
            [min_group_size],
        ).fetchone()[0]
        if hit:
            problems.append(
                f"{schema}.{table}.{column}: {hit} row(s) count 1 to {min_group_size - 1} people "
                f"(minimum group size {min_group_size}); suppress them in the mart"
            )
    return problems


def small_groups_in_text(
    con: duckdb.DuckDBPyConnection, catalog: str, min_group_size: int
) -> list[str]:
    """Text values that quote a group of 1..min_group_size-1 people ("3 engineers", "two
    leavers"), one line per VARCHAR column of the published schemas: how many rows, and an
    example. DuckDB's regular expression picks the candidate values, `small_group_mentions`
    reads the number."""
    problems: list[str] = []
    cols = con.execute(
        "select schema_name, table_name, column_name from duckdb_columns() "
        "where database_name = ? and schema_name in (select unnest(?)) "
        "and data_type = 'VARCHAR' order by all",
        [catalog, list(PUBLISHED_SCHEMAS)],
    ).fetchall()
    for schema, table, column in cols:
        values = con.execute(
            f"select {_quote(column)}, count(*) "
            f"from {_quote(catalog)}.{_quote(schema)}.{_quote(table)} "
            f"where regexp_matches({_quote(column)}, ?) group by all order by all",
            [mentions_pattern()],
        ).fetchall()
        hits = [
            (v, n, found) for v, n in values if (found := small_group_mentions(v, min_group_size))
        ]
        if not hits:
            continue
        value, _, found = hits[0]
        example = value if len(value) <= EXAMPLE_CHARS else value[: EXAMPLE_CHARS - 1] + "…"
        problems.append(
            f"{schema}.{table}.{column}: {sum(n for _, n, _ in hits)} row(s) quote a group of 1 "
            f'to {min_group_size - 1} people in text, e.g. "{found[0]}" in "{example}"; '
            f'write "fewer than {min_group_size} <people>" instead of the number '
            "(pipelines/lib/small_groups.py, people_phrase), and leave out that group's counts"
        )
    return problems


def _fsync_path(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def clean_stale_temporaries(published_db: Path) -> list[Path]:
    """Remove temporaries that a killed publish left behind (they were never visible)."""
    removed = []
    for p in published_db.parent.glob(f"{TMP_PREFIX}*"):
        p.unlink(missing_ok=True)
        removed.append(p)
    return removed


def _refuse_unsafe(con: duckdb.DuckDBPyConnection, min_group_size: int) -> None:
    """Raise PublishError when the file being published would expose personal data or a group
    smaller than the minimum group size."""
    problems = privacy_violations(con, "published")
    if problems:
        raise PublishError(
            "refusing to publish: the analyst-facing file would expose personal data:\n  "
            + "\n  ".join(problems)
            + "\nFix the mart so it carries the pseudonymous person_key instead."
        )
    small = small_groups(con, "published", min_group_size)
    if small:
        raise PublishError(
            "refusing to publish: the analyst-facing file would show groups smaller "
            "than the minimum group size:\n  " + "\n  ".join(small) + "\nThe "
            "unsuppressed figures belong in schema restricted of the build file "
            "(dbt_project/macros/suppression.sql suppresses a mart)."
        )
    quoted = small_groups_in_text(con, "published", min_group_size)
    if quoted:
        raise PublishError(
            "refusing to publish: text in the analyst-facing file names groups smaller than "
            "the minimum group size:\n  " + "\n  ".join(quoted) + "\nThe sentence belongs "
            'in schema restricted of the build file, or says "fewer than '
            f'{min_group_size}" of such a group.'
        )


def publish(
    build_db: Path,
    published_db: Path,
    run_id: str = "",
    min_group_size: int = 5,
    postgres: PostgresPublish | None = None,
) -> PublishResult:
    """Copy the analyst-facing schemas of `build_db` into `published_db`, atomically.

    Raises PublishError (and leaves `published_db` untouched) when the build has no marts, or
    it would publish personal data or a group of fewer than `min_group_size` people, as a count
    (GROUP_SIZE_COLUMNS) or in text (`small_groups_in_text`).

    With `postgres`, the checked file's marts also refill schema `marts` of that database in one
    transaction (`postgres.stage_publish`), committed right after the file is swapped in: a
    failure before that leaves both the file and the database as they were.
    """
    build_db = Path(build_db)
    published_db = Path(published_db)
    if not build_db.exists():
        raise PublishError(
            f"nothing to publish: the build file {build_db} does not exist. Run the whole "
            "graph (`talent run`) so that dbt builds it first."
        )
    published_db.parent.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(published_db)
    tmp = published_db.parent / f"{TMP_PREFIX}{os.getpid()}-{published_db.name}"
    result = PublishResult(published_path=published_db)
    try:
        con = db.memory()
        try:
            # An older storage format, so that analysts' tools (the DuckDB CLI from PyPI, BI
            # drivers) that lag the library can still open the file.
            con.execute(
                f"attach {_quote(str(tmp))} as published (storage_version '{STORAGE_VERSION}')"
            )
            con.execute("use published")
            con.execute(f"attach {_quote(str(build_db))} as build (read_only)")
            _copy_build_objects(con, build_db, result)
            con.execute("detach build")
            _refuse_unsafe(con, min_group_size)
            result.published_at = datetime.now(UTC).isoformat(timespec="seconds")
            con.execute(
                "create table main.publish_info as select ?::timestamptz as published_at, "
                "? as run_id, ? as tables",
                [result.published_at, run_id, len(result.tables)],
            )
            con.execute("checkpoint published")
            con.execute("use memory")
            con.execute("detach published")
        finally:
            con.close()
        _fsync_path(tmp)
        _swap_in(tmp, published_db, _stage_postgres(tmp, postgres, run_id, result), result)
    except BaseException:
        tmp.unlink(missing_ok=True)
        Path(str(tmp) + ".wal").unlink(missing_ok=True)
        raise
    result.size_bytes = published_db.stat().st_size
    return result


def _copy_build_objects(con, build_db: Path, result: PublishResult) -> None:
    """Copy every table and view of the published schemas of attached `build` into the current
    database, with their comments, counting each table's rows into `result.tables`."""
    tables = con.execute(
        "select schema_name, table_name, comment from duckdb_tables() "
        "where database_name = 'build' and schema_name in (select unnest(?)) "
        "order by schema_name, table_name",
        [list(PUBLISHED_SCHEMAS)],
    ).fetchall()
    views = con.execute(
        "select schema_name, view_name from duckdb_views() "
        "where database_name = 'build' and schema_name in (select unnest(?)) "
        "and not internal",
        [list(PUBLISHED_SCHEMAS)],
    ).fetchall()
    if not tables and not views:
        raise PublishError(
            f"the build file {build_db} has no tables in schema(s) "
            f"{', '.join(PUBLISHED_SCHEMAS)}: dbt has not built the marts. Nothing was "
            "published; the previous warehouse stays in place."
        )
    for schema in PUBLISHED_SCHEMAS:
        con.execute(f"create schema if not exists {_quote(schema)}")
    # Views in the build file are materialised: the published file must not depend on
    # schemas it does not contain.
    objects = [(s, t, c) for s, t, c in tables] + [(s, v, None) for s, v in views]
    for schema, name, comment in objects:
        target = f"{_quote(schema)}.{_quote(name)}"
        con.execute(f"create table {target} as select * from build.{_quote(schema)}.{_quote(name)}")
        if comment:
            con.execute(f"comment on table {target} is {_sql_str(comment)}")
        for column, col_comment in con.execute(
            "select column_name, comment from duckdb_columns() where database_name = "
            "'build' and schema_name = ? and table_name = ? and comment is not null",
            [schema, name],
        ).fetchall():
            con.execute(f"comment on column {target}.{_quote(column)} is {_sql_str(col_comment)}")
        result.tables[f"{schema}.{name}"] = con.execute(
            f"select count(*) from {target}"
        ).fetchone()[0]


def _swap_in(tmp: Path, published_db: Path, pending, result: PublishResult) -> None:
    """os.replace the checked file onto the published path, then commit PostgreSQL's half."""
    try:
        failpoint("publish:before_replace")
        os.replace(tmp, published_db)
        _fsync_path(published_db.parent)
        failpoint("publish:after_replace")
    except BaseException:
        if pending is not None:
            pending.abandon()
        raise
    if pending is not None:
        _commit_postgres(pending, published_db)
        result.postgres = pending.where
        result.postgres_notes = pending.notes


def _stage_postgres(tmp: Path, target: PostgresPublish | None, run_id: str, result: PublishResult):
    """The PostgreSQL half of a publish, loaded and swapped but not committed (None without)."""
    if target is None:
        return None
    published_at = result.published_at
    from pipelines.lib import postgres

    try:
        return postgres.stage_publish(
            tmp,
            target.dsn,
            target.reader_role,
            grains=target.grains,
            note=f"talent-metrics marts, published {published_at} (run {run_id or 'by hand'}); "
            "pseudonymised, small groups suppressed",
        )
    except postgres.PostgresError as exc:
        raise PublishError(
            f"{exc}\nNothing was published: the warehouse file and the PostgreSQL marts stay "
            "as they were."
        ) from None


def _commit_postgres(pending, published_db: Path) -> None:
    import psycopg2

    try:
        pending.commit()
    except psycopg2.Error as exc:
        raise PublishError(
            f"{published_db} was published, but the commit on PostgreSQL {pending.where} failed "
            f"({str(exc).strip()}): analysts there keep the previous marts until the next "
            "publish. Run again once the server is reachable."
        ) from None


def _sql_str(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"
