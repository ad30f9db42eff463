"""Guided mapping: an export of a tool no profile knows becomes a starting profile.

When a delivered file's header matches no profile of its folder, the load and `talent sources
check` say how to map it (`unmatched_note`). `talent sources init-profile FILE --export ...`
then writes a starting profile (`starting_profile`): each contract column is mapped to the
file's column whose name, once normalised (case, blanks and punctuation ignored), is the
contract column's name, one of its aliases, a spelling a shipped profile reads for it, or a
common spelling listed here; date formats are sniffed from the file's values, value maps are
taken from the shipped profiles; whatever cannot be guessed is left as a marked TODO.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from pipelines.lib.contracts import EXPORTS, Column
from pipelines.lib.ingest.profiles import (
    CONTRACT_SOURCE,
    Profile,
    Recognition,
    coverage,
    load_profiles,
    norm,
)
from pipelines.lib.ingest.reader import RawTable

README_SECTION = 'sources/README.md, "Your own profiles and sources.yml"'
TODO = "TODO"

EMPLOYEE_ID_SPELLINGS = (
    "Employee ID",
    "Associate ID",
    "Worker ID",
    "Person ID",
    "EMPID",
    "Personnel Number",
    "Staff Number",
    "Staff ID",
)
# common header spellings of contract columns that neither the contract's aliases nor a
# shipped profile give: export -> column -> spellings
COMMON_SPELLINGS: dict[str, dict[str, tuple[str, ...]]] = {
    "employees": {
        "employee_id": EMPLOYEE_ID_SPELLINGS,
        "first_name": ("Given Name", "Legal First Name", "FIRSTNAME"),
        "last_name": ("Surname", "Family Name", "Legal Last Name", "LASTNAME"),
        "work_email": ("Email", "Email Address", "Business Email", "Work Contact: Work Email"),
        "hire_date": ("Start Date", "Date of Hire", "HIREDATE", "Joining Date", "Date Joined"),
        "original_hire_date": ("Seniority Date",),
        "termination_date": (
            "End Date",
            "Last Day",
            "Last Working Day",
            "Leaving Date",
            "Separation Date",
        ),
        "termination_reason": ("Reason for Leaving", "Exit Reason", "Leaving Reason"),
    },
    "job_history": {
        "employee_id": EMPLOYEE_ID_SPELLINGS,
        "effective_date": ("Effective Date", "Job Effective Date"),
        "division": ("Business Unit", "Business Unit Description"),
        "team": ("Home Department", "Home Department Description"),
        "role_family": ("Job Family", "Job Function"),
        "job_title": ("Job Title", "Title", "Job Title Description", "Position Title"),
        "site": ("Work Location", "Location Description", "Site", "Office"),
        "manager_id": ("Manager ID", "Supervisor ID", "Reports To Associate ID"),
        "employment_type": ("Worker Type", "Worker Category", "Worker Category Description"),
    },
    "enrolments": {
        "learner_email": ("Email", "User Email", "Learner Email"),
        "course_id": ("Course ID", "Training ID", "LO ID"),
        "enrolled_on": ("Registration Date", "Assigned Date", "Enrolled On"),
        "completed_on": ("Completed Date", "Date Completed"),
    },
    "certifications": {
        "learner_email": ("Email", "User Email"),
        "certification_code": ("Certification", "Certification Code"),
        "issued_on": ("Issue Date", "Awarded On"),
    },
    "incidents": {
        "incident_number": ("Incident ID", "Incident Number", "Reference", "ID"),
        "title": ("Name", "Title"),
        "service": ("Service", "Affected Service", "Affected Services"),
        "severity": ("Severity",),
        "opened_at": ("Created At", "Reported At", "Started At", "Opened At"),
        "acknowledged_at": ("Acknowledged At",),
        "resolved_at": ("Resolved At", "Closed At"),
    },
    "responders": {
        "incident_number": ("Incident ID", "Incident Number", "Reference", "ID"),
        "responder_email": ("Email", "User Email", "Responder Email"),
        "responder_name": ("Responder", "User", "Name"),
        "role": ("Role",),
        "assigned_at": ("Assigned At",),
    },
}

# strptime formats tried on a date or timestamp column's values (ISO needs none)
DATE_FORMATS = (
    "%m/%d/%Y",
    "%d/%m/%Y",
    "%d.%m.%Y",
    "%m/%d/%y",
    "%d/%m/%y",
    "%d-%b-%Y",
    "%d %b %Y",
    "%b %d, %Y",
    "%d %B %Y",
    "%B %d, %Y",
    "%Y/%m/%d",
    "%m-%d-%Y",
    "%d-%m-%Y",
)
TIME_SUFFIXES = ("", " %H:%M", " %H:%M:%S", " %I:%M %p", " %I:%M:%S %p")
_ISO = re.compile(r"^\d{4}-\d{2}-\d{2}([T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?)?(Z|[+-]\d{2}:?\d{2})?$")


def squash(name: str) -> str:
    """A header spelling for guessing: case, blanks, punctuation and a BOM ignored."""
    return re.sub(r"[\W_]+", "", norm(name))


@dataclass
class Guess:
    """What a header gives one export: column -> the file's column, and what is left."""

    export: str
    columns: dict[str, str] = field(default_factory=dict)
    formats: dict[str, list[str]] = field(default_factory=dict)  # type -> formats
    maps: dict[str, dict[str, str]] = field(default_factory=dict)  # column -> value map

    @property
    def required_found(self) -> list[str]:
        return [c for c in EXPORTS[self.export].required_columns if c in self.columns]

    @property
    def required_missing(self) -> list[str]:
        return [c for c in EXPORTS[self.export].required_columns if c not in self.columns]


