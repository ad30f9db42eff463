"""Targets without a server: the settings that choose them, what dbt's process gets, type
mappings, and the portable spellings of DuckDB functions checked against DuckDB itself."""

from __future__ import annotations

import base64
import subprocess
import sys
from datetime import date, timedelta
from pathlib import Path

import duckdb
import jinja2
import pytest

from pipelines.lib import postgres, targets
from pipelines.lib import settings as settings_module
from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.settings import Settings, SettingsError


def settings(tmp_path: Path, **fields) -> Settings:
    return Settings(sources_dir=tmp_path / "s", warehouse_dir=tmp_path / "w", **fields)


def test_spark_without_its_extra_is_refused_with_the_command_that_installs_it(
    tmp_path, monkeypatch
):
    monkeypatch.setattr(settings_module, "_spark_installed", lambda: False)
    with pytest.raises(SettingsError, match="uv sync --extra spark"):
        settings(tmp_path, build_target="spark")
    monkeypatch.setattr(settings_module, "_spark_installed", lambda: True)
    assert settings(tmp_path, build_target="spark").build_target == "spark"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"publish_dsn": "postgresql://talent:secret@db:5432/talent"}, "contains a password"),
        ({"build_target": "postgres"}, "needs the database to build in"),
        ({"build_target": "bigquery"}, "not one of duckdb, postgres, spark"),
        ({"publish_dsn": "postgresql://talent@db:5432/"}, "names no database"),
        (
            {
                "build_target": "postgres",
                "build_dsn": "postgresql://talent@db:5432/talent",
                "publish_dsn": "postgresql://analyst@db:5432/talent",
            },
            "name the same database",
        ),
    ],
)
def test_unusable_target_settings_are_refused_with_advice(tmp_path, fields, message):
    with pytest.raises(SettingsError, match=message):
        settings(tmp_path, **fields)


def test_target_settings_come_from_the_environment_and_flags_win(tmp_path):
    env = {
        "TALENT_PUBLISH_DSN": "postgresql://talent@db:5432/talent",
        "TALENT_BUILD_TARGET": "postgres",
        "TALENT_BUILD_DSN": "postgresql://talent@db:5432/talent_build",
        "TALENT_PUBLISH_READER_ROLE": "bi_reader",
    }
    s = Settings.from_env(env, warehouse_dir=tmp_path / "w")
    assert (s.build_target, s.publish_reader_role) == ("postgres", "bi_reader")
    assert s.publish_dsn == env["TALENT_PUBLISH_DSN"]
    assert Settings.from_env(env, build_target="duckdb").build_target == "duckdb"


def test_dbt_gets_the_target_and_the_key_out_of_band(tmp_path, monkeypatch):
    monkeypatch.setattr(settings_module, "_spark_installed", lambda: True)
    key = "a key with spaces, a back\\slash and a 'quote'"
    duck = settings(tmp_path, pseudonym_key=key)
    assert targets.dbt_target_env(duck) == {"DBT_TARGET": "dev"}

    pg = settings(
        tmp_path,
        pseudonym_key=key,
        build_target="postgres",
        build_dsn="postgresql://talent@db.internal:6543/talent_build",
    )
    env = targets.dbt_target_env(pg)
    assert env["DBT_TARGET"] == "postgres"
    assert (env["TALENT_BUILD_PG_HOST"], env["TALENT_BUILD_PG_PORT"]) == ("db.internal", "6543")
    assert (env["TALENT_BUILD_PG_USER"], env["TALENT_BUILD_PG_DBNAME"]) == (
        "talent",
        "talent_build",
    )
    assert env["PGOPTIONS"] == (
        "-c talent.pseudonym_key=a\\ key\\ with\\ spaces,\\ a\\ back\\\\slash\\ and\\ a\\ 'quote'"
    )
    assert "PGPASSWORD" not in env  # dbt's process inherits it; it is never a setting

    spark = settings(tmp_path, pseudonym_key=key, build_target="spark")
    env = targets.dbt_target_env(spark)
    assert env["DBT_TARGET"] == "spark"
    assert base64.b64decode(env["TALENT_PSEUDONYM_KEY_B64"]).decode() == key
    assert env["TALENT_SPARK_RAW"] == str(spark.spark_dir / "raw")
    # the whole environment dbt gets: the DuckDB paths as before, plus the target's
    assert {"TALENT_BUILD_DB", "TALENT_RAW_DB", "TALENT_PSEUDONYM_KEY"} <= set(spark.dbt_env())


def test_pgoptions_keep_options_already_set():
    assert targets.pgoptions_with_key("k", "-c search_path=x") == (
        "-c search_path=x -c talent.pseudonym_key=k"
    )


@pytest.mark.parametrize(
    ("duck", "pg"),
    [
        ("BIGINT", "bigint"),
        ("HUGEINT", "numeric(38, 0)"),
        ("DOUBLE", "double precision"),
        ("DECIMAL(38,12)", "numeric(38, 12)"),
        ("VARCHAR[]", "text[]"),
        ("TIMESTAMP WITH TIME ZONE", "timestamptz"),
        ("JSON", "jsonb"),
    ],
)
def test_duckdb_types_map_to_postgres_and_back(duck, pg):
    assert postgres.pg_type(duck) == pg
    back = postgres.duckdb_type(pg, None, None)
    expected = {
        "HUGEINT": "DECIMAL(38, 0)",
        "DECIMAL(38,12)": "DECIMAL(38, 12)",
        "TIMESTAMP WITH TIME ZONE": "TIMESTAMPTZ",
    }.get(duck, duck)
    assert back == expected


