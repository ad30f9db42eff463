"""Render `sources/README.md` from the export contracts, so the documentation cannot drift.

python -m tools.contract_docs           # rewrite sources/README.md
python -m tools.contract_docs --check   # exit 1 when it is out of date
"""

from __future__ import annotations

import sys
from pathlib import Path

from pipelines.lib.contracts import EXPORTS, Column, Export
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
`fleet/`. Every file in it is a CSV delivery of one export named

    <export>_<period>[_v<N>].csv        e.g. employees_2024-03.csv, incidents_2024-03-31_v2.csv

where `<period>` is `YYYY-MM` (a monthly delivery) or `YYYY-MM-DD` (a daily delivery) and
`_v<N>` is the delivery version (1 when absent). A file whose name matches no export below is
not loaded and is listed as an unknown file in the load report: rename it to load it.

## How deliveries are loaded

- **Exactly once.** A file is identified by the SHA-256 of its bytes. Loading the same folder
  again changes nothing; the same bytes under another name are recorded as a `duplicate` and
  loaded no second time. Every delivered file is archived unchanged under
  `archive/<export>/<sha256>.csv` in the warehouse folder, and the raw layer can be rebuilt
  from that archive.
- **Corrections supersede.** A later delivery for the same export and period (a higher `_vN`,
  or new content under the same name) replaces the earlier one: the earlier file's rows stop
  counting but stay in the history (`superseded` in the manifest). A lower version arriving
  after a higher one is kept as superseded straight away.
- **Changed records.** Across periods the row of the latest period wins per natural key (the
  key columns below): a spell delivered at hire and again at termination keeps the termination.
- **Bad rows are quarantined, not dropped.** A row with a bad date or number, a value outside
  its list, a missing required value or the wrong number of fields goes to the quarantine with
  its physical line number (header = line 1) and a reason naming the column and the value; the
  rest of the file loads. A file that cannot be read as a whole (empty, not decodable, header
  without a required column, header cut off) is recorded as `failed`, loads nothing, and the
  load reports it by name; other files still load.

## Format

- **Header** on line 1. Column names are matched case-insensitively, also under the aliases
  listed below (German HRIS and vendor spellings). Column order does not matter. Columns the
  contract does not know are kept as a JSON object (`_extra`) and not used. Optional columns
  may be left out entirely.
- **Encoding**: UTF-8, with or without byte-order mark; Windows-1252 where the export lists it.
- **Delimiter**: `,` or `;`, detected from the header. Line ends `LF` or `CRLF`. Values
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


def render_readme() -> str:
    by_folder: dict[str, list[Export]] = {}
    for export in EXPORTS.values():
        by_folder.setdefault(export.folder, []).append(export)
    parts = [INTRO]
    for folder, exports in by_folder.items():
        parts += [f"## `{folder}/`", ""]
        parts += [export_section(e) for e in exports]
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
