"""The assumptions file: every figure the ROI model needs that the data does not supply.

Kept in one versioned YAML file (`sources/scenarios/assumptions.yaml`) so that a reviewer can see
where each number comes from and a customer can change it without touching code. Loading
validates every entry and names the file and key of anything wrong, because a silently wrong
assumption would move every ROI figure.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml

from pipelines.lib.project_files import default_assumptions_file

# The product's own file; a run passes Settings.assumptions_file (TALENT_ASSUMPTIONS).
DEFAULT_ASSUMPTIONS_PATH = default_assumptions_file()

REQUIRED_FIELDS = ("unit", "source", "low", "base", "high")
# Where a figure comes from, as the report's inputs table names it: the domain document
# (seed-facts.md), a published study (named in `source`, with the range it supports in
# `published_range`), or an estimate nobody has measured yet.
SOURCE_TYPES = {
    "domain": "domain document",
    "study": "published study",
    "estimate": "estimate",
    # the company's own figure (e.g. finance's cost of a GPU-hour), which a named owner states
    # in the assumptions file (`owner:`, `set_on:`): it prices a return as this company's data
    # do (roi.warehouse.measured_prices), never as an assumption whose range flips the verdict
    "company": "this company's own figure",
    # not in the assumptions file: a price the warehouse measured (roi.warehouse.measured_prices)
    "measured": "this company's data",
}


class RoiInputError(ValueError):
    """A scenario, assumption or mart the ROI model cannot use; the message says how to fix it."""


@dataclass(frozen=True)
class Assumption:
    name: str
    unit: str
    source: str
    low: float
    base: float
    high: float
    used_by: tuple[str, ...] = ("scenario", "warehouse")
    description: str = ""
    # where the base value came from when a scenario or the warehouse overrode it
    basis: str = "assumptions file"
    source_type: str = "estimate"  # a key of SOURCE_TYPES
    published_range: str = ""  # for a study: the range the publication supports
    file: str = ""  # the assumptions file it was read from, and its line there
    line: int | None = None
    # of a company figure (source_type company): who in the company states it, and when
    owner: str = ""
    set_on: str = ""

    @property
    def location(self) -> str:
        """`assumptions.yaml, line 12`: where a user changes the value."""
        if not self.file:
            return ""
        return f"{Path(self.file).name}, line {self.line}" if self.line else Path(self.file).name


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RoiInputError(
            f"{where}: expected a number, got {value!r}; write a plain number such as 0.2 or 300"
        )
    return float(value)


def _read(path: Path) -> tuple[Any, str]:
    try:
        text = path.read_text(encoding="utf-8")
        return yaml.safe_load(text), text
    except FileNotFoundError as exc:
        raise RoiInputError(
            f"{path}: assumptions file not found; pass the path of an assumptions YAML file"
        ) from exc
    except yaml.YAMLError as exc:
        raise RoiInputError(
            f"{path}: not valid YAML ({exc}); check indentation and colons"
        ) from exc


def key_lines(text: str, section: str, field: str) -> dict[str, int]:
    """Line (1-based) of `field` (e.g. `base`) in each entry under the top-level mapping
    `section` (the entry's own line when it has no such field), so that the report can say where
    a user changes a value. Uses PyYAML's node tree, which keeps the marks."""
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):
        return {}
    for key, value in root.value:
        if key.value != section or not isinstance(value, yaml.MappingNode):
            continue
        out = {}
        for k, v in value.value:
            inner = v.value if isinstance(v, yaml.MappingNode) else []
            mark = next((f.start_mark for f, _ in inner if f.value == field), k.start_mark)
            out[k.value] = mark.line + 1
        return out
    return {}


