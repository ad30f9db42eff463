"""Load a sources folder into the restricted raw layer exactly once.

Per file, in one DuckDB transaction: typed rows into `<export>`, rejected rows into
`quarantine`, the manifest row, and the supersede marks on earlier deliveries of the same
delivery series. A file that cannot be read is recorded as `failed` and changes nothing else,
so one bad delivery never blocks or destroys good data. The archive keeps a content-addressed
copy of every delivery; `rebuild_raw_from_archive` replays it.

A delivery series is (export, source system, period): the source system is the tool that
wrote the file (its profile's vendor, or our own format), so a correction of PagerDuty's file
replaces PagerDuty's delivery and never ServiceNow's, and both tools' files count side by side
(staging counts a record both describe once, by its natural key; for the same period by the
precedence of `precedence.py`). One vendor
file that feeds several exports (incidents and responders, employees and job history) is one
delivery: it gets one period, and a re-delivery replaces it, or is blocked, in every export
at once.
"""

from __future__ import annotations

import functools
import hashlib
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import pyarrow as pa

from pipelines.lib import db
from pipelines.lib.contracts import EXPORTS, parse_file_name
from pipelines.lib.failpoints import failpoint
from pipelines.lib.ingest.manifest import (
    QUARANTINE_DDL,
    ManifestRow,
    active_deliveries,
    deliveries_by_content,
    ensure_raw_schema,
    export_table_ddl,
    known_deliveries,
)
from pipelines.lib.ingest.mapping import unmatched_note
from pipelines.lib.ingest.profiles import (
    CONTRACT_SOURCE,
    Profile,
    SourcesConfig,
    absent_sources,
    absent_warnings,
    load_profiles,
    load_sources_config,
    norm,
    period_from_name,
    recognise,
    source_system,
    version_from_name,
)
from pipelines.lib.ingest.reader import (
    FileError,
    ParsedFile,
    SplitFile,
    peek_header,
    split_export_bytes,
    type_split_files,
)
from pipelines.lib.ingest.vendor import split_vendor_bytes
from pipelines.lib.privacy.crypto import cipher_of
from pipelines.lib.settings import Settings


class SourcesNotFound(FileNotFoundError):
    """The configured sources folder does not exist."""


@dataclass
class IngestResult:
    export: str
    files_seen: int = 0
    files_loaded: int = 0
    files_skipped: int = 0
    files_superseded: int = 0
    files_failed: list[tuple[str, str]] = field(default_factory=list)  # (file name, message)
    rows_loaded: int = 0
    rows_quarantined: int = 0
    unknown_files: list[str] = field(default_factory=list)  # relative to the sources folder
    # why each unknown file matched nothing, and entries skipped without loading (folders,
    # dangling links, files still being written): relative name -> reason
    not_loaded: dict[str, str] = field(default_factory=dict)
    # vendor files: relative name -> "profile <name>, period <p> from <source>"
    recognised: dict[str, str] = field(default_factory=dict)
    # re-deliveries loaded with noticeably fewer rows than they replaced: (file, what and how
    # many); the run summary names them
    shrunk: list[tuple[str, str]] = field(default_factory=list)
    # files that load but cannot show something (no termination column): name -> warning
    warnings: dict[str, str] = field(default_factory=dict)

    @property
    def quarantine_share(self) -> float:
        total = self.rows_loaded + self.rows_quarantined
        return self.rows_quarantined / total if total else 0.0


@dataclass(frozen=True)
class Delivery:
    export: str
    period: str | None  # None: taken from the data once the file is read
    version: int
    path: Path
    profile: Profile | None = None  # None: a file in our own format under its contract name
    period_source: str = "file name"  # file name, sources.yml or data
    # every export the file gives (a vendor file may feed several; they share one status)
    feeds: tuple[str, ...] = ()
    # for a file named like an export whose header fits neither the contract nor a profile:
    # the closest profile and what it lacks, added to the header error
    hint: str | None = None
    # what the file cannot show although it loads (an HR export without a termination column)
    warnings: tuple[str, ...] = ()

    @property
    def sort_key(self) -> tuple[str, str, int, str]:
        return (self.export, self.period or "9999", self.version, self.path.name)

    @property
    def source_system(self) -> str:
        return source_system(self.profile)

    @property
    def siblings(self) -> tuple[str, ...]:
        """The other exports this file feeds."""
        return tuple(e for e in self.feeds if e != self.export)

    @property
    def relative(self) -> str:
        return f"{self.path.parent.name}/{self.path.name}"


# --- discovery -------------------------------------------------------------------------------


@dataclass
class Discovery:
    deliveries: list[Delivery] = field(default_factory=list)
    unknown: list[str] = field(default_factory=list)  # relative names
    not_loaded: dict[str, str] = field(default_factory=dict)  # relative name -> reason
    recognised: dict[str, str] = field(default_factory=dict)  # relative name -> how


# names under which copy tools write a file that is not complete yet
TEMPORARY_SUFFIXES = (".part", ".partial", ".tmp", ".crdownload", ".filepart", "~")
VENDOR_SUFFIXES = (".csv", ".tsv", ".xlsx")


def discover(
    sources_dir: Path,
    export: str,
    profiles: dict[str, Profile] | None = None,
    config: SourcesConfig | None = None,
) -> tuple[list[Delivery], list[str]]:
    """Deliveries of `export` in its folder, in load order, and the folder's unknown files."""
    found = discover_export(sources_dir, export, profiles, config)
    return found.deliveries, found.unknown


