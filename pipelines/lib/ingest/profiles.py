"""Vendor profiles: how a tool's own export maps onto our export contracts.

A profile is declarative data (YAML) shipped in `pipelines/lib/ingest/profiles/`; a customer
adds or overrides one in `<sources>/profiles/*.yaml` without touching code. A profile names
the folder it belongs to, the header columns that recognise it, and for each of our exports it
feeds (one vendor file may feed several, e.g. incidents and responders) a rule per contract
column: which vendor column(s) to read, a constant, a template, a value map or a date format.

`<sources>/sources.yml` settles what a header alone cannot: which profile a file uses, its
period, a service-to-cluster map, and re-deliveries that may shrink on purpose.

A profile's `vendor` is also the file's source system: deliveries of one export from two tools
(ServiceNow beside PagerDuty, BambooHR beside Personio during a migration) are two delivery
series, and a correction only ever replaces a delivery of its own tool (`source_system`).
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path

import yaml

from pipelines.lib.contracts import EXPORTS, Export
from pipelines.lib.ingest.precedence import Precedence, PrecedenceError, parse_precedence

# libyaml's safe loader when PyYAML was built with it: the same documents, ten times faster
# (every export's ingestion reads the shipped profiles again: 0.45 CPU s a run in pure Python).
_SAFE_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

BUILTIN_DIR = Path(__file__).parent / "profiles"
# the source system of a file in our own export format (the contracts' profiles say the same)
CONTRACT_SOURCE = "talent-metrics"


class ProfileError(ValueError):
    """A profile or sources.yml is malformed; the message names the file and the key."""


def norm(name: str) -> str:
    """Header spelling used for matching: case-folded, BOM and repeated blanks removed."""
    return " ".join(str(name).replace("\ufeff", "").strip().casefold().split())


@dataclass(frozen=True)
class Condition:
    """A test on a vendor record that switches a rule to another (`when` in a profile).

    Holds when one of `columns` is in the header and its first non-empty value (normalised)
    is one of `values`, or, with `is_set`, when that value is set (True) or empty (False). A
    `0` counts as empty: Moodle and others write it for a time that was never set. A
    condition on columns the header lacks never holds.
    """

    columns: tuple[str, ...]
    values: frozenset[str] | None = None
    is_set: bool | None = None


@dataclass(frozen=True)
class Rule:
    """How one contract column is filled from a vendor record."""

    columns: tuple[str, ...] = ()  # vendor headers, first non-empty wins
    value: str | None = None  # a constant
    template: str | None = None  # "{Header A}-{Header B}"
    file_name: str | None = None  # regex with a group `value` applied to the file name
    # regex with a group `value` applied to the value read (`gres/gpu=(?P<value>\d+)` in
    # Slurm's AllocTRES); a value it does not match is not set
    extract: str | None = None
    map: dict[str, str] | None = None  # normalised vendor value -> contract value
    map_default: str | None = None  # value for anything the map does not list; None = keep
    formats: tuple[str, ...] = ()  # strptime formats (or "epoch") for dates and timestamps
    split: str | None = None  # list columns (all of `columns`): one output row per item
    by_position: tuple[str, ...] = ()  # in a split output: value for item 1, 2, ... (last repeats)
    from_service: bool = False  # cluster from sources.yml service map, else the service itself
    plus_seconds: str | None = None  # a timestamp: this column's seconds added (time to ack)
    # one full-name column instead of first and last name (Workday's `Worker`): the `part`
    # ("first" or "last") of the first non-empty one, split as `name_order` says
    full_name: tuple[str, ...] = ()
    part: str | None = None
    name_order: str = "first last"
    # checked first, in order: the first condition that holds fills the column with its rule
    when: tuple[tuple[Condition, Rule], ...] = ()

    def sources(self) -> tuple[str, ...]:
        found = tuple(self.columns) + ((self.plus_seconds,) if self.plus_seconds else ())
        found += self.full_name
        if self.template:
            found += tuple(re.findall(r"{([^{}]+)}", self.template))
        return found

    def all_sources(self) -> tuple[str, ...]:
        """Every header this rule may read, its conditions' and alternatives' included."""
        found = self.sources()
        for cond, alt in self.when:
            found += cond.columns + alt.all_sources()
        return found

    def fillable(self, present: set[str]) -> bool:
        """Whether a header (normalised names) can give this column a value at all."""
        if self.value is not None or self.file_name or self.by_position:
            return True
        if any(norm(h) in present for h in self.sources()):
            return True
        return any(
            any(norm(c) in present for c in cond.columns) and alt.fillable(present)
            for cond, alt in self.when
        )


@dataclass(frozen=True)
class Output:
    export: str
    rules: dict[str, Rule]
    period_columns: tuple[str, ...] = ()  # contract columns whose latest value dates the file

    @property
    def split_rule(self) -> tuple[str, Rule] | None:
        return next(((c, r) for c, r in self.rules.items() if r.split), None)


def absent_sources(output: Output, header: list[str]) -> list[str]:
    """Required contract columns of `output` that this header cannot fill at all."""
    present = {norm(h) for h in header}
    export = EXPORTS[output.export]
    absent = []
    for col in export.required_columns:
        rule = output.rules[col]
        if not rule.fillable(present):
            absent.append(f"{col} (from {' or '.join(dict.fromkeys(rule.all_sources()))})")
    one_of = [c for c in export.require_one_of if c in output.rules]
    if one_of and not any(output.rules[c].fillable(present) for c in one_of):
        sources = [h for c in one_of for h in output.rules[c].all_sources()]
        absent.append(f"{' or '.join(one_of)} (from {' or '.join(dict.fromkeys(sources))})")
    return absent


@dataclass(frozen=True)
class Profile:
    name: str
    vendor: str
    title: str
    folder: str
    recognise: tuple[str, ...]  # headers that must all be present
    outputs: tuple[Output, ...]
    origin: str  # file the profile was read from (shown in reports)
    documentation: str = ""
    delimiter: str | None = None  # None = detect from the header
    locale: str | None = None  # numbers: "de" = decimal comma; None = detect
    # lines after the header that are not records (SuccessFactors writes its field labels
    # under the field ids): skipped, and named in the load report
    skip_rows: int = 0

    def output(self, export: str) -> Output | None:
        return next((o for o in self.outputs if o.export == export), None)

    @property
    def exports(self) -> tuple[str, ...]:
        return tuple(o.export for o in self.outputs)

    def used_headers(self) -> set[str]:
        return {norm(h) for o in self.outputs for r in o.rules.values() for h in r.all_sources()}

    def feeds(self, header: list[str]) -> tuple[str, ...]:
        """The exports a file with this header gives (all of whose required columns it fills)."""
        return tuple(o.export for o in self.outputs if not absent_sources(o, header))


def absent_warnings(
    export_name: str, header: list[str], profile: Profile | None
) -> tuple[str, ...]:
    """Warnings for the columns whose absence from a whole file changes what it means (an
    employees export without a termination column makes every leaver look employed)."""
    export = EXPORTS[export_name]
    output = profile.output(export_name) if profile is not None else None
    present = {norm(h) for h in header}
    found = []
    for col in export.columns:
        if not col.absent_warning:
            continue
        rule = output.rules.get(col.name) if output is not None else None
        if output is None:
            rule = Rule(columns=(col.name, *col.aliases))
        if rule is None or not reads_from_header(rule, present):
            found.append(col.absent_warning)
    return tuple(found)


def source_system(profile: Profile | None) -> str:
    """The tool a delivery comes from: its profile's vendor, or our own format."""
    return profile.vendor if profile is not None else CONTRACT_SOURCE


