"""Run the graph once, in this process, the way the nightly schedule does.

Used by `talent run` and by the end-to-end tests. It takes a lock on the warehouse folder (one
writer at a time), runs the `nightly` job, renders the report for a quarter, and turns Dagster's
event log into a short verdict: which asset or check failed, and why.
"""

from __future__ import annotations

import json
import logging
import os
import time
import uuid
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipelines.lib.locking import RunLockedError, warehouse_lock
from pipelines.lib.settings import Settings
from pipelines.progress import ExportLoad, dagster_notices, run_config, watch

# At most this many runs a night: ingestion, then each decision (`versions.decide`) until
# nothing is left to decide; a chain of content-versioned assets needs one run per link.
MAX_RUNS = 6

__all__ = ["RunLockedError", "RunOutcome", "run_nightly", "run_report", "warehouse_lock"]


# a planted check that no run has evaluated yet (in `checks_kept`, for want of a run id)
NOT_EVALUATED = "never evaluated"


@dataclass
class Failure:
    kind: str  # "asset" or "check"
    name: str
    message: str


@dataclass
class RunOutcome:
    success: bool
    run_id: str = ""
    failures: list[Failure] = field(default_factory=list)
    warnings: list[Failure] = field(default_factory=list)
    materialized: list[str] = field(default_factory=list)
    # assets whose code and inputs had not changed: kept as computed by an earlier run
    # (asset -> that run)
    kept: dict[str, str] = field(default_factory=dict)
    # steps that computed, each with why (`versions.COMPUTED_BECAUSE`: the first changes)
    because: dict[str, str] = field(default_factory=dict)
    # checks not evaluated in this run because their asset was kept or unchanged: check -> the
    # run whose evaluation stands
    checks_kept: dict[str, str] = field(default_factory=dict)
    loads: list[ExportLoad] = field(default_factory=list)
    checks_passed: int = 0
    step_seconds: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0
    log_path: Path | None = None
    # nightly only: every file of this run not loaded in full ("file: reason"), and the
    # exports that were never delivered with what that leaves out
    not_fully_loaded: list[str] = field(default_factory=list)
    missing_exports: dict[str, str] = field(default_factory=dict)
    # nightly only: re-deliveries of this run that replaced noticeably more rows than they
    # hold ("file -> export: what and the share"), and exports fed by two or more tools
    fewer_rows: list[str] = field(default_factory=list)
    export_sources: dict[str, str] = field(default_factory=dict)
    # every run of the night after the first (ingestion): each decision's selection
    run_ids: list[str] = field(default_factory=list)
    # assets held back by an upstream's failed blocking check: asset -> which
    blocked: dict[str, str] = field(default_factory=dict)
    # the checks the night's runs evaluated
    evaluated: set = field(default_factory=set)

    def describe(self) -> str:
        """The end-of-run summary: what was loaded, checked, built; what failed and where."""
        lines = self._delivery_lines() + self._check_lines() + self._computed_lines()
        lines += [f"warning: {w.kind} {w.name}: {_short(w.message)}" for w in self.warnings]
        lines += [f"FAILED {f.kind} {f.name}: {f.message}" for f in self.failures]
        if self.log_path:
            lines.append(f"Full log: {self.log_path}")
        return "\n".join(lines)

    def _delivery_lines(self) -> list[str]:
        """What was loaded, quarantined, warned about, delivered twice or not at all."""
        lines = []
        if self.loads:
            lines.append("Loaded:")
            lines += [load.line() for load in self.loads]
            if any(load.rows_quarantined for load in self.loads):
                lines.append("  quarantined rows, with file, line and reason: table raw.quarantine")
        lines += ExportLoad.privacy_lines(self.loads)
        if self.not_fully_loaded:
            lines.append(f"Not fully loaded ({len(self.not_fully_loaded)} file(s)):")
            lines += [f"  {item}" for item in self.not_fully_loaded]
        warned = [f"{name}: {text}" for load in self.loads for name, text in load.warnings.items()]
        if warned:
            lines.append(f"Loaded, with a warning ({len(warned)} file(s)):")
            lines += [f"  {item}" for item in dict.fromkeys(warned)]
        if self.fewer_rows:
            lines.append(
                f"Re-delivered with noticeably fewer rows, loaded ({len(self.fewer_rows)} file(s)):"
            )
            lines += [f"  {item}" for item in self.fewer_rows]
        if self.export_sources:
            lines.append(
                "Delivered by two or more tools (each keeps its own deliveries; both count, a "
                "record both describe once, by sources.yml's precedence or the latest "
                "delivery; differences in marts.source_conflicts):"
            )
            lines += [f"  {e}: {tools}" for e, tools in self.export_sources.items()]
        if self.missing_exports:
            lines.append("Not delivered (only employees is required):")
            lines += [f"  {e}: {why}" for e, why in self.missing_exports.items()]
        return lines

    def _check_lines(self) -> list[str]:
        """How many checks were evaluated, passed, warned, failed or kept from an earlier run."""
        lines = []
        failed = sum(f.kind == "check" for f in self.failures)
        checks = self.checks_passed + len(self.warnings) + failed
        stood = {c: run for c, run in self.checks_kept.items() if run != NOT_EVALUATED}
        if checks or self.checks_kept:
            lines.append(
                f"Checks: {checks} evaluated, {self.checks_passed} passed, "
                f"{len(self.warnings)} warned, {failed} failed"
                + (
                    f"; {len(stood)} not evaluated again, their data unchanged: "
                    f"the evaluation of {_by_run(stood)} stands"
                    if stood
                    else ""
                )
                + (
                    f"; {len(self.checks_kept) - len(stood)} never evaluated (their step "
                    "failed or did not run)"
                    if len(stood) < len(self.checks_kept)
                    else ""
                )
            )
        return lines

    def _computed_lines(self) -> list[str]:
        """What the run computed and why, and what it kept from earlier runs."""
        from pipelines.defs.versions import NEVER_COMPUTED

        computed = [m for m in self.materialized if m not in self.kept]
        marts = sum(m.startswith("marts/") for m in computed)
        lines = [
            f"{len(computed)} assets computed ({marts} marts) in "
            f"{self.wall_seconds:.0f} s, run {self.run_id}"
        ]
        if self.because and set(self.because.values()) == {NEVER_COMPUTED}:
            lines.append("Computed because: never computed before (a new warehouse)")
        elif self.because:
            lines.append("Computed because:")
            lines += [f"  {step}: {_short(why, 200)}" for step, why in self.because.items()]
        for key, why in sorted(self.blocked.items()):
            lines.append(f"Not computed: {key}, {why}")
        if self.kept:
            layers: dict[str, int] = {}
            for key in self.kept:
                layers[key.split("/")[0]] = layers.get(key.split("/")[0], 0) + 1
            kept = (
                ", ".join(f"{layer} {n}" for layer, n in layers.items())
                + "; the run record lists them under kept"
                if len(self.kept) > 4
                else ", ".join(self.kept)
            )
            lines.append(
                f"Kept {len(self.kept)}, code and inputs unchanged since {_by_run(self.kept)} "
                f"computed them: {kept}"
            )
        return lines


