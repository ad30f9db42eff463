"""The serving database as analysts and BI tools meet it: logins per person in a group that
reads `marts` and nothing else (every README promise tried as such a login), a publish that
neither waits on a reader's open transaction nor makes new readers wait, views in
`analyst_views` that outlive publishes, and keys and types as SQLAlchemy reflects them.

Needs the local server (`make postgres`); skipped without it, except in CI.
"""

from __future__ import annotations

import json
import threading
import uuid
from pathlib import Path

import psycopg2
import pytest
import sqlalchemy as sa

from pipelines.lib.postgres import Grain
from pipelines.lib.publish import PostgresPublish, publish
from pipelines.lib.serving import TIMEOUTS, add_login, mart_grains, remove_login
from tests.postgres_server import fresh_database, pg  # noqa: F401 (fixture)
from tests.test_postgres_publish import make_build

pytestmark = pytest.mark.postgres

GRAINS = {"coverage": Grain(("month", "segment"), True), "dim_team": Grain(("team",), False)}


@pytest.fixture(autouse=True)
def pipeline_password(pg, monkeypatch):  # noqa: F811
    monkeypatch.setenv("PGPASSWORD", pg.password)


@pytest.fixture
def serving(pg, tmp_path):  # noqa: F811
    """(database, group, two logins {name: password}, build file, published file), published
    once; the roles are dropped afterwards (roles are the server's, not the database's)."""
    tag = uuid.uuid4().hex[:8]
    group = f"analysts_{tag}"
    build, published = tmp_path / "build.duckdb", tmp_path / "talent.duckdb"
    make_build(build, version=1)
    try:
        with fresh_database(pg, "serving") as database:
            logins = {}
            for person in ("ada", "bob"):
                login = add_login(pg.dsn(database), f"{person}_{tag}", group)
                logins[login.name] = login.password
            publish(build, published, postgres=PostgresPublish(pg.dsn(database), group, GRAINS))
            yield database, group, logins, build, published
    finally:
        # the database (and the grants in it) is gone: the roles can go
        con = pg.connect()
        cur = con.cursor()
        cur.execute("select quote_ident(rolname) from pg_roles where rolname like %s", [f"%{tag}"])
        for (role,) in cur.fetchall():
            cur.execute(f"drop role {role}")
        con.close()


def login_connect(pg, database, name, password):  # noqa: F811
    con = psycopg2.connect(pg.dsn(database, role=name), password=password, connect_timeout=5)
    con.autocommit = True
    return con


def test_every_promise_holds_as_an_analyst_login(pg, serving, tmp_path):  # noqa: F811
    database, group, logins, build, published = serving
    (ada, ada_pw), (bob, bob_pw) = logins.items()
    con = login_connect(pg, database, ada, ada_pw)
    cur = con.cursor()
    cur.execute("select count(*) from marts.coverage")
    assert cur.fetchone() == (6,)
    for setting, value in TIMEOUTS.items():
        cur.execute(f"show {setting}")
        assert cur.fetchone() == (value,)
    for refused in (
        "create temporary table scratch (x int)",
        "create table public.mine (x int)",
        "create table marts.mine (x int)",
        "insert into marts.coverage (month, segment) values (99, 'x')",
        "delete from marts.dim_team",
        "select * from marts.coverage for update",
        f"alter role \"{bob}\" password 'taken-over'",
        f'grant "{group}" to "{bob}"',
        "create database mine",
        "create role mine",
    ):
        with pytest.raises(psycopg2.Error) as refusal:
            cur.execute(refused)
        assert isinstance(
            refusal.value, psycopg2.errors.InsufficientPrivilege | psycopg2.errors.UndefinedTable
        ), (refused, refusal.value)
    # a login may change its own password (PostgreSQL always allows it): it locks out only
    # that person; the other login still logs in
    cur.execute(f"alter role \"{ada}\" password 'ada-only'")
    login_connect(pg, database, bob, bob_pw).close()
    con.close()
    with fresh_database(pg, "other", public_connect=False) as other:
        for elsewhere in ("postgres", "template1", other):
            with pytest.raises(psycopg2.OperationalError, match="permission denied for database"):
                login_connect(pg, elsewhere, bob, bob_pw)