# --- reading profiles --------------------------------------------------------------------------

_RULE_KEYS = {
    "full_name",
    "part",
    "name_order",
    "when",
    "column",
    "columns",
    "value",
    "template",
    "file_name",
    "extract",
    "map",
    "default",
    "format",
    "formats",
    "split",
    "by_position",
    "from_service",
    "plus_seconds",
}


def _as_tuple(v: object) -> tuple[str, ...]:
    if v is None:
        return ()
    if isinstance(v, list | tuple):
        return tuple(str(x) for x in v)
    return (str(v),)


_CONDITION_KEYS = {"column", "columns", "in", "set", "then"}


def _condition(spec: object, where: str) -> tuple[Condition, Rule]:
    if not isinstance(spec, dict):
        raise ProfileError(f"{where}: a `when` entry is a mapping (column, in or set, then)")
    unknown = set(spec) - _CONDITION_KEYS
    if unknown:
        raise ProfileError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: "
            f"{', '.join(sorted(_CONDITION_KEYS))}"
        )
    columns = _as_tuple(spec.get("column")) + _as_tuple(spec.get("columns"))
    if not columns or "then" not in spec or ("in" in spec) == ("set" in spec):
        raise ProfileError(f"{where}: give `column`, one of `in` or `set`, and `then`")
    values = frozenset(norm(v) for v in _as_tuple(spec["in"])) if "in" in spec else None
    is_set = bool(spec["set"]) if "set" in spec else None
    return Condition(columns, values, is_set), _rule(spec["then"], f"{where}.then")


