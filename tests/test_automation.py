"""Schedules, the file-arrival sensor, and the definitions as the Dagster UI serves them."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from datetime import UTC, datetime
from pathlib import Path

import dagster as dg
import pytest

from pipelines.defs.automation import new_exports_sensor, schedules, sources_fingerprint
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


def _summary_lines(text: str) -> list[str]:
    """The summary's lines, without the wall time and the log path (they differ by design) and
    the warnings about checks without a result (read from Dagster's messages by `talent run`
    alone)."""
    return [
        line
        for line in text.splitlines()
        if not line.startswith("Full log:") and "gave no result" not in line
        and " s, run " not in line
    ]  # fmt: skip


@pytest.mark.slow
def test_a_daemon_run_gets_the_summary_talent_run_writes(shared_company, tmp_path):
    """The run-status sensor writes, from the run's event log alone, the summary, record and
    log `talent run` wrote at the end of the same run; a run of `talent run` it leaves alone."""
    import shutil

    from pipelines.defs.automation import run_summary_on_success

    warehouse = tmp_path / "warehouse"
    shutil.copytree(shared_company.warehouse, warehouse)
    cli_runs = tmp_path / "cli-runs"
    (warehouse / "runs").rename(cli_runs)
    cli_record = json.loads((cli_runs / "last_nightly.json").read_text())
    resources = talent_resources(sources_dir=shared_company.sources, warehouse_dir=warehouse)
    with dg.DagsterInstance.local_temp(tempdir=str(warehouse / "dagster")) as instance:
        (run,) = instance.get_runs(filters=dg.RunsFilter(job_name="nightly"))
        assert run.tags.get("talent/trigger") == "cli"
        (ended,) = instance.all_logs(run.run_id, of_type=dg.DagsterEventType.RUN_SUCCESS)

        def tick(dagster_run):
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

    runs = warehouse / "runs"
    record = json.loads((runs / "last_nightly.json").read_text())
    assert record["run_id"] == run.run_id and record["success"] is True
    for key in set(cli_record) - {"wall_seconds", "checks_without_result"}:
        assert record[key] == cli_record[key], key
    assert record["kept"] == {} and len(record["step_seconds"]) > 20  # a first, whole run
    text = (runs / "last_nightly.txt").read_text()
    assert _summary_lines(text) == _summary_lines((cli_runs / "last_nightly.txt").read_text())
    assert "Loaded:" in text and "Checks:" in text
    log = (runs / "nightly.log").read_text()
    assert log == (cli_runs / "nightly.log").read_text()
