"""The Dagster services as deployed: one workspace for every process, the systemd units and
their environment file (deploy/), and, against a real PostgreSQL, the daemon and the webserver
started as the units start them, the nightly launched through the webserver's GraphQL API,
queued, run by the daemon's run worker and published, and a sensor tick seen through the same
API (the sensor's own nightly publishing with the same environment).

The last one takes minutes (two nightlies of a small generated company): `make test-targets`.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import time
import tomllib
from datetime import date
from pathlib import Path

import duckdb
import pytest
import requests
import yaml

from tests.conftest import TEST_PSEUDONYM_KEY
from tests.postgres_server import CHECKOUT, fresh_database, pg  # noqa: F401 (fixture)

DEPLOY = CHECKOUT / "deploy"
UNITS = ("talent-dagster-daemon.service", "talent-dagster-webserver.service")
APP_DIR = "/srv/talent-metrics/app"  # where the units expect the checkout
LOCATION = "talent_metrics"


def unit_service(name: str) -> dict[str, str]:
    """The [Service] settings of a unit file (systemd's syntax: one `Key=value` a line)."""
    section, values = None, {}
    for line in (DEPLOY / name).read_text().splitlines():
        if line.startswith("["):
            section = line.strip("[]")
        elif section == "Service" and "=" in line and not line.startswith("#"):
            key, _, value = line.partition("=")
            values[key] = value
    return values


def env_file() -> dict[str, str]:
    """deploy/talent-metrics.env as systemd reads it: NAME=value lines, # comments."""
    values = {}
    for line in (DEPLOY / "talent-metrics.env").read_text().splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def test_every_process_loads_one_workspace_by_one_name():
    workspace = yaml.safe_load((CHECKOUT / "workspace.yaml").read_text())
    [entry] = workspace["load_from"]
    module = entry["python_module"]
    pyproject = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())["tool"]["dagster"]
    assert (module["module_name"], module["location_name"]) == (
        pyproject["module_name"],
        pyproject["code_location_name"],
    )
    makefile = (CHECKOUT / "Makefile").read_text()
    dev = re.search(r"^dev:.*\n\t(.+)$", makefile, re.MULTILINE).group(1)
    assert "dagster dev -w workspace.yaml" in dev
    for unit in UNITS:
        service = unit_service(unit)
        assert " -w workspace.yaml" in service["ExecStart"], unit
        assert service["WorkingDirectory"] == APP_DIR
        assert service["EnvironmentFile"] == "/etc/talent-metrics/talent-metrics.env"
    readme = (CHECKOUT / "README.md").read_text()
    assert "-m pipelines.definitions" not in readme


def test_the_environment_file_holds_what_every_run_needs():
    values = env_file()
    instance = (DEPLOY / "dagster-postgres.yaml").read_text()
    assert set(re.findall(r"env: (\w+)", instance)) <= set(values)
    # the pipeline's password for TALENT_PUBLISH_DSN (libpq), and nothing in the DSN itself
    assert "PGPASSWORD" in values and "@" in values["TALENT_PUBLISH_DSN"]
    assert ":" not in values["TALENT_PUBLISH_DSN"].split("//")[1].split("@")[0]
    assert {
        "DAGSTER_HOME",
        "TALENT_SOURCES",
        "TALENT_WAREHOUSE_DIR",
        "TALENT_PSEUDONYM_KEY",
    } <= set(values)


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="no systemd-analyze here")
def test_systemd_accepts_the_units(tmp_path):
    """systemd's own check of the unit files, with the checkout where the units expect it."""
    env = tmp_path / "talent-metrics.env"
    shutil.copy(DEPLOY / "talent-metrics.env", env)
    for unit in UNITS:
        text = (DEPLOY / unit).read_text().replace(APP_DIR, str(CHECKOUT))
        text = text.replace("/etc/talent-metrics/talent-metrics.env", str(env))
        (tmp_path / unit).write_text(text)
    proc = subprocess.run(
        ["systemd-analyze", "verify", *(str(tmp_path / u) for u in UNITS)],
        capture_output=True,
        text=True,
    )
    problems = [
        line
        for line in (proc.stdout + proc.stderr).splitlines()
        if "talent-dagster" in line and "User=" not in line
    ]
    assert problems == []


