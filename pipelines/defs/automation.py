"""Automation: the nightly job and schedule, the quarterly report schedule, the file-arrival
sensor.

Settings come from the environment (see README "Scheduling"): TALENT_NIGHTLY_CRON (default
02:00), TALENT_TIMEZONE (default UTC), TALENT_QUARTERLY_CRON (default 06:00 on the first day
of each quarter), TALENT_SETTLE_SECONDS (a file must be unchanged this long before the sensor
picks it up, so half-copied exports are not read).
"""

import hashlib
import json
import os
import time
from pathlib import Path

import dagster as dg

from pipelines.config import Settings, TalentSettings
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest.loader import discover

NIGHTLY_JOB = "nightly"
REPORT_JOB = "quarterly_report"

nightly_job = dg.define_asset_job(
    NIGHTLY_JOB,
    selection=dg.AssetSelection.all() - dg.AssetSelection.groups("report"),
    description=(
        "Everything from export files to the published warehouse: ingest new files, dbt build "
        "with tests, data-quality checks, statistics, ROI, publish. One run at a time."
    ),
    # the tag the run queue limits to one concurrent run (dagster.yaml)
    tags={"talent/pipeline": "nightly"},
)

report_job = dg.define_asset_job(
    REPORT_JOB,
    selection=dg.AssetSelection.groups("report"),
    description="Render the quarterly talent report (HTML and PDF) from the published warehouse.",
)


def nightly_cron() -> str:
    return os.environ.get("TALENT_NIGHTLY_CRON", "0 2 * * *")


def timezone() -> str:
    return os.environ.get("TALENT_TIMEZONE", "UTC")


nightly_schedule = dg.ScheduleDefinition(
    name="nightly_schedule",
    job=nightly_job,
    cron_schedule=nightly_cron(),
    execution_timezone=timezone(),
    description="Materialise the whole graph every night.",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)


def quarterly_cron() -> str:
    return os.environ.get("TALENT_QUARTERLY_CRON", "0 6 1 1,4,7,10 *")


def quarter_just_closed(day) -> str:
    """The report quarter for a tick on `day`: the last quarter that ended before it."""
    from pipelines.lib.report.quarters import Quarter

    return Quarter.containing(day).previous().label


@dg.schedule(
    name="quarterly_report_schedule",
    job=report_job,
    cron_schedule=quarterly_cron(),
    execution_timezone=timezone(),
    description="Render the talent report for the quarter just closed.",
    default_status=dg.DefaultScheduleStatus.RUNNING,
)
def quarterly_report_schedule(context: dg.ScheduleEvaluationContext):
    from pipelines.defs.report import partition_of_quarter

    label = quarter_just_closed(context.scheduled_execution_time.date())
    return dg.RunRequest(run_key=f"report-{label}", partition_key=partition_of_quarter(label))


def contract_files(sources_dir: Path) -> list[Path]:
    """Files in a sources folder that ingestion will load (its own discovery rule)."""
    # a vendor file feeding two exports is one file
    return sorted({d.path for export in EXPORTS for d in discover(sources_dir, export)[0]})


def sources_fingerprint(sources_dir: Path, settle_seconds: float, now: float | None = None):
    """(fingerprint, settled files, files still being written) of a sources folder.

    The fingerprint changes when a settled contract file appears, changes size or is touched.
    """
    now = time.time() if now is None else now
    settled, unsettled = [], []
    for p in contract_files(sources_dir):
        st = p.stat()
        entry = (str(p.relative_to(sources_dir)), st.st_size, st.st_mtime_ns)
        (settled if now - st.st_mtime >= settle_seconds else unsettled).append(entry)
    digest = hashlib.sha256(json.dumps(settled).encode()).hexdigest()[:16]
    return digest, settled, unsettled


@dg.sensor(
    name="new_exports_sensor",
    job=nightly_job,
    minimum_interval_seconds=60,
    description=(
        "Starts the nightly job when export files land in (or change in) the sources folder. "
        "A file must be unchanged for TALENT_SETTLE_SECONDS (default 30) first."
    ),
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def new_exports_sensor(context: dg.SensorEvaluationContext, settings: TalentSettings):
    s: Settings = settings.get()
    if not s.sources_dir.is_dir():
        return dg.SkipReason(
            f"sources folder {s.sources_dir} does not exist; set TALENT_SOURCES to the folder "
            "holding hris/, lms/, incidents/ and fleet/."
        )
    settle = float(os.environ.get("TALENT_SETTLE_SECONDS", "30"))
    previous = json.loads(context.cursor) if context.cursor else {"fingerprint": None, "files": []}
    fingerprint, settled, unsettled = sources_fingerprint(s.sources_dir, settle)
    waiting = f"; {len(unsettled)} file(s) still being written" if unsettled else ""
    if fingerprint == previous["fingerprint"]:
        return dg.SkipReason(f"no new export files in {s.sources_dir}{waiting}")
    known = {tuple(f) for f in previous["files"]}
    new = [f[0] for f in settled if tuple(f) not in known]
    context.update_cursor(json.dumps({"fingerprint": fingerprint, "files": settled}))
    if not new:
        return dg.SkipReason(f"no new settled export files in {s.sources_dir}{waiting}")
    return dg.RunRequest(
        run_key=f"sources-{fingerprint}",
        tags={"talent/trigger": "new_exports", "talent/new_files": str(len(new))},
    )


defs = dg.Definitions(
    jobs=[nightly_job, report_job],
    schedules=[nightly_schedule, quarterly_report_schedule],
    sensors=[new_exports_sensor],
    resources={"settings": TalentSettings()},
)