def _by_run(items: dict[str, str]) -> str:
    """'run abc12345' or 'runs abc12345 (3), def67890 (1)': the runs named in `items`' values."""
    counts: dict[str, int] = {}
    for run in items.values():
        counts[run[:8]] = counts.get(run[:8], 0) + 1
    if len(counts) == 1:
        return f"run {next(iter(counts))}"
    return "runs " + ", ".join(f"{run} ({n})" for run, n in sorted(counts.items()))


def _short(message: str, limit: int = 300) -> str:
    return message if len(message) <= limit else message[: limit - 3] + "..."


def instance_for(settings: Settings):
    """The Dagster instance a run records in: `$DAGSTER_HOME` when set (the instance the UI and
    the daemon share), else `<warehouse>/dagster/`, set up with the project's `dagster.yaml`.
    Its records (code and data versions of every asset) decide what the next run keeps, so a
    warehouse needs the same instance from night to night."""
    import dagster as dg

    from pipelines.lib.project_files import ROOT

    if os.environ.get("DAGSTER_HOME"):
        Path(os.environ["DAGSTER_HOME"]).mkdir(parents=True, exist_ok=True)
        return dg.DagsterInstance.get()
    home = settings.warehouse_dir / "dagster"
    home.mkdir(parents=True, exist_ok=True)
    config = home / "dagster.yaml"
    if not config.exists() and (ROOT / "dagster.yaml").exists():
        config.write_text((ROOT / "dagster.yaml").read_text())
    return dg.DagsterInstance.local_temp(tempdir=str(home))