# --- the services against PostgreSQL ----------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_unit(unit: str, env: dict[str, str], log: Path) -> subprocess.Popen:
    """Start a unit's ExecStart as systemd would: in its WorkingDirectory, with ${VAR}s of the
    environment expanded, the checkout standing where the unit expects the application."""
    service = unit_service(unit)
    command = re.sub(r"\$\{(\w+)\}", lambda m: env[m.group(1)], service["ExecStart"])
    argv = command.replace(APP_DIR, str(CHECKOUT)).split()
    return subprocess.Popen(
        argv,
        cwd=service["WorkingDirectory"].replace(APP_DIR, str(CHECKOUT)),
        env=env,
        stdout=log.open("w"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def graphql(port: int, query: str, variables: dict | None = None) -> dict:
    response = requests.post(
        f"http://127.0.0.1:{port}/graphql",
        json={"query": query, "variables": variables or {}},
        timeout=60,
    )
    response.raise_for_status()
    body = response.json()
    assert "errors" not in body, body
    return body["data"]


def wait_for(what: str, probe, timeout: float, logs: list[Path]):
    """Poll `probe` until it returns something truthy; fail naming `what` with the logs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            found = probe()
        except requests.ConnectionError:
            found = None
        if found:
            return found
        time.sleep(2)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
    pytest.fail(f"{what} did not happen within {timeout:.0f} s\n{tails}")


SENSOR_TICKS = """
query ($selector: SensorSelector!) {
  sensorOrError(sensorSelector: $selector) {
    __typename
    ... on Sensor { sensorState { ticks(limit: 10) { status runIds skipReason } } }
  }
}"""
RUNS = """
query { runsOrError { ... on Runs { results { runId status jobName tags { key value } } } } }
"""


@pytest.mark.postgres
@pytest.mark.targets
@pytest.mark.slow
def test_the_ui_launches_the_nightly_and_the_sensor_ticks_on_postgres(pg, tmp_path):  # noqa: F811
    from dagster_graphql import DagsterGraphQLClient, DagsterGraphQLClientError

    from tools.generate import generate_company

    generate_company(tmp_path / "exports", 150, 1, date(2026, 9, 30), 5309, progress=False)
    home = tmp_path / "dagster"
    home.mkdir()
    shutil.copy(DEPLOY / "dagster-postgres.yaml", home / "dagster.yaml")
    port = free_port()
    with (
        fresh_database(pg, "dagster", public_connect=False) as dagster_db,
        fresh_database(pg, "serving") as serving_db,
    ):
        values = {
            "DAGSTER_HOME": str(home),
            "DAGSTER_PG_HOST": "127.0.0.1",
            "DAGSTER_PG_PORT": str(pg.port),
            "DAGSTER_PG_USERNAME": "talent",
            "DAGSTER_PG_PASSWORD": pg.password,
            "DAGSTER_PG_DB": dagster_db,
            "PGPASSWORD": pg.password,
            "TALENT_SOURCES": str(tmp_path / "exports"),
            "TALENT_WAREHOUSE_DIR": str(tmp_path / "warehouse"),
            "TALENT_PSEUDONYM_KEY": TEST_PSEUDONYM_KEY,
            "TALENT_PUBLISH_DSN": pg.dsn(serving_db),
            "TALENT_PUBLISH_READER_ROLE": "talent_analysts",
            "TALENT_WEBSERVER_HOST": "127.0.0.1",
            "TALENT_WEBSERVER_PORT": str(port),
        }
        assert set(values) == set(env_file())  # every variable of the file, with test values
        base = {k: v for k, v in os.environ.items() if not k.startswith(("TALENT_", "PG"))}
        env = {**base, **values, "TALENT_SETTLE_SECONDS": "0"}
        logs = [tmp_path / "webserver.log", tmp_path / "daemon.log"]
        webserver = start_unit(UNITS[1], env, logs[0])
        daemon = None
        try:
            wait_for("the webserver answering", lambda: graphql(port, "{ version }"), 180, logs)
            client = DagsterGraphQLClient("127.0.0.1", port_number=port)
            # queued before the daemon starts: the daemon's run queue finds it by its location
            run_id = client.submit_job_execution(
                "nightly", repository_location_name=LOCATION, repository_name="__repository__"
            )
            daemon = start_unit(UNITS[0], env, logs[1])

            def finished():
                try:
                    status = client.get_run_status(run_id)
                except DagsterGraphQLClientError:
                    return None
                return status.value if status.value in ("SUCCESS", "FAILURE", "CANCELED") else None

            assert wait_for("the nightly launched from the UI", finished, 900, logs) == "SUCCESS"
            selector = {
                "repositoryLocationName": LOCATION,
                "repositoryName": "__repository__",
                "sensorName": "new_exports_sensor",
            }

            def sensor_ticks():
                ticks = graphql(port, SENSOR_TICKS, {"selector": selector})["sensorOrError"]
                assert ticks["__typename"] == "Sensor", ticks
                return ticks["sensorState"]["ticks"]

            ticks = wait_for("a tick of new_exports_sensor", sensor_ticks, 300, logs)
            # the sensor's first tick (no cursor) starts a nightly unless the UI's run had
            # already loaded the files by then; such a nightly must publish too
            started = [run for t in ticks for run in t["runIds"]]
            if not started:
                assert "no new" in ticks[-1]["skipReason"], ticks

            def sensor_runs_finished():
                runs = graphql(port, RUNS)["runsOrError"]["results"]
                done = [r["status"] for r in runs if r["runId"] in started]
                ended = [s for s in done if s in ("SUCCESS", "FAILURE", "CANCELED")]
                return ended if len(ended) == len(started) else None

            if started:
                statuses = wait_for("the sensor's nightly", sensor_runs_finished, 900, logs)
                assert statuses == ["SUCCESS"] * len(started)
        finally:
            if daemon is not None:
                stop(daemon)
            stop(webserver)
        analyst = pg.connect(serving_db, role="analyst")
        try:
            cur = analyst.cursor()
            cur.execute("select count(*) from marts.dim_employee")
            served = cur.fetchone()[0]
            cur.execute("select obj_description('marts'::regnamespace)")
            note = cur.fetchone()[0]
        finally:
            analyst.close()
        with duckdb.connect(str(tmp_path / "warehouse" / "talent.duckdb"), read_only=True) as con:
            assert served == con.execute("select count(*) from marts.dim_employee").fetchone()[0]
        assert served > 0
        assert any(f"(run {run})" in note for run in [run_id, *started]), note
