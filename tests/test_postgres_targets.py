"""The whole pipeline with dbt on PostgreSQL and the marts published there, compared with DuckDB.

One generated company (a seed no other test uses), one `talent run --build-target postgres
--publish-dsn ...` with Dagster's instance on the server too, then:

- every staging, intermediate, restricted and mart table dbt built on PostgreSQL (copied back
  into the build file, where the statistics read them) equals a DuckDB build of the same raw
  file, row for row, doubles to 1e-9 (tools/compare_targets.py);
- the analyst role reads the same marts from the serving database as the published file holds;
- the pseudonym key is in no file the run left (compiled SQL, logs, warehouse);
- the run and its events are on the server.

Needs the local server (`make postgres`); skipped without it, except in CI.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from datetime import date

import dagster as dg
import duckdb
import pytest

from pipelines.lib import targets
from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.settings import Settings
from tests.conftest import TEST_PSEUDONYM_KEY
from tests.postgres_server import CHECKOUT, fresh_database, pg  # noqa: F401 (fixture)
from tools.compare_targets import compare_tables, dbt_build, values_equal

# minutes of pipeline and dbt-postgres: `make test-targets` (with Spark), which .ci/run runs
pytestmark = [pytest.mark.postgres, pytest.mark.targets, pytest.mark.slow]

EMPLOYEES, YEARS, SEED = 300, 2, 4711  # a seed no other test and no bundled sample uses


@pytest.fixture(scope="module")
def postgres_run(pg, tmp_path_factory):  # noqa: F811
    """(folder, serving database, Dagster database, run's stderr) after one pipeline run."""
    from tools.generate import generate_company

    root = tmp_path_factory.mktemp("postgres-run")
    generate_company(root / "sources", EMPLOYEES, YEARS, date(2026, 9, 30), SEED, progress=False)
    with (
        fresh_database(pg, "build", public_connect=False) as build_db,
        fresh_database(pg, "serving") as serving_db,
        fresh_database(pg, "dagster", public_connect=False) as dagster_db,
    ):
        home = root / "dagster_home"
        home.mkdir()
        shutil.copy(CHECKOUT / "deploy" / "dagster-postgres.yaml", home / "dagster.yaml")
        env = {
            **pg.env(),
            "TALENT_PSEUDONYM_KEY": TEST_PSEUDONYM_KEY,
            "DAGSTER_HOME": str(home),
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(pg.port),
            "DAGSTER_PG_USERNAME": "talent",
            "DAGSTER_PG_PASSWORD": pg.password,
            "DAGSTER_PG_DB": dagster_db,
        }
        proc = subprocess.run(
            [sys.executable, "-m", "pipelines.cli", "run", "--skip-report"]
            + ["--sources", str(root / "sources"), "--warehouse-dir", str(root / "warehouse")]
            + ["--build-target", "postgres", "--build-dsn", pg.dsn(build_db)]
            + ["--publish-dsn", pg.dsn(serving_db)],
            cwd=CHECKOUT,
            env=env,
            capture_output=True,
            text=True,
        )
        assert proc.returncode == 0, f"talent run failed:\n{proc.stderr[-6000:]}"
        yield root, serving_db, dagster_db, home, proc.stderr


def test_dbt_on_postgres_builds_what_dbt_on_duckdb_builds(postgres_run, tmp_path):
    root, *_ = postgres_run
    reference = Settings(
        sources_dir=root / "sources",
        warehouse_dir=tmp_path / "duckdb",
        pseudonym_key=TEST_PSEUDONYM_KEY,
    )
    reference.build_db.parent.mkdir(parents=True)
    shutil.copy2(root / "warehouse" / "raw.duckdb", reference.raw_db)
    dbt_build(reference, tmp_path / "dbt-target")
    built_on_postgres = root / "warehouse" / "build" / "talent.duckdb"
    assert compare_tables(reference.build_db, built_on_postgres, targets.BUILT_SCHEMAS) == []
    with duckdb.connect(str(built_on_postgres), read_only=True) as con:
        # the comparison compared something: every mart, people in them, the statistics ran on
        # the tables PostgreSQL built
        marts = {
            t
            for (t,) in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'marts'"
            ).fetchall()
        }
        assert {"attrition", "certification_coverage", "incident_rates", "dim_employee"} <= marts
        assert con.execute("select count(*) from marts.dim_employee").fetchone()[0] > 20
        assert con.execute("select count(*) from marts.certification_effect").fetchone()[0] == 3