def _extract_pattern(pattern: object, where: str) -> str | None:
    """An `extract` regex, checked when the profile is read: it must compile and name `value`."""
    if pattern is None:
        return None
    try:
        compiled = re.compile(str(pattern))
    except re.error as e:
        raise ProfileError(f"{where}: `extract` is not a regular expression ({e})") from e
    if "value" not in compiled.groupindex:
        raise ProfileError(f"{where}: `extract` needs a group named value: (?P<value>...)")
    return str(pattern)


def _rule(spec: object, where: str) -> Rule:
    if isinstance(spec, str):
        return Rule(columns=(spec,))
    if not isinstance(spec, dict):
        raise ProfileError(f"{where}: expected a column name or a mapping, got {spec!r}")
    unknown = set(spec) - _RULE_KEYS
    if unknown:
        raise ProfileError(
            f"{where}: unknown key(s) {', '.join(sorted(unknown))}; known: {', '.join(sorted(_RULE_KEYS))}"
        )
    raw_map = spec.get("map")
    if raw_map is not None and not isinstance(raw_map, dict):
        raise ProfileError(f"{where}: `map` must be a mapping of vendor value -> our value")
    rule = Rule(
        columns=_as_tuple(spec.get("column")) + _as_tuple(spec.get("columns")),
        value=None if spec.get("value") is None else str(spec["value"]),
        template=spec.get("template"),
        file_name=spec.get("file_name"),
        extract=_extract_pattern(spec.get("extract"), where),
        map={norm(k): str(v) for k, v in raw_map.items()} if raw_map else None,
        map_default=None if spec.get("default") is None else str(spec["default"]),
        formats=_as_tuple(spec.get("format")) + _as_tuple(spec.get("formats")),
        split=spec.get("split"),
        by_position=_as_tuple(spec.get("by_position")),
        from_service=bool(spec.get("from_service")),
        plus_seconds=spec.get("plus_seconds"),
        full_name=_as_tuple(spec.get("full_name")),
        part=spec.get("part"),
        name_order=str(spec.get("name_order", "first last")),
        when=tuple(
            _condition(c, f"{where}.when[{i}]") for i, c in enumerate(spec.get("when") or ())
        ),
    )
    if rule.full_name and rule.part not in ("first", "last"):
        raise ProfileError(f"{where}: `full_name` needs `part: first` or `part: last`")
    if rule.name_order not in ("first last", "last first"):
        raise ProfileError(f"{where}: `name_order` is `first last` or `last first`")
    if not (
        rule.columns
        or rule.value is not None
        or rule.template
        or rule.file_name
        or rule.by_position
        or rule.full_name
        or rule.when
    ):
        raise ProfileError(
            f"{where}: give `column`, `value`, `template`, `file_name`, `full_name` or `when`"
        )
    return rule


def _with_formats(rule: Rule, formats: tuple[str, ...]) -> Rule:
    """The profile's formats for a date or timestamp column, its alternatives' included."""
    when = tuple((c, _with_formats(alt, formats)) for c, alt in rule.when)
    return replace(rule, formats=rule.formats or formats, when=when)


