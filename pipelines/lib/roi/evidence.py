"""How strong the evidence behind each return is, and the headline that counts only the strongest.

A return is one of three kinds, and the report and `marts.roi_summary` use the same words:

- **measured**: it rests on an effect of certification this company's data show: estimable, no
  difference before certifying (pre-trend), and a 95 % interval that excludes no effect;
- **not shown**: it rests on an effect that was estimated but is not distinguishable from none
  (the interval includes 1, or the rates already differed before certifying);
- **assumed**: nothing here measures that training caused it (contractor hours below their
  baseline, efficiency and faster deployment priced per GPU-year);

and **unavailable** when the effect it rests on could not be estimated (no amount at all).

A line that rests on two effects (less downtime: fewer incidents and faster restore) splits
when only one is shown: its measured part is the line priced with the effect that is not shown
set to 1 (no effect), the rest is "not shown". That rule needs no order between the effects and
is the saving the data support on their own. The headline adds only measured parts.

Everything here is a pure function of summed drivers, parameters and the effect evidence, so
the report can price any window (the last 12 months, the data since the start) the same way the
ROI assets price the whole window.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date

import polars as pl

from pipelines.lib.roi.assumptions import Assumption, base_params
from pipelines.lib.roi.model import (
    DRIVER_COLUMNS,
    LINE_ITEMS,
    OPERATIONS_EFFECTS,
    OPERATIONS_ITEMS,
    Params,
    formula_mode,
    totals,
)

EFFECT_METRICS = ("incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio")
# every effect a return can rest on: certification_effect's, then operations_effect's
ALL_EFFECTS = (*EFFECT_METRICS, *OPERATIONS_EFFECTS)
# the value of each effect that means "no effect" (a ratio 1, a difference 0)
NO_EFFECT = {m: OPERATIONS_EFFECTS.get(m, 1.0) for m in ALL_EFFECTS}
# the returns priced through an estimated effect, and the effects each rests on
EFFECT_ITEMS = {
    "downtime_avoided": ("incident_rate_ratio", "mttr_ratio"),
    "attrition_cost_avoided": ("attrition_hazard_ratio",),
}
# returns that no effect estimate of this company supports (the operations returns while their
# effect cannot be estimated)
ASSUMED_ITEMS = ("contractor_cost_avoided", "efficiency", "faster_deployment")
# the export that measures each operations effect (sources/README.md), for the line that stays
# assumed without it
MEASURED_BY = {
    "commissioning_time_ratio": "the capacity_changes export (expansions and who led them), "
    "over enough expansions, would measure it",
    "lost_share_per_10_points": "the gpu_usage export (Slurm or DCGM per cluster), over enough "
    "clusters and months, would measure it",
}
# the assumptions that price each return (the "price" a measured or assumed effect is
# multiplied by); their evidence is the line's price evidence
PRICES = {
    "downtime_avoided": ("downtime_cost_usd_per_gpu_hour",),
    "attrition_cost_avoided": ("replacement_cost_usd_per_exit",),
    "contractor_cost_avoided": ("contractor_rate_usd_per_hour", "employee_rate_usd_per_hour"),
    "efficiency": ("fleet_cost_usd_per_gpu_year",),
    "faster_deployment": ("fleet_cost_usd_per_gpu_year", "faster_deployment_usd_per_gpu"),
}
# the words for each kind, shared by the marts and the report
EVIDENCE = {
    "measured": "measured here",
    "not_shown": "estimated, not distinguishable from no effect",
    "assumed": "assumed",
    "unavailable": "not estimable",
}
# what each effect saves, naming the part of a line that rests on it
EFFECT_PART = {
    "incident_rate_ratio": "fewer incidents",
    "mttr_ratio": "faster restore",
    "attrition_hazard_ratio": "fewer voluntary exits",
    "commissioning_time_ratio": "faster commissioning",
    "lost_share_per_10_points": "fewer lost GPU-hours",
}
ASSUMED_WHY = {
    "contractor_cost_avoided": "fewer contractor hours are measured, that training replaced "
    "them is not",
    "efficiency": "a stated share of the fleet's cost per certified GPU-year",
    "faster_deployment": "a stated value per GPU deployed by certified leads",
}


@dataclass(frozen=True)
class EffectEvidence:
    """One row of certification_effect as the ROI reads it."""

    metric: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    estimable: bool
    shown: bool
    reason: str = ""  # why it is not estimable, or why it is not shown
    needed: str = ""  # of an effect not estimable: the data that would make it estimable


def _finite(metric: str, *values: object) -> bool:
    """Finite values, and positive for a ratio (a difference may take any sign)."""
    ratio = NO_EFFECT.get(metric, 1.0) == 1.0
    return all(
        v is not None and isinstance(v, int | float) and math.isfinite(v) and (v > 0 or not ratio)
        for v in values
    )


def read_effect_evidence(certification_effect: pl.DataFrame) -> dict[str, EffectEvidence]:
    """Metric -> evidence. Uses the mart's `estimable`, `finding` and `pretrend_rejected` when it
    has them; otherwise an effect is estimable with a finite positive estimate and interval, and
    shown when that interval excludes 1 (the older contract had no pre-trend columns)."""
    out = {}
    for r in certification_effect.iter_rows(named=True):
        est, lo, hi = r.get("estimate"), r.get("ci_low"), r.get("ci_high")
        estimable = _finite(str(r["metric"]), est, lo, hi) and r.get("estimable") is not False
        null = NO_EFFECT.get(str(r["metric"]), 1.0)
        excludes = estimable and (hi < null or lo > null)
        rejected = bool(r.get("pretrend_rejected") or False)
        finding = r.get("finding")
        shown = estimable and (bool(finding) if finding is not None else excludes and not rejected)
        if not estimable:
            reason = str(r.get("not_estimable_reason") or "no estimate with a finite interval")
        elif shown:
            reason = ""
        elif rejected:
            reason = "the rates already differed before certifying"
        else:
            reason = "the 95 % interval includes no difference"
        out[str(r["metric"])] = EffectEvidence(
            metric=str(r["metric"]),
            estimate=float(est) if estimable else None,
            ci_low=float(lo) if estimable else None,
            ci_high=float(hi) if estimable else None,
            estimable=estimable,
            shown=shown,
            reason=reason,
            needed=str(r.get("data_needed") or "") if not estimable else "",
        )
    return out


@dataclass(frozen=True)
class Component:
    """A return, or the part of one, with the strength of its evidence. `low` and `high` (measured
    parts only) price it with the effects it rests on at the ends of their 95 % intervals."""

    item: str
    label: str
    evidence: str  # measured | not_shown | assumed | unavailable
    rests_on: tuple[str, ...]
    amount: float | None
    low: float | None = None
    high: float | None = None
    why: str = ""
    # the effects a return rests on that could not be estimated: of an unavailable return (the
    # others keep their own status, which is not this return's), and of an assumed operations
    # return whose export was delivered but holds too little to estimate its effect
    missing: tuple[str, ...] = ()
    # measured: every price of the line comes from this company's data; assumed: the
    # assumptions file supplies one
    price_evidence: str = "assumed"


def _part_label(item_label: str, metrics: tuple[str, ...], split: bool) -> str:
    if not split:
        return item_label
    return f"{item_label}: {' and '.join(EFFECT_PART.get(m, m) for m in metrics)}"


def _priced(summed: Mapping[str, float], params: Params) -> dict[str, float]:
    frame = pl.LazyFrame({d: [float(summed.get(d, 0.0))] for d in DRIVER_COLUMNS})
    row = totals(frame, params)
    return {li.item: float(row[li.column] or 0.0) for li in LINE_ITEMS}


def _at(params: Params, moves: Mapping[str, float]) -> dict[str, float]:
    return {**params, **moves}


def line_prices(item: str, params: Params) -> tuple[str, ...]:
    """The assumptions that price a return under its active formula."""
    names = PRICES.get(item, ())
    if item == "faster_deployment":
        measured = formula_mode(item, params) == "measured"
        return ("fleet_cost_usd_per_gpu_year",) if measured else ("faster_deployment_usd_per_gpu",)
    return names


def price_evidence(item: str, params: Params, measured_prices: frozenset[str]) -> str:
    """`measured` when every price of the line comes from this company's data, else `assumed`."""
    names = line_prices(item, params)
    return "measured" if names and all(n in measured_prices for n in names) else "assumed"