def outcome_of_run(instance, run_id: str, success: bool) -> RunOutcome:
    """What run `run_id` loaded, checked, computed, kept and failed, read from the instance's
    event log: the same for a run of `talent run`, of the UI and of the daemon."""
    import dagster as dg

    out = RunOutcome(success=success, run_id=run_id)
    for entry in instance.all_logs(run_id):
        event = entry.dagster_event
        if event is None:
            continue
        if event.event_type == dg.DagsterEventType.STEP_FAILURE:
            message = _error_text(event.step_failure_data.error)
            out.failures.append(Failure("step", event.step_key or "?", message))
        elif event.event_type == dg.DagsterEventType.RESOURCE_INIT_FAILURE:
            message = _error_text(event.event_specific_data.error)
            out.failures.append(Failure("resource", "talent", message))
        elif event.event_type == dg.DagsterEventType.ASSET_MATERIALIZATION:
            _add_materialization(out, event)
        elif event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION:
            check = event.event_specific_data
            _add_check(out, check)
            out.evaluated.add(dg.AssetCheckKey(check.asset_key, check.check_name))
    return out


def merged(outcomes: list[RunOutcome]) -> RunOutcome:
    """One night's runs as one outcome: the first run's id (ingestion), the others in
    `run_ids`; what each loaded, checked, computed and failed."""
    out = outcomes[0]
    for other in outcomes[1:]:
        out.success = out.success and other.success
        out.run_ids.append(other.run_id)
        out.failures += other.failures
        out.warnings += other.warnings
        out.materialized += other.materialized
        out.because.update(other.because)
        out.loads += other.loads
        out.checks_passed += other.checks_passed
        out.evaluated |= other.evaluated
    return out


def add_kept(out: RunOutcome, defs, instance, keys) -> None:
    """The assets of `keys` the night did not compute, each with the run that did, and their
    checks, each with the run whose evaluation stands (or `NOT_EVALUATED`)."""
    from pipelines.defs.ingestion import INGESTION_KEYS
    from pipelines.defs.versions import blocking_checks, computed_in, last_evaluations

    computed = set(out.materialized)
    kept = [k for k in keys if k.to_user_string() not in computed]
    latest = instance.get_latest_materialization_events(kept)
    out.kept = {k.to_user_string(): run for k in kept if (run := computed_in(latest.get(k)))}
    # the checks of what was kept, and those of the raw exports the night did not evaluate
    # (their deliveries unchanged since they last did)
    every = blocking_checks(defs, every=True)
    checks = [c for k in [*kept, *INGESTION_KEYS] for c in every.get(k, [])]
    checks = [c for c in checks if c not in out.evaluated]
    evaluated = last_evaluations(instance, checks)
    out.checks_kept = {
        c.to_user_string(): evaluated[c][1] if c in evaluated else NOT_EVALUATED for c in checks
    }


def _add_materialization(out: RunOutcome, event) -> None:
    from pipelines.defs.versions import COMPUTED_BECAUSE

    key = event.asset_key
    out.materialized.append(key.to_user_string())
    meta = event.event_specific_data.materialization.metadata
    values = {k: getattr(v, "value", v) for k, v in meta.items()}
    if values.get(COMPUTED_BECAUSE):
        out.because.setdefault(event.step_key or "?", str(values[COMPUTED_BECAUSE]))
    if key.path[0] == "raw":
        out.loads.append(ExportLoad.from_metadata(key.path[-1], values))
    for note in values.get("postgres_notes") or []:
        out.warnings.append(Failure("publish", key.to_user_string(), str(note)))


def _add_check(out: RunOutcome, ev) -> None:
    import dagster as dg

    if ev.passed:
        out.checks_passed += 1
        return
    meta = {k: getattr(v, "value", v) for k, v in (ev.metadata or {}).items()}
    detail = _check_detail(meta) or ev.description or ""
    name = f"{ev.asset_key.to_user_string()}:{ev.check_name}"
    bucket = out.failures if ev.severity == dg.AssetCheckSeverity.ERROR else out.warnings
    bucket.append(Failure("check", name, detail or "did not pass"))


def _check_detail(meta: dict) -> str:
    """Each failing expectation with its severity, observed value and first place, then the
    advice of the worst one: what the operator needs to find and fix the rows."""
    parts = []
    for f in meta.get("failing_expectations") or []:
        where = f", e.g. {f['where'][0]}" if f.get("where") else ""
        observed = str(f.get("observed_value"))[:80]
        parts.append(f"{f['expectation']} ({f['severity']}, observed {observed}{where})")
    advice = meta.get("first_failure")
    return "; ".join(parts) + (f". {advice}" if advice else "")


