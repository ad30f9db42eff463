"""Automation: the nightly job and schedule, the quarterly report schedule, the file-arrival
sensor, and the decision that follows every nightly run.

The schedule and the file sensor start a run of ingestion alone (it is what looks at the
sources folder). When a nightly run has succeeded, `next_nightly_run` decides from the
instance's records what is stale (`versions.decide`, the rule `talent run` follows) and starts
a run of exactly that selection, with the reasons in its tags; a run that computed everything
it had to leaves nothing stale, and the chain stops.

The schedules' crons and time zone come from `Settings` (`nightly_cron`, `quarterly_cron`,
`timezone`), so they are built by `schedules(settings)` when the code location loads; the sensor
reads `settle_seconds` (a file must be unchanged this long before it is picked up, so half-copied
exports are not read) from the `talent` resource when it ticks.
"""

import hashlib
import json
import time
from pathlib import Path

import dagster as dg

from pipelines.defs.ingestion import INGESTION_KEYS
from pipelines.defs.report import partition_of_quarter
from pipelines.defs.resources import TalentResource
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest.loader import discover
from pipelines.lib.settings import Settings

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


def quarter_just_closed(day) -> str:
    """The report quarter for a tick on `day`: the last quarter that ended before it."""
    from pipelines.lib.report.quarters import Quarter

    return Quarter.containing(day).previous().label