def known_spellings(
    export: str, profiles: dict[str, Profile] | None = None
) -> dict[str, list[str]]:
    """Per contract column, the header spellings it is known under, most specific first: the
    contract's name and aliases, those the shipped profiles read, then common ones."""
    profiles = load_profiles() if profiles is None else profiles
    contract = EXPORTS[export]
    found: dict[str, list[str]] = {c.name: [c.name, *c.aliases] for c in contract.columns}
    for profile in profiles.values():
        output = profile.output(export)
        if output is None or profile.vendor == CONTRACT_SOURCE:
            continue
        for col, rule in output.rules.items():
            found[col] += list(rule.columns)
    for col, names in COMMON_SPELLINGS.get(export, {}).items():
        found[col] += list(names)
    return {c: list(dict.fromkeys(names)) for c, names in found.items()}


def known_maps(export: str, profiles: dict[str, Profile]) -> dict[str, dict[str, str]]:
    """Per contract column, the value maps of the shipped profiles merged (normalised keys)."""
    maps: dict[str, dict[str, str]] = {}
    for profile in profiles.values():
        output = profile.output(export)
        for col, rule in output.rules.items() if output else ():
            if rule.map:
                maps.setdefault(col, {}).update(rule.map)
    return maps


def guess_columns(
    header: list[str], export: str, profiles: dict[str, Profile] | None = None
) -> dict[str, str]:
    """Contract column -> the header column it is guessed to come from."""
    by_squash: dict[str, str] = {}
    for h in header:
        by_squash.setdefault(squash(h), h.replace("\ufeff", "").strip())
    guessed = {}
    for col, names in known_spellings(export, profiles).items():
        hit = next((by_squash[squash(n)] for n in names if squash(n) in by_squash), None)
        if hit is not None:
            guessed[col] = hit
    return guessed


def suggest_exports(
    header: list[str], folder: str, profiles: dict[str, Profile] | None = None
) -> list[str]:
    """The exports of `folder` a header most likely holds: those for which at least 40 % of
    the required columns are guessed (else the one with the most); none when no required
    column of any export is guessed (the user names the export: `folder_exports`)."""
    scores = []
    for name, export in EXPORTS.items():
        if export.folder != folder:
            continue
        found = guess_columns(header, name, profiles)
        hits = sum(1 for c in export.required_columns if c in found)
        scores.append((hits / len(export.required_columns), hits, name))
    good = [name for share, _, name in scores if share >= 0.4]
    if good:
        return good
    best = max(scores, default=None)
    return [best[2]] if best and best[1] else []


def folder_exports(folder: str) -> list[str]:
    """The exports a file of `folder` can hold, in the contract's order."""
    return [name for name, export in EXPORTS.items() if export.folder == folder]


def _sample(table: RawTable, column: str, limit: int = 500) -> list[str]:
    index = {norm(h): i for i, h in enumerate(table.header)}
    i = index.get(norm(column))
    if i is None:
        return []
    return [r[i].strip() for r in table.records[:limit] if i < len(r) and r[i].strip()]


def _parses(value: str, fmt: str) -> bool:
    try:
        datetime.strptime(value, fmt)
    except ValueError:
        return False
    return True


