"""The ROI model: line items from drivers and assumptions, totals, ROI ratios, sensitivity.

Both entry points use it: the warehouse assets (drivers from the marts, one row per quarter) and
the scenario planner (drivers from a scenario file, one row for the first year). A *driver* is a
quantity the data or the scenario supplies (fees charged, exam attempts, GPU-years, downtime of
certified engineers' incidents); an *assumption* is a figure nobody measured (rates, shares,
costs per GPU-hour). Each line item is one Polars expression over drivers with assumptions as
literals, so every amount can be traced to its formula and inputs.

Efficiency and faster deployment are priced from the operations effects of
`marts.operations_effect` when they are estimable: efficiency as the lost GPU-hours (failed jobs)
the team's certified share avoided, faster deployment as the GPU-hours each expansion came into
production sooner, counted once, in the quarter it was accepted; both at the fleet's cost per
GPU-hour (`fleet_cost_usd_per_gpu_year` / 8,760). Otherwise they fall back to the domain
document's stated values, credited on the certified part of the team: efficiency per certified
GPU-year, faster deployment per GPU deployed by certified leads (once per expansion, never
again on the installed fleet).

Definitions (the ROI worked example in seed-facts.md uses both):
- net ROI = (return - investment) / investment: the document's "ROI, first year" (365 %);
- gross return multiple = return / investment: the document's "ROI, ongoing" (465 %).
The document truncates both to the whole percent (3.655 -> 365 %), so `floor_percent` does too.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import polars as pl

Params = Mapping[str, float]


@dataclass(frozen=True)
class LineItem:
    category: str  # investment | return
    item: str
    label: str
    formula: str
    drivers: tuple[str, ...]
    params: tuple[str, ...]
    expr: Callable[[Params], pl.Expr]

    @property
    def column(self) -> str:
        return f"{self.item}_usd"


def _c(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.Float64).fill_null(0.0)


def _downtime_factor(p: Params) -> float:
    """Avoided / observed downtime: without certification the certified engineers' incidents
    would have been 1/IRR as many and each 1/MTTR-ratio as long (downtime taken proportional to
    time to resolve), so avoided = observed x (1 / (IRR x MTTR) - 1)."""
    product = p["incident_rate_ratio"] * p["mttr_ratio"]
    if product <= 0:
        raise ValueError(
            "incident_rate_ratio and mttr_ratio must be positive; check certification_effect or the assumptions"
        )
    return 1.0 / product - 1.0


def _positive(p: Params, name: str) -> float:
    if p[name] <= 0:
        raise ValueError(f"{name} must be positive; check certification_effect or the assumptions")
    return p[name]


HOURS_PER_YEAR = 8760.0
# Operations effects (marts.operations_effect) the returns rest on when they are estimable, with
# the value that means "no effect"; `<metric>_used` is 1 when the estimate prices the line and 0
# when the line falls back to its assumed formula (not estimable, or no export).
OPERATIONS_EFFECTS = {"commissioning_time_ratio": 1.0, "lost_share_per_10_points": 0.0}
OPTIONAL_PARAMS = {
    **OPERATIONS_EFFECTS,
    **{f"{m}_used": 0.0 for m in OPERATIONS_EFFECTS},
}
# Days saved on an expansion whose leads' certified share is s, with r the commissioning time
# ratio (all leads certified vs none, log-linear in s): D x (r^-s - 1) = D x (exp(-s ln r) - 1).
# Summed over expansions that is sum_k M_k (-ln r)^k / k!, M_k = sum 24 x GPUs x D x s^k: the
# moments are drivers that add up over quarters, so any window is priced at any ratio (its
# interval's ends too). Eight terms: the remainder is below 1e-5 of the sum for r in 0.3-3.
COMMISSIONING_TERMS = 8
COMMISSIONING_MOMENTS = tuple(
    f"commissioning_gpu_hours_share_pow{k}" for k in range(1, COMMISSIONING_TERMS + 1)
)


def gpu_hour_cost(p: Params) -> float:
    """What one GPU-hour of capacity costs: the fleet's running cost per GPU-year over the
    8,760 hours of a year (one figure, `fleet_cost_usd_per_gpu_year`, prices both)."""
    return p["fleet_cost_usd_per_gpu_year"] / HOURS_PER_YEAR


def deployment_gpu_hours_saved(ratio: float) -> pl.Expr:
    """GPU-hours the certified leads' expansions came into production sooner (see above)."""
    if ratio <= 0:
        raise ValueError("commissioning_time_ratio must be positive; check operations_effect")
    x = -math.log(ratio)
    return pl.sum_horizontal(
        [_c(m) * (x**k / math.factorial(k)) for k, m in enumerate(COMMISSIONING_MOMENTS, 1)]
    )