def discover_export(
    sources_dir: Path,
    export: str,
    profiles: dict[str, Profile] | None = None,
    config: SourcesConfig | None = None,
) -> Discovery:
    """Contract files and recognised vendor files of `export`, and what else the folder holds.

    A file whose name matches no contract is read up to its header and recognised through the
    vendor profiles. Nothing is dropped silently: a file that matches nothing, a folder, a
    dangling link or a temporary copy is listed with the reason it was not loaded.
    """
    if not sources_dir.is_dir():
        raise SourcesNotFound(
            f"sources folder {sources_dir} does not exist. Set TALENT_SOURCES to the folder "
            "holding hris/ lms/ incidents/ fleet/, or run `python -m tools generate` (in a checkout) to write a synthetic company."
        )
    profiles = load_profiles(sources_dir) if profiles is None else profiles
    config = load_sources_config(sources_dir) if config is None else config
    folder = EXPORTS[export].folder
    directory = sources_dir / folder
    found = Discovery()
    if not directory.is_dir():
        return found
    for path in sorted(directory.iterdir()):
        rel = f"{folder}/{path.name}"
        if path.name.startswith(".") or path.name in ("profiles",):
            continue
        reason = _not_a_delivery(path)
        if reason is not None:
            found.not_loaded[rel] = reason
            continue
        parsed = parse_file_name(path.name)
        if parsed is not None and EXPORTS[parsed[0]].folder == folder:
            _discover_contract_named(path, rel, parsed, export, profiles, config, found)
            continue
        _discover_vendor_file(path, rel, export, folder, profiles, config, found)
    found.deliveries = sorted(map(_with_warnings, found.deliveries), key=lambda d: d.sort_key)
    return found


def _with_warnings(delivery: Delivery) -> Delivery:
    """The delivery with the warnings its header calls for (`absent_warnings`)."""
    try:
        st = delivery.path.stat()
        state = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
        header = _header_of(str(delivery.path), state)
    except (FileError, OSError):
        return delivery  # the load names the problem
    found = absent_warnings(delivery.export, header, delivery.profile)
    return replace(delivery, warnings=found) if found else delivery


@functools.lru_cache(maxsize=8192)
def _header_of(path: str, state: tuple[int, ...]) -> list[str]:
    """A file's header, read once per state of the file: every export of a folder looks at
    each file named like an export (`state`: inode, size, modification and change times, so
    a file written again is read again)."""
    return peek_header(Path(path))


@functools.cache
def _required_spellings(export: str) -> tuple[frozenset[str], ...]:
    """Per required column of the contract, its accepted header spellings (normalised)."""
    contract = EXPORTS[export]
    return tuple(
        frozenset(norm(s) for s in (c, *contract.column(c).aliases))
        for c in contract.required_columns
    )


def _contract_header(export: str, header: list[str]) -> bool:
    """Whether a header has every required column of our contract (names or aliases): what
    the contract's own profile recognises, checked for every file named like an export."""
    present = {norm(h) for h in header}
    return all(spellings & present for spellings in _required_spellings(export))


def _tool_header(export: str, header: list[str], profiles: dict[str, Profile]) -> bool:
    """Whether a header our contract reads only through its aliases is a tool's own export
    (a Personio list saved under our file name): a vendor profile recognises it. A header
    with our own column names is ours."""
    present = {norm(h) for h in header}
    if all(c in present for c in EXPORTS[export].required_columns):
        return False
    folder = EXPORTS[export].folder
    vendors = {
        n: p for n, p in profiles.items() if p.folder == folder and p.vendor != CONTRACT_SOURCE
    }
    return recognise(header, folder, vendors).profile is not None


def _discover_contract_named(
    path: Path,
    rel: str,
    parsed: tuple[str, str, int],
    export: str,
    profiles: dict[str, Profile],
    config: SourcesConfig,
    found: Discovery,
) -> None:
    """A file named like one of our exports: read by our contract when its header is ours,
    else by the vendor profile its header matches (a tool's export saved under our name), the
    period and version still taken from the name."""
    named, period, version = parsed
    folder = EXPORTS[named].folder
    setting = config.for_file(folder, path.name)
    try:
        st = path.stat()
        header = _header_of(str(path), (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns))
    except (FileError, OSError):
        header = None  # empty, unreadable or gone: the load names the problem
    if header is None or (
        (setting is None or setting.profile is None)
        and _contract_header(named, header)
        and not _tool_header(named, header, profiles)
    ):
        if named == export:
            found.deliveries.append(Delivery(export, period, version, path, feeds=(export,)))
        return
    vendors = {
        n: p for n, p in profiles.items() if p.folder == folder and p.vendor != CONTRACT_SOURCE
    }
    forced = setting.profile if setting is not None else None
    rec = recognise(header, folder, profiles if forced else vendors, forced)
    if rec.profile is None:
        if named == export:
            ours = [
                e for e, x in EXPORTS.items() if x.folder == folder and _contract_header(e, header)
            ]
            hint = (
                f"Its header is our {ours[0]} export's: name the file "
                f"{ours[0]}_{period}{f'_v{version}' if version > 1 else ''}.csv."
                if ours
                else "Its header matches no tool's export either: "
                f"{unmatched_note(rec, header, path, profiles)}."
            )
            found.deliveries.append(
                Delivery(export, period, version, path, feeds=(export,), hint=hint)
            )
        return
    if rec.profile.vendor == CONTRACT_SOURCE:
        if rec.profile.output(export) is not None:
            found.deliveries.append(Delivery(export, period, version, path, feeds=(export,)))
        return
    if not _gives(rec.profile, export, header, rel, found):
        return
    source = "file name"
    if setting is not None and setting.period:
        period, source = setting.period, "sources.yml"
    found.deliveries.append(
        Delivery(export, period, version, path, rec.profile, source, rec.profile.feeds(header))
    )
    found.recognised[rel] = (
        f"named like our {named} export, but the header is a {rec.profile.vendor} export: "
        f"{rec.reason}"
    )