def sniff_formats(values: list[str], timestamp: bool) -> list[str]:
    """The strptime formats that read every non-ISO value (none when all are ISO)."""
    rest = [v for v in values if not _ISO.match(v)]
    if not rest:
        return []
    if all(re.fullmatch(r"\d{9,10}(\.\d+)?", v) for v in rest):
        return ["epoch"]
    suffixes = TIME_SUFFIXES if timestamp else TIME_SUFFIXES[:1]
    candidates = [d + t for t in suffixes for d in DATE_FORMATS]
    fits = [f for f in candidates if all(_parses(v, f) for v in rest)]
    return fits[:1]


def _all_dates(values: list[str]) -> bool:
    return bool(values) and (
        all(_ISO.match(v) for v in values) or bool(sniff_formats(values, True))
    )


def label_row(table: RawTable, guessed: dict[str, str], export: str) -> bool:
    """Whether the first record is a second header row: text where every later value of the
    guessed date columns is a date (SuccessFactors writes its field labels there)."""
    contract = EXPORTS[export]
    dated = [c for c in guessed if contract.column(c).type in ("date", "timestamp")]
    if len(table.records) < 2 or not dated:
        return False
    index = {norm(h): i for i, h in enumerate(table.header)}
    for col in dated:
        i = index[norm(guessed[col])]
        first = table.records[0][i].strip() if i < len(table.records[0]) else ""
        rest = [r[i].strip() for r in table.records[1:501] if i < len(r) and r[i].strip()]
        if not first or _all_dates([first]) or not _all_dates(rest):
            return False
    return True


def guess(table: RawTable, export: str, profiles: dict[str, Profile]) -> Guess:
    """Columns, date formats and value maps of `export` guessed from a file's header and
    values."""
    result = Guess(export, guess_columns(table.header, export, profiles))
    contract = EXPORTS[export]
    maps = known_maps(export, profiles)
    for col, source in result.columns.items():
        column = contract.column(col)
        values = _sample(table, source)
        if column.type in ("date", "timestamp"):
            for fmt in sniff_formats(values, column.type == "timestamp"):
                kinds = result.formats.setdefault(column.type, [])
                if fmt not in kinds:
                    kinds.append(fmt)
        elif column.values or column.type == "boolean":
            value_map = _value_map(column, values, maps.get(col, {}))
            if value_map:
                result.maps[col] = value_map
    return result


_BOOLEAN = {"true", "false", "yes", "no", "ja", "nein", "1", "0"}


def _value_map(column: Column, values: list[str], known: dict[str, str]) -> dict[str, str]:
    """The file's values mapped onto the column's allowed values: what a shipped profile
    maps, kept when already allowed, else a TODO naming the allowed values."""
    allowed = set(column.values or _BOOLEAN)
    out: dict[str, str] = {}
    for value in dict.fromkeys(values):
        if len(out) >= 30:
            break
        key = norm(value)
        if key in known:
            out[value] = known[key]
        elif key not in allowed:
            out[value] = f"{TODO}: one of {', '.join(column.values or ('yes', 'no'))}"
    return out


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.casefold()).strip("-") or "my-tool"


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def _recognising(guesses: list[Guess], header: list[str]) -> list[str]:
    """Header columns that recognise the file: the guessed required and key columns' sources
    (at least two; the file's first columns make up the rest)."""
    names: list[str] = []
    for g in guesses:
        export = EXPORTS[g.export]
        for col in dict.fromkeys((*export.required_columns, *export.key)):
            if col in g.columns:
                names.append(g.columns[col])
    names = list(dict.fromkeys(names))
    for h in header:
        if len(names) >= 2:
            break
        h = h.replace("\ufeff", "").strip()
        if h and h not in names:
            names.append(h)
    return names


def _column_lines(g: Guess, col: Column) -> list[str]:
    """One contract column's rule: the guessed column (with its value map), or a TODO."""
    pad = " " * 6
    about = col.description or col.name.replace("_", " ")
    allowed = f"; one of {', '.join(col.values)}" if col.values else ""
    source = g.columns.get(col.name)
    if source is not None and col.name in g.maps:
        lines = [f"{pad}{col.name}:", f"{pad}  column: {_q(source)}", f"{pad}  map:"]
        lines += [f"{pad}    {_q(k)}: {_q(v)}" for k, v in g.maps[col.name].items()]
        return lines
    if source is not None:
        return [f"{pad}{col.name}: {{column: {_q(source)}}}"]
    if col.required:
        return [f'{pad}{col.name}: {{column: "{TODO}"}}  # {TODO} required: {about}{allowed}']
    return [f'{pad}# {col.name}: {{column: "{TODO}"}}  # optional: {about}{allowed}']