def _source_type(entry: dict, where: str) -> str:
    """The declared source type, or one read from the source text for files that predate the
    field: a seed-facts.md section is the domain document, anything else an estimate."""
    declared = entry.get("source_type")
    if declared is None:
        return "domain" if str(entry["source"]).startswith("seed-facts.md") else "estimate"
    if declared not in SOURCE_TYPES:
        raise RoiInputError(
            f"{where}, field 'source_type': {declared!r} is not one of "
            f"{', '.join(t for t in SOURCE_TYPES if t != 'measured')} (domain document, "
            "published study, estimate, the company's own figure with its owner)"
        )
    if declared == "measured":
        raise RoiInputError(
            f"{where}, field 'source_type': 'measured' is set by the warehouse for a price its "
            "data measure; a figure of the company's own (finance's, say) is 'company', with "
            "'owner:'"
        )
    if declared == "company" and not str(entry.get("owner") or "").strip():
        raise RoiInputError(
            f"{where}: a company figure needs 'owner:', the role or person in the company who "
            "states it (e.g. 'owner: Finance, infrastructure controlling'), and ideally "
            "'set_on:', the day they did"
        )
    if declared == "study" and not entry.get("published_range"):
        raise RoiInputError(
            f"{where}: a published study needs 'published_range:', the range the study supports "
            "(e.g. '0.5-2 x annual salary'), so a reader can check the low and high values"
        )
    return str(declared)


def load_assumptions(path: Path | str) -> dict[str, Assumption]:
    """Read and validate the assumptions file at `path` (the caller names it, e.g. from the
    settings; `DEFAULT_ASSUMPTIONS_PATH` is the project's own)."""
    path = Path(path)
    doc, text = _read(path)
    lines = key_lines(text, "assumptions", "base")
    entries = (doc or {}).get("assumptions") if isinstance(doc, dict) else None
    if not isinstance(entries, dict) or not entries:
        raise RoiInputError(
            f"{path}: expected a top-level 'assumptions:' mapping of name -> {{unit, source, low, base, high}}"
        )
    out: dict[str, Assumption] = {}
    for name, entry in entries.items():
        where = f"{path}, assumption '{name}'"
        if not isinstance(entry, dict):
            raise RoiInputError(f"{where}: expected a mapping with {', '.join(REQUIRED_FIELDS)}")
        missing = [f for f in REQUIRED_FIELDS if f not in entry]
        if missing:
            raise RoiInputError(
                f"{where}: missing {', '.join(missing)}; every assumption needs a unit, a source and low/base/high"
            )
        low, base, high = (
            _number(entry[k], f"{where}, field '{k}'") for k in ("low", "base", "high")
        )
        if not low <= base <= high:
            raise RoiInputError(f"{where}: needs low <= base <= high, got {low} / {base} / {high}")
        out[name] = Assumption(
            name=name,
            unit=str(entry["unit"]),
            source=str(entry["source"]),
            low=low,
            base=base,
            high=high,
            used_by=tuple(entry.get("used_by") or ("scenario", "warehouse")),
            description=str(entry.get("description", "")),
            source_type=_source_type(entry, where),
            published_range=str(entry.get("published_range") or ""),
            file=str(path),
            line=lines.get(name),
            owner=str(entry.get("owner") or "").strip(),
            set_on=str(entry.get("set_on") or "").strip(),
        )
    return out


def apply_overrides(
    assumptions: Mapping[str, Assumption], overrides: Mapping[str, Any], where: str
) -> dict[str, Assumption]:
    """Return the assumptions with base (and optionally low/high) replaced.

    An override is a number (the new base) or a mapping with `base` and optional `low`, `high`,
    `basis`, `note`. The range is widened to include a base outside it, so the sensitivity table
    still moves the assumption both ways.
    """
    out = dict(assumptions)
    for name, value in (overrides or {}).items():
        if name not in out:
            close = difflib.get_close_matches(str(name), list(out), n=1)
            hint = (
                f"; did you mean '{close[0]}'?"
                if close
                else f"; known assumptions: {', '.join(sorted(out))}"
            )
            raise RoiInputError(f"{where}: unknown assumption '{name}'{hint}")
        a = out[name]
        spec = value if isinstance(value, dict) else {"base": value}
        if "base" not in spec:
            raise RoiInputError(
                f"{where}, assumption '{name}': give 'base:' (and optionally low/high)"
            )
        base = _number(spec["base"], f"{where}, assumption '{name}', base")
        low = _number(spec.get("low", min(a.low, base)), f"{where}, assumption '{name}', low")
        high = _number(spec.get("high", max(a.high, base)), f"{where}, assumption '{name}', high")
        if not low <= base <= high:
            raise RoiInputError(
                f"{where}, assumption '{name}': needs low <= base <= high, got {low} / {base} / {high}"
            )
        note = spec.get("note") or spec.get("basis") or "overridden"
        out[name] = replace(a, low=low, base=base, high=high, basis=f"{where}: {note}")
    return out