def _assumed_part(li, amount: float, params: Params, effects, prices: str) -> Component:
    """A return no effect estimate of this company supports; an operations return says which
    export would measure it."""
    why, missing = ASSUMED_WHY.get(li.item, ""), ()
    if li.item in OPERATIONS_ITEMS:
        m = OPERATIONS_ITEMS[li.item][0]
        e = effects.get(m)
        state = (
            "not estimable (marts.operations_effect)"
            if e is not None and not e.estimable
            else "not measured (no row in marts.operations_effect)"
            if e is None
            else "not used"
        )
        why = f"{why}; {EFFECT_PART[m]} {state}; {MEASURED_BY[m]}"
        missing = (m,) if e is not None and not e.estimable else ()
    return Component(li.item, li.label, "assumed", (), amount, why=why, missing=missing,
                     price_evidence=prices)  # fmt: skip


def _effect_parts(li, summed, params, effects, base: float, prices: str) -> list[Component]:
    """A return resting on estimated effects: its measured part (the effects shown, the others
    at no effect) with the range over their intervals, and the part not shown."""
    metrics = EFFECT_ITEMS[li.item] if li.item in EFFECT_ITEMS else (OPERATIONS_ITEMS[li.item][0],)
    missing = [m for m in metrics if m not in effects or not effects[m].estimable]
    if missing:
        why = "; ".join(
            f"{m.replace('_', ' ')} not estimable: {effects[m].reason if m in effects else 'no row'}"
            for m in missing
        )
        return [
            Component(li.item, li.label, "unavailable", metrics, None, why=why,
                      missing=tuple(missing), price_evidence=prices)
        ]  # fmt: skip
    shown = tuple(m for m in metrics if effects[m].shown)
    hidden = tuple(m for m in metrics if not effects[m].shown)
    split = bool(shown) and bool(hidden)
    out, counted = [], 0.0
    if shown:
        no_hidden = {m: NO_EFFECT[m] for m in hidden}
        counted = _priced(summed, _at(params, no_hidden))[li.item]
        ends = [
            _priced(summed, _at(params, {**no_hidden, **{m: getattr(effects[m], end)
                                                          for m in shown}}))[li.item]
            for end in ("ci_low", "ci_high")
        ]  # fmt: skip
        lo, hi = sorted(ends)
        out.append(
            Component(li.item, _part_label(li.label, shown, split), "measured", shown, counted,
                      lo, hi, price_evidence=prices)
        )  # fmt: skip
    if hidden:
        out.append(
            Component(
                li.item,
                _part_label(li.label, hidden, split),
                "not_shown",
                hidden,
                base - counted,
                why="; ".join(f"{m.replace('_', ' ')}: {effects[m].reason}" for m in hidden),
                price_evidence=prices,
            )
        )
    return out