def render_profile(
    name: str, file_name: str, folder: str, guesses: list[Guess], header: list[str], skip: int
) -> str:
    """The starting profile as YAML, with comments saying what is left to do."""
    used = {source for g in guesses for source in g.columns.values()}
    unused = [h.strip() for h in header if h.strip() and h.strip() not in used]
    lines = [
        f"# A starting profile for {file_name}, written by `talent sources init-profile`.",
        "# Each mapping is a guess from the column names and values: check them. Replace each",
        f'# "{TODO}" with the name of the file\'s column that holds that value (a constant is',
        "# {value: ...}; maps, templates and the other rule keys are in",
        f"# {README_SECTION}), uncomment the optional columns the file has,",
        "# then run `talent sources check <sources folder>`.",
    ]
    if unused:
        lines.append("# Columns of the file no rule reads yet:")
        lines += [f"#   {_q(h)}" for h in unused[:60]]
    formats: dict[str, list[str]] = {}
    for g in guesses:
        for kind, found in g.formats.items():
            formats.setdefault(kind, [])
            formats[kind] += [f for f in found if f not in formats[kind]]
    lines += [
        f"name: {name}",
        f"vendor: {_q(name)}  # the tool that writes this export: its files' source system",
        f"title: {_q(f'{name} export (a profile started by talent sources init-profile)')}",
        f"folder: {folder}",
        f"documentation: {_q(f'Started from {file_name} by talent sources init-profile.')}",
        "# the file is recognised when its header has all of these columns",
        f"recognise: [{', '.join(_q(h) for h in _recognising(guesses, header))}]",
    ]
    if skip:
        lines.append(f"skip_rows: {skip}  # line 2 holds the field labels, not a record")
    if formats:
        lines.append("formats:")
        lines += [f"  {k}: [{', '.join(_q(f) for f in v)}]" for k, v in formats.items()]
    lines.append("outputs:")
    for g in guesses:
        lines += [f"  {g.export}:", "    columns:"]
        for col in EXPORTS[g.export].columns:
            lines += _column_lines(g, col)
    return "\n".join(lines) + "\n"


@dataclass
class Draft:
    """A starting profile and what went into it."""

    name: str
    text: str
    guesses: list[Guess]
    skip_rows: int
    target: Path


SYSTEM_FOLDERS = tuple(dict.fromkeys(e.folder for e in EXPORTS.values()))


def profile_target(path: Path, name: str) -> Path:
    """Where a starting profile for `path` goes: `<sources>/profiles/` when the file sits in
    a system folder of a sources folder, else next to the file."""
    if path.parent.name in SYSTEM_FOLDERS:
        return path.parent.parent / "profiles" / f"{name}.yaml"
    return path.parent / f"{name}.yaml"


def starting_profile(
    path: Path,
    exports: list[str] | None = None,
    name: str | None = None,
    profiles: dict[str, Profile] | None = None,
) -> Draft:
    """Read a delivered file and guess a profile for it (see the module docstring); raise
    FileError when the file cannot be read, ValueError for exports of different folders."""
    import yaml

    from pipelines.lib.ingest.profiles import parse_profile
    from pipelines.lib.ingest.reader import read_table
    from pipelines.lib.ingest.vendor import skip_rows

    profiles = load_profiles(path.parent.parent) if profiles is None else profiles
    table = read_table(path.read_bytes(), path.name)
    folder = path.parent.name if path.parent.name in SYSTEM_FOLDERS else None
    if not exports:
        exports = suggest_exports(table.header, folder or "hris", profiles)
    if not exports:
        raise ValueError(
            f"none of the columns of {path.name} is a spelling of a required column the project "
            "knows, so the export it holds cannot be guessed: name it with --export (one of "
            f"{', '.join(folder_exports(folder or 'hris'))})"
        )
    folders = {EXPORTS[e].folder for e in exports}
    if len(folders) != 1:
        raise ValueError(
            f"one profile reads one folder: {', '.join(exports)} are in different ones"
        )
    folder = folders.pop()
    skip = int(label_row(table, guess_columns(table.header, exports[0], profiles), exports[0]))
    table = skip_rows(table, skip)
    guesses = [guess(table, e, profiles) for e in exports]
    name = name or slug(path.stem)
    text = render_profile(name, path.name, folder, guesses, table.header, skip)
    parse_profile(yaml.safe_load(text), f"the starting profile for {path.name}")
    return Draft(name, text, guesses, skip, profile_target(path, name))