def test_views_in_analyst_views_outlive_publishes_and_removal_drops_them(pg, serving):  # noqa: F811
    database, group, logins, build, published = serving
    (ada, ada_pw), (bob, bob_pw) = logins.items()
    con = login_connect(pg, database, ada, ada_pw)
    cur = con.cursor()
    cur.execute(
        "create view analyst_views.headcount as select month, headcount from marts.coverage"
    )
    cur.execute(f'grant select on analyst_views.headcount to "{bob}"')
    make_build(build, version=2)
    publish(build, published, postgres=PostgresPublish(pg.dsn(database), group, GRAINS))
    cur.execute("select sum(headcount) from analyst_views.headcount")
    assert cur.fetchone() == (6 * 20,)  # the new marts' figures, through the same view
    con.close()
    removed = remove_login(pg.dsn(database), ada, group)
    assert removed == ["view analyst_views.headcount"]
    with pytest.raises(psycopg2.OperationalError):
        login_connect(pg, database, ada, ada_pw)
    bob_con = login_connect(pg, database, bob, bob_pw)
    bob_con.cursor().execute("select count(*) from marts.coverage")
    bob_con.close()


def waiting_locks(pg, database, stop: threading.Event, seen: list, queries: list):  # noqa: F811
    """Until `stop`: every lock some session of `database` waits for, and a new reader's query
    each round (as a BI dashboard would issue them)."""
    watcher = pg.connect(database)
    cur = watcher.cursor()
    while not stop.is_set():
        cur.execute(
            "select a.usename, a.query, l.mode from pg_locks l join pg_stat_activity a on "
            "a.pid = l.pid where not l.granted and a.datname = %s",
            [database],
        )
        seen.extend(cur.fetchall())
        cur.execute("select count(*) from marts.coverage")
        queries.append(cur.fetchone()[0])
    watcher.close()


def publish_with_a_reader_holding_a_transaction(pg, serving, version: int, **build_options):  # noqa: F811
    """Publish `version` while ada's transaction, which read every mart, stays open; returns
    (publish result, ada's connection, locks waited for, queries run during the publish)."""
    database, group, logins, build, published = serving
    (ada, ada_pw), _ = logins.items()
    reader = psycopg2.connect(pg.dsn(database, role=ada), password=ada_pw)
    rcur = reader.cursor()  # autocommit off: the transaction stays open, idle
    rcur.execute("select count(*) from marts.coverage join marts.dim_team on true")
    make_build(build, version=version, **build_options)
    stop, seen, queries = threading.Event(), [], []
    watcher = threading.Thread(target=waiting_locks, args=(pg, database, stop, seen, queries))
    watcher.start()
    try:
        result = publish(
            build, published, postgres=PostgresPublish(pg.dsn(database), group, GRAINS)
        )
    finally:
        stop.set()
        watcher.join()
    return result, reader, seen, queries


def test_a_reader_holding_a_transaction_neither_stalls_the_publish_nor_new_readers(
    pg,  # noqa: F811
    serving,
):
    result, reader, seen, queries = publish_with_a_reader_holding_a_transaction(pg, serving, 2)
    assert seen == []  # no session ever waited for a lock: not the publish, not a reader
    assert queries  # readers kept querying during the publish
    assert result.postgres_notes == []
    cur = reader.cursor()
    cur.execute("select max(v) from marts.dim_team")  # its next statement sees the new marts
    assert cur.fetchone() == (2,)
    reader.close()