def _error_text(err) -> str:
    """The innermost error's message: Dagster wraps the asset's own exception ("Error occurred
    while executing op ...") and the cause is what the operator can act on."""
    if err is None:
        return "failed"
    while getattr(err, "cause", None) is not None:
        err = err.cause
    lines = (err.message or "failed").strip().splitlines()
    return " ".join(lines[:6])


def _step_seconds(instance, run_id: str) -> dict[str, float]:
    """Wall seconds per step, from the run's event log."""
    import dagster as dg

    started: dict[str, float] = {}
    seconds: dict[str, float] = {}
    ends = {dg.DagsterEventType.STEP_SUCCESS, dg.DagsterEventType.STEP_FAILURE}
    for entry in instance.all_logs(run_id):
        ev = entry.dagster_event
        if ev is None or not ev.step_key:
            continue
        if ev.event_type == dg.DagsterEventType.STEP_START:
            started[ev.step_key] = entry.timestamp
        elif ev.event_type in ends and ev.step_key in started:
            seconds[ev.step_key] = round(entry.timestamp - started[ev.step_key], 3)
    return seconds


def _execute(settings: Settings, job_name: str, verbose: bool = False, **kwargs) -> RunOutcome:
    from pipelines.defs.dbt_cli import ensure_manifest

    # before the definitions load: a stale manifest is parsed with this run's profile and vars
    ensure_manifest(settings)
    from pipelines.defs import build_definitions
    from pipelines.lib.memory import long_lived_frozen

    defs = build_definitions(settings)
    instance = instance_for(settings)
    since = datetime.now(UTC).replace(tzinfo=None)
    tags = {"talent/trigger": "cli", **({"talent/verbose": "1"} if verbose else {})}
    job = defs.resolve_job_def(job_name)

    def execute(**more) -> tuple[str, bool]:
        run_id = str(uuid.uuid4())
        with watch(instance, run_id), dagster_notices(verbose=verbose):
            result = job.execute_in_process(
                instance=instance,
                raise_on_error=False,
                run_config=run_config(verbose),
                run_id=run_id,
                **{**kwargs, **more, "tags": {**tags, **more.get("tags", {})}},
            )
        return result.run_id, result.success

    with long_lived_frozen():  # what is loaded by now lives through the job (lib/memory.py)
        if job_name != "nightly":
            runs, blocked = [execute()], {}
        else:
            runs, blocked = nightly_runs(settings, defs, instance, execute)
    return run_summary(settings, job_name, instance, runs, since, defs=defs, blocked=blocked)


def nightly_runs(settings: Settings, defs, instance, execute):
    """Ingestion (it looks at the sources folder) with the raw checks, then each decision
    before a run (`versions.decide`, from the instance's records) until nothing is left to
    decide: a run computes only what its decision selected. Stops at a failed run."""
    from pipelines.defs.ingestion import INGESTION_KEYS
    from pipelines.defs.versions import decide_nightly

    runs = [execute(asset_selection=INGESTION_KEYS)]
    blocked: dict[str, str] = {}
    for _ in range(MAX_RUNS - 1):
        if not runs[-1][1]:
            break
        plan = decide_nightly(settings, defs, instance)
        blocked = {k.to_user_string(): why for k, why in plan.blocked.items()}
        if not plan.selection:
            break
        runs.append(execute(asset_selection=sorted(plan.selection, key=str), tags=plan.tags()))
    return runs, blocked


def run_summary(
    settings: Settings,
    job_name: str,
    instance,
    runs: list[tuple[str, bool]],
    since: datetime | None = None,
    defs=None,
    blocked: dict[str, str] | None = None,
) -> RunOutcome:
    """The run's summary, from its event log, written where operators look for it: the full
    log (`<warehouse>/runs/<job>.log`), the record (`last_<job>.json`) and the summary's text
    (`last_<job>.txt`). `talent run` calls it when its run ends, the run-status sensor
    (`pipelines/defs/automation.py`) when a run the daemon or the UI launched ends, so both
    write the same summary. `since`: when the run started (default: the run's own start)."""
    from pipelines.defs.versions import nightly_keys

    outcome = merged([outcome_of_run(instance, run_id, ok) for run_id, ok in runs])
    if job_name == "nightly" and defs is not None:
        add_kept(outcome, defs, instance, nightly_keys(defs))
        outcome.blocked = blocked or {}
    stats = instance.get_run_stats(runs[0][0])
    if since is None:
        started = stats.start_time or stats.launch_time or time.time()
        since = datetime.fromtimestamp(started, UTC).replace(tzinfo=None)
    if job_name == "nightly":
        _add_delivery_issues(outcome, settings, since)
    ended = instance.get_run_stats(runs[-1][0]).end_time or time.time()
    outcome.wall_seconds = round(ended - since.replace(tzinfo=UTC).timestamp(), 3)
    for run_id, _ in runs:
        outcome.step_seconds.update(_step_seconds(instance, run_id))
    outcome.log_path = _write_log(settings, job_name, instance, [run_id for run_id, _ in runs])
    _write_run_record(settings, job_name, outcome)
    return outcome