def _gives(profile: Profile, export: str, header, rel: str, found: Discovery) -> bool:
    """True when the recognised profile's header can give `export`. A profile without that
    export says nothing; one whose header lacks a column for it is named with what it lacks
    (e.g. an HRIS report without a division: its employees load, its job records cannot)."""
    output = profile.output(export)
    if output is None:
        return False
    absent = absent_sources(output, header)
    if absent:
        found.not_loaded[f"{rel} as {export}"] = (
            f"read as {profile.name}, but the header cannot give {export}: it lacks "
            f"{'; '.join(absent)}; any other export this header can give still loads"
        )
        return False
    return True


def _not_a_delivery(path: Path) -> str | None:
    if path.is_symlink() and not path.exists():
        return "a symbolic link whose target does not exist; nothing to load"
    if path.is_dir():
        return "a folder, not a file: deliveries are files directly in the system's folder"
    if not path.is_file():
        return "not a regular file"
    if path.name.endswith(TEMPORARY_SUFFIXES):
        return "a temporary name used while a file is copied; it is loaded once renamed"
    return None


def _discover_vendor_file(
    path: Path,
    rel: str,
    export: str,
    folder: str,
    profiles: dict[str, Profile],
    config: SourcesConfig,
    found: Discovery,
) -> None:
    if not path.name.lower().endswith(VENDOR_SUFFIXES):
        found.unknown.append(rel)
        found.not_loaded[rel] = "not a .csv, .tsv or .xlsx file and not named like an export"
        return
    setting = config.for_file(folder, path.name)
    try:
        header = peek_header(path)
    except FileError as e:
        if parse_file_name(path.name) is None:
            found.unknown.append(rel)
            found.not_loaded[rel] = str(e)
        return
    rec = recognise(header, folder, profiles, setting.profile if setting else None)
    if rec.profile is None:
        found.unknown.append(rel)
        found.not_loaded[rel] = unmatched_note(rec, header, path, profiles)
        return
    if not _gives(rec.profile, export, header, rel, found):
        return
    period, source = period_from_name(path.name), "file name"
    if setting is not None and setting.period:
        period, source = setting.period, "sources.yml"
    elif period is None:
        source = "data"
    version = version_from_name(path.name)
    feeds = rec.profile.feeds(header)
    found.deliveries.append(Delivery(export, period, version, path, rec.profile, source, feeds))
    found.recognised[rel] = rec.reason