def _measured_or_assumed(p: Params, metric: str, measured: pl.Expr, assumed: pl.Expr) -> pl.Expr:
    """The measured formula when the operations effect prices the line, else the assumed one."""
    return measured if p.get(f"{metric}_used", 0.0) else assumed


LINE_ITEMS: tuple[LineItem, ...] = (
    # --- investment -----------------------------------------------------------------------
    LineItem(
        "investment",
        "course_fees",
        "Course fees (list price)",
        "course fees at list price",
        ("course_list_price_usd",),
        (),
        lambda p: _c("course_list_price_usd"),
    ),
    LineItem(
        "investment",
        "bootcamp_fees",
        "Bootcamp fees (list price)",
        "bootcamp fees at list price",
        ("bootcamp_list_price_usd",),
        (),
        lambda p: _c("bootcamp_list_price_usd"),
    ),
    LineItem(
        "investment",
        "exam_fees",
        "Certification exam fees (list price)",
        "exam fees at list price",
        ("exam_list_price_usd",),
        (),
        lambda p: _c("exam_list_price_usd"),
    ),
    LineItem(
        "investment",
        "exam_materials",
        "Exam materials",
        "exam_attempts x exam_materials_usd_per_attempt",
        ("exam_attempts",),
        ("exam_materials_usd_per_attempt",),
        lambda p: _c("exam_attempts") * p["exam_materials_usd_per_attempt"],
    ),
    LineItem(
        "investment",
        "lab_access",
        "Lab access",
        "lab_enrolments x lab_access_usd_per_enrolment",
        ("lab_enrolments",),
        ("lab_access_usd_per_enrolment",),
        lambda p: _c("lab_enrolments") * p["lab_access_usd_per_enrolment"],
    ),
    LineItem(
        "investment",
        "vendor_discounts",
        "Vendor-programme discounts",
        "- discounts on list prices",
        ("discounts_usd",),
        (),
        lambda p: 0.0 - _c("discounts_usd"),
    ),
    LineItem(
        "investment",
        "apprenticeship_senior_time",
        "Apprenticeship: senior's lost productivity",
        "apprentices x apprenticeship_months x hours_per_month x senior_rate_usd_per_hour"
        " x apprenticeship_senior_productivity_loss",
        ("apprentices",),
        (
            "apprenticeship_months",
            "hours_per_month",
            "senior_rate_usd_per_hour",
            "apprenticeship_senior_productivity_loss",
        ),
        lambda p: (
            _c("apprentices")
            * (
                p["apprenticeship_months"]
                * p["hours_per_month"]
                * p["senior_rate_usd_per_hour"]
                * p["apprenticeship_senior_productivity_loss"]
            )
        ),
    ),
    LineItem(
        "investment",
        "engineers_own_time",
        "Engineers' own time in training",
        "training_hours x employee_rate_usd_per_hour",
        ("training_hours",),
        ("employee_rate_usd_per_hour",),
        lambda p: _c("training_hours") * p["employee_rate_usd_per_hour"],
    ),
    LineItem(
        "investment",
        "transition_support",
        "Transition support (contractor or vendor)",
        "transition support paid while the team learns",
        ("transition_support_paid_usd",),
        (),
        lambda p: _c("transition_support_paid_usd"),
    ),
    # --- returns --------------------------------------------------------------------------
    LineItem(
        "return",
        "downtime_avoided",
        "Less downtime",
        "certified_downtime_gpu_hours x (1 / (incident_rate_ratio x mttr_ratio) - 1)"
        " x downtime_cost_usd_per_gpu_hour",
        ("certified_downtime_gpu_hours",),
        ("incident_rate_ratio", "mttr_ratio", "downtime_cost_usd_per_gpu_hour"),
        lambda p: (
            _c("certified_downtime_gpu_hours")
            * (_downtime_factor(p) * p["downtime_cost_usd_per_gpu_hour"])
        ),
    ),
    LineItem(
        "return",
        "attrition_cost_avoided",
        "Attrition cost avoided",
        "certified_voluntary_exits x (1 / attrition_hazard_ratio - 1) x replacement_cost_usd_per_exit",
        ("certified_voluntary_exits",),
        ("attrition_hazard_ratio", "replacement_cost_usd_per_exit"),
        lambda p: (
            _c("certified_voluntary_exits")
            * (
                (1.0 / _positive(p, "attrition_hazard_ratio") - 1.0)
                * p["replacement_cost_usd_per_exit"]
            )
        ),
    ),
    LineItem(
        "return",
        "contractor_cost_avoided",
        "Contractor cost avoided",
        "contractor_hours_replaced x (contractor_rate_usd_per_hour - employee_rate_usd_per_hour)",
        ("contractor_hours_replaced",),
        ("contractor_rate_usd_per_hour", "employee_rate_usd_per_hour"),
        lambda p: (
            _c("contractor_hours_replaced")
            * (p["contractor_rate_usd_per_hour"] - p["employee_rate_usd_per_hour"])
        ),
    ),
    LineItem(
        "return",
        "efficiency",
        "Efficiency improvements",
        "measured: certified_share_gpu_hours x -(lost_share_per_10_points) x gpu_hour_cost "
        "(fleet_cost_usd_per_gpu_year / 8,760); assumed: certified_fleet_gpu_years x "
        "fleet_cost_usd_per_gpu_year x efficiency_share_of_fleet_cost",
        ("certified_share_gpu_hours", "certified_fleet_gpu_years"),
        (
            "lost_share_per_10_points",
            "fleet_cost_usd_per_gpu_year",
            "efficiency_share_of_fleet_cost",
        ),
        lambda p: _measured_or_assumed(
            p,
            "lost_share_per_10_points",
            _c("certified_share_gpu_hours") * (-p["lost_share_per_10_points"] * gpu_hour_cost(p)),
            _c("certified_fleet_gpu_years")
            * (p["fleet_cost_usd_per_gpu_year"] * p["efficiency_share_of_fleet_cost"]),
        ),
    ),
    LineItem(
        "return",
        "faster_deployment",
        "Faster deployment",
        "measured, once per expansion accepted into production: GPU-hours saved = sum over "
        "expansions of 24 x GPUs added x days to production x (commissioning_time_ratio ^ "
        "-certified share of the leads - 1), x gpu_hour_cost (fleet_cost_usd_per_gpu_year / "
        "8,760); assumed: certified_gpus_deployed x faster_deployment_usd_per_gpu",
        (*COMMISSIONING_MOMENTS, "certified_gpus_deployed"),
        (
            "commissioning_time_ratio",
            "fleet_cost_usd_per_gpu_year",
            "faster_deployment_usd_per_gpu",
        ),
        lambda p: _measured_or_assumed(
            p,
            "commissioning_time_ratio",
            deployment_gpu_hours_saved(p["commissioning_time_ratio"]) * gpu_hour_cost(p),
            _c("certified_gpus_deployed") * p["faster_deployment_usd_per_gpu"],
        ),
    ),
)