def _add_delivery_issues(outcome: RunOutcome, settings: Settings, since: datetime) -> None:
    """Name every file this run did not load in full, every re-delivery that replaced many
    more rows than it holds, the exports two tools delivered, and the exports nobody
    delivered."""
    from pipelines.lib.ingest.check import (
        files_not_fully_loaded,
        missing_exports,
        shrunk_redeliveries,
        sources_per_export,
    )
    from pipelines.lib.ingest.profiles import ProfileError, SourcesConfig, load_sources_config

    if not settings.raw_db.exists():
        return
    for issue in files_not_fully_loaded(settings.raw_db, since=since):
        outcome.not_fully_loaded.append(
            f"{issue.file} -> {issue.export} ({issue.status}): {issue.reason}"
        )
    for load in outcome.loads:
        for name, reason in load.not_loaded.items():
            item = f"{name} (not loaded): {reason}"
            if item not in outcome.not_fully_loaded:
                outcome.not_fully_loaded.append(item)
    outcome.missing_exports = missing_exports(settings.raw_db)
    try:
        share = load_sources_config(settings.sources_dir).notice_redelivery_share
    except ProfileError:  # the ingestion assets have named the broken sources.yml
        share = SourcesConfig().notice_redelivery_share
    for issue in shrunk_redeliveries(settings.raw_db, since=since, share=share):
        outcome.fewer_rows.append(f"{issue.file} -> {issue.export}: {issue.reason}")
    for export, tools in sources_per_export(settings.raw_db).items():
        outcome.export_sources[export] = "; ".join(
            f"{tool} ({', '.join(files[:3])}{', ...' if len(files) > 3 else ''})"
            for tool, files in tools
        )


def _write_log(settings: Settings, job_name: str, instance, run_ids: list[str]) -> Path:
    """`<warehouse>/runs/<job>.log`: every message of the runs (Dagster's and dbt's)."""
    settings.runs_dir.mkdir(parents=True, exist_ok=True)
    path = settings.runs_dir / f"{job_name}.log"
    with open(path, "w", encoding="utf-8") as fh:
        for entry in (e for run_id in run_ids for e in instance.all_logs(run_id)):
            stamp = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(entry.timestamp))
            level = logging.getLevelName(entry.level)
            fh.write(f"{stamp} {level:<7} {entry.step_key or '-'} {entry.message}\n")
    return path


def _write_run_record(settings: Settings, job_name: str, outcome: RunOutcome) -> None:
    """warehouse/runs/last_<job>.json: what the last run did, for operators and the benchmark."""
    runs = settings.runs_dir
    runs.mkdir(parents=True, exist_ok=True)
    record = {
        "job": job_name,
        "run_id": outcome.run_id,
        "success": outcome.success,
        "wall_seconds": outcome.wall_seconds,
        "step_seconds": outcome.step_seconds,
        "kept": outcome.kept,
        "computed_because": outcome.because,
        "checks_kept": outcome.checks_kept,
        "run_ids": outcome.run_ids,
        "blocked": outcome.blocked,
        "failures": [vars(f) for f in outcome.failures],
        "warnings": [vars(f) for f in outcome.warnings],
    }
    # Written beside and renamed into place: a run killed while writing leaves the previous
    # record whole, never a truncated file the next reader cannot parse.
    for target, text in (
        (runs / f"last_{job_name}.json", json.dumps(record, indent=2)),
        (runs / f"last_{job_name}.txt", outcome.describe() + "\n"),
    ):
        tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8")
        os.replace(tmp, target)


def run_nightly(settings: Settings, verbose: bool = False) -> RunOutcome:
    """Materialise the nightly job (everything but the report) over `settings`."""
    return _execute(settings, "nightly", verbose)


def run_report(settings: Settings, quarter: str, verbose: bool = False) -> RunOutcome:
    """Render the report for `quarter` (YYYY-Qn) from the published warehouse."""
    from pipelines.defs.report import partition_of_quarter

    return _execute(
        settings, "quarterly_report", verbose, partition_key=partition_of_quarter(quarter)
    )