def components(
    summed: Mapping[str, float],
    params: Params,
    effects: Mapping[str, EffectEvidence],
    measured_prices: frozenset[str] = frozenset(),
) -> list[Component]:
    """Every return line as one or two components with their evidence, in model order.

    `params` are the base values with the measured effects in place (a ratio that is not
    estimable already at 1, as `warehouse.warehouse_assumptions` sets it; an operations effect
    that prices its line flagged `<metric>_used`). `measured_prices` names the prices this
    company's data supply (every other price is assumed)."""
    base = _priced(summed, params)
    out: list[Component] = []
    for li in LINE_ITEMS:
        if li.category != "return":
            continue
        prices = price_evidence(li.item, params, measured_prices)
        if li.item in EFFECT_ITEMS or formula_mode(li.item, params) == "measured":
            out += _effect_parts(li, summed, params, effects, base[li.item], prices)
        else:
            out.append(_assumed_part(li, base[li.item], params, effects, prices))
    return out


@dataclass(frozen=True)
class Headline:
    """The ROI of one window counting measured returns only, with its statistical range."""

    start: date | None
    end: date | None
    investment: float
    counted: float
    counted_low: float
    counted_high: float
    parts: list[Component] = field(default_factory=list)
    items: dict[str, float] = field(default_factory=dict)  # every line item's amount

    def of(self, evidence: str) -> list[Component]:
        return [c for c in self.parts if c.evidence == evidence]

    def total(self, evidence: str) -> float:
        return sum(c.amount or 0.0 for c in self.of(evidence))

    def _roi(self, ret: float) -> float | None:
        return (ret - self.investment) / self.investment if self.investment > 0 else None

    @property
    def net_roi(self) -> float | None:
        return self._roi(self.counted)

    @property
    def net_roi_low(self) -> float | None:
        return self._roi(self.counted_low)

    @property
    def net_roi_high(self) -> float | None:
        return self._roi(self.counted_high)

    @property
    def payback_months(self) -> float | None:
        """Months of measured return that repay the window's investment, when it is a year."""
        if self.counted <= 0 or self.start is None or self.end is None:
            return None
        months = (self.end.year - self.start.year) * 12 + self.end.month - self.start.month + 1
        return self.investment / (self.counted / months)

    @property
    def verdict(self) -> str:
        """`pays` (even at the unfavourable end of the intervals), `likely` (at the estimate, not
        at that end), `not_shown` (not even at the estimate, or nothing measured)."""
        if not self.investment:
            return "not_shown"
        if self.counted_low > self.investment:
            return "pays"
        if self.counted > self.investment:
            return "likely"
        return "not_shown"


