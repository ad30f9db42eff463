"""The process-level memory policy of `pipelines/lib/memory.py`: huge pages for NumPy arrays
are off in the `talent` command unless the operator says otherwise; the collector's thresholds;
what is frozen out of its sight while a job runs."""

from __future__ import annotations

import os
import subprocess
import sys

from pipelines.lib.memory import numpy_small_pages
from pipelines.lib.project_files import SAMPLE_SOURCES

# NumPy has a documented switch (NUMPY_MADVISE_HUGEPAGE) but only a private getter for the
# state it chose; the test reads it to see the effect, the product never calls it.
PROBE = (
    "import os, sys; import pipelines.cli; before = 'numpy' in sys.modules; import numpy; "
    "from numpy._core.multiarray import _get_madvise_hugepage as huge; "
    "print(os.environ['NUMPY_MADVISE_HUGEPAGE'], before, huge())"
)


def _probe(**env: str) -> list[str]:
    environ = {k: v for k, v in os.environ.items() if k != "NUMPY_MADVISE_HUGEPAGE"} | env
    out = subprocess.run(
        [sys.executable, "-c", PROBE], env=environ, capture_output=True, text=True, check=True
    )
    return out.stdout.split()


def test_the_command_line_turns_numpy_huge_pages_off_before_numpy_is_imported():
    assert _probe() == ["0", "False", "False"]


def test_an_operator_s_own_setting_is_kept():
    assert _probe(NUMPY_MADVISE_HUGEPAGE="1") == ["1", "False", "True"]
    environ = {"NUMPY_MADVISE_HUGEPAGE": "1"}
    numpy_small_pages(environ)
    assert environ == {"NUMPY_MADVISE_HUGEPAGE": "1"}
    environ = {}
    assert numpy_small_pages(environ) is ("numpy" not in sys.modules)
    assert environ == {"NUMPY_MADVISE_HUGEPAGE": "0"}


def test_give_back_also_empties_arrow_s_pool(monkeypatch):
    """Arrow's allocator keeps freed pages; `give_back` asks its pool to return them (Arrow's
    public `release_unused`), and leaves Arrow alone where nothing imported it."""
    import sys
    import types

    from pipelines.lib import memory

    released = []
    pool = types.SimpleNamespace(release_unused=lambda: released.append(True))
    fake = types.SimpleNamespace(default_memory_pool=lambda: pool)
    monkeypatch.setitem(sys.modules, "pyarrow", fake)
    memory.give_back()
    assert released == [True]
    monkeypatch.delitem(sys.modules, "pyarrow")
    memory.give_back()
    assert released == [True]


def test_give_back_collects_cycles_only_above_its_resident_size():
    """The full collection (0.3-0.5 CPU s in a run's process) runs only while the process holds
    more than the threshold; below it, cyclic garbage waits for Python's own collections."""
    import gc
    import weakref

    from pipelines.lib import memory

    held = memory.resident_mb()
    assert held is not None and 10 < held < 100_000  # this process, read from the system

    class Node:
        pass

    def garbage_cycle() -> weakref.ref:
        a, b = Node(), Node()
        a.other, b.other = b, a
        return weakref.ref(a)

    gc.disable()  # no automatic collection between the calls and the checks
    try:
        cycle = garbage_cycle()
        assert memory.give_back(collect_above_mb=held + 10_000) is False
        assert cycle() is not None  # unreachable, but not collected
        assert memory.give_back(collect_above_mb=0) is True
        assert cycle() is None
    finally:
        gc.enable()


def _cycle(finalised: list[str], name: str) -> object:
    """An object that only the garbage collector can free (it refers to itself), which says
    when it is finalised."""
    import weakref

    class Node:
        pass

    node = Node()
    node.me = node
    weakref.finalize(node, finalised.append, name)
    return node


def _in_collected_generations(obj: object) -> bool:
    import gc

    return any(o is obj for o in gc.get_objects())  # every generation but the permanent one


def test_a_job_runs_with_what_was_loaded_before_it_frozen_and_gives_it_back_afterwards():
    """`long_lived_frozen` (around every job `talent run` executes): what is tracked when the
    job starts is out of the collector's sight while it runs, garbage included, and
    collectable again after it, so nothing is kept for good; what the job makes is collected
    as before."""
    import gc

    from pipelines.lib.memory import long_lived_frozen

    finalised: list[str] = []
    gc.collect()
    _cycle(finalised, "garbage before the job")  # unreachable at once
    kept = _cycle(finalised, "alive before the job")
    frozen_before = gc.get_freeze_count()
    with long_lived_frozen():
        assert gc.get_freeze_count() > frozen_before
        assert not _in_collected_generations(kept)
        _cycle(finalised, "garbage of the job")
        gc.collect()
        assert finalised == ["garbage of the job"]
    assert gc.get_freeze_count() == frozen_before
    assert _in_collected_generations(kept)
    gc.collect()
    assert finalised == ["garbage of the job", "garbage before the job"]
    del kept
    gc.collect()
    assert finalised[-1] == "alive before the job"


