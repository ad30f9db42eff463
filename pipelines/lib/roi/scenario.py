"""The scenario planner: the ROI model from a YAML file alone, before any data exists.

A scenario lists *quantities* (participants, exam attempts, GPUs, contractor hours replaced,
downtime expected without certification) and may override assumptions. Each value carries a
`basis`: `given` when the source states it, `assumed` when it was filled in. The planner turns
quantities into the same drivers the warehouse produces and prices them with the same line items
(`model.LINE_ITEMS`), so a plan and a measured result are directly comparable.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl
import yaml

from pipelines.lib.roi.assumptions import (
    DEFAULT_ASSUMPTIONS_PATH,
    Assumption,
    RoiInputError,
    apply_overrides,
    base_params,
    load_assumptions,
)
from pipelines.lib.roi.model import (
    LINE_ITEMS,
    Params,
    active_inputs,
    floor_percent,
    sensitivity,
    totals,
)

# quantity -> what it means; all default to 0 when a scenario leaves them out
QUANTITIES: dict[str, str] = {
    "course_participants": "engineers whose course fees are paid",
    "vendor_course_participants": "of those, participants trained through a vendor partnership (discounted)",
    "bootcamp_participants": "engineers sent to a bootcamp",
    "exam_attempts": "certification exam attempts",
    "lab_enrolments": "course enrolments that need paid lab access",
    "apprentices": "juniors shadowing a senior",
    "training_participants": "engineers whose own working time in training is counted",
    "transition_support_usd": "USD paid for contractor or vendor support while the team learns",
    "baseline_downtime_gpu_hours": "GPU-hours a year lost to incidents handled by the trained engineers, expected without certification",
    "contractor_hours_replaced": "contractor hours a year the trained engineers take over",
    "baseline_voluntary_exits": "voluntary exits a year among the trained engineers, expected without certification",
    "fleet_gpus": "GPUs in the fleet",
    "gpus_deployed": "GPUs brought into production in the year, priced once for faster "
    "deployment; default fleet_gpus (a first-year deployment of the whole fleet)",
    "certified_share_of_team": "share (0-1) of the infrastructure team certified; default 1 = the whole team",
}
# quantities whose absence means something other than 0
QUANTITY_DEFAULTS: dict[str, float] = {"certified_share_of_team": 1.0}


@dataclass(frozen=True)
class Quantity:
    name: str
    value: float
    basis: str  # given | assumed | not given
    note: str = ""


@dataclass(frozen=True)
class Scenario:
    name: str
    path: Path
    description: str
    source: str
    quantities: dict[str, Quantity]
    assumptions: dict[str, Assumption]
    notes: tuple[str, ...] = field(default_factory=tuple)


def _quantity(name: str, spec: Any, where: str) -> Quantity:
    if not isinstance(spec, dict):
        spec = {"value": spec, "basis": "assumed"}
    value = spec.get("value")
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise RoiInputError(
            f"{where}, quantity '{name}': expected a number >= 0 under 'value:', got {value!r}"
        )
    basis = str(spec.get("basis", "assumed"))
    if basis not in ("given", "assumed"):
        raise RoiInputError(
            f"{where}, quantity '{name}': basis must be 'given' (the source states it) or 'assumed', got {basis!r}"
        )
    return Quantity(name, float(value), basis, str(spec.get("note", "")))


def load_scenario(path: Path | str, assumptions_path: Path | str | None = None) -> Scenario:
    """Read a scenario file; errors name the file and the key and say what to write instead."""
    path = Path(path)
    try:
        doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise RoiInputError(
            f"{path}: scenario file not found; see sources/scenarios/ for examples"
        ) from exc
    except yaml.YAMLError as exc:
        raise RoiInputError(
            f"{path}: not valid YAML ({exc}); check indentation and colons"
        ) from exc
    if not isinstance(doc, dict) or "name" not in doc:
        raise RoiInputError(f"{path}: expected a mapping with at least 'name:' and 'quantities:'")
    raw_q = doc.get("quantities") or {}
    if not isinstance(raw_q, dict):
        raise RoiInputError(
            f"{path}: 'quantities:' must be a mapping of name -> {{value, basis, note}}"
        )
    quantities: dict[str, Quantity] = {}
    for name, spec in raw_q.items():
        if name not in QUANTITIES:
            close = difflib.get_close_matches(str(name), list(QUANTITIES), n=1)
            hint = (
                f"did you mean '{close[0]}'?"
                if close
                else f"known quantities: {', '.join(QUANTITIES)}"
            )
            raise RoiInputError(f"{path}: unknown quantity '{name}'; {hint}")
        quantities[name] = _quantity(name, spec, str(path))
    if "gpus_deployed" not in quantities and "fleet_gpus" in quantities:
        quantities["gpus_deployed"] = Quantity(
            "gpus_deployed",
            quantities["fleet_gpus"].value,
            "assumed",
            "not given: the whole fleet, deployed in the first year",
        )
    for name in QUANTITIES:
        quantities.setdefault(name, Quantity(name, QUANTITY_DEFAULTS.get(name, 0.0), "not given"))
    share = quantities["certified_share_of_team"].value
    if share > 1:
        raise RoiInputError(
            f"{path}, quantity 'certified_share_of_team': a share between 0 and 1, got {share}"
        )
    assumptions = apply_overrides(
        load_assumptions(assumptions_path or DEFAULT_ASSUMPTIONS_PATH),
        doc.get("assumptions") or {},
        str(path),
    )
    return Scenario(
        name=str(doc["name"]),
        path=path,
        description=str(doc.get("description", "")).strip(),
        source=str(doc.get("source", "")),
        quantities=quantities,
        assumptions=assumptions,
        notes=tuple(str(n) for n in doc.get("notes") or ()),
    )


def scenario_drivers(quantities: Mapping[str, float], p: Params) -> pl.LazyFrame:
    """One driver row (the first year) from scenario quantities.

    Fees are list prices times participants; the warehouse reads the same drivers from
    training_spend. Downtime: the certified team is observed at baseline x IRR x MTTR, so the
    shared downtime formula gives avoided = baseline x (1 - IRR x MTTR); voluntary exits
    likewise give avoided = baseline x (1 - hazard ratio)."""
    q = {name: float(quantities.get(name, QUANTITY_DEFAULTS.get(name, 0.0))) for name in QUANTITIES}
    return pl.LazyFrame(
        {
            "course_list_price_usd": [
                q["course_participants"] * p["course_fee_usd_per_participant"]
            ],
            "bootcamp_list_price_usd": [
                q["bootcamp_participants"] * p["bootcamp_fee_usd_per_participant"]
            ],
            "exam_list_price_usd": [q["exam_attempts"] * p["exam_fee_usd"]],
            "discounts_usd": [
                q["vendor_course_participants"]
                * p["course_fee_usd_per_participant"]
                * p["vendor_discount_share"]
            ],
            "exam_attempts": [q["exam_attempts"]],
            "lab_enrolments": [q["lab_enrolments"]],
            "apprentices": [q["apprentices"]],
            "training_hours": [q["training_participants"] * p["training_hours_per_participant"]],
            "transition_support_paid_usd": [q["transition_support_usd"]],
            "certified_downtime_gpu_hours": [
                q["baseline_downtime_gpu_hours"] * p["incident_rate_ratio"] * p["mttr_ratio"]
            ],
            "contractor_hours_replaced": [q["contractor_hours_replaced"]],
            "certified_voluntary_exits": [
                q["baseline_voluntary_exits"] * p["attrition_hazard_ratio"]
            ],
            "certified_fleet_gpu_years": [q["fleet_gpus"] * q["certified_share_of_team"]],
            "certified_gpus_deployed": [q["gpus_deployed"] * q["certified_share_of_team"]],
        }
    )


def _inputs_text(li, drivers_row: Mapping[str, float], p: Params) -> str:
    drivers, params = active_inputs(li, p)
    parts = [f"{d}={drivers_row[d]:,.6g}" for d in drivers]
    parts += [f"{name}={p[name]:,.6g}" for name in params]
    return "; ".join(parts)


def _fmt_ratio(x: float | None) -> str:
    return "n/a (nothing invested)" if x is None else f"{x:.4f}"


def _sensitivity_ranges(scenario: Scenario) -> tuple[dict, dict]:
    """The scenario's assumptions the tornado moves (low, base, high), and the joint move of the
    two incident ratios."""
    used = {q for li in LINE_ITEMS for q in li.params} | {
        "course_fee_usd_per_participant",
        "bootcamp_fee_usd_per_participant",
        "exam_fee_usd",
        "vendor_discount_share",
        "training_hours_per_participant",
    }
    ranges = {
        n: (a.low, a.base, a.high)
        for n, a in scenario.assumptions.items()
        if n in used and "scenario" in a.used_by
    }
    irr, mttr = scenario.assumptions["incident_rate_ratio"], scenario.assumptions["mttr_ratio"]
    joint = {
        "incident_rate_ratio and mttr_ratio together": {
            # low ratios = a larger effect; both move to the same end of their range
            "incident_rate_ratio": (irr.low, irr.high),
            "mttr_ratio": (mttr.low, mttr.high),
        }
    }
    return ranges, joint


def _items(result: Mapping[str, Any], drow: Mapping[str, float], params: Params) -> list[dict]:
    return [
        {
            "category": li.category,
            "item": li.item,
            "label": li.label,
            "amount_usd": result[li.column],
            "formula": li.formula,
            "inputs": _inputs_text(li, drow, params),
        }
        for li in LINE_ITEMS
    ]


def run_scenario(scenario: Scenario) -> dict[str, Any]:
    """Price the scenario: line items, totals, both ROI figures and the sensitivity table.

    Returns plain data (numbers, strings, lists) so the CLI can print it or dump it as JSON."""
    qvalues = {n: q.value for n, q in scenario.quantities.items()}
    params = base_params(scenario.assumptions)
    drivers = scenario_drivers(qvalues, params)
    result = totals(drivers, params)
    drow = drivers.collect().row(0, named=True)

    def roi_for(p: Params) -> float | None:
        return totals(scenario_drivers(qvalues, p), p)["net_roi"]

    ranges, joint = _sensitivity_ranges(scenario)
    sens = sensitivity(roi_for, ranges, params, joint)

    items = _items(result, drow, params)
    net, gross = result["net_roi"], result["gross_return_multiple"]
    return {
        "scenario": scenario.name,
        "file": str(scenario.path),
        "source": scenario.source,
        "description": scenario.description,
        "notes": list(scenario.notes),
        "items": items,
        "investment_usd": result["investment_usd"],
        "annual_return_usd": result["return_usd"],
        "net_return_usd": result["net_return_usd"],
        "first_year_roi": {
            "label": "ROI, first year (net)",
            "definition": "(annual return - investment) / investment",
            "ratio": net,
            "percent_rounded_down": floor_percent(net),
        },
        "ongoing_roi": {
            "label": "ROI, ongoing (gross return multiple)",
            "definition": "annual return / investment",
            "ratio": gross,
            "percent_rounded_down": floor_percent(gross),
        },
        "rounding": (
            "Percentages are the ratio x 100 rounded DOWN to the whole percent, as the source "
            "document shows them (its example: 3.655 -> 365 %, 4.655 -> 465 %). Here: "
            f"net {_fmt_ratio(net)} -> {floor_percent(net)} %, "
            f"gross {_fmt_ratio(gross)} -> {floor_percent(gross)} %."
        ),
        "quantities": [
            {
                "name": q.name,
                "value": q.value,
                "basis": q.basis,
                "note": q.note,
                "meaning": QUANTITIES[q.name],
            }
            for q in scenario.quantities.values()
        ],
        "assumptions": [
            {
                "name": a.name,
                "unit": a.unit,
                "low": a.low,
                "base": a.base,
                "high": a.high,
                "source": a.source,
                "basis": a.basis,
            }
            for a in scenario.assumptions.values()
            if a.name in ranges
        ],
        "sensitivity": sens.to_dicts(),
    }