# The drivers and assumptions each formula of an operations return uses (measured | assumed)
OPERATIONS_ITEMS: dict[str, tuple[str, dict[str, tuple[tuple[str, ...], tuple[str, ...]]]]] = {
    "efficiency": (
        "lost_share_per_10_points",
        {
            "measured": (
                ("certified_share_gpu_hours",),
                ("lost_share_per_10_points", "fleet_cost_usd_per_gpu_year"),
            ),
            "assumed": (
                ("certified_fleet_gpu_years",),
                ("fleet_cost_usd_per_gpu_year", "efficiency_share_of_fleet_cost"),
            ),
        },
    ),
    "faster_deployment": (
        "commissioning_time_ratio",
        {
            "measured": (
                COMMISSIONING_MOMENTS,
                ("commissioning_time_ratio", "fleet_cost_usd_per_gpu_year"),
            ),
            "assumed": (("certified_gpus_deployed",), ("faster_deployment_usd_per_gpu",)),
        },
    ),
}


def formula_mode(item: str, params: Params) -> str:
    """`measured` when an operations return is priced from its estimated effect, else
    `assumed`; `fixed` for every other line (one formula)."""
    if item not in OPERATIONS_ITEMS:
        return "fixed"
    metric = OPERATIONS_ITEMS[item][0]
    return "measured" if params.get(f"{metric}_used", 0.0) else "assumed"


def active_inputs(li: LineItem, params: Params) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The drivers and assumptions the line's formula uses under these parameters."""
    mode = formula_mode(li.item, params)
    if mode == "fixed":
        return li.drivers, li.params
    return OPERATIONS_ITEMS[li.item][1][mode]


DRIVER_COLUMNS: tuple[str, ...] = tuple(dict.fromkeys(d for li in LINE_ITEMS for d in li.drivers))
ITEM_COLUMNS: tuple[str, ...] = tuple(li.column for li in LINE_ITEMS)
MODEL_PARAMS: tuple[str, ...] = tuple(dict.fromkeys(q for li in LINE_ITEMS for q in li.params))