def headline(
    summed: Mapping[str, float],
    params: Params,
    effects: Mapping[str, EffectEvidence],
    start: date | None = None,
    end: date | None = None,
    measured_prices: frozenset[str] = frozenset(),
) -> Headline:
    """Price a window's summed drivers and keep only what the data measure in the headline."""
    parts = components(summed, params, effects, measured_prices)
    items = _priced(summed, params)
    investment = sum(items[li.item] for li in LINE_ITEMS if li.category == "investment")
    measured = [c for c in parts if c.evidence == "measured"]
    return Headline(
        start=start,
        end=end,
        investment=investment,
        counted=sum(c.amount or 0.0 for c in measured),
        counted_low=sum(c.low if c.low is not None else c.amount or 0.0 for c in measured),
        counted_high=sum(c.high if c.high is not None else c.amount or 0.0 for c in measured),
        parts=parts,
        items=items,
    )


@dataclass(frozen=True)
class Swing:
    """The headline net ROI with one input at the low and at the high end of its range."""

    name: str
    kind: str  # assumption | statistical
    low_value: float | None
    base_value: float | None
    high_value: float | None
    roi_at_low: float | None
    roi_at_high: float | None
    verdict_at_low: str
    verdict_at_high: str


def headline_sensitivity(
    summed: Mapping[str, float],
    assumptions: Mapping[str, Assumption],
    effects: Mapping[str, EffectEvidence],
    measured_prices: frozenset[str] = frozenset(),
) -> list[Swing]:
    """Assumptions one at a time (the others at base), then the statistical uncertainty of each
    measured effect and of all of them together; widest swing first within each kind.

    `assumptions` are the warehouse's (the measured effects in place of the assumed ratios). An
    assumption that only prices a return the headline leaves out moves nothing and is left out,
    and so does a price this company's data measure (`measured_prices`): it is no assumption
    whose end could flip the verdict."""
    params = base_params(assumptions)
    used = {p for li in LINE_ITEMS for p in li.params} - set(ALL_EFFECTS)

    def run(moves: Mapping[str, float]) -> Headline:
        return headline(summed, _at(params, moves), effects)

    base = run({})
    rows: list[Swing] = []
    for name in sorted(used):
        a = assumptions.get(name)
        if a is None or "warehouse" not in a.used_by or name in measured_prices:
            continue
        lo, hi = run({name: a.low}), run({name: a.high})
        if lo.net_roi == base.net_roi == hi.net_roi:
            continue
        rows.append(
            Swing(
                name,
                "assumption",
                a.low,
                a.base,
                a.high,
                lo.net_roi,
                hi.net_roi,
                lo.verdict,
                hi.verdict,
            )
        )
    stat: list[Swing] = []
    shown = [
        m
        for m in ALL_EFFECTS
        if m in effects and effects[m].shown and (m in EFFECT_METRICS or params.get(f"{m}_used"))
    ]
    for names in [[m] for m in shown] + ([shown] if len(shown) > 1 else []):
        at_low = run({m: effects[m].ci_low for m in names})  # type: ignore[misc]
        at_high = run({m: effects[m].ci_high for m in names})  # type: ignore[misc]
        one = effects[names[0]] if len(names) == 1 else None
        stat.append(
            Swing(
                names[0] if one else "all measured effects together",
                "statistical",
                one.ci_low if one else None,
                one.estimate if one else None,
                one.ci_high if one else None,
                at_low.net_roi,
                at_high.net_roi,
                at_low.verdict,
                at_high.verdict,
            )
        )

    def width(s: Swing) -> float:
        return abs((s.roi_at_high or 0.0) - (s.roi_at_low or 0.0))

    return sorted(rows, key=width, reverse=True) + sorted(stat, key=width, reverse=True)


def window_drivers(by_period: pl.DataFrame, start: date, end: date) -> dict[str, float]:
    """The drivers of the quarter rows of `roi_by_period` that start within [start, end], summed."""
    q = by_period.filter(
        (pl.col("period_type") == "quarter")
        & (pl.col("period_start").cast(pl.Date) >= start)
        & (pl.col("period_start").cast(pl.Date) <= end)
    )
    present = [d for d in DRIVER_COLUMNS if d in q.columns]
    if q.is_empty():
        return {d: 0.0 for d in DRIVER_COLUMNS}
    row = q.select([pl.col(d).cast(pl.Float64).fill_null(0.0).sum() for d in present]).row(
        0, named=True
    )
    return {d: float(row.get(d, 0.0)) for d in DRIVER_COLUMNS}
