"""Render `sources/README.md` from the export contracts, so the documentation cannot drift.

python -m tools.contract_docs           # rewrite sources/README.md
python -m tools.contract_docs --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipelines.lib.contracts import EXPORTS, PLAN_INPUTS, Column, Export
from pipelines.lib.ingest.profiles import Profile, Rule, load_profiles
from pipelines.lib.ingest.reader import FALSE_WORDS, TRUE_WORDS

PROJECT_ROOT = Path(__file__).resolve().parents[1]
README_PATH = PROJECT_ROOT / "sources" / "README.md"

TYPE_TEXT = {
    "string": "text",
    "date": "date",
    "timestamp": "timestamp",
    "integer": "integer",
    "decimal": "decimal",
    "boolean": "yes/no",
    "month": "month",
}

INTRO = f"""# Export files: what talent-metrics reads

<!-- Generated from pipelines/lib/contracts.py by `python -m tools.contract_docs`.
     Do not edit by hand: change the contracts and run the command again. -->

A sources folder holds one sub-folder per source system: `hris/`, `lms/`, `incidents/`,
`fleet/`, `changes/`, `recruiting/` (and `plans/`, what the workforce planner reads: see
[plans](#plans)). Every file in those six is a delivery: a CSV or tab-separated file (`.csv`, `.tsv`) or an
Excel workbook (`.xlsx`, first sheet). Two kinds are read:

- **The tools' own exports, under the names the tools gave them** ("Employee Report.csv",
  "incidents.csv"): recognised from the header by a vendor profile (see
  [Vendor exports](#vendor-exports)) and mapped onto the exports below. The period is taken
  from a date in the file name (`YYYY-MM` or `YYYY-MM-DD`), else from `sources.yml`, else from
  the data (the latest date of the export's dating columns); the load report says which.
- **Our own format**, one export per file named

      <export>_<period>[_v<N>].csv        e.g. employees_2024-03.csv, incidents_2024-03-31_v2.csv

  where `<period>` is `YYYY-MM` (a monthly delivery) or `YYYY-MM-DD` (a daily delivery) and
  `_v<N>` is the delivery version (1 when absent). A file in this format under another name is
  recognised from its header too, and a tool's export saved under one of these names
  (`hris/employees_2024-09.csv` holding a BambooHR report) is read with the profile its header
  matches, its period and version taken from the name, and labelled with that tool as its
  source system, also when our contract's aliases would read it (a Personio list with
  `Personalnummer`, `Vorname`, ... is Personio's). A header with our own column names is ours.

A file that matches nothing (neither the contract its name gives nor a profile) is not loaded
and is listed with the closest profile, the columns it lacks, and how to map the file (`talent
sources init-profile`, see [Your own profiles](#your-own-profiles-and-sourcesyml)). `talent sources check
<folder>` shows all of this without loading anything.
Only `employees` is required; what a missing export means is named in the check, the run
summary, `marts.source_deliveries` and the report's first page. Without `job_history` the
division scope cannot be applied: every employee counts and teams, roles and levels show as
`unknown` (role requirements then count as unknown, not as met).

## How deliveries are loaded

- **Exactly once.** A file is identified by the SHA-256 of its bytes. Loading the same folder
  again changes nothing; the same bytes under another name are recorded as a `duplicate` and
  loaded no second time. Every delivered file is archived unchanged under
  `archive/<export>/<sha256>.csv` in the warehouse folder (encrypted when
  `TALENT_ARCHIVE_KEY` is set), and the raw layer can be rebuilt from that archive. Two
  things change an archive copy, each recorded in the manifest (`archive_sha256`, the copy's
  new hash; the delivered file's hash stays its identity): `talent erase` and the retention
  policy write it again without a person's rows or with their names replaced, and, while an
  erasure stands, a new delivery is archived without the erased person's rows (the manifest's
  `message` counts the rows left out on arrival).
- **Delivery series.** A file belongs to the series (export, source system, period): the
  source system is the tool that wrote it (its profile's vendor, `talent-metrics` for our own
  format), the period the one its name, `sources.yml` or its data gives. A vendor file that
  feeds two exports (PagerDuty's incidents and responders, BambooHR's employees and job
  history) has one period for both and changes status in both at once.
- **Corrections supersede within their series.** A later delivery of the same series (a higher
  `_vN`, or new content under the same name) replaces the earlier one: the earlier file's rows
  stop counting but stay in the history (`superseded` in the manifest). A lower version
  arriving after a higher one is kept as superseded straight away.
- **Two tools, one export.** Files of one export from two tools (a ServiceNow `incident.csv`
  beside a PagerDuty `incidents.csv`; BambooHR beside Personio during an HRIS migration; the
  same people in BambooHR, Personio and Workday) are two series: neither replaces the other,
  both count, and a record both describe (the same natural key: incident number, employee id
  and hire date, ...) counts once. Of a later period, the later row counts. For the same period
  the tools' rows are reconciled, never a failed run: rows alike are one row; when their
  contract values differ, the row of the tool `sources.yml` ranks first counts, by
  `precedence` (a list of tools for an export or a folder), else `system_of_record` (one tool),
  else the row of the latest delivery (the file loaded last); the other row stays in the raw
  layer. A column a tool's file leaves empty in every row is one that tool does not export: it
  is not compared, and the kept row is taken whole. `marts.source_conflicts` counts, per export,
  column, pair of tools and resolution, the records both tools describe and those whose values
  differ (counts only, no person or value). The run summary and `marts.source_deliveries` name
  the tools of every export.
- **Changed records.** Across periods the row of the latest period wins per natural key (the
  key columns below): a spell delivered at hire and again at termination keeps the termination.
- **Bad rows are quarantined, not dropped.** A row with a bad date or number, a value outside
  its list, a missing required value or the wrong number of fields goes to the quarantine with
  its physical line number (header = line 1) and a reason naming the column and the value; the
  rest of the file loads. So does a row that breaks one of the blocking row rules of
  `docs/data-quality.md` (dates out of order: a termination before the hire, an award that
  expires on or before its issue date, an incident resolved before it opened; a number out of
  its range: a negative cost, downtime or GPU count, a skill level outside 1-5): the reason
  starts with the rule's name (`issued_on_before_expires_on: issued_on "2023-09-01" is not
  before expires_on "2023-09-01" (...)`). The load and `talent sources check` judge every row
  by the same rules, and one bad row never stops a run; a file that loses more than 10 % of its
  rows (and at least 5) to the quarantine, or one natural key with two contents inside one
  file, still does. A file that cannot be read as a whole (empty, not decodable, header
  without a required column, header cut off) is recorded as `failed`, loads nothing, and the
  load reports it by name; other files still load. A NUL byte quarantines its row; dates
  before 1970 or more than a year after the load date (ten years for expiry dates) are
  quarantined as implausible.
- **Re-deliveries may not shrink silently.** A delivery that would supersede one holding
  rows but keeps fewer than half of them (a header-only `_v2`, a cut-off export) is blocked:
  recorded as `failed` with the reason, and the earlier delivery still counts; a vendor file is
  blocked in every export it feeds when any of them shrinks so. If the smaller delivery is
  right, say so in `sources.yml` (`files: {{<name>: {{allow_shrink: true}}}}`). One that keeps
  at least half but noticeably fewer (under 80 %, `notice_redelivery_share`) is loaded and
  named in the run summary with both files and the share (manifest columns `replaced_rows`,
  `replaced_files`).
- **Files being written are not read.** A file changed less than `TALENT_SETTLE_SECONDS`
  (default 30) ago is watched until it is that old, by the sensor and by `talent run` alike
  (the run says it is waiting); one still changing then, a temporary copy name (`.part`, `.tmp`,
  `.crdownload`), a folder or a dangling link is named in the load report and not loaded.
- **The same bytes as two exports** (one vendor file feeding two exports) are two deliveries:
  a `duplicate` is only the same bytes again for the same export.

## Format

- **Header** on line 1. Column names are matched case-insensitively, also under the aliases
  listed below (German HRIS and vendor spellings). Column order does not matter. Columns the
  contract does not know are kept as a JSON object (`_extra`) and not used. Optional columns
  may be left out entirely.
- **Encoding**: UTF-8, with or without byte-order mark; Windows-1252 where the export lists it.
- **Delimiter**: `,`, `;`, `|` or tab, detected from the header. Line ends `LF` or `CRLF`. Values
  containing the delimiter, quotes or line breaks are quoted with `"` (quotes doubled inside).
- **Locale**, detected per file where the export allows it:
  - `en`: decimal point (`1234.5`, grouping `1,234.5` accepted), dates `YYYY-MM-DD`,
    timestamps `YYYY-MM-DD HH:MM[:SS]` (a trailing `Z` or `+HH:MM` is converted to UTC),
    months `YYYY-MM`;
  - `de`: decimal comma (`1234,5`, grouping `1.234,5` accepted), dates `DD.MM.YYYY`,
    timestamps `DD.MM.YYYY HH:MM[:SS]`, months `MM.YYYY`; ISO forms are accepted too.
- **Values** are trimmed; an empty value means "not set". Yes/no columns accept
  {"/".join(TRUE_WORDS)} and {"/".join(FALSE_WORDS)} (any case). Listed values are matched
  after trimming and lower-casing.
- **Termination date** (`employees.termination_date`) is the **last day worked**: the person
  is employed on that date and not on the day after.
- **Personal** columns (names, e-mails, salaries) stay in the restricted raw layer; the
  analyst-facing warehouse holds people only under a keyed pseudonym.
"""


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def column_row(col: Column) -> str:
    meaning = col.description
    if col.values:
        meaning = (
            (meaning + "; " if meaning else "")
            + "one of "
            + ", ".join(f"`{v}`" for v in col.values)
        )
    aliases = ", ".join(f"`{a}`" for a in col.aliases)
    return (
        f"| `{col.name}` | {TYPE_TEXT[col.type]} | {'yes' if col.required else 'no'} | "
        f"{'yes' if col.personal else 'no'} | {_cell(aliases)} | {_cell(meaning)} |"
    )


def export_section(export: Export) -> str:
    locales = ", ".join(f"`{loc}`" for loc in export.locales)
    encodings = ", ".join(f"`{enc}`" for enc in export.encodings)
    lines = [
        f"### `{export.name}`",
        "",
        export.description,
        "",
        f"- File: `{export.folder}/{export.name}_<period>[_v<N>].csv`",
        f"- Natural key: {', '.join(f'`{k}`' for k in export.key)}",
        f"- Encodings: {encodings}; locales: {locales}",
        "",
        "| column | type | required | personal | also accepted as | meaning |",
        "|---|---|---|---|---|---|",
        *(column_row(c) for c in export.columns),
        "",
    ]
    return "\n".join(lines)


PLANS_INTRO = """## `plans/`

Planning inputs, not deliveries: the workforce planner (`talent plan`, `marts.workforce_plan`)
reads them whole each time it runs; the load does not archive them and they have no period or
version. They are checked row by row like the exports above: every bad row is named with its
file, line (row for YAML) and the reason, and a file with a bad row is refused as a whole, so
that no plan rests on part of a fleet plan. A cluster planned twice for one quarter is refused.
"""


def plan_input_section(export: Export) -> str:
    """A planning input: one file, CSV (the format above) or YAML, with the same columns."""
    lines = [
        f"### `{export.name}`",
        "",
        export.description,
        "",
        f"- File: `{export.folder}/{export.name}.csv` or `{export.folder}/{export.name}.yaml`",
        f"- Key: {', '.join(f'`{k}`' for k in export.key)} (each pair once)",
        "",
        "| column | type | required | personal | also accepted as | meaning |",
        "|---|---|---|---|---|---|",
        *(column_row(c) for c in export.columns),
        "",
    ]
    return "\n".join(lines)


VENDOR_INTRO = """## Vendor exports

A profile maps one tool's export onto the exports above; it is data
(`pipelines/lib/ingest/profiles/*.yaml`), not code. A file is recognised when its header has
all of the profile's recognising columns (`A | B`: either spelling); when several profiles
fit, the one reading most of the file's columns wins, and a tie is an error naming the
candidates. Vendor values are read through the profile: its date formats (ISO dates and
timestamps with a zone are always accepted), value maps (termination reasons, badge names,
priorities; a value the map does not list is kept and checked by the contract, or replaced by
the map's `default`), constants and templates. No incident tool exports `cluster`,
`gpus_affected` or `downtime_minutes`: the cluster is the service, or the service's entry in
`service_clusters` of `sources.yml`; downtime is opened to resolved.

### Your own profiles and `sources.yml`

A file whose header matches no profile is not loaded; the load and `talent sources check`
name the closest profile (the one reading most of the columns that matter: the export's
required and key columns) and what it lacks, and say how to map the file. To map a tool's
export the project has no profile for:

1. `talent sources init-profile <sources>/hris/"Roster.csv" --export employees` (repeat
   `--export` for a file that feeds several exports, e.g. `--export job_history`; without it
   the exports are guessed from the header, and when none of the header's columns is a
   spelling the project knows, the command asks for `--export` and names the folder's exports)
   writes a starting profile to
   `<sources>/profiles/<name>.yaml` (`--name`, `--output` to choose; next to the file when it
   is not in a sources folder). Each of our columns is mapped to the file's column whose name
   is ours, one of its aliases above, a spelling a shipped profile reads, or a common one
   ("Associate ID", "Start Date", ...), compared without case, blanks and punctuation; date
   formats are sniffed from the values; value maps are taken from the shipped profiles; a
   second header row of field labels is skipped (`skip_rows`). The command prints each guess.
2. Open the profile and check the guesses. Replace each `"TODO"` with the name of the file's
   column that holds that value (`last_name: {column: "Family name"}`), or with a rule
   (a constant `{value: employee}`, a `template`, a `map`; the keys are below). A value map
   entry marked TODO wants one of our values (`"Resigned": voluntary`). Optional columns are
   listed commented out: uncomment those the file has. Set `vendor` to the tool's name: it is
   the source system of the file's deliveries.
3. Run `talent sources check <sources>`: it shows how each file is read and why a row would be
   quarantined (a date in another format names the value). Fix the profile until it reads
   what you expect, then run.

A profile in `<sources>/profiles/<name>.yaml` with the same `name` as a shipped profile
replaces it (a badge map with your templates, another date format), a new name adds one; its
`vendor` is the source system its files belong to. Profile keys: `name`, `vendor`, `title`,
`folder`, `documentation`, `recognise` (header columns that must all be present; `A | B`
accepts either), `formats` (`date:` / `timestamp:` strptime formats for every such column),
`locale`, `skip_rows` (lines under the header that are not records, e.g. the field labels
SuccessFactors writes on line 2) and `outputs` (per export, `columns:` one rule per column of
ours). Rule keys: `column` / `columns` (first
non-empty wins), `value` (constant, used when the columns are absent or empty), `template`
(`"{Course Code}:{Username}"`), `file_name` (regex with a `value` group), `extract` (regex
with a `value` group applied to the value read: `gres/gpu=(?P<value>\\d+)`; no match = not
set), `map` and `default`, `format` (strptime formats, `epoch` or `epoch_ms` for dates and
timestamps; `duration` reads `[days-]hours:minutes:seconds` into hours), `split` (one row per
list item), `from_service`,
`full_name` with `part: first|last` (and `name_order: first last|last first`; "Last, First"
is split at the comma) for a report with one name column, and `when` (checked first: a list of
`{column: ..., in: [values]}` or `{column: ..., set: true|false}` with the rule to use `then`).

Names are only used to link incident responders to people by their full name, which joins
first and last name again: a split full name links the same as the two columns would (a
one-word name is both parts).

Map values may be empty: `map: {"-": ""}` reads a placeholder as "not set" (Moodle's "-" for a
grade not given yet). An employees export without a termination column loads with a warning
(load report, run summary, `talent sources check`): people who left would look employed.

`<sources>/sources.yml` settles what a header cannot: the profile of a file (a file whose
header fits no profile, or two equally, is read with the profile it names), its period, the
incident service to cluster map, re-deliveries that may shrink.

```yaml
# <sources>/sources.yml
files:                                   # by file name or glob (folder/name also matches)
  "Employee Report.csv": {profile: bamboohr, period: 2024-06}
  "gpu_fleet_2024-03_v2.csv": {allow_shrink: true}
service_clusters:                        # incident service -> cluster (team) name
  GPU Cluster MUC-1: dgx-muc-1
min_redelivery_share: 0.5                # re-deliveries keeping less than this are blocked
notice_redelivery_share: 0.8             # ... less than this load and are named in the summary
system_of_record:                        # per folder or export: whose row counts when two
  hris: Workday                          #   tools deliver one record for the same period
precedence:                              # per folder or export: a whole order, first wins
  incidents: [ServiceNow, PagerDuty]     #   (overrides system_of_record there)
```

Tools are named as their profile's `vendor` (any case; `talent-metrics` is our own format).
Changing `system_of_record` or `precedence` rebuilds the staging models in full on the next
run.
"""


def _rule_text(rule: Rule, formats: tuple[str, ...] = ()) -> str:
    """What a rule reads, in order: columns, a full name's part, template, file name, constant;
    then its map, formats (unless `formats`, the enclosing rule's, say the same) and `when`s."""
    parts = []
    if rule.columns:
        parts.append(" or ".join(f"`{c}`" for c in rule.columns))
    if rule.full_name:
        names = " or ".join(f"`{c}`" for c in rule.full_name)
        order = f" ({rule.name_order})" if rule.name_order != "first last" else ""
        parts.append(f"the {rule.part} name of the full name in {names}{order}")
    if rule.template:
        parts.append(f"`{rule.template}`")
    if rule.file_name:
        parts.append(f"file name `{rule.file_name}`")
    if rule.by_position:
        parts.append("by position: " + ", ".join(f"`{v}`" for v in rule.by_position))
    if rule.value is not None:
        parts.append(f"constant `{rule.value}`")
    text = ", else ".join(parts)
    if rule.extract:
        text += f"; the part `{rule.extract}` matches"
    if rule.map:
        shown = ", ".join(f"{k} -> {v or '(no value)'}" for k, v in rule.map.items())
        text += f"; map {shown}" + (f"; else {rule.map_default}" if rule.map_default else "")
    if rule.formats and rule.formats != formats:
        text += "; format " + ", ".join(f"`{f}`" for f in rule.formats)
    if rule.split:
        text += f"; one row per item (split at `{rule.split}`)"
    if rule.plus_seconds:
        text += f"; plus the seconds in `{rule.plus_seconds}`"
    if rule.from_service:
        text += "; through `service_clusters`"
    for cond, alt in rule.when:
        cols = " or ".join(f"`{c}`" for c in cond.columns)
        if cond.is_set is not None:
            test = "is set" if cond.is_set else "is empty"
        else:
            test = "is " + " or ".join(f"`{v}`" for v in sorted(cond.values or ()))
        text += f"; when {cols} {test}: {_rule_text(alt, rule.formats)}"
    return _cell(text)


def profile_section(profile: Profile) -> str:
    lines = [
        f"### {profile.title} (`{profile.name}`)",
        "",
        profile.documentation,
        "",
        f"- Folder `{profile.folder}/`; recognised by "
        + ", ".join(f"`{h}`" for h in profile.recognise),
        f"- Feeds: {', '.join(f'`{e}`' for e in profile.exports)}",
        "",
    ]
    for output in profile.outputs:
        lines += [f"| `{output.export}` column | read from |", "|---|---|"]
        lines += [f"| `{c}` | {_rule_text(r)} |" for c, r in output.rules.items()]
        lines.append("")
    return "\n".join(lines)


def render_readme() -> str:
    by_folder: dict[str, list[Export]] = {}
    for export in EXPORTS.values():
        by_folder.setdefault(export.folder, []).append(export)
    parts = [INTRO]
    for folder, exports in by_folder.items():
        parts += [f"## `{folder}/`", ""]
        parts += [export_section(e) for e in exports]
    parts.append(PLANS_INTRO)
    parts += [plan_input_section(e) for e in PLAN_INPUTS.values()]
    parts.append(VENDOR_INTRO)
    vendor = [p for p in load_profiles().values() if not p.name.startswith("contract-")]
    order = {"hris": 0, "lms": 1, "incidents": 2, "fleet": 3, "changes": 4, "recruiting": 5}
    for profile in sorted(vendor, key=lambda p: (order.get(p.folder, 9), p.name)):
        parts.append(profile_section(profile))
    return "\n".join(parts).rstrip() + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    text = render_readme()
    path = Path(README_PATH)
    if "--check" in args:
        current = path.read_text(encoding="utf-8") if path.exists() else ""
        if current != text:
            print(f"{path.name} is out of date: run python -m tools.contract_docs")
            return 1
        return 0
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    print(f"wrote {path.relative_to(PROJECT_ROOT)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