def schedules(settings: Settings) -> list[dg.ScheduleDefinition]:
    """The nightly and the quarterly schedule, at the settings' crons and time zone."""

    @dg.schedule(
        name="nightly_schedule",
        job=nightly_job,
        cron_schedule=settings.nightly_cron,
        execution_timezone=settings.timezone,
        description="Every night: ingest the new files; what is stale then follows "
        "(next_nightly_run).",
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
    def nightly(context: dg.ScheduleEvaluationContext):
        return dg.RunRequest(asset_selection=INGESTION_KEYS, tags={"talent/trigger": "schedule"})

    @dg.schedule(
        name="quarterly_report_schedule",
        job=report_job,
        cron_schedule=settings.quarterly_cron,
        execution_timezone=settings.timezone,
        description="Render the talent report for the quarter just closed.",
        default_status=dg.DefaultScheduleStatus.RUNNING,
    )
    def quarterly_report_schedule(context: dg.ScheduleEvaluationContext):
        label = quarter_just_closed(context.scheduled_execution_time.date())
        return dg.RunRequest(run_key=f"report-{label}", partition_key=partition_of_quarter(label))

    return [nightly, quarterly_report_schedule]


def contract_files(sources_dir: Path) -> list[Path]:
    """Files in a sources folder that ingestion will load (its own discovery rule)."""
    # a vendor file feeding two exports is one file
    return sorted({d.path for export in EXPORTS for d in discover(sources_dir, export)[0]})


def loaded_files(settings) -> set[tuple[str, int]]:
    """(path in the sources folder, size) of every file the raw layer already holds.

    A new Dagster instance (`make dev` after `make run`, a new DAGSTER_HOME) starts its sensor
    with no cursor: files `talent run` loaded before are not new, so they start no run.
    """
    from pipelines.lib import db

    if not settings.raw_db.exists():
        return set()
    try:
        with db.connect(settings.raw_db, read_only=True) as con:
            rows = con.execute("select source_path, size_bytes from manifest").fetchall()
    except Exception:  # a run is writing the raw layer: treat nothing as loaded, as before
        return set()
    root = settings.sources_dir
    out = set()
    for source_path, size in rows:
        path = Path(source_path or "")
        if path.is_relative_to(root):
            out.add((str(path.relative_to(root)), int(size or 0)))
    return out


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
def new_exports_sensor(context: dg.SensorEvaluationContext, talent: TalentResource):
    s = talent.settings
    if not s.sources_dir.is_dir():
        return dg.SkipReason(
            f"sources folder {s.sources_dir} does not exist; set TALENT_SOURCES to the folder "
            "holding hris/, lms/, incidents/ and fleet/."
        )
    settle = s.settle_seconds
    previous = json.loads(context.cursor) if context.cursor else {"fingerprint": None, "files": []}
    fingerprint, settled, unsettled = sources_fingerprint(s.sources_dir, settle)
    waiting = f"; {len(unsettled)} file(s) still being written" if unsettled else ""
    if fingerprint == previous["fingerprint"]:
        return dg.SkipReason(f"no new export files in {s.sources_dir}{waiting}")
    known = {tuple(f) for f in previous["files"]}
    loaded = loaded_files(s) if context.cursor is None else set()
    new = [f[0] for f in settled if tuple(f) not in known and (f[0], f[1]) not in loaded]
    context.update_cursor(json.dumps({"fingerprint": fingerprint, "files": settled}))
    if not new:
        return dg.SkipReason(f"no new settled export files in {s.sources_dir}{waiting}")
    return dg.RunRequest(
        run_key=f"sources-{fingerprint}",
        asset_selection=INGESTION_KEYS,
        tags={"talent/trigger": "new_exports", "talent/new_files": str(len(new))},
    )


def _write_summary(context: dg.RunStatusSensorContext, talent: TalentResource, success: bool):
    """The run summary of a run the daemon or the UI launched, as `talent run` writes its own
    (`pipelines.execution.run_summary`): `<warehouse>/runs/last_<job>.txt` and `.json`, and the
    full log `<job>.log`. A run of `talent run` (tag `talent/trigger: cli`) wrote its own."""
    from pipelines.execution import run_summary

    run = context.dagster_run
    if run.tags.get("talent/trigger") == "cli":
        return dg.SkipReason(
            f"run {run.run_id[:8]} came from `talent run`, which wrote its summary"
        )
    outcome = run_summary(
        talent.settings, run.job_name, context.instance, [(run.run_id, success)], defs=_defs(talent)
    )
    context.log.info(outcome.describe())
    return None


def _defs(talent: TalentResource) -> dg.Definitions:
    """The definitions over the resource's settings (their code versions fold them in)."""
    from pipelines.defs import build_definitions

    return build_definitions(talent.settings)


def next_run(settings: Settings, defs: dg.Definitions, instance) -> dg.RunRequest | dg.SkipReason:
    """The run the decision before a run asks for (`versions.decide`), or why there is none."""
    from pipelines.defs.versions import decide_nightly

    plan = decide_nightly(settings, defs, instance)
    if not plan.selection:
        held = f"; held back: {', '.join(map(str, plan.blocked))}" if plan.blocked else ""
        return dg.SkipReason(f"nothing stale: {len(plan.kept)} assets kept{held}")
    return dg.RunRequest(
        asset_selection=sorted(plan.selection, key=str),
        tags={"talent/trigger": "decision", **plan.tags()},
    )


@dg.run_status_sensor(
    name="next_nightly_run",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=[nightly_job],
    request_job=nightly_job,
    description="After a nightly run: runs what is stale now (versions.decide), if anything.",
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def next_nightly_run(context: dg.RunStatusSensorContext, talent: TalentResource):
    if context.dagster_run.tags.get("talent/trigger") == "cli":
        return dg.SkipReason("`talent run` decides its own next runs")
    return next_run(talent.settings, _defs(talent), context.instance)


SUMMARISED_JOBS = [nightly_job, report_job]


@dg.run_status_sensor(
    name="run_summary_on_success",
    run_status=dg.DagsterRunStatus.SUCCESS,
    monitored_jobs=SUMMARISED_JOBS,
    description="Writes the summary of a finished nightly or report run to <warehouse>/runs/.",
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def run_summary_on_success(context: dg.RunStatusSensorContext, talent: TalentResource):
    return _write_summary(context, talent, success=True)


@dg.run_status_sensor(
    name="run_summary_on_failure",
    run_status=dg.DagsterRunStatus.FAILURE,
    monitored_jobs=SUMMARISED_JOBS,
    description="Writes the summary of a failed nightly or report run to <warehouse>/runs/: "
    "which step or check failed, and why.",
    default_status=dg.DefaultSensorStatus.RUNNING,
)
def run_summary_on_failure(context: dg.RunStatusSensorContext, talent: TalentResource):
    return _write_summary(context, talent, success=False)
