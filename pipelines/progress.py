"""What a run tells its operator: a line per step as it ends, then a summary.

`talent run` (and the tests and benchmark that drive it) install `progress_logger` on the job, so
the terminal shows one line per finished step with the time since the run began; the detailed
event log (every Dagster and dbt message) goes to `<warehouse>/runs/<job>.log`. `--verbose`
adds Dagster's console logger back.
"""

from __future__ import annotations

import logging
import sys
import time
from dataclasses import dataclass, field

import dagster as dg
from dagster._core.log_manager import LOG_RECORD_METADATA_ATTR

STAGES = (
    ("checks", ("check", "suite", "quality", "freshness")),
    ("ingest", ("raw__",)),
    ("dbt", ("dbt",)),
    ("statistics", ("certification_statistics", "stat")),
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


class _ProgressHandler(logging.Handler):
    """Prints `[  12 s] ingest      raw__employees          done in 2.1 s` as steps end."""

    def __init__(self) -> None:
        super().__init__(level=logging.DEBUG)
        self.t0 = time.monotonic()
        self.started: dict[str, float] = {}

    def emit(self, record: logging.LogRecord) -> None:
        meta = getattr(record, LOG_RECORD_METADATA_ATTR, None) or {}
        event = meta.get("dagster_event")
        if event is None and record.levelno >= WAIT_LEVEL and meta.get("step_key"):
            # a step saying what it is waiting for (files still being written)
            if str(meta.get("orig_message", "")).startswith(WAIT_PREFIX):
                self._line(time.monotonic(), meta["step_key"], meta["orig_message"])
            return
        if event is None or not event.step_key:
            return
        now = time.monotonic()
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
            f"[{now - self.t0:5.0f} s] {stage_of(step_key):<11}{step_key:<34}{text}",
            file=sys.stderr,
            flush=True,
        )


@dg.logger(description="One line per finished step on stderr, with the time since the start.")
def progress_logger(init_context) -> logging.Logger:
    log = logging.Logger("talent.progress", level=logging.DEBUG)
    log.addHandler(_ProgressHandler())
    return log


LOGGERS = {"console": dg.colored_console_logger, "progress": progress_logger}


def run_config(verbose: bool) -> dict:
    loggers: dict[str, dict] = {"progress": {}}
    if verbose:
        loggers["console"] = {"config": {"log_level": "INFO"}}
    return {"loggers": loggers}


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
        )

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
