"""Read a vendor's own export through its profile into the shape of one of our exports.

The vendor file is cut into records like any delivery (`read_table`: physical line numbers,
quoted line breaks, NUL bytes, workbooks); each contract column is then filled by its profile
rule. A value the profile cannot read (a date not in the vendor's format) quarantines its row
with a reason naming the vendor column; everything else is typed and checked by the contract
exactly as for our own files, so the raw tables and dbt see no difference.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from pathlib import PurePath

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest.profiles import (
    Condition,
    Output,
    Profile,
    Rule,
    SourcesConfig,
    norm,
    score,
)
from pipelines.lib.ingest.reader import (
    FileError,
    RawTable,
    Rejected,
    SplitFile,
    detect_locale,
    extras_json,
    read_table,
)

_ISO_PREFIX = re.compile(r"^\d{4}-\d{2}-\d{2}")


class _Unreadable(ValueError):
    """One value does not fit the profile's format; the row is quarantined."""


def split_vendor_bytes(
    data: bytes,
    export_name: str,
    file_name: str,
    profile: Profile,
    config: SourcesConfig | None = None,
) -> SplitFile:
    """Cut a vendor file and map it onto `export_name` through `profile`; raise FileError."""
    output = profile.output(export_name)
    if output is None:
        raise FileError(
            f"{file_name}: profile {profile.name} does not feed the {export_name} export"
        )
    table = skip_rows(read_table(data, file_name), profile.skip_rows)
    index = {}
    for i, h in enumerate(table.header):
        index.setdefault(norm(h), i)
    missing = score(profile, table.header).missing
    if missing:
        raise FileError(
            f"{file_name}: the header (line 1) lacks {', '.join(missing)}, which the "
            f"{profile.title} profile ({profile.name}) needs; nothing from this file was loaded."
        )
    values, lines, rejected = map_records(
        table, output, index, file_name, config or SourcesConfig()
    )
    used = profile.used_headers()
    extra = {
        (h.strip() or f"column_{i + 1}"): i
        for i, h in enumerate(table.header)
        if norm(h) not in used
    }
    kept = [table.records[i] for i in values.pop("_record")]  # type: ignore[arg-type]
    export = EXPORTS[export_name]
    locale = profile.locale or detect_locale(export, values, table.delimiter)
    return SplitFile(
        file_name=file_name,
        export=export_name,
        encoding=table.encoding,
        delimiter=table.delimiter,
        locale=locale if locale in export.locales else export.locales[0],
        # a list column gives one row per item: delivered rows = rows produced + rejected
        rows_total=len(lines) + len(table.rejected) + len(rejected),
        values=values,
        lines=lines,
        extras=extras_json(kept, extra),
        rejected=sorted(table.rejected + rejected, key=lambda r: r.line_number),
        ignored_columns=tuple(extra),
        physical=table.physical,
        multi_line=table.multi_line,
    )


def skip_rows(table: RawTable, count: int) -> RawTable:
    """The table without the `count` lines under the header that are not records (a second
    header row of field labels): they are neither loaded nor quarantined."""
    if not count:
        return table
    last = 1 + count  # physical lines 2 .. 1 + count
    keep = [i for i, line in enumerate(table.lines) if line > last]
    return replace(
        table,
        records=[table.records[i] for i in keep],
        lines=[table.lines[i] for i in keep],
        rejected=[r for r in table.rejected if r.line_number > last],
    )


def map_records(
    table: RawTable,
    output: Output,
    index: dict[str, int],
    file_name: str,
    config: SourcesConfig,
) -> tuple[dict[str, Sequence], list[int], list[Rejected]]:
    """Apply every rule to every record; a split rule yields one row per list item."""
    export = EXPORTS[output.export]
    columns = {c: [] for c in output.rules}
    columns["_record"] = []
    lines: list[int] = []
    rejected: list[Rejected] = []
    split = output.split_rule
    for pos, (record, line) in enumerate(zip(table.records, table.lines, strict=True)):
        try:
            row = {
                c: _apply(rule, record, index, file_name, export.column(c).type, config)
                for c, rule in output.rules.items()
            }
        except _Unreadable as e:
            raw = table.physical.get(line, table.multi_line.get(line, line))
            rejected.append(Rejected(line, raw, str(e)))
            continue
        items = [row]
        if split is not None:
            items = _split_items(row, split, record, index, output)
        for item in items:
            for c in output.rules:
                columns[c].append(item[c])
            columns["_record"].append(pos)
            lines.append(line)
    return columns, lines, rejected


