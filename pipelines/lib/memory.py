"""Hand back to the system the memory a finished step no longer uses.

`talent run` runs the nightly's steps one after another in one process, so a step starts with
whatever the steps before it left behind, and its own peak stacks on top. Two things stay:
objects in reference cycles wait for Python's next full collection (the Great Expectations
checks of the raw exports leave hundreds of MB of them), and glibc keeps freed blocks inside
the process for reuse. After the raw checks of two exports at 200,000 employees the process
held 1,396 MB; after a collection 613 MB, after `malloc_trim` 414 MB. Arrow's own allocator
keeps what the ingest's CSV cut and the checks' Arrow-backed frames freed: after the checks of
the incidents and responders at 200,000, 446 MB after `malloc_trim`, 350 MB once Arrow's pool
released its unused pages.

The steps that allocate in proportion to the data (the raw checks and the two statistics
steps) call `give_back()` when they are done, and the raw checks also before they start (after
the ingest steps). Its full collection walks every object Dagster, Great Expectations, pandas
and SciPy hold: 0.3 to 0.5 CPU s in a run's process, so the small steps do not call it, and it
collects only while the process holds more than `COLLECT_ABOVE_MB`. The bundled sample's run
process held 390 to 580 MB at its six calls, and their collections cost 2.3 of its CPU s for
nothing; at 50,000 employees it held 455 to 840 MB, and without the collections it still held
240 MB more while dbt built (the process tree's peak 1.44 GB against 1.18), so the threshold
lies between the two.

While a job runs, what was loaded before it (Python, Dagster, dbt's adapter, the definitions)
is kept out of the garbage collector's sight (`long_lived_frozen`, over Python's public
`gc.freeze`): otherwise every full collection of the run walks those millions of objects
again, 12 times in the bundled sample's run (2.6-2.8 of its 3.1-3.4 CPU s of collections).
The objects are given back to the collector when the job is done, so a process that runs many
jobs (the test suite) still collects each job's definitions, and garbage frozen with them is
collected then. It does not collect before it freezes: a full collection costs about as much as
the freeze saves. `talent run` freezes once more when it is done (`freeze_at_exit`): the
interpreter's exit would walk everything again, 2.0-2.7 s after the command's end on the
sample, 0.15 s frozen. What is garbage then is left to the end of the process, as the objects
still alive are: nothing in the pipeline relies on a finaliser at exit (connections and files
are closed where they are used, and a DuckDB file's committed transactions are in its log).

The collector also runs less often (`collect_less_often`, over Python's public
`gc.set_threshold`, called by the entry points `talent`, `talent-dbt` and the Dagster code
location): Python collects its youngest generation after every 700 new container objects
(dicts, lists, class instances) and every generation once ten of the younger ones were
collected. Jinja, Dagster's events and Great Expectations' results make millions of short-lived
containers, so on the bundled sample the run's process collected 2,937 times (12 of them full
collections) for 3.0-3.2 CPU s, and dbt's build 1,983 times for 1.5 CPU s. After 10,000
instead of 700, the young collections run about 16 times less often, and the objects that survived
them (what the run keeps) pass into the older generations as before: the run's process then
collected 178 times for 0.9 CPU s, dbt 135 times for 0.7-0.9 (`gc.callbacks` timing the
collections' own thread). Memory does not grow for it: the raw checks at 200,000 employees, alone, peaked
at 1,433 MB with the new threshold and 1,585 MB with Python's (the garbage of a young
collection is the same objects, collected later; what holds memory at scale is arrays and
frames, a few objects however large they are). A threshold someone else set (the operator's
`sitecustomize`, a test) is left as it is.

Large NumPy arrays are not put on huge pages (`numpy_small_pages`, called by the entry points
before NumPy is imported). NumPy asks Linux for transparent huge pages for every array of 4 MB
or more; with the kernel's `transparent_hugepage` set to `madvise`, each first touch of such an
array then waits for a zeroed, possibly compacted, 2 MB page. At 1,000,000 employees, where
the statistics make hundreds of arrays of 4.5 million rows, the certification statistics
took 256 s with huge pages and 144 s without (same code, same build file, `make bench`'s
scale run says how the whole run moves). A value the operator set in
`NUMPY_MADVISE_HUGEPAGE` (NumPy's own switch) is kept.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import functools
import gc
import os
import sys
from collections.abc import Iterator, MutableMapping


@functools.cache
def _malloc_trim():
    """glibc's `malloc_trim`, or None where the C library has none (macOS, musl)."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        return ctypes.CDLL(name).malloc_trim
    except (OSError, AttributeError):
        return None


# Resident size of the process above which `give_back` runs a full collection (see above).
COLLECT_ABOVE_MB = 640


def resident_mb() -> float | None:
    """The process's resident memory now (Linux's /proc/self/statm), or None where the system
    does not say."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        return None


def give_back(collect_above_mb: float = COLLECT_ABOVE_MB) -> bool:
    """Collect unreachable objects while the process holds more than `collect_above_mb` (or
    its size is unknown), then return the C heap's and Arrow's free pages to the system (both
    cheap). Returns whether it collected."""
    held = resident_mb()
    collect = held is None or held > collect_above_mb
    if collect:
        gc.collect()
    trim = _malloc_trim()
    if trim is not None:
        trim(0)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:  # Arrow's allocator (mimalloc) keeps freed pages for reuse
        arrow.default_memory_pool().release_unused()
    return collect


@contextlib.contextmanager
def long_lived_frozen() -> Iterator[None]:
    """Move every object tracked now into the collector's permanent generation, which no
    collection scans, and give them back to it at the end (see above). `gc.unfreeze` gives
    back everything frozen, so these blocks do not nest (`talent run` runs one job at a time)."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def freeze_at_exit() -> None:
    """Freeze everything just before the process ends: the interpreter's last collections
    then have almost nothing to walk (see above)."""
    gc.freeze()


# Python's default thresholds, and the young generation's threshold of this project's processes
PYTHON_GC_THRESHOLDS = (700, 10, 10)
YOUNG_COLLECTION_EVERY = 10_000


def collect_less_often() -> bool:
    """Collect the youngest generation after `YOUNG_COLLECTION_EVERY` new container objects
    instead of Python's 700 (see above), the older generations as before; only while the
    thresholds are still Python's defaults. Returns whether it changed them."""
    if gc.get_threshold() != PYTHON_GC_THRESHOLDS:
        return False
    gc.set_threshold(YOUNG_COLLECTION_EVERY, *PYTHON_GC_THRESHOLDS[1:])
    return True


def numpy_small_pages(environ: MutableMapping[str, str] = os.environ) -> bool:
    """Ask NumPy, through its documented `NUMPY_MADVISE_HUGEPAGE`, not to advise huge pages,
    unless the variable is set already. NumPy reads it once, when it is imported: returns
    whether that is still ahead (False when NumPy was imported first and keeps its default)."""
    environ.setdefault("NUMPY_MADVISE_HUGEPAGE", "0")
    return "numpy" not in sys.modules