def compute_items(drivers: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """Add one `<item>_usd` column per line item (rounded to cents) and the totals and ratios."""
    params = {**OPTIONAL_PARAMS, **params}
    missing = [q for q in MODEL_PARAMS if q not in params]
    if missing:
        raise KeyError(f"assumptions missing for the ROI model: {', '.join(missing)}")
    present = set(drivers.collect_schema().names())
    filled = drivers.with_columns(
        [pl.lit(0.0).alias(d) for d in DRIVER_COLUMNS if d not in present]
    )
    items = filled.with_columns([li.expr(params).round(2).alias(li.column) for li in LINE_ITEMS])
    return add_totals(items)


def add_totals(items: pl.LazyFrame) -> pl.LazyFrame:
    """Totals and ratios from the item columns; valid after summing items over periods too.

    net_roi and gross_return_multiple are null when nothing was invested (a ratio over zero
    would be infinite, not informative)."""
    inv = pl.sum_horizontal([pl.col(li.column) for li in LINE_ITEMS if li.category == "investment"])
    ret = pl.sum_horizontal([pl.col(li.column) for li in LINE_ITEMS if li.category == "return"])
    return (
        items.with_columns(investment_usd=inv.round(2), return_usd=ret.round(2))
        .with_columns(net_return_usd=(pl.col("return_usd") - pl.col("investment_usd")).round(2))
        .with_columns(
            net_roi=pl.when(pl.col("investment_usd") > 0).then(
                pl.col("net_return_usd") / pl.col("investment_usd")
            ),
            gross_return_multiple=pl.when(pl.col("investment_usd") > 0).then(
                pl.col("return_usd") / pl.col("investment_usd")
            ),
        )
    )


def totals(drivers: pl.LazyFrame, params: Params) -> dict[str, float | None]:
    """Sum the drivers over all rows, price them and return the totals (one collect)."""
    summed = drivers.select(
        [_c(d).sum().alias(d) for d in DRIVER_COLUMNS if d in drivers.collect_schema().names()]
    )
    row = compute_items(summed, params).collect().row(0, named=True)
    return {
        k: row[k]
        for k in (
            *ITEM_COLUMNS,
            "investment_usd",
            "return_usd",
            "net_return_usd",
            "net_roi",
            "gross_return_multiple",
        )
    }


def floor_percent(ratio: float | None) -> int | None:
    """Whole percent rounded down, as the source document shows ROI (3.655 -> 365 %).

    Rounded to 6 decimals first so a ratio that is exactly 3 but computed as 2.9999999999
    still shows 300 %."""
    if ratio is None or (isinstance(ratio, float) and math.isnan(ratio)):
        return None
    return math.floor(round(ratio * 100, 6))


def sensitivity(
    run: Callable[[Params], float | None],
    ranges: Mapping[str, tuple[float, float, float]],
    base: Params,
    joint: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
) -> pl.DataFrame:
    """One-at-a-time sensitivity for a tornado chart.

    `run(params)` returns the ROI for a full parameter set; `ranges` maps an assumption to
    (low, base, high). Each row moves that assumption to low and to high with all others at base.
    `joint` adds rows that move several assumptions together (label -> name -> (low, high)),
    e.g. both certification-effect ratios to their confidence bounds. Sorted by swing, widest
    first, as a tornado chart draws them."""
    base_roi = run(base)
    rows = []
    for name, (low, mid, high) in ranges.items():
        rows.append(
            {
                "assumption": name,
                "low_value": low,
                "base_value": mid,
                "high_value": high,
                "roi_at_low": run({**base, name: low}),
                "roi_at_high": run({**base, name: high}),
            }
        )
    for label, moves in (joint or {}).items():
        rows.append(
            {
                "assumption": label,
                "low_value": None,
                "base_value": None,
                "high_value": None,
                "roi_at_low": run({**base, **{n: lo for n, (lo, _) in moves.items()}}),
                "roi_at_high": run({**base, **{n: hi for n, (_, hi) in moves.items()}}),
            }
        )
    schema = {
        "assumption": pl.String,
        "low_value": pl.Float64,
        "base_value": pl.Float64,
        "high_value": pl.Float64,
        "roi_at_low": pl.Float64,
        "roi_at_high": pl.Float64,
    }
    df = pl.DataFrame(rows, schema=schema)
    return (
        df.with_columns(base_roi=pl.lit(base_roi, dtype=pl.Float64))
        .with_columns(swing=(pl.col("roi_at_high") - pl.col("roi_at_low")).abs())
        .sort("swing", descending=True, nulls_last=True)
    )
