"""Dry run of a sources folder, and the list of files a load did not take in full.

`check_sources` reads every file the way a load would (recognition, period, typing, the
quarantine reasons) without writing anything, so a new customer sees in seconds what their
exports will become. `files_not_fully_loaded` lists, from the raw layer's manifest and
quarantine, every delivery that did not load in full with its reason: the end-of-run summary
prints it.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pipelines.lib import db
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest.loader import (
    IngestResult,
    discover_export,
    file_period,
    sibling_facts,
    split_delivery,
)
from pipelines.lib.ingest.profiles import SourcesConfig, load_profiles, load_sources_config
from pipelines.lib.ingest.reader import FileError, type_split_files

# what the product cannot show when an export is absent (only employees is required)
MISSING_CONSEQUENCE: dict[str, str] = {
    "employees": "nothing can be measured: the employees export is the one required export",
    "job_history": "teams, roles, levels and the division scope are unknown: every employee counts, segments show 'unknown'",
    "contractor_hours": "no contractor hours: contractor cost is left out of ROI",
    "courses": "no course catalogue: training hours and list prices are not shown",
    "enrolments": "no enrolments: training participation and training cost are not shown",
    "certifications": "no certification export: coverage and certification effects are not shown",
    "incidents": "no incident export: incident rates and downtime are not shown",
    "responders": "no responders export: incidents are not linked to people",
    "gpu_fleet": "no fleet export: team templates by fleet size not shown",
    "gpu_usage": "no GPU usage export (Slurm job accounting, DCGM telemetry): utilisation and the efficiency return stay assumed",
    "capacity_changes": "no capacity change export (Jira epics, ServiceNow): commissioning time and the faster-deployment return stay assumed",
    "changes": "no change request export (ServiceNow change_request, Jira Service Management): the change failure rate stays unmeasured",
    "requisitions": "no requisition export (Greenhouse, Lever, Workday Recruiting): the replacement cost per exit stays assumed",
}


@dataclass(frozen=True)
class FileCheck:
    """What a load would make of one file (for one export, when a file feeds several)."""

    path: str  # relative to the sources folder
    status: str  # loads, fails, blocked (shrinking re-delivery), unknown, skipped
    export: str | None = None
    profile: str | None = None
    vendor: str | None = None
    period: str | None = None
    period_source: str | None = None
    rows: int = 0
    loadable: int = 0
    quarantined: int = 0
    encoding: str | None = None
    locale: str | None = None
    delimiter: str | None = None
    note: str = ""  # how it was recognised, or why it is not loaded
    reasons: tuple[tuple[str, int, int], ...] = ()  # (reason, count, first line)
    warnings: tuple[str, ...] = ()  # what the file cannot show although it loads


@dataclass
class SourcesReport:
    sources_dir: str
    files: list[FileCheck] = field(default_factory=list)
    missing: dict[str, str] = field(default_factory=dict)  # export -> consequence

    @property
    def problems(self) -> int:
        return sum(1 for f in self.files if f.status != "loads" or f.quarantined)


def _reasons(rejected: list) -> tuple[tuple[str, int, int], ...]:
    """Quarantine reasons with the column value stripped, counted, with the first line."""
    counts: Counter[str] = Counter()
    first: dict[str, int] = {}
    for r in rejected:
        key = r.reason
        counts[key] += 1
        first.setdefault(key, r.line_number)
    return tuple((k, n, first[k]) for k, n in counts.most_common(10))


def check_sources(sources_dir: Path) -> SourcesReport:
    """Recognise and read every file of a sources folder without loading anything."""
    sources_dir = Path(sources_dir)
    profiles = load_profiles(sources_dir)
    config = load_sources_config(sources_dir)
    report = SourcesReport(str(sources_dir))
    seen_other: dict[str, str] = {}
    unknown: set[str] = set()
    with db.memory() as con:
        for export in EXPORTS:
            found = discover_export(sources_dir, export, profiles, config)
            checks = [_check_delivery(d, found.recognised, config, con) for d in found.deliveries]
            report.files += _mark_shrinking(checks, config)
            seen_other.update(found.not_loaded)
            unknown.update(found.unknown)
            if not found.deliveries:
                report.missing[export] = MISSING_CONSEQUENCE[export]
    report.files = _block_whole_files(report.files)
    read = {f.path for f in report.files}
    for name, reason in sorted(seen_other.items()):
        status = "unknown" if name in unknown else "skipped"
        base, _, export = name.rpartition(" as ")
        if export in EXPORTS and base not in read:
            status = "unknown"  # read by a profile that can give none of its exports
        report.files.append(FileCheck(path=name, status=status, note=reason))
    for name in stray_files(sources_dir):
        report.files.append(FileCheck(path=name, status="skipped", note=STRAY_NOTE))
    report.files.sort(key=lambda f: (f.path, f.export or ""))
    return report


# The top of a sources folder holds the system folders and sources.yml; an export dropped
# there is not read, and says so.
STRAY_NOTE = (
    "not inside hris/, lms/, incidents/ or fleet/: exports are read from the folder of their "
    "system; move it there (any file name)"
)
_TOP_LEVEL_OK = {"sources.yml", "sources.yaml", "readme.md", "ground_truth.json", "profiles"}


def stray_files(sources_dir: Path) -> list[str]:
    """Files at the top of the sources folder that look like exports (CSV or workbook)."""
    folders = {e.folder for e in EXPORTS.values()}
    return sorted(
        p.name
        for p in Path(sources_dir).iterdir()
        if p.name.lower() not in _TOP_LEVEL_OK
        and p.name not in folders
        and p.suffix.lower() in (".csv", ".xlsx", ".xls", ".txt", ".tsv")
    )


def _mark_shrinking(checks: list[FileCheck], config: SourcesConfig) -> list[FileCheck]:
    """A later version in a delivery series (one export, tool and period) with far fewer rows
    than an earlier one in the folder will be blocked by the load's re-delivery check (unless
    sources.yml allows it); one with noticeably fewer loads and is named."""
    out: list[FileCheck] = []
    # (tool, period) -> (rows, file) of the versions so far
    best: dict[tuple[str, str], tuple[int, str]] = {}
    for c in checks:  # load order: period, then version
        series = (c.vendor or "", c.period or "")
        before = best.get(series)
        allowed = config.for_file(*c.path.split("/", 1))
        if c.status == "loads" and before and before[0] and not (allowed and allowed.allow_shrink):
            if c.loadable < before[0] * config.min_redelivery_share:
                note = (
                    f"{c.note}; BLOCKED on load: {c.loadable} row(s) would replace {before[1]} "
                    f"({before[0]} rows); allow it in sources.yml (allow_shrink) if it is right"
                )
                out.append(FileCheck(**{**c.__dict__, "status": "blocked", "note": note}))
                continue
            if c.loadable < before[0] * config.notice_redelivery_share:
                note = (
                    f"{c.note}; loads with noticeably fewer rows: {c.loadable} replace "
                    f"{before[1]} ({before[0]} rows, {1 - c.loadable / before[0]:.0%} fewer)"
                )
                c = FileCheck(**{**c.__dict__, "note": note})
        if c.status == "loads":
            best[series] = (c.loadable, c.path)
        out.append(c)
    return out


def _block_whole_files(files: list[FileCheck]) -> list[FileCheck]:
    """A file blocked in one export is blocked in every export it feeds, as the load does."""
    blocked = {f.path: f.note for f in files if f.status == "blocked"}
    return [
        FileCheck(
            **{
                **f.__dict__,
                "status": "blocked",
                "note": f"{f.note}; BLOCKED on load with its other export(s): {blocked[f.path]}",
            }
        )
        if f.path in blocked and f.status == "loads"
        else f
        for f in files
    ]


def _check_delivery(d, recognised: dict[str, str], config, con) -> FileCheck:
    base = dict(
        path=d.relative,
        export=d.export,
        profile=d.profile.name if d.profile else None,
        vendor=d.profile.vendor if d.profile else "talent-metrics",
        period=d.period,
        period_source=d.period_source if d.period else "data",
        note=recognised.get(d.relative, "named like the export (sources/README.md)"),
        warnings=d.warnings,
    )
    data = d.path.read_bytes()
    try:
        split = split_delivery(data, d.export, d.path.name, d.profile, config, d.hint)
    except FileError as e:
        return FileCheck(**base | {"status": "fails", "note": str(e)})
    parsed = type_split_files([split], con)[0]
    if d.period is None:
        # one period per file, over every export it feeds (as the load gives it)
        siblings = sibling_facts(data, d, config, con)
        base["period"] = file_period(parsed, siblings, datetime.now(UTC).replace(tzinfo=None))
    return FileCheck(
        **base,
        status="loads",
        rows=parsed.rows_total,
        loadable=parsed.rows.num_rows,
        quarantined=len(parsed.rejected),
        encoding=parsed.encoding,
        locale=parsed.locale,
        delimiter=parsed.delimiter,
        reasons=_reasons(parsed.rejected),
    )


# --- after a load -----------------------------------------------------------------------------


@dataclass(frozen=True)
class FileIssue:
    file: str
    export: str | None
    status: str  # failed, quarantined rows, not loaded
    delivered: int
    loaded: int
    quarantined: int
    reason: str


def files_not_fully_loaded(
    raw_db: Path,
    results: dict[str, IngestResult] | None = None,
    since: datetime | None = None,
) -> list[FileIssue]:
    """Every delivery that did not load in full, with its reason (for the end-of-run summary).

    From the manifest (recorded at or after `since`, when given: this run's files): failed
    files (unreadable, header problems, blocked re-deliveries), duplicates (the same bytes
    again: nothing loaded) and files with quarantined rows (the first reason shown). From
    `results` (the last load), files that were never read: unknown names, folders, dangling
    links, temporary names, files still being written, exports a vendor file cannot give.
    """
    issues: list[FileIssue] = []
    if Path(raw_db).is_file():
        with db.connect(raw_db, read_only=True) as con:
            rows = con.execute(
                """
                SELECT m.file_name, m.export, m.status, m.rows_total, m.rows_loaded,
                       m.rows_quarantined, m.message,
                       (SELECT q.reason || ' (line ' || q.line_number || ')' FROM quarantine q
                        WHERE q.file_id = m.file_id AND q.export = m.export
                        ORDER BY q.line_number LIMIT 1) AS first_reason
                FROM manifest m
                WHERE (m.status IN ('failed', 'duplicate') OR m.rows_quarantined > 0)
                  AND (CAST(? AS TIMESTAMP) IS NULL OR m.loaded_at >= ?)
                ORDER BY m.export, m.file_name
                """,
                [since, since],
            ).fetchall()
        for name, export, status, total, loaded, quarantined, message, first in rows:
            if status in ("failed", "duplicate"):
                reason = message or status
            else:
                status = "rows quarantined"
                reason = f"{quarantined} row(s) quarantined, e.g. {first}"
            issues.append(FileIssue(name, export, status, total, loaded, quarantined, reason))
    seen: set[str] = set()
    for result in (results or {}).values():
        for name, reason in result.not_loaded.items():
            if name not in seen:
                seen.add(name)
                issues.append(FileIssue(name, None, "not loaded", 0, 0, 0, reason))
    return issues


def _manifest_has(con, column: str) -> bool:
    return bool(
        con.execute(
            "SELECT count(*) FROM duckdb_columns() WHERE table_name = 'manifest' "
            "AND column_name = ?",
            [column],
        ).fetchone()[0]
    )


def shrunk_redeliveries(
    raw_db: Path, since: datetime | None = None, share: float = 0.8
) -> list[FileIssue]:
    """Re-deliveries that replaced their series' earlier delivery with fewer than `share` of
    its rows (recorded at or after `since`): loaded, and named with both files and the share."""
    if not Path(raw_db).is_file():
        return []
    with db.connect(raw_db, read_only=True) as con:
        if not _manifest_has(con, "replaced_rows"):
            return []
        rows = con.execute(
            """
            SELECT file_name, export, period, source_system, rows_total, rows_loaded,
                   rows_quarantined, replaced_rows, replaced_files
            FROM manifest
            WHERE replaced_rows > 0 AND rows_loaded < replaced_rows * ?
              AND (CAST(? AS TIMESTAMP) IS NULL OR loaded_at >= ?)
            ORDER BY export, period, file_name
            """,
            [share, since, since],
        ).fetchall()
    out = []
    for name, export, period, system, total, loaded, quarantined, before, replaced in rows:
        reason = (
            f"replaced {replaced} ({before} rows) for {export} {period} from {system} with "
            f"{loaded} rows: {1 - loaded / before:.0%} fewer. Loaded; if rows are missing, ask "
            "the sender for a complete export"
        )
        out.append(FileIssue(name, export, "fewer rows", total, loaded, quarantined, reason))
    return out


def sources_per_export(raw_db: Path) -> dict[str, list[tuple[str, list[str]]]]:
    """Exports whose current rows come from two or more tools: export -> [(tool, its active
    files)]. Both count; staging counts a record both describe once (natural key; for the same
    period by the precedence of `pipelines/lib/ingest/precedence.py`)."""
    if not Path(raw_db).is_file():
        return {}
    with db.connect(raw_db, read_only=True) as con:
        if not _manifest_has(con, "source_system"):
            return {}
        rows = con.execute(
            """
            SELECT export, source_system, list(file_name ORDER BY period, file_name)
            FROM manifest WHERE status = 'active' AND rows_loaded > 0
            GROUP BY export, source_system ORDER BY export, source_system
            """
        ).fetchall()
    found: dict[str, list[tuple[str, list[str]]]] = {}
    for export, system, files in rows:
        found.setdefault(export, []).append((system or "unknown", list(files)))
    return {e: systems for e, systems in found.items() if len(systems) > 1}


def format_report(report: SourcesReport) -> str:
    """The check as plain text, one block per file."""
    out = [f"Sources folder {report.sources_dir}", ""]
    for f in report.files:
        if f.status in ("loads", "fails", "blocked"):
            head = f"{f.path}  ->  {f.export} ({f.vendor}"
            head += f", profile {f.profile})" if f.profile else ")"
            out.append(head)
            out.append(f"    {f.note}")
            if f.status == "fails":
                out.append("    FAILS: nothing from this file will be loaded")
                out.append("")
                continue
            out.append(
                f"    period {f.period} (from the {f.period_source}); {f.rows} rows: "
                f"{f.loadable} load, {f.quarantined} quarantined; encoding {f.encoding}, "
                f"locale {f.locale}, delimiter {f.delimiter!r}"
            )
            for reason, n, line in f.reasons:
                out.append(f"    quarantined x{n} (first at line {line}): {reason}")
            out += [f"    WARNING: {w}" for w in f.warnings]
        else:
            label = "SKIPPED"
            if f.status == "unknown":
                fits = "matches no profile" in f.note or "fits" in f.note
                label = "MATCHES NOTHING" if fits else "NOT LOADED"
            out.append(f"{f.path}  ->  {label}")
            out.append(f"    {f.note}")
        out.append("")
    tools: dict[str, set[str]] = {}
    for f in report.files:
        if f.export and f.status == "loads":
            tools.setdefault(f.export, set()).add(f.vendor or "")
    shared = {e: sorted(t) for e, t in tools.items() if len(t) > 1}
    if shared:
        out.append(
            "Delivered by two or more tools (each keeps its own deliveries; both count, a "
            "record both describe once: for the same period the row of the tool sources.yml "
            "ranks first (precedence, system_of_record), else of the latest delivery):"
        )
        out += [f"    {e}: {', '.join(t)}" for e, t in shared.items()]
        out.append("")
    if report.missing:
        out.append("Exports not delivered (what that means):")
        out += [f"    {e}: {why}" for e, why in report.missing.items()]
    return "\n".join(out)


def missing_exports(raw_db: Path) -> dict[str, str]:
    """Exports with no active delivery in the raw layer, with what the product cannot show.

    Only employees is required; the run summary and the report name the rest
    ("gpu_fleet: no fleet export: team templates by fleet size not shown").
    """
    delivered: set[str] = set()
    if Path(raw_db).is_file():
        with db.connect(raw_db, read_only=True) as con:
            delivered = {
                e
                for (e,) in con.execute(
                    "SELECT DISTINCT export FROM manifest WHERE status = 'active' AND rows_loaded > 0"
                ).fetchall()
            }
    return {e: why for e, why in MISSING_CONSEQUENCE.items() if e not in delivered}
