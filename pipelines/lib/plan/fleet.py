"""The fleet plan: planned GPUs per cluster and quarter (contract `PLAN_INPUTS["fleet_plan"]`).

Read from `<sources>/plans/fleet_plan.csv` or `.yaml` (or a file named on the command line)
and checked row by row like an export: each bad row is named by file, line and reason, and a
file with a bad row is refused as a whole (a plan built on part of a fleet plan would understate
the team it needs). The same file read twice gives the same plan.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from pathlib import Path

import yaml

from pipelines.lib.contracts import PLAN_INPUTS, QUARTER, Export
from pipelines.lib.ingest.reader import (
    FileError,
    decode_text,
    detect_delimiter,
    header_lookup,
    normalise_header,
)

FLEET_PLAN: Export = PLAN_INPUTS["fleet_plan"]
FILE_NAMES = ("fleet_plan.csv", "fleet_plan.yaml", "fleet_plan.yml")
WRONG_FIELDS = "\0fields"  # key of a CSV row whose field count is not the header's


class PlanInputError(ValueError):
    """A planning input cannot be used; the message names the file, the rows and the fix."""


@dataclass(frozen=True)
class FleetRow:
    cluster: str
    quarter: str  # YYYY-Qn
    planned_gpus: int
    line: int


def quarter_key(text: str) -> str | None:
    """`2027-Q1`, `2027Q1`, `2027-q1` -> `2027-Q1`; None when it is not a quarter."""
    m = QUARTER.match(text.strip())
    return f"{m['year']}-Q{m['quarter']}" if m else None


def find_fleet_plan(sources_dir: Path) -> Path:
    """`<sources>/plans/fleet_plan.csv` (or .yaml); PlanInputError naming where it looked."""
    for name in FILE_NAMES:
        path = Path(sources_dir) / FLEET_PLAN.folder / name
        if path.is_file():
            return path
    raise PlanInputError(
        f"no fleet plan in {Path(sources_dir) / FLEET_PLAN.folder}: put the planned GPUs per "
        f"cluster and quarter in {FLEET_PLAN.folder}/fleet_plan.csv (columns "
        f"{', '.join(FLEET_PLAN.required_columns)}; see sources/README.md), or name a file "
        "with --fleet-plan."
    )


def _records(path: Path) -> list[tuple[int, dict[str, str]]]:
    """(line, {contract column: text}) per row; FileError when the file is unreadable."""
    data = path.read_bytes()
    if path.suffix.lower() in (".yaml", ".yml"):
        return _yaml_records(data, path.name)
    text, _ = decode_text(data, FLEET_PLAN.encodings, path.name)
    lines = text.splitlines()
    reader = csv.reader(io.StringIO(text), delimiter=detect_delimiter(lines[0]))
    header = next(reader)
    lookup = header_lookup(FLEET_PLAN)
    names = [lookup.get(normalise_header(h)) for h in header]
    missing = [c for c in FLEET_PLAN.required_columns if c not in names]
    if missing:
        raise FileError(
            f"{path.name}: the header has no column {', '.join(missing)} (it has "
            f"{', '.join(header)}); the fleet plan needs {', '.join(FLEET_PLAN.required_columns)}."
        )
    out = []
    for values in reader:
        if not any(v.strip() for v in values):
            continue
        row = {n: v for n, v in zip(names, values, strict=False) if n}
        if len(values) != len(header):
            row[WRONG_FIELDS] = f"{len(values)} fields, the header has {len(header)}"
        out.append((reader.line_num, row))
    return out


def _yaml_records(data: bytes, name: str) -> list[tuple[int, dict[str, str]]]:
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as exc:
        raise FileError(f"{name}: not valid YAML ({exc}).") from exc
    rows = doc.get("clusters") if isinstance(doc, dict) else None
    if not isinstance(rows, list):
        raise FileError(
            f"{name}: expected a list of rows under `clusters:` (each with "
            f"{', '.join(FLEET_PLAN.required_columns)})."
        )
    lookup = header_lookup(FLEET_PLAN)
    out = []
    for i, row in enumerate(rows, start=1):
        items = row.items() if isinstance(row, dict) else ()
        mapped = {lookup.get(normalise_header(str(k)), ""): str(v) for k, v in items}
        out.append((i, mapped))
    return out


def _check(values: dict[str, str]) -> tuple[FleetRow | None, str]:
    """The typed row, or a reason naming the column and the value."""
    if WRONG_FIELDS in values:
        return None, f"{values[WRONG_FIELDS]}; quote a value holding the delimiter"
    for col in FLEET_PLAN.required_columns:
        if not values.get(col, "").strip():
            return None, f"{col} is empty; every row needs {col}"
    quarter = quarter_key(values["quarter"])
    if quarter is None:
        return None, f"quarter {values['quarter']!r} is not a quarter; write YYYY-Qn (2027-Q1)"
    text = values["planned_gpus"].strip().replace(",", "")
    if not text.isdigit():
        return None, f"planned_gpus {values['planned_gpus']!r} is not a whole number of GPUs >= 0"
    return FleetRow(values["cluster"].strip(), quarter, int(text), 0), ""


def read_fleet_plan(path: Path) -> list[FleetRow]:
    """Every row of the fleet plan, or PlanInputError listing each bad row (file, line, reason)."""
    path = Path(path)
    try:
        records = _records(path)
    except FileError as exc:
        raise PlanInputError(str(exc)) from exc
    rows: list[FleetRow] = []
    problems: list[str] = []
    seen: dict[tuple[str, str], int] = {}
    where = "row" if path.suffix.lower() in (".yaml", ".yml") else "line"
    for line, values in records:
        row, reason = _check(values)
        if row is not None and (row.cluster, row.quarter) in seen:
            first = seen[(row.cluster, row.quarter)]
            reason = (
                f"{row.cluster} {row.quarter} is planned twice (also {where} {first}); keep one"
            )
            row = None
        if row is None:
            problems.append(f"{path.name} {where} {line}: {reason}")
            continue
        seen[(row.cluster, row.quarter)] = line
        rows.append(FleetRow(row.cluster, row.quarter, row.planned_gpus, line))
    if problems:
        raise PlanInputError(
            "the fleet plan has rows that cannot be used; correct them and plan again:\n  "
            + "\n  ".join(problems)
        )
    if not rows:
        raise PlanInputError(
            f"{path.name}: the fleet plan has no rows; add one per cluster and quarter."
        )
    return rows