def settle_files(
    deliveries: list[Delivery],
    settle_seconds: float,
    now: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> tuple[list[Delivery], dict[str, str]]:
    """Wait until recently changed files stop changing; those still growing are left out.

    A run started while a file is being copied must not load half of it: a file modified less
    than `settle_seconds` ago is watched for that long, and skipped (named, loaded by the next
    run) when its size or modification time still changes.
    """
    now = time.time() if now is None else now
    stats = {d.path: d.path.stat() for d in deliveries}
    young = {p: st for p, st in stats.items() if now - st.st_mtime < settle_seconds}
    if not young:
        return deliveries, {}
    oldest_young = min(now - st.st_mtime for st in young.values())
    wait = max(0.0, settle_seconds - oldest_young)
    if on_wait is not None:
        names = ", ".join(sorted(p.name for p in young)[:3]) + (", ..." if len(young) > 3 else "")
        on_wait(
            f"{len(young)} file(s) changed less than {settle_seconds:g} s ago ({names}): "
            f"waiting {wait:.0f} s to be sure they are completely written "
            "(TALENT_SETTLE_SECONDS sets this)"
        )
    time.sleep(wait)
    moving: dict[str, str] = {}
    for p, st in young.items():
        again = p.stat() if p.exists() else None
        if again is None or (again.st_size, again.st_mtime_ns) != (st.st_size, st.st_mtime_ns):
            moving[f"{p.parent.name}/{p.name}"] = (
                f"still being written (its size changed within {settle_seconds:g} s); not "
                "loaded now, the next run loads it"
            )
    kept = [d for d in deliveries if d.relative not in moving]
    return kept, moving


# --- archive ---------------------------------------------------------------------------------


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# Files read and hashed at a time: hashlib and file reads release the GIL, so two threads use
# both cores (every night hashes every delivered file: 1.5 GB at 1,000,000 employees).
HASH_THREADS = 2


def read_and_hashed(deliveries: list[Delivery]) -> Iterator[tuple[Delivery, tuple[bytes, str]]]:
    """Each delivery with its bytes and their SHA-256, in order; `HASH_THREADS` files at a time
    (no more are held in memory)."""

    def read(delivery: Delivery) -> tuple[bytes, str]:
        data = delivery.path.read_bytes()
        return data, sha256_hex(data)

    with ThreadPoolExecutor(HASH_THREADS, thread_name_prefix="talent-hash") as pool:
        for start in range(0, len(deliveries), HASH_THREADS):
            batch = deliveries[start : start + HASH_THREADS]
            yield from zip(batch, pool.map(read, batch), strict=True)


def archive_relpath(export: str, file_id: str, suffix: str = ".csv") -> str:
    return f"archive/{export}/{file_id}{suffix.lower() or '.csv'}"


def archive_copy(
    settings: Settings, export: str, file_id: str, data: bytes, suffix: str = ".csv"
) -> str:
    """Write the delivered bytes once under their hash, encrypted when `TALENT_ARCHIVE_KEY` is
    set (`privacy/crypto.py`); atomic, so a crash leaves no half file."""
    rel = archive_relpath(export, file_id, suffix)
    target = settings.warehouse_dir / rel
    if not target.exists():
        cipher_of(settings).write(target, data)
    return rel


# --- inserting one parsed file ----------------------------------------------------------------


def _insert_rows(
    con: duckdb.DuckDBPyConnection,
    parsed: ParsedFile,
    file_id: str,
    period: str,
    version: int,
    loaded_at: datetime,
) -> None:
    """Bulk-insert typed rows and rejected rows (Arrow, never row by row)."""
    rows = parsed.rows
    con.register("_ingest_rows", rows)
    try:
        con.execute(
            f'INSERT INTO "{parsed.export}" BY NAME '
            "SELECT *, ? AS _file_id, ? AS _period, ? AS _version FROM _ingest_rows",
            [file_id, period, version],
        )
    finally:
        con.unregister("_ingest_rows")
    if parsed.rejected:
        n = len(parsed.rejected)
        quarantine = pa.table(
            {
                "file_id": [file_id] * n,
                "export": [parsed.export] * n,
                "file_name": [parsed.file_name] * n,
                "line_number": pa.array([r.line_number for r in parsed.rejected], type=pa.int64()),
                "raw_line": [r.raw_line for r in parsed.rejected],
                "reason": [r.reason for r in parsed.rejected],
                "quarantined_at": pa.array([loaded_at] * n, type=pa.timestamp("us")),
            }
        )
        con.register("_ingest_quarantine", quarantine)
        try:
            con.execute("INSERT INTO quarantine BY NAME SELECT * FROM _ingest_quarantine")
        finally:
            con.unregister("_ingest_quarantine")


def _insert_manifest(con: duckdb.DuckDBPyConnection, **row: object) -> None:
    cols = list(row)
    con.execute(
        f"INSERT INTO manifest ({', '.join(cols)}) VALUES ({', '.join('?' for _ in cols)})",
        list(row.values()),
    )


def _now() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def load_stamp(con: duckdb.DuckDBPyConnection) -> datetime:
    """When a delivery is loaded: the clock (UTC), or a microsecond after the latest stamp in the
    manifest when the clock was set back. Stamps only grow, in load order: the incremental
    staging models find the files loaded since their last build by them
    (`dbt_project/macros/current_rows.sql`)."""
    now = _now()
    (latest,) = con.execute("SELECT max(loaded_at) FROM manifest").fetchone()
    return now if latest is None or now > latest else latest + timedelta(microseconds=1)


@dataclass(frozen=True)
class SiblingFacts:
    """What a vendor file gives another export it feeds: enough to give the file one period
    and to check the re-delivery in every export at once."""

    rows: int  # loadable rows
    latest: date | None  # latest date of that export's dating columns


@dataclass
class _Plan:
    """What to do with one delivery, decided before the bulk typing step."""

    delivery: Delivery
    file_id: str
    size_bytes: int
    archive_path: str
    new: bool = False  # new content: read from the archive copy when its batch is typed
    error: str | None = None  # new content that cannot be read
    parsed: ParsedFile | None = None  # new content, typed; new False = a duplicate
    siblings: dict[str, SiblingFacts] = field(default_factory=dict)
    archive_sha256: str | None = None  # the archive copy's hash when screening changed it


def plan_deliveries(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    deliveries: list[Delivery],
    result: IngestResult,
    config: SourcesConfig | None = None,
) -> list[_Plan]:
    """Hash every file, skip what the manifest already holds, archive the rest (read later, a
    batch at a time: `load_deliveries`)."""
    plans: list[_Plan] = []
    new_in_run: set[str] = set()
    # the manifest as it was before this run (nothing below writes it)
    recorded = deliveries_by_content(con, (d.export for d in deliveries))
    from pipelines.lib.privacy.screen import erased_people  # privacy imports this module

    erased = erased_people(con, settings.pseudonym_key)
    for delivery, (data, file_id) in read_and_hashed(deliveries):
        name = delivery.path.name
        # the same bytes may feed two exports (a vendor file): identity is (content, export)
        seen = recorded.get((file_id, delivery.export), [])
        same_name = next((m for m in seen if m.file_name == name), None)
        if same_name is not None:  # this very delivery was handled by an earlier run
            if same_name.status == "failed":
                result.files_failed.append((name, same_name.message or "failed earlier"))
            else:
                result.files_skipped += 1
            continue
        suffix = delivery.path.suffix
        plan = _Plan(
            delivery, file_id, len(data), archive_relpath(delivery.export, file_id, suffix)
        )
        if not seen and file_id not in new_in_run:
            new_in_run.add(file_id)
            if erased:
                data = screen_plan(plan, erased, data, config)
            archived = plan.archive_sha256 or file_id
            plan.archive_path = archive_copy(settings, delivery.export, archived, data, suffix)
            plan.new = True
        plans.append(plan)
    return plans


def screen_plan(plan: _Plan, erased, data: bytes, config: SourcesConfig | None) -> bytes:
    """The bytes to archive: a new delivery without the rows of people erased on request and
    with retained leavers' pseudonyms (`privacy/screen.py`)."""
    from pipelines.lib.privacy.screen import screen_arrival

    d = plan.delivery

    def split(export: str) -> SplitFile:
        return split_delivery(data, export, d.path.name, d.profile, config)

    screened = screen_arrival(erased, data, d.feeds or (d.export,), d.path.name, split)
    if screened.data != data:
        plan.archive_sha256 = sha256_hex(screened.data)
        plan.delivery = replace(d, warnings=(*d.warnings, *screened.notes()))
    return screened.data


def split_delivery(
    data: bytes,
    export: str,
    name: str,
    profile: Profile | None,
    config: SourcesConfig | None = None,
    hint: str | None = None,
) -> SplitFile:
    """Our own format by the contract, a vendor file through its profile; `hint` is added to
    the error of a file that cannot be read as a whole."""
    try:
        if profile is None:
            return split_export_bytes(data, export, name)
        return split_vendor_bytes(data, export, name, profile, config)
    except FileError as e:
        if hint is None:
            raise
        raise FileError(f"{e} {hint}") from e


def sibling_facts(
    data: bytes,
    delivery: Delivery,
    config: SourcesConfig | None,
    con: duckdb.DuckDBPyConnection | None = None,
) -> dict[str, SiblingFacts]:
    """Rows and latest date of every other export a vendor file feeds (read, not loaded)."""
    facts: dict[str, SiblingFacts] = {}
    if delivery.profile is None:
        return facts
    for other in delivery.siblings:
        try:
            split = split_vendor_bytes(data, other, delivery.path.name, delivery.profile, config)
        except FileError:
            continue  # that export's own load names the problem
        parsed = type_split_files([split], con)[0]
        facts[other] = SiblingFacts(parsed.rows.num_rows, latest_date(parsed))
    return facts


def load_plan(
    con: duckdb.DuckDBPyConnection,
    plan: _Plan,
    result: IngestResult,
    config: SourcesConfig | None = None,
) -> None:
    """Record one delivery in ONE transaction: rows, quarantine, manifest, supersede marks."""
    delivery, file_id, name = plan.delivery, plan.file_id, plan.delivery.path.name
    loaded_at = load_stamp(con)
    period = delivery.period or file_period(plan.parsed, plan.siblings, loaded_at)
    base = dict(
        file_id=file_id,
        export=delivery.export,
        file_name=name,
        source_path=str(delivery.path),
        archive_path=plan.archive_path,
        period=period,
        version=delivery.version,
        size_bytes=plan.size_bytes,
        loaded_at=loaded_at,
        profile=delivery.profile.name if delivery.profile else None,
        period_source=delivery.period_source if delivery.period else "data",
        source_system=delivery.source_system,
        archive_sha256=plan.archive_sha256,
    )
    empty = dict(rows_total=0, rows_loaded=0, rows_quarantined=0)
    con.begin()
    try:
        if not plan.new:
            # same bytes as a delivery already recorded (earlier run or earlier in this run)
            first = known_deliveries(con, file_id, delivery.export)[0]
            if first.status == "failed":
                status, message = "failed", f"same content as {first.file_name}: {first.message}"
                result.files_failed.append((name, message))
            else:
                status = "duplicate"
                message = (
                    f"same content as {first.file_name} (status {first.status}); nothing loaded"
                )
                result.files_skipped += 1
            _insert_manifest(con, **base, **empty, status=status, message=message)
        elif plan.error is not None:
            _insert_manifest(con, **base, **empty, status="failed", message=plan.error)
            result.files_failed.append((name, plan.error))
        else:
            _load_parsed(con, plan, base, result, config or SourcesConfig())
            failpoint("ingest:before_commit")
        con.commit()
    except BaseException:
        con.rollback()
        raise


def latest_date(parsed: ParsedFile | None) -> date | None:
    """The latest date of the export's dating columns in a typed file, or None."""
    latest = None
    if parsed is not None:
        for col in EXPORTS[parsed.export].period_columns:
            if col in parsed.rows.column_names and parsed.rows.num_rows:
                top = pa.compute.max(parsed.rows[col]).as_py()
                if top is not None:
                    top = top.date() if isinstance(top, datetime) else top
                    latest = top if latest is None else max(latest, top)
    return latest


def period_from_data(parsed: ParsedFile | None, loaded_at: datetime) -> str:
    """The latest plausible date of the export's dating columns (YYYY-MM-DD), else the load date."""
    return (latest_date(parsed) or loaded_at.date()).isoformat()


def file_period(
    parsed: ParsedFile | None, siblings: dict[str, SiblingFacts], loaded_at: datetime
) -> str:
    """A file's period from its data: the latest date over every export it feeds, so all of
    them share one period (and one delivery series) whichever export is loaded first."""
    dates = [d for d in [latest_date(parsed), *(f.latest for f in siblings.values())] if d]
    return (max(dates) if dates else loaded_at.date()).isoformat()


def _replaced(
    con: duckdb.DuckDBPyConnection, export: str, base: dict
) -> tuple[int, str | None, list[str]]:
    """Rows, names and ids of the active deliveries of `export` in this file's series that a
    load of it would replace (its own version or lower)."""
    rows = con.execute(
        "SELECT rows_loaded, file_name, file_id FROM manifest "
        "WHERE export = ? AND source_system = ? AND period = ? AND status = 'active' "
        "AND version <= ? AND file_id <> ? ORDER BY version, file_name",
        [export, base["source_system"], base["period"], base["version"], base["file_id"]],
    ).fetchall()
    names = ", ".join(r[1] for r in rows) or None
    return sum(r[0] for r in rows), names, [r[2] for r in rows]


def _series_text(base: dict, export: str) -> str:
    return f"{export} {base['period']} from {base['source_system']}"


def _shrink_block(
    con: duckdb.DuckDBPyConnection,
    plan: _Plan,
    base: dict,
    config: SourcesConfig,
    active: list[ManifestRow],
) -> str | None:
    """Why a re-delivery with far fewer rows must not replace what it would supersede
    (`active`: the series' active deliveries of this export).

    Checked for every export the file feeds (the siblings' rows were read with it), so a file
    is loaded, or blocked, in all of its exports alike."""
    parsed = plan.parsed
    assert parsed is not None
    if not active and not plan.siblings:
        return None  # nothing it could replace
    setting = config.for_file(plan.delivery.path.parent.name, plan.delivery.path.name)
    if setting is not None and setting.allow_shrink:
        return None
    share = config.min_redelivery_share
    own = base["export"]
    counts = [(own, parsed.rows.num_rows)] if active else []
    counts += [(e, f.rows) for e, f in plan.siblings.items()]
    for export, after in counts:
        before, names, _ = _replaced(con, export, base)
        if before == 0 or after >= before * share:
            continue
        also = (
            ""
            if export == own
            else f" (the file's {export} rows; the file feeds {own} too and is blocked as a whole)"
        )
        return (
            f"re-delivery check: {base['file_name']} would replace {names} ({before} rows) for "
            f"{_series_text(base, export)} but has only {after} loadable row(s){also} "
            f"({after / before:.0%}, below {share:.0%}); it was not loaded "
            f"and {names} still counts. If the smaller delivery is right, add to sources.yml: "
            f'files: {{"{base["file_name"]}": {{allow_shrink: true}}}}'
        )
    return None


def _supersede_replaced(
    con: duckdb.DuckDBPyConnection,
    plan: _Plan,
    base: dict,
    result: IngestResult,
    config: SourcesConfig,
    notes: list[str],
) -> tuple[int | None, str | None]:
    """Mark the active files this delivery replaces as superseded (and what else they fed that
    it does not give); note a re-delivery with noticeably fewer rows. Returns the replaced
    files' row count and names, or (None, names) when nothing was replaced."""
    delivery, parsed = plan.delivery, plan.parsed
    before, replaced_names, ids = _replaced(con, delivery.export, base)
    if not ids:
        return None, replaced_names
    con.execute(
        "UPDATE manifest SET status = 'superseded', superseded_by = ? "
        "WHERE export = ? AND status = 'active' AND list_contains(?, file_id)",
        [plan.file_id, delivery.export, ids],
    )
    # what else the replaced files fed and this one does not give: it goes with them
    con.execute(
        "UPDATE manifest SET status = 'superseded', superseded_by = ? "
        "WHERE status = 'active' AND list_contains(?, file_id) "
        "AND NOT list_contains(?, export)",
        [plan.file_id, ids, list(delivery.feeds or (delivery.export,))],
    )
    result.files_superseded += len(ids)
    after = parsed.rows.num_rows
    if before and after < before * config.notice_redelivery_share:
        notice = (
            f"re-delivery with fewer rows: {base['file_name']} replaced {replaced_names} "
            f"for {_series_text(base, delivery.export)} with {after} row(s) instead of "
            f"{before} ({1 - after / before:.0%} fewer); loaded. If rows are missing, "
            "ask the sender for a complete export"
        )
        notes.append(notice)
        result.shrunk.append((base["file_name"], notice))
    return before, replaced_names


def _load_parsed(
    con: duckdb.DuckDBPyConnection,
    plan: _Plan,
    base: dict,
    result: IngestResult,
    config: SourcesConfig,
) -> None:
    delivery, parsed = plan.delivery, plan.parsed
    assert parsed is not None
    active = active_deliveries(con, delivery.export, base["source_system"], base["period"])
    newer = [m for m in active if m.version > delivery.version]
    blocked = None if newer else _shrink_block(con, plan, base, config, active)
    if blocked is not None:
        _insert_manifest(
            con,
            **base,
            rows_total=parsed.rows_total,
            rows_loaded=0,
            rows_quarantined=0,
            encoding=parsed.encoding,
            locale=parsed.locale,
            delimiter=parsed.delimiter,
            status="failed",
            message=blocked,
        )
        result.files_failed.append((base["file_name"], blocked))
        return
    status, superseded_by = "active", None
    notes: list[str] = []
    replaced_rows, replaced_names = None, None
    if newer:
        # a late re-delivery of an older version: kept for history, never counted
        status, superseded_by = "superseded", newer[-1].file_id
        result.files_superseded += 1
    elif active:
        replaced_rows, replaced_names = _supersede_replaced(con, plan, base, result, config, notes)
    _insert_rows(con, parsed, plan.file_id, base["period"], delivery.version, base["loaded_at"])
    if parsed.ignored_columns:
        notes.append(
            "columns not in the contract kept in _extra: " + ", ".join(parsed.ignored_columns)
        )
    notes += delivery.warnings
    if superseded_by:
        notes.append("arrived after a higher version of the same period; kept as superseded")
    _insert_manifest(
        con,
        **base,
        rows_total=parsed.rows_total,
        rows_loaded=parsed.rows.num_rows,
        rows_quarantined=len(parsed.rejected),
        encoding=parsed.encoding,
        locale=parsed.locale,
        delimiter=parsed.delimiter,
        status=status,
        superseded_by=superseded_by,
        message="; ".join(notes) or None,
        replaced_rows=replaced_rows,
        replaced_files=replaced_names,
    )
    result.files_loaded += 1
    result.rows_loaded += parsed.rows.num_rows
    result.rows_quarantined += len(parsed.rejected)


def load_deliveries(
    con: duckdb.DuckDBPyConnection,
    settings: Settings,
    deliveries: list[Delivery],
    result: IngestResult,
    config: SourcesConfig | None = None,
) -> None:
    """Plan every file, then read and type the new ones in batches (`typed_in_batches`) and
    record each file in its own transaction, in delivery order."""
    plans = plan_deliveries(con, settings, deliveries, result, config)

    def read(plan: _Plan) -> SplitFile | None:
        if not plan.new:
            return None
        d = plan.delivery
        data = archived_bytes(settings, plan)
        split = split_delivery(data, d.export, d.path.name, d.profile, config, d.hint)
        plan.siblings = sibling_facts(data, d, config, con)
        return split

    for plan, parsed, error in typed_in_batches(plans, read, con):
        plan.parsed, plan.error = parsed, error
        load_plan(con, plan, result, config)
        plan.parsed = None  # free the rows once they are in


def archived_bytes(settings: Settings, plan: _Plan) -> bytes:
    """The bytes planned for loading, from their archive copy.

    If the copy went missing since planning (someone cleaned `archive/` during the run), the
    delivery itself is read again and archived again when it still holds the same bytes; when
    it changed or is gone too, the file fails with the reason, and new bytes under its name are
    a new delivery for the next run."""
    target = settings.warehouse_dir / plan.archive_path
    try:
        return cipher_of(settings).read(target, settings.warehouse_dir)
    except FileNotFoundError:
        pass
    d = plan.delivery
    try:
        data = d.path.read_bytes()
    except FileNotFoundError:
        data = None
    if data is None or sha256_hex(data) != plan.file_id:
        what = "is gone" if data is None else "changed"
        raise FileError(
            f"{d.path.name}: its archive copy {plan.archive_path} disappeared during the run and "
            f"the delivery itself {what} since it was read, so nothing of it was loaded. Leave "
            "the warehouse's archive/ folder alone while a run is going; a new version of the "
            "file is loaded as a new delivery by the next run."
        )
    archive_copy(settings, d.export, plan.file_id, data, d.path.suffix)
    return data


# at most about this many rows are held as text and typed at once
TYPE_BATCH_ROWS = 250_000

# How much write-ahead log the raw file gathers before DuckDB folds it into the file (16 MB by
# default). Each file commits in its own transaction; at the default, a month's file of a
# large company set off a checkpoint that compressed and rewrote the row groups it had just
# appended to. A committed file is durable in the log all the same (a crash replays it on the
# next open), and closing the connection checkpoints. At 1,000,000 employees the job history
# loaded in 29 s instead of 45 s, peak memory unchanged (`bench/README.md`).
INGEST_CHECKPOINT_THRESHOLD = "256MB"


def typed_in_batches(
    items: list, read: Callable[[object], SplitFile | None], con: duckdb.DuckDBPyConnection
) -> Iterator[tuple[object, ParsedFile | None, str | None]]:
    """(item, typed file or None, why it cannot be read or None) for each item, in order.

    `read(item)` splits an item's file (None: nothing to read; a FileError is the item's
    error). Files are typed together, one query per batch of about `TYPE_BATCH_ROWS` rows:
    planning the typing query costs more than running it on a small monthly file, and a batch
    bounds the memory (as Python strings, the 1.9 M responder rows of a 200,000-employee
    company took 2.2 GB when an export was typed whole)."""
    batch: list[tuple[object, SplitFile | None, str | None]] = []
    rows = 0

    def flush() -> Iterator[tuple[object, ParsedFile | None, str | None]]:
        splits = [split for _, split, _ in batch if split is not None]
        typed = iter(type_split_files(splits, con) if splits else [])
        for item, split, error in batch:
            yield item, (next(typed) if split is not None else None), error

    for item in items:
        try:
            split, error = read(item), None
        except FileError as e:
            split, error = None, str(e)
        batch.append((item, split, error))
        rows += len(split.lines) if split is not None else 0
        if rows >= TYPE_BATCH_ROWS:
            yield from flush()
            batch, rows = [], 0
    yield from flush()


# --- public API ------------------------------------------------------------------------------


def ingest_export(
    settings: Settings,
    export: str,
    settle_seconds: float | None = None,
    on_wait: Callable[[str], None] | None = None,
) -> IngestResult:
    """Load every new delivery of one export; the connection is closed before returning.

    Files changed less than `settle_seconds` ago (default: the settings' `settle_seconds`, the
    same rule as the sensor's) are watched until they are that old; one still being written is
    left for the next run and named in the result. `on_wait` hears about the wait first.
    """
    if settle_seconds is None:
        settle_seconds = settings.settle_seconds
    if export not in EXPORTS:
        raise KeyError(f"unknown export {export!r}; known: {', '.join(EXPORTS)}")
    config = load_sources_config(settings.sources_dir)
    profiles = load_profiles(settings.sources_dir)
    found = discover_export(settings.sources_dir, export, profiles, config)
    deliveries, moving = settle_files(found.deliveries, settle_seconds, on_wait=on_wait)
    result = IngestResult(
        export=export,
        files_seen=len(found.deliveries),
        unknown_files=found.unknown,
        not_loaded={**found.not_loaded, **moving},
        recognised={
            d.relative: found.recognised[d.relative]
            + f", period {d.period or 'from the data'} ({d.period_source})"
            for d in deliveries
            if d.relative in found.recognised
        },
        warnings={d.relative: "; ".join(d.warnings) for d in deliveries if d.warnings},
    )
    settings.warehouse_dir.mkdir(parents=True, exist_ok=True)
    with db.connect(settings.raw_db, storage_version=db.CLI_STORAGE_VERSION) as con:
        con.execute(f"set checkpoint_threshold = '{INGEST_CHECKPOINT_THRESHOLD}'")
        ensure_raw_schema(con, vendor_names(profiles))
        load_deliveries(con, settings, deliveries, result, config)
    return result


def vendor_names(profiles: dict[str, Profile]) -> dict[str, str]:
    """Profile name -> vendor (the source system of the files it reads)."""
    return {name: p.vendor for name, p in profiles.items()}


def ingest_all(settings: Settings) -> dict[str, IngestResult]:
    """`ingest_export` for every export of the contracts, in contract order."""
    return {name: ingest_export(settings, name) for name in EXPORTS}


def table_row_count(settings: Settings, table: str) -> int:
    with db.connect(settings.raw_db, read_only=True) as con:
        return con.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]