def _split_items(
    row: dict, split: tuple[str, Rule], record: list[str], index: dict[str, int], output: Output
) -> list[dict]:
    """One row per item of the list columns (assignee, acknowledged by, resolved by, ...),
    each person once; a record listing nobody gives no rows."""
    col, rule = split
    items: list[str] = []
    for name in rule.columns:
        i = index.get(norm(name))
        if i is None:
            continue
        for part in record[i].split(rule.split or ","):
            part = part.strip()
            if part and norm(part) not in {norm(x) for x in items}:
                items.append(part)
    positional = {c: r.by_position for c, r in output.rules.items() if r.by_position}
    out = []
    for n, item in enumerate(items):
        extra = {c: vals[min(n, len(vals) - 1)] for c, vals in positional.items()}
        out.append({**row, col: item, **extra})
    return out


def _apply(
    rule: Rule,
    record: list[str],
    index: dict[str, int],
    file_name: str,
    ctype: str,
    config: SourcesConfig,
) -> str | None:
    if rule.by_position:
        return rule.by_position[0]
    for condition, alternative in rule.when:
        if _holds(condition, record, index):
            return _apply(alternative, record, index, file_name, ctype, config)
    value, source = _raw_value(rule, record, index, file_name)
    if rule.from_service:
        value = config.service_clusters.get(norm(value or ""), value)
    if value is None:
        return None
    if rule.extract is not None:
        found = re.search(rule.extract, value)
        value = found.group("value") if found else ""
    if rule.map is not None:
        mapped = rule.map.get(norm(value))
        value = mapped if mapped is not None else (rule.map_default or value)
    if not value:
        return value  # mapped to "not set" (Slurm's Unknown start of a pending job)
    if ctype in ("date", "timestamp"):
        value = _reformat(value, rule, ctype, source)
    elif "duration" in rule.formats:
        value = duration_hours(value, source)
    if rule.plus_seconds:
        value = _plus_seconds(value, rule.plus_seconds, record, index)
    return value


# [days-]hours:minutes:seconds[.fraction], minutes:seconds: how Slurm writes Elapsed
_DURATION = re.compile(r"^(?:(?:(?P<d>\d+)-)?(?P<h>\d+):)?(?P<m>\d+):(?P<s>\d+(?:\.\d+)?)$")


def duration_hours(value: str, source: str) -> str:
    """A `[D-]HH:MM:SS` duration (Slurm's Elapsed) as decimal hours."""
    m = _DURATION.match(value.strip())
    if not m:
        raise _Unreadable(
            f"{source}: {value[:60]!r} is not a duration ([days-]hours:minutes:seconds)"
        )
    seconds = int(m["d"] or 0) * 86400 + int(m["h"] or 0) * 3600 + int(m["m"]) * 60 + float(m["s"])
    return f"{seconds / 3600:.6f}"


def _plus_seconds(value: str, column: str, record: list[str], index: dict[str, int]) -> str | None:
    """`value` (a timestamp) plus the seconds in `column`; None when the column is empty."""
    i = index.get(norm(column))
    seconds = record[i].strip() if i is not None else ""
    if not re.fullmatch(r"\d+(\.\d+)?", seconds):
        return None  # not acknowledged (or not a number: the time stays unknown)
    try:
        start = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return value  # the contract typing names the bad timestamp
    if start.tzinfo is not None:
        start = start.astimezone(UTC).replace(tzinfo=None)
    return (start + timedelta(seconds=float(seconds))).isoformat(sep=" ")


