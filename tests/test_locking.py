"""One writer per warehouse, whoever starts the run: the CLI, a schedule, the sensor or the UI."""

from __future__ import annotations

import subprocess
import sys

import dagster as dg
import pytest

from pipelines.lib.locking import RunLockedError, lock_path, warehouse_lock
from tests.conftest import talent_resources

HOLD = """
import sys, time
from pathlib import Path
from pipelines.lib.locking import warehouse_lock
with warehouse_lock(Path(sys.argv[1]), "talent run"):
    print("held", flush=True)
    time.sleep(60)
"""


@pytest.fixture
def held_by_another_process(tmp_path):
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(tmp_path)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout.readline().strip() == "held"
    yield proc
    proc.kill()
    proc.wait()


def test_a_second_process_is_refused_with_the_holder_named(tmp_path, held_by_another_process):
    with pytest.raises(RunLockedError) as refused, warehouse_lock(tmp_path, "test"):
        pass
    message = str(refused.value)
    assert f"pid {held_by_another_process.pid}" in message
    assert "talent run" in message and str(tmp_path) in message


def test_the_lock_is_reentrant_within_a_process_and_released_at_the_end(tmp_path):
    with warehouse_lock(tmp_path, "outer"), warehouse_lock(tmp_path, "inner"):
        assert "outer" in lock_path(tmp_path).read_text()
    # released: another process can take it now
    out = subprocess.run(
        [sys.executable, "-c", HOLD.replace("time.sleep(60)", "pass"), str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.stdout.strip() == "held", out.stderr


def test_a_dagster_run_is_refused_while_another_process_writes(tmp_path, held_by_another_process):
    """A run from the schedule, sensor or UI takes the same lock through its `talent` resource."""
    from pipelines.defs import publish

    result = dg.materialize(
        [publish.published],
        resources=talent_resources(warehouse_dir=tmp_path),
        raise_on_error=False,
    )
    assert not result.success
    failures = [
        e.event_specific_data.error.message
        for e in result.all_events
        if getattr(e.event_specific_data, "error", None) is not None
    ]
    assert any(f"pid {held_by_another_process.pid}" in m for m in failures), failures
    assert not (tmp_path / "talent.duckdb").exists()


def test_sensor_ticks_take_no_lock(tmp_path, held_by_another_process):
    from pipelines.defs.automation import new_exports_sensor

    with dg.build_sensor_context(resources=talent_resources(sources_dir=tmp_path)) as ctx:
        assert isinstance(new_exports_sensor(ctx), dg.SkipReason | dg.RunRequest)