def base_params(assumptions: Mapping[str, Assumption]) -> dict[str, float]:
    """The flat name -> base value mapping the model functions take."""
    return {name: a.base for name, a in assumptions.items()}


# The targets leadership may set, in the `targets:` section of the same file: name -> (unit,
# higher is better, what it measures). A target counts only with the name of whoever set it;
# without one the report says "no target set" rather than present a default as a goal.
TARGETS: dict[str, tuple[str, bool, str]] = {
    "required_cert_compliance": (
        "share (0-1)",
        True,
        "share of engineers at quarter end meeting every certification their role requires",
    ),
    "certified_share": (
        "share (0-1)",
        True,
        "share of engineers at quarter end holding at least one active certification",
    ),
    "attrition_12m": ("share (0-1)", False, "separations over 12 months ÷ average engineers"),
    "incident_rate": ("per 100 engineer-months", False, "incidents per 100 engineer-months"),
    "median_time_to_restore_minutes": ("minutes", False, "median time to restore in the quarter"),
}


@dataclass(frozen=True)
class Target:
    """A goal someone owns: the value, who set it and when, and where it is written."""

    name: str
    value: float
    owner: str
    higher_is_better: bool
    unit: str
    set_on: str = ""
    location: str = ""


def load_targets(path: Path | str) -> dict[str, Target]:
    """The targets set in the assumptions file (`targets:`), keyed by name; a target without a
    value is not set and left out. A value without an owner, an unknown name or a share outside
    0-1 is an error naming the file and line, because a goal nobody owns is not a goal."""
    path = Path(path)
    doc, text = _read(path)
    raw = doc.get("targets") if isinstance(doc, dict) else None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RoiInputError(f"{path}: 'targets:' must be a mapping of name -> {{value, owner}}")
    lines = key_lines(text, "targets", "value")
    out: dict[str, Target] = {}
    for name, entry in raw.items():
        where = f"{path}, line {lines.get(name, '?')}, target '{name}'"
        if name not in TARGETS:
            close = difflib.get_close_matches(str(name), list(TARGETS), n=1)
            hint = f"did you mean '{close[0]}'?" if close else f"known: {', '.join(TARGETS)}"
            raise RoiInputError(f"{where}: unknown target; {hint}")
        entry = entry if isinstance(entry, dict) else {"value": entry}
        if entry.get("value") is None:
            continue
        value = _number(entry["value"], f"{where}, field 'value'")
        unit, higher, _ = TARGETS[name]
        if unit.startswith("share") and not 0 <= value <= 1:
            raise RoiInputError(f"{where}: a share between 0 and 1 (0.8 = 80 %), got {value}")
        owner = str(entry.get("owner") or "").strip()
        if not owner:
            raise RoiInputError(
                f"{where}: the value {value:g} has no owner; add 'owner:' (the role or person "
                "who set it), or remove the value: a target nobody set is not shown as a goal"
            )
        out[name] = Target(
            name=name,
            value=value,
            owner=owner,
            higher_is_better=higher,
            unit=unit,
            set_on=str(entry.get("set_on") or ""),
            location=f"{path.name}, line {lines[name]}" if name in lines else path.name,
        )
    return out
