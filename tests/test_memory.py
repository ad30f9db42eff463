"""The process-level memory policy of `pipelines/lib/memory.py`: huge pages for NumPy arrays
are off in the `talent` command unless the operator says otherwise."""

from __future__ import annotations

import os
import subprocess
import sys

from pipelines.lib.memory import numpy_small_pages

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
