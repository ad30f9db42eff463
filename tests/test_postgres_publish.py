"""Publishing the marts to PostgreSQL: what the analyst role may read, and a publish that is
interrupted midway.

Needs the local server (`make postgres`); skipped without it, except in CI.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import psycopg2
import pytest

from pipelines.lib.publish import PostgresPublish, PublishError, publish
from tests.postgres_server import CHECKOUT, fresh_database, pg  # noqa: F401 (fixture)

pytestmark = pytest.mark.postgres


@pytest.fixture(autouse=True)
def pipeline_password(pg, monkeypatch):  # noqa: F811
    """The pipeline logs in as talent with the password from the environment, as in production."""
    monkeypatch.setenv("PGPASSWORD", pg.password)


def make_build(
    path: Path,
    version: int,
    extra_table: bool = False,
    unmappable: bool = False,
    wider_team: bool = False,
):
    """A small build file: marts (two tables with comments), restricted and main tables that
    must never reach analysts. `version` is the figure every mart row carries; `wider_team`
    gives dim_team one more column (a mart whose layout changed)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    with duckdb.connect(str(path)) as con:
        for schema in ("marts", "restricted", "staging"):
            con.execute(f"create schema {schema}")
        con.execute(
            "create table marts.coverage as select range::integer as month, 'all' as segment, "
            f"{version} * 10 as headcount, {version} / 4 as share from range(6)"
        )
        con.execute("comment on table marts.coverage is 'coverage per month'")
        con.execute("comment on column marts.coverage.share is 'share 0-1'")
        con.execute(
            f"create table marts.dim_team as select 'team ' || range as team, {version} as v, "
            "date '2026-09-30' as as_of"
            + (", 'site ' || range as site" if wider_team else "")
            + " from range(3)"
        )
        if extra_table:
            con.execute("create table marts.added_later as select 1 as x")
        if unmappable:  # no PostgreSQL type for a MAP: the load fails on this table
            con.execute("create table marts.zz_unmappable as select map([1], ['a']) as m")
        con.execute("create table restricted.coverage as select 3 as headcount")
        con.execute("create table staging.people as select 'p_1' as person_key")


def analyst_rows(server, database: str) -> dict[str, list]:
    con = server.connect(database, role="analyst")
    try:
        cur = con.cursor()
        cur.execute(
            "select table_name from information_schema.tables where table_schema = 'marts' "
            "order by 1"
        )
        tables = [t for (t,) in cur.fetchall()]
        out = {}
        for table in tables:
            cur.execute(f"select * from marts.{table} order by 1")
            out[table] = cur.fetchall()
        return out
    finally:
        con.close()


def published_figure(path: Path) -> int:
    with duckdb.connect(str(path), read_only=True) as con:
        return con.execute("select max(v) from marts.dim_team").fetchone()[0]


def test_analysts_read_the_published_marts_and_nothing_else(pg, tmp_path):  # noqa: F811
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    make_build(build, version=1)
    with fresh_database(pg, "serving") as serving, fresh_database(pg, "build", False) as other:
        owner = pg.connect(serving)
        owner.cursor().execute("create table public.not_for_analysts as select 1 as x")
        result = publish(build, published, postgres=PostgresPublish(pg.dsn(serving), "analyst"))
        assert result.postgres.endswith(f"/{serving} schema marts")

        rows = analyst_rows(pg, serving)
        assert sorted(rows) == ["coverage", "dim_team"]
        assert rows["coverage"] == [(m, "all", 10, 0.25) for m in range(6)]
        assert [r[1] for r in rows["dim_team"]] == [1, 1, 1]

        analyst = pg.connect(serving, role="analyst")
        cur = analyst.cursor()
        cur.execute("select obj_description('marts.coverage'::regclass, 'pg_class')")
        assert cur.fetchone()[0] == "coverage per month"
        cur.execute(
            "select col_description('marts.coverage'::regclass, 4), "
            "obj_description((select oid from pg_namespace where nspname = 'marts'))"
        )
        column_comment, schema_comment = cur.fetchone()
        assert column_comment == "share 0-1"
        assert "published" in schema_comment
        # restricted and staging tables of the build never reach the server
        cur.execute("select nspname from pg_namespace where nspname !~ '^(pg_|information_schema)'")
        assert {n for (n,) in cur.fetchall()} == {"marts", "public"}
        for refused in (
            "select * from public.not_for_analysts",
            "insert into marts.coverage (month) values (99)",
            "delete from marts.dim_team",
            "create table marts.mine (x int)",
            "create table public.mine (x int)",
            "drop table marts.coverage",
        ):
            with pytest.raises(psycopg2.errors.InsufficientPrivilege):
                cur.execute(refused)
        analyst.close()
        with pytest.raises(psycopg2.OperationalError, match="permission denied for database"):
            pg.connect(other, role="analyst")
        owner.close()