def rebuild_raw_from_archive(settings: Settings, raw_db: Path | None = None) -> dict[str, int]:
    """Drop and recreate the export tables and the quarantine from the archived files.

    The manifest is the list to replay (active and superseded deliveries, in load order); it is
    left as it is. Every archive file is checked against its hash (the delivered file's, or the
    copy's an erasure wrote, `archive_sha256`) before anything is dropped, so a missing or
    altered archive aborts with the data untouched. Returns rows per export. `raw_db`: another
    raw file to rebuild (an erasure's staged copy), `settings.raw_db` by default.
    """
    cipher = cipher_of(settings)
    with db.connect(raw_db or settings.raw_db, storage_version=db.CLI_STORAGE_VERSION) as con:
        ensure_raw_schema(con, vendor_names(load_profiles(settings.sources_dir)))
        plan = con.execute(
            "SELECT file_id, export, file_name, archive_path, period, version, loaded_at, profile, "
            "coalesce(archive_sha256, file_id) "
            "FROM manifest WHERE status IN ('active', 'superseded') "
            "ORDER BY export, period, version, file_name"
        ).fetchall()
        payloads: list[tuple[tuple, bytes]] = []
        for row in plan:
            file_id, export, file_name, archive_path = row[:4]
            path = settings.warehouse_dir / archive_path
            if not path.is_file():
                raise FileNotFoundError(
                    f"archive copy of {file_name} ({archive_path}) is missing; the raw layer "
                    "was not changed. Restore the archive folder from backup before rebuilding."
                )
            data = cipher.read(path, settings.warehouse_dir)
            if sha256_hex(data) != row[8]:
                raise ValueError(
                    f"archive copy of {file_name} ({archive_path}) does not match its sha256; "
                    "the raw layer was not changed. Restore the archive folder from backup."
                )
            payloads.append((row, data))
        profiles = (
            load_profiles(settings.sources_dir)
            if settings.sources_dir.is_dir()
            else load_profiles()
        )
        config = load_sources_config(settings.sources_dir)
        missing = sorted({r[7] for r, _ in payloads if r[7] and r[7] not in profiles})
        if missing:
            raise FileNotFoundError(
                f"profile(s) {', '.join(missing)} used by archived deliveries are not found (shipped "
                "or in <sources>/profiles/); the raw layer was not changed."
            )

        def read(item: tuple[tuple, bytes]) -> SplitFile:
            row, data = item
            return split_delivery(data, row[1], row[2], profiles.get(row[7] or ""), config)

        con.begin()
        try:
            for export in EXPORTS.values():
                con.execute(f'DROP TABLE IF EXISTS "{export.name}"')
                con.execute(export_table_ddl(export))
            con.execute("DROP TABLE IF EXISTS quarantine")
            con.execute(QUARANTINE_DDL)

            for export in EXPORTS:
                mine = [(row, data) for row, data in payloads if row[1] == export]
                for (row, _), parsed, error in typed_in_batches(mine, read, con):
                    if error is not None:
                        raise FileError(error)
                    file_id, _, _, _, period, version, loaded_at, _, _ = row
                    _insert_rows(con, parsed, file_id, period, version, loaded_at)
            con.commit()
        except BaseException:
            con.rollback()
            raise
        return {
            name: con.execute(f'SELECT count(*) FROM "{name}"').fetchone()[0] for name in EXPORTS
        }