def test_the_command_s_end_freezes_what_is_alive():
    """`freeze_at_exit` (the end of `talent run`), in a child process: the freeze lasts to the
    process's end."""
    probe = (
        "import gc\n"
        "from pipelines.lib.memory import freeze_at_exit\n"
        "class N: pass\n"
        "b = N(); b.me = b\n"
        "assert any(o is b for o in gc.get_objects())\n"
        "freeze_at_exit()\n"
        "print(gc.get_freeze_count() > 0, any(o is b for o in gc.get_objects()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    ).stdout
    assert out.split("\n")[0] == "True False"


class _JobStarted(Exception):
    """Raised by a stand-in job: the test needs only the moment the job starts."""


def test_talent_run_executes_a_job_with_what_was_loaded_before_it_frozen(monkeypatch, tmp_path):
    """`execution._execute` (the nightly and the report of `talent run`) wraps the job in
    `long_lived_frozen`, and gives the objects back to the collector when the job ends, also
    when it raises. The definitions and the manifest are stand-ins; the wiring is real."""
    import gc
    import types

    import dagster as dg
    import pytest

    import pipelines.defs
    import pipelines.defs.dbt_cli
    from pipelines import execution
    from pipelines.lib.settings import Settings

    frozen_at_start: list[int] = []

    def execute_in_process(**kwargs):
        frozen_at_start.append(gc.get_freeze_count())
        raise _JobStarted

    job = types.SimpleNamespace(execute_in_process=execute_in_process)
    monkeypatch.setattr(pipelines.defs.dbt_cli, "ensure_manifest", lambda settings: None)
    monkeypatch.setattr(
        pipelines.defs,
        "build_definitions",
        lambda settings: types.SimpleNamespace(
            resolve_job_def=lambda name: job, resolve_all_asset_specs=lambda: []
        ),
    )
    monkeypatch.setattr(execution, "instance_for", lambda s: dg.DagsterInstance.ephemeral())
    frozen_before = gc.get_freeze_count()
    with pytest.raises(_JobStarted):
        execution.run_nightly(Settings(sources_dir=SAMPLE_SOURCES, warehouse_dir=tmp_path / "wh"))
    assert frozen_at_start and frozen_at_start[0] > frozen_before
    assert gc.get_freeze_count() == frozen_before


def test_talent_run_freezes_at_its_end_also_when_the_run_failed(monkeypatch, tmp_path):
    """The command's end calls `freeze_at_exit` whatever the outcome (here a failed nightly,
    exit code 1); the nightly itself is a stand-in."""
    import types

    from typer.testing import CliRunner

    from pipelines import execution
    from pipelines.cli import app
    from pipelines.lib import memory

    calls: list[str] = []
    monkeypatch.setattr(memory, "freeze_at_exit", lambda: calls.append("freeze"))
    failed = types.SimpleNamespace(success=False, describe=lambda: "the nightly failed")
    monkeypatch.setattr(execution, "run_nightly", lambda settings, verbose: failed)
    result = CliRunner().invoke(
        app, ["run", "--sources", str(SAMPLE_SOURCES), "--warehouse-dir", str(tmp_path / "wh")]
    )
    assert result.exit_code == 1, result.output
    assert calls == ["freeze"]


# The three entry points, in a child process: `talent` (its module), `talent-dbt` (with dbt's
# command line replaced by a stand-in that reports the thresholds it starts under and exits 3)
GC_PROBES = {
    "talent": "import gc, pipelines.cli; print(gc.get_threshold())",
    "talent-dbt": (
        "import gc, sys, types\n"
        "for name in ('dbt', 'dbt.cli', 'dbt.cli.main'):\n"
        "    sys.modules[name] = types.ModuleType(name)\n"
        "sys.modules['dbt.cli.main'].cli = lambda: print(gc.get_threshold()) or 3\n"
        "sys.argv = ['talent-dbt', 'build']\n"
        "from pipelines.lib.dbt_command import main\n"
        "main()\n"
    ),
}


def test_the_entry_points_collect_the_young_generation_less_often():
    """`collect_less_often` in `talent` and `talent-dbt`: the young generation is collected
    after `YOUNG_COLLECTION_EVERY` new objects, the older ones as Python does."""
    from pipelines.lib.memory import PYTHON_GC_THRESHOLDS, YOUNG_COLLECTION_EVERY

    expected = str((YOUNG_COLLECTION_EVERY, *PYTHON_GC_THRESHOLDS[1:]))
    for entry, probe in GC_PROBES.items():
        done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
        assert done.stdout.strip() == expected, (entry, done.stdout, done.stderr[-800:])
    assert done.returncode == 3  # talent-dbt ends with dbt's exit code


def test_thresholds_someone_else_set_are_kept():
    import gc

    from pipelines.lib.memory import PYTHON_GC_THRESHOLDS, collect_less_often

    before = gc.get_threshold()
    try:
        gc.set_threshold(*PYTHON_GC_THRESHOLDS)
        assert collect_less_often() is True
        assert gc.get_threshold()[0] > PYTHON_GC_THRESHOLDS[0]
        gc.set_threshold(5000, 20, 20)
        assert collect_less_often() is False
        assert gc.get_threshold() == (5000, 20, 20)
    finally:
        gc.set_threshold(*before)