def test_a_database_holding_raw_or_restricted_schemas_is_refused(pg, tmp_path):  # noqa: F811
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    make_build(build, version=1)
    with fresh_database(pg, "serving") as serving:
        pg.connect(serving).cursor().execute("create schema restricted")
        with pytest.raises(PublishError, match="holds schema\\(s\\) restricted"):
            publish(build, published, postgres=PostgresPublish(pg.dsn(serving), "analyst"))
        assert not published.exists()  # the DuckDB file is not published either


def _publish_in_child(build: Path, published: Path, dsn: str, env: dict[str, str]):
    code = (
        "import sys; from pathlib import Path; "
        "from pipelines.lib.publish import PostgresPublish, publish; "
        "publish(Path(sys.argv[1]), Path(sys.argv[2]), "
        "postgres=PostgresPublish(sys.argv[3], 'analyst'))"
    )
    # a session of its own: the failpoint kills the child's whole process group
    return subprocess.run(
        [sys.executable, "-c", code, str(build), str(published), dsn],
        cwd=CHECKOUT,
        env=env,
        capture_output=True,
        text=True,
        start_new_session=True,
    )


@pytest.mark.parametrize("failpoint", ["publish:postgres_half_loaded", "publish:postgres_swapped"])
def test_a_publish_killed_midway_leaves_the_analysts_marts_as_they_were(
    pg,  # noqa: F811
    tmp_path,
    failpoint,
):
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    make_build(build, version=1)
    with fresh_database(pg, "serving") as serving:
        publish(build, published, postgres=PostgresPublish(pg.dsn(serving), "analyst"))
        before = analyst_rows(pg, serving)

        make_build(build, version=2, extra_table=True)
        env = {**pg.env(), "TALENT_FAILPOINT": failpoint}
        proc = _publish_in_child(build, published, pg.dsn(serving), env)
        assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]

        assert analyst_rows(pg, serving) == before  # the server rolled the transaction back
        assert published_figure(published) == 1
        con = pg.connect(serving)
        cur = con.cursor()
        cur.execute("select count(*) from pg_namespace where nspname like 'marts%'")
        assert cur.fetchone()[0] == 1  # no half-loaded schema left visible
        con.close()

        # the next publish goes through and shows the new figures
        proc = _publish_in_child(build, published, pg.dsn(serving), pg.env())
        assert proc.returncode == 0, proc.stderr[-2000:]
        after = analyst_rows(pg, serving)
        assert sorted(after) == ["added_later", "coverage", "dim_team"]
        assert [r[1] for r in after["dim_team"]] == [2, 2, 2]
        assert published_figure(published) == 2


def test_a_publish_failing_midway_changes_neither_target(pg, tmp_path):  # noqa: F811
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    make_build(build, version=1)
    with fresh_database(pg, "serving") as serving:
        publish(build, published, postgres=PostgresPublish(pg.dsn(serving), "analyst"))
        before = analyst_rows(pg, serving)
        make_build(build, version=2, unmappable=True)
        with pytest.raises(PublishError, match="no PostgreSQL type for the DuckDB type MAP"):
            publish(build, published, postgres=PostgresPublish(pg.dsn(serving), "analyst"))
        assert analyst_rows(pg, serving) == before
        assert published_figure(published) == 1
        assert not list(published.parent.glob(".publishing-*"))
        con = pg.connect(serving)
        cur = con.cursor()
        cur.execute("select nspname from pg_namespace where nspname like 'marts%'")
        assert cur.fetchall() == [("marts",)]  # the half-loaded schema was rolled back too
        con.close()


def test_the_dsn_password_comes_from_the_environment(pg, tmp_path):  # noqa: F811
    """The DSN names no password; without PGPASSWORD the login fails and nothing changes."""
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    make_build(build, version=1)
    with fresh_database(pg, "serving") as serving:
        env = {k: v for k, v in os.environ.items() if k != "PGPASSWORD"}
        env["PGPASSFILE"] = str(tmp_path / "no-pgpass")
        proc = _publish_in_child(build, published, pg.dsn(serving), env)
        assert proc.returncode == 1
        assert "PGPASSWORD" in proc.stderr and "password" in proc.stderr
        assert not published.exists()
        proc = _publish_in_child(build, published, pg.dsn(serving), pg.env())
        assert proc.returncode == 0, proc.stderr[-2000:]