def _output(export_name: str, spec: dict, formats: dict, where: str) -> Output:
    export = EXPORTS.get(export_name)
    if export is None:
        raise ProfileError(f"{where}: unknown export {export_name!r}; known: {', '.join(EXPORTS)}")
    columns = spec.get("columns") or {}
    rules: dict[str, Rule] = {}
    for col, rule_spec in columns.items():
        if col not in export.column_names:
            raise ProfileError(
                f"{where}.columns: {col!r} is not a column of the {export_name} contract "
                f"({', '.join(export.column_names)})"
            )
        rule = _rule(rule_spec, f"{where}.columns.{col}")
        ctype = export.column(col).type
        if ctype in formats:
            rule = _with_formats(rule, _as_tuple(formats[ctype]))
        rules[col] = rule
    missing = [c for c in export.required_columns if c not in rules]
    if missing:
        raise ProfileError(
            f"{where}: required column(s) of the {export_name} contract have no rule: "
            f"{', '.join(missing)}"
        )
    period = _as_tuple(spec.get("period_columns")) or export.period_columns
    return Output(export=export_name, rules=rules, period_columns=period)


def parse_profile(data: dict, origin: str) -> Profile:
    """Build and validate one profile from its YAML mapping."""
    if not isinstance(data, dict):
        raise ProfileError(
            f"{origin}: a profile is a mapping with name, folder, recognise, outputs"
        )
    for key in ("name", "folder", "recognise", "outputs"):
        if key not in data:
            raise ProfileError(f"{origin}: missing key {key!r}")
    formats = data.get("formats") or {}
    outputs = tuple(
        _output(name, spec or {}, formats, f"{origin}: outputs.{name}")
        for name, spec in data["outputs"].items()
    )
    for o in outputs:
        if EXPORTS[o.export].folder != data["folder"]:
            raise ProfileError(
                f"{origin}: export {o.export} belongs in {EXPORTS[o.export].folder}/, not {data['folder']}/"
            )
    return Profile(
        name=str(data["name"]),
        vendor=str(data.get("vendor", data["name"])),
        title=str(data.get("title", data["name"])),
        folder=str(data["folder"]),
        recognise=_as_tuple(data["recognise"]),
        outputs=outputs,
        origin=origin,
        documentation=str(data.get("documentation", "")).strip(),
        delimiter=data.get("delimiter"),
        locale=data.get("locale"),
        skip_rows=_skip_rows(data.get("skip_rows", 0), origin),
    )


