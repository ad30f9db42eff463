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


def _number(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise RoiInputError(
            f"{where}: expected a number, got {value!r}; write a plain number such as 0.2 or 300"
        )
    return float(value)


def load_assumptions(path: Path | str) -> dict[str, Assumption]:
    """Read and validate the assumptions file at `path` (the caller names it, e.g. from the
    settings; `DEFAULT_ASSUMPTIONS_PATH` is the project's own)."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RoiInputError(
            f"{path}: assumptions file not found; pass the path of an assumptions YAML file"
        ) from exc
    except yaml.YAMLError as exc:
        raise RoiInputError(
            f"{path}: not valid YAML ({exc}); check indentation and colons"
        ) from exc
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