def mapping_advice(header: list[str], path: Path, profiles: dict[str, Profile] | None) -> str:
    """How to map a file no profile reads: the command that starts a profile, sources.yml,
    the README section, and the check to run after."""
    folder, sources = path.parent.name, path.parent.parent
    exports = suggest_exports(header, folder, profiles)
    command = f"talent sources init-profile {shlex.quote(str(path))}" + "".join(
        f" --export {e}" for e in exports or ["EXPORT"]
    )
    which = (
        ""
        if exports
        else " (EXPORT: the export the file holds, one of "
        f"{', '.join(folder_exports(folder)) or ', '.join(EXPORTS)}; none of its columns is a "
        "spelling the project knows)"
    )
    return (
        f"If it is a tool's export, map its columns once: `{command}`{which} writes a starting "
        f"profile to {sources / 'profiles'}/ with the columns it can guess and a TODO for each "
        f"one left to you; or name a profile that reads it in {sources / 'sources.yml'} "
        '(files: {"' + path.name + '": {profile: <name>}}). How: '
        f"{README_SECTION}. Then run `talent sources check {shlex.quote(str(sources))}`"
    )


def unmatched_note(
    rec: Recognition, header: list[str], path: Path, profiles: dict[str, Profile] | None = None
) -> str:
    """Why a file is not read, the closest profile ranked by the columns that matter, and how
    to map it."""
    note = rec.reason
    closest = rec.closest
    if closest is not None:
        export, read, missed = coverage(closest.profile, header)
        lacks = ", ".join(closest.missing) or "nothing it recognises by"
        note += (
            f"; closest profile {closest.profile.name} lacks {lacks} (it reads {len(read)} of "
            f"the {len(read) + len(missed)} columns {export} needs from this header)"
        )
    if rec.ambiguous:
        return note
    return f"{note}. {mapping_advice(header, path, profiles)}"


def describe_draft(draft: Draft, file: Path, target: Path) -> str:
    """What `talent sources init-profile` prints: what was guessed, what is left, what next."""
    out = [f"Wrote {target}: a starting profile ({draft.name}) for {file.name}."]
    todo = 0
    for g in draft.guesses:
        export = EXPORTS[g.export]
        out.append(
            f"{g.export}: {len(g.required_found)} of {len(export.required_columns)} required "
            "columns guessed"
        )
        out += [f"    {c} <- {_q(src)}" for c, src in g.columns.items()]
        for col in g.required_missing:
            todo += 1
            out.append(f"    {col}: TODO (required; no column of the file looks like it)")
        for col, value_map in g.maps.items():
            left = [k for k, v in value_map.items() if v.startswith(TODO)]
            todo += len(left)
            if left:
                out.append(f"    {col}: TODO map {', '.join(_q(v) for v in left)} onto our values")
    kinds = {k: f for g in draft.guesses for k, f in g.formats.items()}
    for kind, found in kinds.items():
        out.append(f"{kind}s read as {', '.join(found)} (sniffed from the values)")
    if draft.skip_rows:
        out.append("line 2 holds field labels, not a record: the profile skips it (skip_rows: 1)")
    if any(
        c.type == "date" and c.absent_warning
        for g in draft.guesses
        for c in EXPORTS[g.export].columns
        if c.name not in g.columns
    ):
        out.append(
            "no termination column recognised: if the file has one (the last day worked), "
            "uncomment termination_date and name it; without one, people who left will look "
            "employed"
        )
    sources = target.parent.parent if target.parent.name == "profiles" else None
    check = (
        f"talent sources check {shlex.quote(str(sources))}"
        if sources
        else ("talent sources check <sources folder>")
    )
    out.append("Next:")
    step = 1
    if todo:
        out.append(
            f'  {step}. Open {target} and replace each "{TODO}" ({todo} left) with the name of '
            "the file's column that holds it, or a rule (constant, map, template: see "
            f"{README_SECTION}); check the guesses."
        )
        step += 1
    if sources is None:
        out.append(f"  {step}. Move it into the profiles/ folder of your sources folder.")
        step += 1
    out.append(f"  {step}. Set `vendor:` to the tool's name (its files' source system).")
    out.append(f"  {step + 1}. Run `{check}`: it shows how every row of the file is read.")
    return "\n".join(out)