def _skip_rows(value: object, origin: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 10:
        raise ProfileError(
            f"{origin}: skip_rows is the number of lines under the header that are not records "
            f"(0 to 10), not {value!r}"
        )
    return value


def _read_dir(directory: Path, label: str) -> dict[str, Profile]:
    found: dict[str, Profile] = {}
    if not directory.is_dir():
        return found
    for path in sorted(directory.glob("*.y*ml")):
        try:
            data = yaml.load(path.read_text(encoding="utf-8"), Loader=_SAFE_LOADER)
        except yaml.YAMLError as e:
            raise ProfileError(f"{label}/{path.name}: not valid YAML ({e})") from e
        profile = parse_profile(data, f"{label}/{path.name}")
        found[profile.name] = profile
    return found


def contract_profile(export: Export) -> Profile:
    """Our own contract as a profile: a file in our format under another name is recognised."""
    rules = {c.name: Rule(columns=(c.name, *c.aliases)) for c in export.columns}
    return Profile(
        name=f"contract-{export.name.replace('_', '-')}",
        vendor="talent-metrics",
        title=f"talent-metrics {export.name} contract",
        folder=export.folder,
        recognise=tuple(
            " | ".join((c, *export.column(c).aliases)) for c in export.required_columns
        ),
        outputs=(Output(export.name, rules, export.period_columns),),
        origin="pipelines/lib/contracts.py",
    )


def load_profiles(sources_dir: Path | None = None) -> dict[str, Profile]:
    """Shipped profiles, the contracts as profiles, then `<sources>/profiles/` (wins by name)."""
    profiles = {p.name: p for p in (contract_profile(e) for e in EXPORTS.values())}
    profiles.update(_read_dir(BUILTIN_DIR, "pipelines/lib/ingest/profiles"))
    if sources_dir is not None:
        profiles.update(_read_dir(Path(sources_dir) / "profiles", "profiles"))
    return profiles


# --- sources.yml ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileSetting:
    pattern: str  # file name or glob, relative to its folder (or folder/name)
    profile: str | None = None
    period: str | None = None
    allow_shrink: bool = False


@dataclass(frozen=True)
class SourcesConfig:
    files: tuple[FileSetting, ...] = ()
    service_clusters: dict[str, str] = field(default_factory=dict)
    # a re-delivery keeping fewer than this share of the rows it replaces is blocked
    min_redelivery_share: float = 0.5
    origin: str | None = None
    # a re-delivery keeping fewer than this share (but at least the blocking one) loads and is
    # named in the run summary with both files and the share
    notice_redelivery_share: float = 0.8
    # export -> which tool's row wins a key two tools deliver for one period (precedence.py)
    precedence: dict[str, Precedence] = field(default_factory=dict)

    def for_file(self, folder: str, name: str) -> FileSetting | None:
        for s in self.files:
            if fnmatch.fnmatch(name, s.pattern) or fnmatch.fnmatch(f"{folder}/{name}", s.pattern):
                return s
        return None


def load_sources_config(sources_dir: Path | None) -> SourcesConfig:
    """Read `<sources>/sources.yml`; an absent file is an empty configuration."""
    if sources_dir is None:
        return SourcesConfig()
    path = Path(sources_dir) / "sources.yml"
    if not path.is_file():
        return SourcesConfig()
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except yaml.YAMLError as e:
        raise ProfileError(f"sources.yml: not valid YAML ({e})") from e
    files = []
    for pattern, spec in (data.get("files") or {}).items():
        spec = spec or {}
        period = spec.get("period")
        if period is not None and not re.fullmatch(r"\d{4}-\d{2}(-\d{2})?", str(period)):
            raise ProfileError(
                f"sources.yml: files.{pattern}.period {period!r} is not YYYY-MM[-DD]"
            )
        files.append(
            FileSetting(
                pattern=str(pattern),
                profile=spec.get("profile"),
                period=None if period is None else str(period),
                allow_shrink=bool(spec.get("allow_shrink")),
            )
        )
    clusters = {norm(k): str(v) for k, v in (data.get("service_clusters") or {}).items()}
    shares = {}
    for key, default in (("min_redelivery_share", 0.5), ("notice_redelivery_share", 0.8)):
        try:
            shares[key] = float(data.get(key, default))
        except (TypeError, ValueError) as e:
            raise ProfileError(f"sources.yml: {key} is a share between 0 and 1") from e
        if not 0 <= shares[key] <= 1:
            raise ProfileError(f"sources.yml: {key} is a share between 0 and 1")
    try:
        precedence = parse_precedence(data)
    except PrecedenceError as e:
        raise ProfileError(str(e)) from e
    return SourcesConfig(
        tuple(files),
        clusters,
        shares["min_redelivery_share"],
        "sources.yml",
        max(shares["notice_redelivery_share"], shares["min_redelivery_share"]),
        precedence,
    )


# --- recognition ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Candidate:
    profile: Profile
    matched: int  # recognising headers present
    missing: tuple[str, ...]  # recognising headers absent
    used: int = 0  # header columns the profile reads: the better fit reads more of the file

    @property
    def complete(self) -> bool:
        return not self.missing


@dataclass(frozen=True)
class Recognition:
    profile: Profile | None
    reason: str  # why this profile, or why none
    closest: Candidate | None = None  # for a file that matches nothing
    ambiguous: tuple[str, ...] = ()  # candidate names when no unique best match exists


def score(profile: Profile, header: list[str]) -> Candidate:
    """How many recognising headers are present; `A | B` accepts either spelling."""
    present = {norm(h) for h in header}
    missing = tuple(
        h for h in profile.recognise if not any(norm(a) in present for a in h.split(" | "))
    )
    used = len(present & profile.used_headers())
    return Candidate(profile, len(profile.recognise) - len(missing), missing, used)


def reads_from_header(rule: Rule, present: set[str]) -> bool:
    """Whether a rule takes its value from one of these (normalised) header columns; a
    constant, a file name or a position does not count."""
    if any(norm(h) in present for h in rule.sources()):
        return True
    return any(reads_from_header(alt, present) for _, alt in rule.when)


def coverage(profile: Profile, header: list[str]) -> tuple[str, tuple[str, ...], tuple[str, ...]]:
    """The columns that matter (an export's required and key columns) of the profile's
    export this header covers best: (export, columns read from the header, columns not)."""
    present = {norm(h) for h in header}
    best: tuple[str, tuple[str, ...], tuple[str, ...]] = ("", (), ())
    for output in profile.outputs:
        export = EXPORTS[output.export]
        matter = dict.fromkeys((*export.required_columns, *export.key))
        read = tuple(
            c for c in matter if c in output.rules and reads_from_header(output.rules[c], present)
        )
        if not best[0] or len(read) > len(best[1]):
            best = (output.export, read, tuple(c for c in matter if c not in read))
    return best


def closeness(profile: Profile, header: list[str]) -> tuple[int, int, int]:
    """How near a profile comes to a header it does not match: the columns that matter it
    reads from the header (`coverage`), then its recognising columns present, then the
    header columns it reads. A profile that shares only an unimportant column ranks low."""
    cand = score(profile, header)
    return (len(coverage(profile, header)[1]), cand.matched, cand.used)


def recognise(
    header: list[str],
    folder: str,
    profiles: dict[str, Profile],
    forced: str | None = None,
) -> Recognition:
    """Pick the unique best profile of `folder` for `header` (or the one sources.yml names)."""
    if forced is not None:
        profile = profiles.get(forced)
        if profile is None:
            return Recognition(None, f"sources.yml names profile {forced!r}, which does not exist")
        cand = score(profile, header)
        if not cand.complete:
            return Recognition(
                None,
                f"sources.yml names profile {forced!r} but the header lacks {', '.join(cand.missing)}",
                closest=cand,
            )
        return Recognition(profile, f"named in sources.yml ({forced}){skipped_note(profile)}")
    mine = [score(p, header) for p in profiles.values() if p.folder == folder]
    complete = [c for c in mine if c.complete]
    if not complete:
        ranked = sorted(mine, key=lambda c: closeness(c.profile, header), reverse=True)
        closest = next((c for c in ranked if any(closeness(c.profile, header)[:2])), None)
        return Recognition(None, "the header matches no profile of this folder", closest=closest)
    best = max(c.used for c in complete)
    top = [c for c in complete if c.used == best]
    if len(top) > 1:
        names = tuple(sorted(c.profile.name for c in top))
        return Recognition(
            None,
            f"the header fits {len(top)} profiles equally well ({', '.join(names)}); name one "
            "in sources.yml (files: {<file name>: {profile: <name>}})",
            ambiguous=names,
        )
    chosen = top[0].profile
    others = [c.profile.name for c in complete if c is not top[0]]
    also = f"; also fits {', '.join(others)}, which read(s) fewer columns" if others else ""
    return Recognition(
        chosen,
        f"header has the recognising columns of {chosen.name} ({chosen.origin}), which reads "
        f"{best} of its {len(header)} columns{also}{skipped_note(chosen)}",
    )


def skipped_note(profile: Profile) -> str:
    """What a profile's `skip_rows` leaves out, for the load report."""
    if not profile.skip_rows:
        return ""
    lines = "line 2" if profile.skip_rows == 1 else f"lines 2-{1 + profile.skip_rows}"
    return f"; {lines} (a second header row the tool writes) skipped, as the profile says"


# --- period ----------------------------------------------------------------------------------

_PERIOD_IN_NAME = re.compile(r"(?<!\d)(\d{4}-\d{2}(?:-\d{2})?)(?!\d)")
_VERSION_IN_NAME = re.compile(r"_v(\d+)(?=\.[^.]+$)")


def period_from_name(name: str) -> str | None:
    m = _PERIOD_IN_NAME.search(name)
    return m.group(1) if m else None


def version_from_name(name: str) -> int:
    m = _VERSION_IN_NAME.search(name)
    return int(m.group(1)) if m else 1


# --- plausible dates ---------------------------------------------------------------------------

EARLIEST_DATE = datetime(1970, 1, 1)


def latest_plausible(today: datetime | None = None, years: int = 1) -> datetime:
    today = today or datetime.now(UTC).replace(tzinfo=None)
    return today + timedelta(days=366 * years)
