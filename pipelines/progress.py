"""What a run tells its operator: a line per step as it ends, then a summary.

`talent run` (and the tests and benchmark that drive it) watch the run's events as Dagster
records them (`watch`: the run's event log, read through the instance every half second), so the
terminal shows one line per finished step with the time since the run began; the detailed event
log (every Dagster and dbt message) goes to `<warehouse>/runs/<job>.log`. Dagster's own console
logger stays quiet unless `--verbose` turns it on.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field

import dagster as dg

STAGES = (
    ("checks", ("check", "suite", "quality", "freshness")),
    ("ingest", ("raw__",)),
    ("dbt", ("dbt",)),
    ("statistics", ("certification_statistics", "operations_effect", "stat", "programme_costs")),
    ("roi", ("roi",)),
    ("publish", ("publish",)),
    ("report", ("report",)),
)


# Stages whose steps take long enough to announce when they start, not only when they end.
ANNOUNCED = {"dbt", "statistics", "publish", "report"}


def stage_of(step_key: str) -> str:
    """Which stage of the pipeline a Dagster step belongs to, by its key."""
    key = step_key.lower()
    for stage, needles in STAGES:
        if any(n in key for n in needles):
            return stage
    return "other"


# Steps that wait announce it with this prefix at warning level (ingestion: files changed
# moments ago are watched until they stop changing).
WAIT_LEVEL = logging.WARNING
WAIT_PREFIX = "waiting: "
POLL_SECONDS = 0.5


class Progress:
    """Turns a run's event-log entries into lines such as
    `[  12 s] ingest      raw__employees          done in 2.1 s`."""

    def __init__(self, out=None) -> None:
        self.t0 = time.monotonic()
        self.started: dict[str, float] = {}
        self.out = out

    def entry(self, entry) -> None:
        event = entry.dagster_event
        now = time.monotonic()
        if event is None:
            message = entry.user_message or ""
            if entry.step_key and entry.level >= WAIT_LEVEL and message.startswith(WAIT_PREFIX):
                self._line(now, entry.step_key, message)
            return
        if not event.step_key:
            return
        kind = event.event_type
        if kind == dg.DagsterEventType.STEP_START:
            self.started[event.step_key] = now
            if stage_of(event.step_key) in ANNOUNCED:
                self._line(now, event.step_key, "started")
            return
        if kind not in (dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE):
            return
        took = now - self.started.get(event.step_key, now)
        verdict = "done" if kind == dg.DagsterEventType.STEP_SUCCESS else "FAILED"
        self._line(now, event.step_key, f"{verdict} in {took:.1f} s")

    def _line(self, now: float, step_key: str, text: str) -> None:
        print(
            f"[{now - self.t0:5.0f} s] {stage_of(step_key):<11}{step_key:<34} {text}",
            file=self.out or sys.stderr,
            flush=True,
        )


@contextlib.contextmanager
def watch(instance: dg.DagsterInstance, run_id: str) -> Iterator[Progress]:
    """Print the progress of run `run_id` while the block runs (a thread reads the run's new
    event-log records from the instance every `POLL_SECONDS`)."""
    progress = Progress()
    stop = threading.Event()

    def follow() -> None:
        cursor = None
        while True:
            done = stop.is_set()
            with contextlib.suppress(Exception):  # the run's storage may not exist yet
                found = instance.get_records_for_run(run_id, cursor=cursor)
                for record in found.records:
                    progress.entry(record.event_log_entry)
                cursor = found.cursor
            if done:
                return
            stop.wait(POLL_SECONDS)

    thread = threading.Thread(target=follow, name="talent-progress", daemon=True)
    thread.start()
    try:
        yield progress
    finally:
        stop.set()
        thread.join()


class DagsterNotices(logging.Handler):
    """Dagster's own Python-logging warnings during a run (its library logger `dagster`, not
    the run's event log).

    Without a handler of ours they reach the terminal as bare lines (Python's last-resort
    handler). Each record goes where it went before: to the handlers Dagster attaches while a
    step runs, else to the terminal as the last-resort handler printed it. (A run computes only
    what the decision before it selected, so no step ends without the result of a blocking
    check it planned; nothing of Dagster's text needs reading.)"""

    def __init__(self, out=None, verbose: bool = False) -> None:
        super().__init__(level=logging.WARNING)
        self.out = out
        self.verbose = verbose

    def emit(self, record: logging.LogRecord) -> None:
        message = record.getMessage()
        if not self._handled_elsewhere(record):
            print(message, file=self.out or sys.stderr, flush=True)

    def _handled_elsewhere(self, record: logging.LogRecord) -> bool:
        """Whether another handler on the record's way up the logger tree takes it (Python
        prints it with its last-resort handler only when none does)."""
        logger: logging.Logger | None = logging.getLogger(record.name)
        while logger is not None:
            if any(h is not self for h in logger.handlers):
                return True
            if not logger.propagate:
                return False
            logger = logger.parent
        return False


@contextlib.contextmanager
def dagster_notices(out=None, verbose: bool = False) -> Iterator[DagsterNotices]:
    """Route Dagster's library warnings through `DagsterNotices` while the block runs."""
    handler = DagsterNotices(out, verbose)
    logger = logging.getLogger("dagster")
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)