def _holds(condition: Condition, record: list[str], index: dict[str, int]) -> bool:
    """Whether a `when` condition holds for this record (see `Condition`)."""
    present = [index[norm(c)] for c in condition.columns if norm(c) in index]
    if not present:
        return False
    value = next((record[i].strip() for i in present if record[i].strip()), "")
    if condition.is_set is not None:
        return (value not in ("", "0")) == condition.is_set
    return condition.values is not None and norm(value) in condition.values


# name suffixes that follow a comma without making the name "Last, First"
_NAME_SUFFIXES = {"jr", "jr.", "sr", "sr.", "ii", "iii", "iv", "phd", "ph.d.", "md", "m.d."}


def name_part(full: str, part: str, order: str = "first last") -> str:
    """The first or last name of a full name, as one column of an export writes it.

    "Last, First" (a comma) is split at the comma; otherwise the profile's `order` says where
    the last name is: the last word ("first last") or the first ("last first"). A trailing
    "(id)" some tools append is dropped. Names are only used to link people by their full name,
    which joins the two parts again, so any split of a multi-word name links the same; a single
    word is both parts.
    """
    text = re.sub(r"\s*\([^()]*\d[^()]*\)\s*$", "", full).strip()
    if "," in text:
        last, _, first = (t.strip() for t in text.partition(","))
        if first.casefold() not in _NAME_SUFFIXES and last and first:
            return first if part == "first" else last
    words = text.split()
    if len(words) < 2:
        return text
    if order == "last first":
        last, first = words[0], " ".join(words[1:])
    else:
        first, last = " ".join(words[:-1]), words[-1]
    return first if part == "first" else last


def _raw_value(
    rule: Rule, record: list[str], index: dict[str, int], file_name: str
) -> tuple[str | None, str]:
    """The vendor value for a rule, and where it came from (for quarantine reasons).

    The first non-empty of: the listed columns, the part of a full-name column, the template,
    the file name, the constant (a constant next to columns is the value when the export lacks
    them or leaves them empty).
    """
    for name in rule.columns:
        i = index.get(norm(name))
        if i is not None and record[i].strip():
            return record[i].strip(), f"column {name!r}"
    for name in rule.full_name:
        i = index.get(norm(name))
        if i is not None and record[i].strip():
            part = name_part(record[i], rule.part or "first", rule.name_order)
            return part or None, f"column {name!r}"
    if rule.template is not None:

        def field(m: re.Match) -> str:
            i = index.get(norm(m.group(1)))
            return record[i].strip() if i is not None else ""

        text = re.sub(r"{([^{}]+)}", field, rule.template)
        if text.strip(" -_:/"):
            return text, f"template {rule.template!r}"
    if rule.file_name is not None:
        m = re.search(rule.file_name, PurePath(file_name).name)
        if m:
            return m.group("value"), "the file name"
    if rule.value is not None:
        return rule.value, "the profile's constant"
    return None, f"column {rule.columns[0]!r}" if rule.columns else "no column"


def _reformat(value: str, rule: Rule, ctype: str, source: str) -> str:
    """A vendor date or timestamp in ISO form; ISO input passes through to the contract typing."""
    if _ISO_PREFIX.match(value):
        # a date column takes the calendar date as written, also from a timestamp with a zone
        return value[:10] if ctype == "date" else value
    if not rule.formats:
        return value  # the contract typing names what is wrong with it
    for fmt in rule.formats:
        if fmt in ("epoch", "epoch_ms"):  # seconds, or milliseconds (Grafana's Time column)
            if re.fullmatch(r"\d+(\.\d+)?", value):
                if float(value) == 0:
                    return ""  # Moodle and others write 0 for "not set"
                seconds = float(value) / (1000 if fmt == "epoch_ms" else 1)
                parsed = datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)
                return _iso(parsed, ctype)
            continue
        try:
            return _iso(datetime.strptime(value, fmt), ctype)
        except ValueError:
            continue
    forms = ", ".join(rule.formats)
    raise _Unreadable(f"{source}: {value[:60]!r} is not a {ctype} in the export's format ({forms})")


def _iso(value: datetime, ctype: str) -> str:
    return value.date().isoformat() if ctype == "date" else value.isoformat(sep=" ")
