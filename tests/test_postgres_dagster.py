"""Dagster's instance on PostgreSQL (deploy/dagster-postgres.yaml): a run whose steps execute in
processes of their own stores its run, events and materialisations on the server, and a fresh
instance (another process would do the same: the webserver, the daemon) reads them back.

Needs the local server (`make postgres`); skipped without it, except in CI.
"""

from __future__ import annotations

import shutil

import dagster as dg
import pytest

from tests.postgres_server import CHECKOUT, fresh_database, pg  # noqa: F401 (fixture)

pytestmark = pytest.mark.postgres

INSTANCE_FILE = CHECKOUT / "deploy" / "dagster-postgres.yaml"


@dg.op
def count_engineers() -> int:
    return 42


@dg.op
def publish_count(context, engineers: int) -> int:
    context.log_event(
        dg.AssetMaterialization(asset_key="engineers_counted", metadata={"engineers": engineers})
    )
    return engineers


@dg.job
def postgres_instance_job():
    publish_count(count_engineers())


def make_job():
    """What each step process imports to rebuild the job (this module, by its package path)."""
    return postgres_instance_job


@pytest.fixture
def dagster_home(pg, tmp_path, monkeypatch):  # noqa: F811
    with fresh_database(pg, "dagster", public_connect=False) as database:
        for name, value in {
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(pg.port),
            "DAGSTER_PG_USERNAME": "talent",
            "DAGSTER_PG_PASSWORD": pg.password,
            "DAGSTER_PG_DB": database,
        }.items():
            monkeypatch.setenv(name, value)
        home = tmp_path / "dagster_home"
        home.mkdir()
        shutil.copy(INSTANCE_FILE, home / "dagster.yaml")
        monkeypatch.setenv("DAGSTER_HOME", str(home))
        yield home, database


def test_a_run_on_the_postgres_instance_is_read_back_from_the_server(pg, dagster_home):  # noqa: F811
    home, database = dagster_home
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert type(instance.run_storage).__name__ == "PostgresRunStorage"
        assert type(instance.event_log_storage).__name__ == "PostgresEventLogStorage"
        assert type(instance.schedule_storage).__name__ == "PostgresScheduleStorage"
        # the multiprocess executor runs each step in a process of its own, which reaches the
        # storage through the instance's settings, as a run worker does
        job = dg.build_reconstructable_job(
            "tests.test_postgres_dagster",
            "make_job",
            reconstructor_working_directory=str(CHECKOUT),
        )
        result = dg.execute_job(job, instance=instance)
        assert result.success
        run_id = result.run_id

    with dg.DagsterInstance.from_config(str(home)) as fresh:
        run = fresh.get_run_by_id(run_id)
        assert run is not None and run.status == dg.DagsterRunStatus.SUCCESS
        events = [e.dagster_event for e in fresh.all_logs(run_id) if e.dagster_event]
        steps = {e.step_key for e in events if e.event_type_value == "STEP_SUCCESS"}
        assert steps == {"count_engineers", "publish_count"}
        # the steps ran in other processes than this one
        assert {e.pid for e in events if e.step_key} - {events[0].pid}
        materialization = fresh.get_latest_materialization_event(dg.AssetKey("engineers_counted"))
        assert materialization.asset_materialization.metadata["engineers"].value == 42

    con = pg.connect(database)
    cur = con.cursor()
    cur.execute("select status from runs where run_id = %s", [run_id])
    assert cur.fetchone() == ("SUCCESS",)
    cur.execute("select count(*) from event_logs where run_id = %s", [run_id])
    assert cur.fetchone()[0] >= 10
    con.close()