def run_config(verbose: bool) -> dict:
    """Dagster's console logger prints every event at debug level; it is quiet (critical only)
    unless `verbose`, when it prints at info."""
    level = "INFO" if verbose else "CRITICAL"
    return {"loggers": {"console": {"config": {"log_level": level}}}}


@dataclass
class ExportLoad:
    """What ingestion did with one export in this run (its asset's metadata)."""

    export: str
    files_loaded: int = 0
    files_skipped: int = 0
    files_superseded: int = 0
    files_failed: int = 0
    rows_loaded: int = 0
    rows_quarantined: int = 0
    unknown_files: list[str] = field(default_factory=list)
    # files in the export's folder that were not read at all: name -> reason
    not_loaded: dict[str, str] = field(default_factory=dict)
    # files that loaded but cannot show something (no termination column): name -> warning
    warnings: dict[str, str] = field(default_factory=dict)
    # what the privacy step after the load did (`pipelines.lib.privacy.apply_at_run`)
    privacy_notes: list[str] = field(default_factory=list)
    retention_pseudonymised: int = 0
    retention_salaries_removed: int = 0
    retention_policy: str = ""

    @classmethod
    def from_metadata(cls, export: str, meta: dict) -> ExportLoad:
        def num(key: str) -> int:
            return int(meta.get(key) or 0)

        return cls(
            export,
            files_loaded=num("files_loaded"),
            files_skipped=num("files_skipped"),
            files_superseded=num("files_superseded"),
            files_failed=num("files_failed"),
            rows_loaded=num("rows_loaded"),
            rows_quarantined=num("rows_quarantined"),
            unknown_files=list(meta.get("unknown_files") or []),
            not_loaded=dict(meta.get("not_loaded") or {}),
            warnings=dict(meta.get("warnings") or {}),
            privacy_notes=list(meta.get("privacy_notes") or []),
            retention_pseudonymised=num("retention_pseudonymised"),
            retention_salaries_removed=num("retention_salaries_removed"),
            retention_policy=str(meta.get("retention_policy") or ""),
        )

    @staticmethod
    def privacy_lines(loads: list[ExportLoad]) -> list[str]:
        """The run summary's lines on an interrupted erasure and the retention policy."""
        lines = [f"Erasure: {note}" for load in loads for note in load.privacy_notes]
        policy = next((load.retention_policy for load in loads if load.retention_policy), "")
        if policy and policy != "not set":
            people = sum(load.retention_pseudonymised for load in loads)
            pay = sum(load.retention_salaries_removed for load in loads)
            lines.append(
                f"Retention ({policy}): {people} leaver(s) pseudonymised, the salaries of {pay} "
                "removed in this run"
            )
        elif policy == "not set":
            lines.append(
                "Retention: no period set (TALENT_RETENTION_YEARS): leavers' personal data are "
                "kept until erased"
            )
        return lines

    def line(self) -> str:
        parts = [f"{self.files_loaded} new file(s)", f"{self.rows_loaded:,} rows loaded"]
        if self.rows_quarantined:
            parts.append(f"{self.rows_quarantined:,} quarantined")
        if self.files_superseded:
            parts.append(f"{self.files_superseded} superseded")
        if self.files_failed:
            parts.append(f"{self.files_failed} FAILED")
        if self.files_skipped:
            parts.append(f"{self.files_skipped} already loaded")
        return f"  {self.export:<18}" + ", ".join(parts)
