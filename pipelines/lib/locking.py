"""One writer per warehouse folder, whoever starts the run.

`talent run`, the nightly schedule, the file-arrival sensor and a run launched from the Dagster UI
all write the same files, and DuckDB allows one writer per file. Each takes this lock on
`<warehouse>/.run.lock` first; a second one is refused at once with the name of the holder,
never with DuckDB's "Could not set lock on file".

The lock is an advisory `flock`: the kernel releases it when its process dies, so a killed run
never leaves the warehouse locked. Within one process it is re-entrant: `talent run` holds it
across the nightly job and the report job, and the run's own resource takes it again.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path

LOCK_NAME = ".run.lock"


class RunLockedError(RuntimeError):
    """Another process is writing to the warehouse folder."""


_held: dict[Path, tuple[object, int]] = {}
_guard = threading.Lock()


def lock_path(warehouse_dir: Path) -> Path:
    return Path(warehouse_dir) / LOCK_NAME


def describe_holder(text: str) -> str:
    """`pid 123, talent run, since 2026-12-03 02:00:01` from the lock file's contents."""
    try:
        info = json.loads(text)
    except ValueError:
        return f"pid {text.strip()}" if text.strip() else "an unknown process"
    return f"pid {info.get('pid')}, {info.get('what', 'a run')}, since {info.get('since', '?')}"


@contextlib.contextmanager
def warehouse_lock(warehouse_dir: Path, what: str) -> Iterator[None]:
    """Hold the warehouse's run lock; `what` names the holder for whoever is refused."""
    path = lock_path(warehouse_dir).resolve()
    with _guard:
        if path in _held:
            fh, depth = _held[path]
            _held[path] = (fh, depth + 1)
        else:
            _held[path] = (_acquire(path, what), 1)
    try:
        yield
    finally:
        with _guard:
            fh, depth = _held[path]
            if depth > 1:
                _held[path] = (fh, depth - 1)
            else:
                del _held[path]
                fcntl.flock(fh, fcntl.LOCK_UN)  # type: ignore[arg-type]
                fh.close()  # type: ignore[attr-defined]


def _acquire(path: Path, what: str):
    path.parent.mkdir(parents=True, exist_ok=True)
    fh = open(path, "a+")  # noqa: SIM115 (held until the lock is released)
    try:
        fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        fh.seek(0)
        holder = describe_holder(fh.read())
        fh.close()
        raise RunLockedError(
            f"another run is writing to {path.parent} ({holder}); wait for it to finish, or "
            "point --warehouse-dir at another folder. Only one run per warehouse at a time."
        ) from None
    fh.seek(0)
    fh.truncate()
    since = time.strftime("%Y-%m-%d %H:%M:%S %Z")
    fh.write(json.dumps({"pid": os.getpid(), "what": what, "since": since}))
    fh.flush()
    return fh
