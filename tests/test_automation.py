"""Schedules, the file-arrival sensor, and the definitions as the Dagster UI serves them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs.automation import new_exports_sensor, schedules, sources_fingerprint
from pipelines.defs.resources import TalentResource
from pipelines.lib.settings import Settings
from tests.conftest import talent_resources


def _schedules(**settings) -> dict[str, dg.ScheduleDefinition]:
    s = Settings(sources_dir=Path("."), warehouse_dir=Path("."), **settings)
    return {sched.name: sched for sched in schedules(s)}


ROOT = Path(__file__).resolve().parent.parent


def _export(
    folder: Path, name: str, text: str = "cluster,as_of_date,site,gpu_model,gpu_count\n"
) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_text(text)
    return p


def _tick(sources: Path, cursor: str | None, settle_seconds: float = 30.0):
    with dg.build_sensor_context(
        cursor=cursor,
        resources=talent_resources(sources_dir=sources, settle_seconds=settle_seconds),
    ) as ctx:
        return new_exports_sensor(ctx), ctx.cursor


def test_sensor_requests_a_run_only_when_new_files_land(tmp_path):
    _export(tmp_path / "fleet", "gpu_fleet_2026-01.csv")
    _export(tmp_path / "fleet", "notes.txt")  # not a contract file: ignored

    first, cursor = _tick(tmp_path, None, 0)
    assert isinstance(first, dg.RunRequest)
    assert first.tags["talent/new_files"] == "1"

    again, cursor2 = _tick(tmp_path, cursor, 0)
    assert isinstance(again, dg.SkipReason)
    assert "no new export files" in again.skip_message
    assert cursor2 == cursor

    _export(tmp_path / "hris", "employees_2026-02.csv", "employee_id\n")
    third, cursor3 = _tick(tmp_path, cursor, 0)
    assert isinstance(third, dg.RunRequest)
    assert third.tags["talent/new_files"] == "1"
    assert third.run_key != first.run_key


def test_sensor_waits_for_files_that_are_still_being_written(tmp_path):
    _export(tmp_path / "fleet", "gpu_fleet_2026-01.csv")
    result, _ = _tick(tmp_path, None, 3600)
    assert isinstance(result, dg.SkipReason)
    assert "1 file(s) still being written" in result.skip_message


def test_sensor_explains_a_missing_sources_folder(tmp_path):
    result, _ = _tick(tmp_path / "missing", None)
    assert isinstance(result, dg.SkipReason)
    assert "TALENT_SOURCES" in result.skip_message


def test_fingerprint_changes_when_a_file_is_corrected(tmp_path):
    p = _export(tmp_path / "fleet", "gpu_fleet_2026-01.csv")
    before, settled, _ = sources_fingerprint(tmp_path, 0)
    p.write_text(p.read_text() + "fra-1,2026-01-01,FRA,H100,512\n")
    after, _, _ = sources_fingerprint(tmp_path, 0)
    assert len(settled) == 1 and before != after


def test_nightly_schedule_targets_the_nightly_job_at_two():
    ctx = dg.build_schedule_context(
        scheduled_execution_time=datetime(2026, 12, 2, 2, 0, tzinfo=UTC)
    )
    nightly_schedule = _schedules()["nightly_schedule"]
    data = nightly_schedule.evaluate_tick(ctx)
    assert nightly_schedule.job_name == "nightly"
    assert nightly_schedule.cron_schedule == "0 2 * * *"
    assert len(data.run_requests) == 1


def test_schedules_take_their_cron_and_time_zone_from_the_settings():
    built = _schedules(nightly_cron="30 3 * * 1-5", timezone="Europe/Berlin")
    assert built["nightly_schedule"].cron_schedule == "30 3 * * 1-5"
    assert built["nightly_schedule"].execution_timezone == "Europe/Berlin"
    assert built["quarterly_report_schedule"].execution_timezone == "Europe/Berlin"


def test_definitions_wire_schedules_sensors_and_jobs():
    from pipelines.definitions import defs

    repo = defs.get_repository_def()
    assert {s.name for s in repo.schedule_defs} >= {"nightly_schedule", "quarterly_report_schedule"}
    sensors = {s.name: s for s in repo.sensor_defs}
    assert set(sensors) >= {
        "new_exports_sensor",
        "warehouse_freshness_sensor",
        "run_summary_on_success",
        "run_summary_on_failure",
    }
    # every sensor and schedule the README describes runs without being switched on first
    assert all(s.default_status == dg.DefaultSensorStatus.RUNNING for s in sensors.values())
    assert all(s.default_status == dg.DefaultScheduleStatus.RUNNING for s in repo.schedule_defs)
    nightly = defs.resolve_job_def("nightly")
    keys = {k.to_user_string() for k in nightly.asset_layer.executable_asset_keys}
    assert "warehouse/published" in keys
    assert not any(k.startswith("report/") for k in keys)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _post(url: str, query: str) -> dict:
    req = urllib.request.Request(
        url,
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


@pytest.mark.slow
def test_webserver_serves_the_asset_graph_over_graphql(tmp_path):
    port = _free_port()
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path)}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "dagster_webserver",
            "-m",
            "pipelines.definitions",
            "-h",
            "127.0.0.1",
            "-p",
            str(port),
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with urllib.request.urlopen(f"{base}/server_info", timeout=5):
                    break
            except OSError:
                if proc.poll() is not None or time.monotonic() > deadline:
                    out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                    pytest.fail(f"webserver did not start:\n{out[-3000:]}")
                time.sleep(1)
        data = _post(f"{base}/graphql", "{ assetNodes { assetKey { path } groupName } }")
        nodes = data["data"]["assetNodes"]
        keys = {"/".join(n["assetKey"]["path"]) for n in nodes}
        assert "raw/employees" in keys
        assert "marts/certification_coverage" in keys
        assert "warehouse/published" in keys
        assert "report/quarterly_talent_report" in keys
        groups = {n["groupName"] for n in nodes}
        assert {"ingestion", "warehouse", "publish", "report"} <= groups
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.mark.parametrize(
    ("tick", "quarter"),
    [
        (datetime(2026, 10, 1, 6, 0, tzinfo=UTC), "2026-07-01"),
        (datetime(2027, 1, 1, 6, 0, tzinfo=UTC), "2026-10-01"),
        (datetime(2026, 4, 1, 6, 0, tzinfo=UTC), "2026-01-01"),
    ],
)
def test_quarterly_schedule_renders_the_quarter_just_closed(tick, quarter):
    quarterly_report_schedule = _schedules()["quarterly_report_schedule"]
    ctx = dg.build_schedule_context(scheduled_execution_time=tick)
    request = quarterly_report_schedule(ctx)
    assert request.partition_key == quarter
    assert quarterly_report_schedule.job_name == "quarterly_report"


def test_a_new_instance_does_not_rerun_files_the_warehouse_already_loaded(tmp_path):
    """`make dev` after `make run`: the sensor has no cursor yet, the manifest knows the files."""
    import duckdb

    sources, warehouse = tmp_path / "src", tmp_path / "wh"
    loaded = _export(sources / "fleet", "gpu_fleet_2026-01.csv")
    warehouse.mkdir()
    with duckdb.connect(str(warehouse / "raw.duckdb")) as con:
        con.execute("create table manifest (source_path varchar, size_bytes bigint)")
        con.execute("insert into manifest values (?, ?)", [str(loaded), loaded.stat().st_size])

    def tick(cursor):
        resources = talent_resources(sources_dir=sources, warehouse_dir=warehouse, settle_seconds=0)
        with dg.build_sensor_context(cursor=cursor, resources=resources) as ctx:
            return new_exports_sensor(ctx), ctx.cursor

    first, cursor = tick(None)
    assert isinstance(first, dg.SkipReason), "a file the warehouse holds started a run"
    _export(sources / "fleet", "gpu_fleet_2026-02.csv")
    second, _ = tick(cursor)
    assert isinstance(second, dg.RunRequest)
    assert second.tags["talent/new_files"] == "1"


# --- the run summary of a run the daemon or the UI launched -----------------------------------


@pytest.mark.slow
def test_a_daemon_run_gets_the_summary_talent_run_writes(shared_company, tmp_path):
    """The run-status sensor writes, from each run's event log alone, the summary of a run the
    daemon launched: over the runs of a night (ingestion, then each decision) it says what
    `talent run` said for the same runs; a run of `talent run` it leaves alone."""
    import shutil

    from pipelines.defs.automation import run_summary_on_success

    warehouse = tmp_path / "warehouse"
    shutil.copytree(shared_company.warehouse, warehouse)
    cli_runs = tmp_path / "cli-runs"
    (warehouse / "runs").rename(cli_runs)
    cli_record = json.loads((cli_runs / "last_nightly.json").read_text())
    resources = talent_resources(sources_dir=shared_company.sources, warehouse_dir=warehouse)
    because: dict[str, str] = {}
    with dg.DagsterInstance.local_temp(tempdir=str(warehouse / "dagster")) as instance:
        runs = instance.get_runs(filters=dg.RunsFilter(job_name="nightly"))[::-1]
        assert [r.run_id for r in runs] == [cli_record["run_id"], *cli_record["run_ids"]]
        for run in runs:
            assert run.tags.get("talent/trigger") == "cli"
            (ended,) = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_SUCCESS)

            def tick(dagster_run, ended=ended):
                with dg.build_run_status_sensor_context(
                    sensor_name="run_summary_on_success",
                    dagster_event=ended.dagster_event,
                    dagster_instance=instance,
                    dagster_run=dagster_run,
                    resources=resources,
                ) as context:
                    return run_summary_on_success(context)

            assert isinstance(tick(run), dg.SkipReason)
            assert not (warehouse / "runs").exists()
            tick(run.with_tags({**run.tags, "talent/trigger": "new_exports"}))
            record = json.loads((warehouse / "runs" / "last_nightly.json").read_text())
            assert record["run_id"] == run.run_id and record["success"] is True
            because.update(record["computed_because"])
            if run.run_id == cli_record["run_id"]:  # ingestion: what it loaded
                text = (warehouse / "runs" / "last_nightly.txt").read_text()
                cli_text = (cli_runs / "last_nightly.txt").read_text()
                assert "Loaded:" in text
                loaded = [line for line in text.splitlines() if line.startswith("  ")][:12]
                assert loaded == [ln for ln in cli_text.splitlines() if ln.startswith("  ")][:12]
            shutil.rmtree(warehouse / "runs")
    assert because == cli_record["computed_because"] and len(cli_record["step_seconds"]) > 20
    assert cli_record["kept"] == {}  # a first, whole night


@pytest.mark.slow
def test_after_a_nightly_run_the_sensor_asks_for_what_one_changed_input_reaches(
    shared_company, tmp_path, monkeypatch
):
    """The daemon's night: the schedule and the file sensor ask for ingestion alone; after it,
    `next_nightly_run` asks for exactly what is stale, one input changed at a time."""
    import shutil

    from pipelines.defs import build_definitions
    from pipelines.defs.automation import INGESTION_KEYS, next_run
    from pipelines.execution import run_nightly
    from pipelines.lib.project_files import default_assumptions_file
    from tests.conftest import TEST_PSEUDONYM_KEY

    sources, warehouse = tmp_path / "sources", tmp_path / "warehouse"
    shutil.copytree(shared_company.sources, sources)
    shutil.copytree(shared_company.warehouse, warehouse)
    settings = Settings(
        sources_dir=sources,
        warehouse_dir=warehouse,
        pseudonym_key=TEST_PSEUDONYM_KEY,
        settle_seconds=0,
    )
    with dg.DagsterInstance.local_temp(tempdir=str(warehouse / "dagster")) as instance:

        def decided(s: Settings):
            return next_run(s, build_definitions(s), instance)

        nothing = decided(settings)
        assert isinstance(nothing, dg.SkipReason) and "nothing stale" in nothing.skip_message
        # a setting: the assumptions file feeds the costs, ROI, the plans; publishing follows
        assumptions = tmp_path / "assumptions.yaml"
        assumptions.write_text(default_assumptions_file().read_text() + "\n# edited\n")
        request = decided(replace(settings, assumptions_file=assumptions))
        assert {k.to_user_string() for k in request.asset_selection} == {
            "marts/programme_costs",
            "marts/roi_by_period",
            "marts/roi_summary",
            "marts/roi_sensitivity",
            "marts/workforce_plan",
            "marts/workforce_plan_rates",
            "marts/workforce_plan_backtest",
            "warehouse/published",
        }
        assert json.loads(request.tags["talent/computed_because"])["roi_tables"].startswith(
            "code or settings changed"
        )
        # a setting dbt reads: the dbt build and the docs; the statistics wait for the panels
        request = decided(replace(settings, scope_division="Another Division"))
        selected = {k.to_user_string() for k in request.asset_selection}
        assert {"staging/stg_hris__employees", "warehouse/dbt_docs"} <= selected
        assert "marts/certification_effect" not in selected
    # a raw file. The raw exports' data versions name the warehouse they were loaded into, so
    # the copy is first brought up to date by a night of `talent run` (which decides the same)
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    settled = run_nightly(settings)
    assert settled.success and settled.run_ids, settled.describe()
    assert run_nightly(settings).run_ids == []  # then nothing is stale
    fleet = sorted((sources / "fleet").glob("gpu_fleet_*.csv"))[-1]
    lines = fleet.read_text().splitlines()
    fleet.with_name(fleet.stem + "_v2.csv").write_text("\n".join(lines[:-1]) + "\n")
    # the file sensor asks for ingestion; after it, the decision asks for dbt (incrementally)
    with dg.build_sensor_context(
        cursor=json.dumps({"fingerprint": "before", "files": []}),
        resources={"talent": TalentResource.from_settings(settings)},
    ) as ctx:
        asked = new_exports_sensor(ctx)
    assert list(asked.asset_selection) == INGESTION_KEYS
    defs = build_definitions(settings)
    with dg.DagsterInstance.local_temp(tempdir=str(warehouse / "dagster")) as instance:
        defs.resolve_job_def("nightly").execute_in_process(
            instance=instance, asset_selection=INGESTION_KEYS, raise_on_error=False
        )
        request = next_run(settings, defs, instance)
    because = json.loads(request.tags["talent/computed_because"])
    assert because["warehouse_dbt"].startswith("new data in raw/gpu_fleet: "), because
    assert "warehouse_dbt" in json.loads(request.tags["talent/new_data_only"])
    selected = {k.to_user_string() for k in request.asset_selection}
    assert "warehouse/dbt_docs" not in selected and "marts/certification_effect" not in selected