def test_analysts_read_on_postgres_the_marts_of_the_published_file(pg, postgres_run):  # noqa: F811
    root, serving_db, *_ = postgres_run
    published = root / "warehouse" / "talent.duckdb"
    analyst = pg.connect(serving_db, role="analyst")
    cur = analyst.cursor()
    with duckdb.connect(str(published), read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'marts' order by 1"
            ).fetchall()
        ]
        cur.execute(
            "select table_name from information_schema.tables where table_schema = 'marts' "
            "order by 1"
        )
        assert [t for (t,) in cur.fetchall()] == tables
        for table in tables:
            columns = [
                c
                for (c,) in con.execute(
                    "select column_name from duckdb_columns() where schema_name = 'marts' "
                    "and table_name = ? order by column_index",
                    [table],
                ).fetchall()
            ]
            order = ", ".join(f'"{c}"' for c in columns)
            expected = con.execute(f'select * from marts."{table}" order by {order}').fetchall()
            cur.execute(f'select {order} from marts."{table}" order by {order}')
            got = cur.fetchall()
            assert len(got) == len(expected), table
            bad = [
                (table, c, a, b)
                for erow, grow in zip(expected, got, strict=True)
                for c, a, b in zip(columns, erow, grow, strict=True)
                if not values_equal(a, b)
            ]
            assert not bad, bad[:5]
    cur.execute("select current_user")
    assert cur.fetchone() == ("analyst",)
    # the descriptions dbt persisted on PostgreSQL came back, and went out with the marts
    cur.execute("select col_description('marts.attrition'::regclass, 1)")
    assert "month" in cur.fetchone()[0]
    analyst.close()


def test_the_pseudonym_key_is_in_no_file_the_run_left(postgres_run):
    root, *_ = postgres_run
    key = TEST_PSEUDONYM_KEY.encode()
    folders = [root / "warehouse", DBT_PROJECT_DIR / "target", root / "dagster_home"]
    leaked = [
        path
        for folder in folders
        for path in folder.rglob("*")
        if path.is_file() and key in path.read_bytes()
    ]
    assert leaked == []


def test_the_run_and_its_events_are_on_the_server(pg, postgres_run):  # noqa: F811
    root, _serving, dagster_db, home, _stderr = postgres_run
    env = {
        "DAGSTER_PG_HOST": "127.0.0.1",
        "DAGSTER_PG_PORT": str(pg.port),
        "DAGSTER_PG_USERNAME": "talent",
        "DAGSTER_PG_PASSWORD": pg.password,
        "DAGSTER_PG_DB": dagster_db,
    }
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        with dg.DagsterInstance.from_config(str(home)) as instance:
            runs = instance.get_runs()
            # a night is its ingestion run, then one run per decision of what is stale
            # (pipelines/defs/versions.py, decide): the runs the night's record names, the
            # ingestion run first
            record = json.loads((root / "warehouse" / "runs" / "last_nightly.json").read_text())
            night = [record["run_id"], *record["run_ids"]]
            assert sorted(r.run_id for r in runs) == sorted(night)
            assert {r.job_name for r in runs} == {"nightly"} and len(runs) >= 2
            assert all(r.status == dg.DagsterRunStatus.SUCCESS for r in runs)
            materialized = {
                e.dagster_event.asset_key.to_user_string()
                for r in runs
                for e in instance.all_logs(r.run_id)
                if e.dagster_event and e.dagster_event.event_type_value == "ASSET_MATERIALIZATION"
            }
            assert {"warehouse/published", "marts/attrition", "raw/employees"} <= materialized
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def test_bi_tools_find_each_marts_grain_as_its_key_and_counts_as_integers(pg, postgres_run):  # noqa: F811
    """The served marts as SQLAlchemy (Metabase's and Superset's way) reflects them."""
    import json

    import sqlalchemy as sa

    from pipelines.defs.dbt import dbt_project
    from pipelines.lib.serving import mart_grains

    _root, serving_db, *_ = postgres_run
    grains = mart_grains(json.loads(dbt_project.manifest_path.read_text()))
    engine = sa.create_engine(
        sa.engine.URL.create(
            "postgresql+psycopg2", "analyst", pg.analyst_password, "127.0.0.1", pg.port, serving_db
        )
    )
    try:
        inspector = sa.inspect(engine)
        for table, grain in grains.items():
            if grain.primary:
                keys = inspector.get_pk_constraint(table, schema="marts")["constrained_columns"]
            else:
                [unique] = inspector.get_unique_constraints(table, schema="marts")
                keys = unique["column_names"]
            assert tuple(keys) == grain.columns, table
        decimals_of_no_scale = [
            (table, column["name"])
            for table in inspector.get_table_names(schema="marts")
            for column in inspector.get_columns(table, schema="marts")
            if isinstance(column["type"], sa.Numeric)
            and not isinstance(column["type"], sa.Float)
            and column["type"].scale == 0
        ]
        assert decimals_of_no_scale == []  # counts and numbers are integers
        interval = {
            c["name"]: c["type"] for c in inspector.get_columns("certification_awards", "marts")
        }["interval_number"]
        assert isinstance(interval, sa.Integer)
    finally:
        engine.dispose()
