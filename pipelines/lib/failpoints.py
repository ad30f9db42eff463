"""Failpoints: named places where a test can kill the run as a crash would.

Set `TALENT_FAILPOINT=<name>` and the process group is SIGKILLed when execution reaches
`failpoint("<name>")` — no cleanup handlers, no finally blocks, exactly like a killed
container. Unset (always, in production), a failpoint is a dictionary lookup.
"""

from __future__ import annotations

import os
import signal

# The places the crash-safety tests kill a run; each is listed where it is used.
KNOWN = (
    "ingest:before_commit",  # inside a file's load transaction, rows inserted, not committed
    "publish:before_replace",  # temporary file complete, not yet swapped in
    "publish:after_replace",  # new file swapped in, run not yet finished
    "publish:postgres_half_loaded",  # PostgreSQL: half the marts loaded, nothing committed
    "publish:postgres_swapped",  # PostgreSQL: marts swapped in the transaction, not committed
    "erase:staged",  # new archive copies and the new raw file written, not yet renamed
    "erase:committed",  # the new raw file renamed into place, old copies not yet removed
)


def failpoint(name: str) -> None:
    if os.environ.get("TALENT_FAILPOINT") != name:
        return
    try:
        os.killpg(os.getpgid(0), signal.SIGKILL)
    finally:  # not a process-group leader we may signal: kill ourselves at least
        os.kill(os.getpid(), signal.SIGKILL)