def test_a_type_without_a_postgres_equivalent_is_named():
    with pytest.raises(postgres.PostgresError, match="MAP"):
        postgres.pg_type("MAP(VARCHAR, INTEGER)")


def test_accent_table_is_current_and_agrees_with_duckdb_strip_accents():
    from tools import accents

    assert accents.main(["--check"]) == 0, "run `.venv/bin/python -m tools.accents`"
    pairs = accents.letter_map()
    assert len(pairs) > 700
    con = duckdb.connect()
    stripped = con.execute(
        "select list(strip_accents(c)) from unnest(?) as t(c)", [[a for a, _ in pairs]]
    ).fetchone()[0]
    assert stripped == [b for _, b in pairs]
    # the translate() the macro renders gives DuckDB's result for a whole name
    module = (
        jinja2.Environment()
        .from_string((DBT_PROJECT_DIR / "macros" / "accents.sql").read_text())
        .module
    )
    accented, base = eval(str(module.accented_letters())), eval(str(module.base_letters()))  # noqa: S307
    name = "Zoë Ångström-Núñez Dvořák Łukasz Ǖ e\u0301"
    assert (
        con.execute("select translate(lower(?), ?, ?)", [name, accented, base]).fetchone()[0]
        == (con.execute("select strip_accents(lower(?))", [name]).fetchone()[0])
    )


def _portable_macros():
    source = (DBT_PROJECT_DIR / "macros" / "portable.sql").read_text()
    return jinja2.Environment().from_string(source).module


def test_full_months_between_counts_as_duckdb_date_sub_does():
    """Spark's and PostgreSQL's complete months (the same rule; Spark's spelling runs in DuckDB)
    equal DuckDB's date_sub('month', ...) for every pair of days in two years, month ends and
    leap days included."""
    sql = str(_portable_macros().spark__full_months_between("a", "b"))
    days = [date(2023, 1, 1) + timedelta(days=i) for i in range(0, 731, 3)]
    days += [date(2024, 2, 29), date(2024, 1, 31), date(2023, 2, 28), date(2024, 3, 31)]
    pairs = [(a, b) for a in days for b in days if b >= a]
    con = duckdb.connect()
    con.execute("create table pairs (a date, b date)")
    con.executemany("insert into pairs values (?, ?)", pairs)
    mismatches = con.execute(
        f"select a, b, date_sub('month', a, b), {sql} from pairs "
        f"where date_sub('month', a, b) != {sql} limit 5"
    ).fetchall()
    assert mismatches == []
    assert con.execute("select count(*) from pairs").fetchone()[0] > 10_000


def test_the_value_at_the_latest_row_is_null_when_it_is_null_there():
    """value_at_max: DuckDB's spelling and PostgreSQL's (an ordered array_agg, which DuckDB runs
    too) give the value on the row with the largest key, NULL when it is NULL there, on random
    groups with NULL values. DuckDB's plain arg_max would give an earlier row's value."""
    import random

    macros = _portable_macros()
    spellings = {
        "duckdb": str(macros.default__value_at_max("v", "k")),
        "postgres": str(macros.postgres__value_at_max("v", "k")),
    }
    rng = random.Random(5)
    rows = [
        (g, k, rng.choice([None, "a", "b", "c"]))
        for g in range(300)
        for k in rng.sample(range(20), rng.randint(1, 6))
    ]
    con = duckdb.connect()
    con.execute("create table t (g integer, k integer, v varchar)")
    con.executemany("insert into t values (?, ?, ?)", rows)
    latest = {}
    for g, k, v in rows:
        if g not in latest or k > latest[g][0]:
            latest[g] = (k, v)
    for target, sql in spellings.items():
        got = dict(con.execute(f"select g, {sql} from t group by g").fetchall())
        assert got == {g: v for g, (_, v) in latest.items()}, target
    assert sum(v is None for _, v in latest.values()) > 20  # NULL at the latest row, often
    plain = dict(con.execute("select g, arg_max(v, k) from t group by g").fetchall())
    assert plain != {g: v for g, (_, v) in latest.items()}  # the problem is real


def test_a_dsn_naming_a_password_or_a_missing_setting_is_refused_before_anything_runs(tmp_path):
    for flags, message in (
        (["--publish-dsn", "postgresql://talent:secret@127.0.0.1:5432/talent"], "PGPASSWORD"),
        (["--build-target", "postgres"], "TALENT_BUILD_DSN"),
        (["--build-target", "oracle"], "not one of duckdb, postgres, spark"),
    ):
        proc = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "run", "--skip-report"]
            + ["--sources", str(Path("sources/sample")), "--warehouse-dir", str(tmp_path / "w")]
            + flags,
            cwd=DBT_PROJECT_DIR.parent,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 2, proc.stderr
        assert message in proc.stderr
        assert not (tmp_path / "w" / "raw.duckdb").exists()


def test_a_checkout_the_server_user_cannot_enter_keeps_the_server_files_outside_it(tmp_path):
    """A clone in a private folder (`mktemp -d` is 0700) is closed to the `postgres` user that
    runs the server: its data, socket and log go to a folder of their own, found again later."""
    import os
    import pwd
    import shutil

    from tools.postgres_server import server_dir

    if os.geteuid() != 0:
        pytest.skip("only root starts the server as another user")
    try:
        pwd.getpwnam("postgres")
    except KeyError:
        pytest.skip("no postgres user (apt-get install postgresql)")
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    folder = private / ".postgres"
    home = server_dir(folder)
    try:
        assert home != folder and home.parent == Path("/var/tmp")
        assert server_dir(folder) == home  # stop and status find it again
    finally:
        shutil.rmtree(home, ignore_errors=True)