def test_a_mart_whose_columns_change_ends_the_idle_reader_and_keeps_the_views(pg, serving):  # noqa: F811
    database, group, logins, build, published = serving
    (ada, ada_pw), _ = logins.items()
    con = login_connect(pg, database, ada, ada_pw)
    con.cursor().execute("create view analyst_views.teams as select team from marts.dim_team")
    con.close()
    # dim_team gains a column: its layout changed, it must be replaced
    result, reader, seen, _ = publish_with_a_reader_holding_a_transaction(
        pg, serving, 2, extra_table=True, wider_team=True
    )
    ended = [
        n for n in result.postgres_notes if n.startswith(f"ended the session of analyst {ada}")
    ]
    assert len(ended) == 1 and "marts.dim_team" in ended[0], result.postgres_notes
    assert f"recreated view analyst_views.teams of {ada} on the changed marts" in (
        result.postgres_notes
    )
    assert all(mode == "AccessShareLock" for _, _, mode in seen)  # only readers, briefly
    with pytest.raises(psycopg2.OperationalError):
        reader.cursor().execute("select 1")
    con = login_connect(pg, database, ada, ada_pw)
    cur = con.cursor()
    cur.execute("select count(*) from analyst_views.teams")
    assert cur.fetchone() == (3,)
    con.close()


def test_bi_tools_reflect_the_grain_as_keys_and_counts_as_integers(pg, serving):  # noqa: F811
    database, _group, logins, *_ = serving
    (ada, ada_pw), _ = logins.items()
    engine = sa.create_engine(
        sa.engine.URL.create("postgresql+psycopg2", ada, ada_pw, "127.0.0.1", pg.port, database)
    )
    try:
        inspector = sa.inspect(engine)
        assert set(inspector.get_table_names(schema="marts")) == {"coverage", "dim_team"}
        pk = inspector.get_pk_constraint("coverage", schema="marts")
        assert pk["constrained_columns"] == ["month", "segment"]
        unique = inspector.get_unique_constraints("dim_team", schema="marts")
        assert [u["column_names"] for u in unique] == [["team"]]
        types = {c["name"]: c["type"] for c in inspector.get_columns("coverage", schema="marts")}
        assert isinstance(types["headcount"], sa.Integer | sa.BigInteger)
        assert isinstance(types["month"], sa.Integer)
    finally:
        engine.dispose()


def test_every_dbt_mart_has_its_grain_from_its_dbt_tests():
    from pipelines.defs.dbt import dbt_project

    manifest = json.loads(Path(dbt_project.manifest_path).read_text())
    marts = {
        n.get("alias") or n["name"]
        for n in manifest["nodes"].values()
        if n["resource_type"] == "model" and n["schema"] == "marts"
    }
    grains = mart_grains(manifest)
    assert set(grains) == marts
    # the grains the marts' yml state in words (README: "The main marts and their grain")
    assert grains["attrition"] == Grain(
        ("period_type", "period_start", "segment_type", "segment_value"), True
    )
    assert grains["dim_employee"] == Grain(("person_key",), True)


def test_the_command_line_adds_and_removes_a_login(pg):  # noqa: F811
    import subprocess
    import sys

    from tests.postgres_server import CHECKOUT

    tag = uuid.uuid4().hex[:8]
    group, name = f"analysts_{tag}", f"cli_{tag}"
    env = {**pg.env(), "TALENT_PUBLISH_READER_ROLE": group}

    def talent(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "analysts", *args],
            cwd=CHECKOUT,
            env=env,
            capture_output=True,
            text=True,
        )

    try:
        with fresh_database(pg, "serving") as database:
            env["TALENT_PUBLISH_DSN"] = pg.dsn(database)
            added = talent("add", name)
            assert added.returncode == 0, added.stderr
            password = added.stdout.split("hand it over privately): ")[1].strip()
            login_connect(pg, database, name, password).close()
            assert talent("add", "Robert'); drop table x;--").returncode == 1
            removed = talent("remove", name)
            assert removed.returncode == 0, removed.stderr
            with pytest.raises(psycopg2.OperationalError):
                login_connect(pg, database, name, password)
            assert talent("add", name).returncode == 0  # the same person may come back
            env.pop("TALENT_PUBLISH_DSN")
            nowhere = talent("add", name)
            assert nowhere.returncode == 2 and "TALENT_PUBLISH_DSN" in nowhere.stderr
    finally:
        con = pg.connect()
        cur = con.cursor()
        cur.execute("select quote_ident(rolname) from pg_roles where rolname like %s", [f"%{tag}"])
        for (role,) in cur.fetchall():
            cur.execute(f"drop role {role}")
        con.close()
