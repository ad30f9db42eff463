"""ROI over the warehouse: drivers from the marts, three output tables.

Pure functions over Polars LazyFrames (no Dagster, no DuckDB) plus two thin I/O helpers
(`read_marts`, `write_tables`). Inputs come from schema `restricted` (the dbt marts'
unsuppressed detail) and `marts` (certification_effect). Tables written to schema `restricted`
of the build file, and their analyst-facing form to `marts` (roi_by_period: totals only):

`roi_by_period` - grain (period_type, period_start); period_type in quarter, year.
    period_start / period_end (DATE, first and last day), every driver column (see
    `model.DRIVER_COLUMNS`), one `<item>_usd` column per line item, investment_usd, return_usd,
    net_return_usd, net_roi ((return - investment) / investment), gross_return_multiple
    (return / investment); ratios are null when nothing was invested. Year rows sum the quarters
    of that calendar year present in the data (a partial year is a partial sum).
`roi_summary` - grain (category, item) over the whole data window: category (investment /
    return), item, label, amount_usd, status (investment / measured / stated: priced from
    stated per-GPU values / unavailable: rests on an effect that is not estimable, amount null),
    note (why), formula, inputs (the driver totals and assumption values that produced the
    amount), evidence (measured / not_shown / assumed / unavailable, `evidence.py`), rests_on,
    counted_usd (the part resting only on effects the data show), period_start, period_end.
`roi_sensitivity` - grain assumption: assumption, low_value, base_value, high_value,
    roi_at_low, roi_at_high, base_roi (net ROI over the window with every assumption at base),
    swing; sorted widest first for a tornado chart. The incident-rate, MTTR and attrition hazard
    ratios range over the confidence interval of certification_effect; the row
    "certification_effect CI (all ratios)" moves them together and gives the ROI interval the
    estimates' uncertainty implies; `kind` tells those statistical rows from the assumptions.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

import polars as pl

from pipelines.lib import db
from pipelines.lib.roi.assumptions import Assumption, RoiInputError, base_params
from pipelines.lib.roi.evidence import (
    ALL_EFFECTS,
    EFFECT_ITEMS,
    EFFECT_METRICS,
    EffectEvidence,
    components,
    price_evidence,
    read_effect_evidence,
)
from pipelines.lib.roi.model import (
    COMMISSIONING_MOMENTS,
    DRIVER_COLUMNS,
    ITEM_COLUMNS,
    LINE_ITEMS,
    OPERATIONS_EFFECTS,
    Params,
    active_inputs,
    add_totals,
    compute_items,
    formula_mode,
    sensitivity,
    totals,
)
from pipelines.lib.small_groups import is_small

INPUT_MARTS: dict[str, tuple[str, ...]] = {
    "training_spend": (
        "quarter",
        "spend_category",
        "participants",
        "enrolments",
        "spend_usd",
        "list_price_usd",
        "discount_usd",
        "training_hours",
    ),
    "contractor_costs": ("period_start", "hours"),
    "fleet_size": ("month_end", "cluster", "gpu_count"),
    "incident_downtime": ("quarter", "certification_status", "gpu_hours_lost"),
    "certification_effect": ("metric", "estimate", "ci_low", "ci_high"),
    "certification_coverage": ("month_end", "segment_type", "any_cert_share"),
    "attrition": (
        "period_type",
        "period_start",
        "segment_type",
        "segment_value",
        "voluntary_separations",
    ),
    # operations (optional: a warehouse without the gpu_usage and capacity_changes exports
    # prices efficiency and faster deployment from their stated values)
    "capacity_commissioning": (
        "project_id",
        "gpus_added",
        "accepted_on",
        "days_to_production",
        "certified_share_of_leads",
    ),
    "cluster_utilisation": ("month", "cluster", "gpu_hours_available", "certified_share"),
    "operations_effect": ("metric", "estimate", "ci_low", "ci_high"),
    # recruiting (optional: without the requisitions export the replacement cost stays assumed)
    "replacement_cost": ("component", "amount_usd", "ci_low_usd", "ci_high_usd", "backfills"),
}
# inputs a warehouse may lack: an empty frame stands in and the line stays assumed
OPTIONAL_MARTS = (
    "capacity_commissioning",
    "cluster_utilisation",
    "operations_effect",
    "replacement_cost",
)
OUTPUT_TABLES = ("roi_by_period", "roi_summary", "roi_sensitivity")
# Where each input is read in the build file: the dbt marts' unsuppressed detail lives in schema
# `restricted` (the published `marts.*` hide small groups, which would drop spend and exits from
# the sums); the statistics and the fleet (no people in it) are read from `marts`.
INPUT_SCHEMAS = {
    name: "marts"
    if name in ("certification_effect", "operations_effect", "fleet_size")
    else "restricted"
    for name in INPUT_MARTS
}
# The analyst-facing roi_by_period keeps the totals only: its per-driver columns (apprentices,
# bootcamp fees, certified exits of one quarter, ...) would repeat the training_spend and
# attrition cells that are suppressed there. The full table stays in restricted.roi_by_period.
PUBLISHED_BY_PERIOD = (
    "period_type",
    "period_start",
    "period_end",
    "investment_usd",
    "return_usd",
    "net_return_usd",
    "net_roi",
    "gross_return_multiple",
)

# Where each driver comes from (mart, what is summed, unit), for the report's inputs table.
DRIVER_SOURCES: dict[str, tuple[str, str, str]] = {
    "course_list_price_usd": (
        "training_spend",
        "list price of online, internal, vendor-partnership and apprenticeship courses",
        "USD",
    ),
    "bootcamp_list_price_usd": ("training_spend", "list price of bootcamps", "USD"),
    "exam_list_price_usd": ("training_spend", "list price of certification exams", "USD"),
    "discounts_usd": ("training_spend", "discounts on list prices", "USD"),
    "exam_attempts": ("training_spend", "certification exam attempts", "attempts"),
    "lab_enrolments": (
        "training_spend",
        "enrolments in online, internal and apprenticeship courses",
        "enrolments",
    ),
    "apprentices": ("training_spend", "apprenticeship participants", "people"),
    "training_hours": ("training_spend", "hours engineers spent in training", "hours"),
    "transition_support_paid_usd": ("", "transition support (scenarios only)", "USD"),
    "certified_downtime_gpu_hours": (
        "incident_downtime",
        "GPU-hours lost in incidents whose primary responder was certified",
        "GPU-hours",
    ),
    "certified_voluntary_exits": (
        "attrition",
        "voluntary exits of engineers certified on their last day in the quarter",
        "people",
    ),
    "contractor_hours_replaced": (
        "contractor_costs",
        "hours below the mean of the first months (contractor_baseline_months)",
        "hours",
    ),
    "certified_fleet_gpu_years": (
        "fleet_size, certification_coverage",
        "fleet GPU-years times the share of engineers certified each month",
        "GPU-years",
    ),
    "certified_share_gpu_hours": (
        "cluster_utilisation",
        "GPU-hours available times 10 x the team's certified share, summed over cluster-months "
        "(the lost GPU-hours avoided are this times minus the effect per 10 points)",
        "GPU-hours",
    ),
    "certified_gpus_deployed": (
        "capacity_commissioning",
        "GPUs added by expansions accepted into production, times the certified share of their "
        "leads (fleet_size growth times the certified share of the team without the export)",
        "GPUs",
    ),
    **{
        m: (
            "capacity_commissioning",
            f"sum over expansions accepted into production of 24 x GPUs added x days from "
            f"delivery to production x (certified share of the leads)^{k}",
            "GPU-hours",
        )
        for k, m in enumerate(COMMISSIONING_MOMENTS, 1)
    },
}
# drivers that count people: the report hides them below the minimum group size
PEOPLE_DRIVERS = ("apprentices", "certified_voluntary_exits")

COURSE_CATEGORIES = ("online", "internal", "vendor_partnership", "apprenticeship")
# bootcamps and vendor programmes include lab access (seed-facts.md "Ways to accelerate training")
LAB_CATEGORIES = ("online", "internal", "apprenticeship")

# warehouse ROI assumptions that the data replaces: fees, discounts, participants' hours
DATA_REPLACES = (
    "course_fee_usd_per_participant",
    "bootcamp_fee_usd_per_participant",
    "exam_fee_usd",
    "vendor_discount_share",
    "training_hours_per_participant",
)


def _f(name: str) -> pl.Expr:
    return pl.col(name).cast(pl.Float64).fill_null(0.0)


def _sum_where(value: pl.Expr, categories: tuple[str, ...]) -> pl.Expr:
    return (
        pl.when(pl.col("spend_category").is_in(list(categories))).then(value).otherwise(0.0).sum()
    )


def investment_drivers(training_spend: pl.LazyFrame) -> pl.LazyFrame:
    """Per quarter: fees at list price by kind, discounts, exam attempts, lab enrolments,
    apprentices and training hours. List price falls back to spend + discount when missing."""
    list_price = pl.coalesce(
        pl.col("list_price_usd").cast(pl.Float64), _f("spend_usd") + _f("discount_usd")
    )
    return (
        training_spend.with_columns(_list=list_price.fill_null(0.0))
        .group_by(pl.col("quarter").cast(pl.Date))
        .agg(
            course_list_price_usd=_sum_where(pl.col("_list"), COURSE_CATEGORIES),
            bootcamp_list_price_usd=_sum_where(pl.col("_list"), ("bootcamp",)),
            exam_list_price_usd=_sum_where(pl.col("_list"), ("certification_exam",)),
            discounts_usd=_f("discount_usd").sum(),
            exam_attempts=_sum_where(_f("enrolments"), ("certification_exam",)),
            lab_enrolments=_sum_where(_f("enrolments"), LAB_CATEGORIES),
            apprentices=_sum_where(_f("participants"), ("apprenticeship",)),
            training_hours=_f("training_hours").sum(),
        )
    )


def downtime_drivers(incident_downtime: pl.LazyFrame) -> pl.LazyFrame:
    """Per quarter: GPU-hours lost in incidents whose primary responder was certified."""
    return (
        incident_downtime.filter(pl.col("certification_status") == "certified")
        .group_by(pl.col("quarter").cast(pl.Date))
        .agg(certified_downtime_gpu_hours=_f("gpu_hours_lost").sum())
    )


def attrition_drivers(attrition: pl.LazyFrame) -> pl.LazyFrame:
    """Per quarter: voluntary exits of engineers certified on their last day in the quarter (the
    attrition mart attributes each person to the status of their last in-scope day)."""
    return (
        attrition.filter(
            (pl.col("period_type") == "quarter")
            & (pl.col("segment_type") == "certification_status")
            & (pl.col("segment_value") == "certified")
        )
        .group_by(quarter=pl.col("period_start").cast(pl.Date))
        .agg(certified_voluntary_exits=_f("voluntary_separations").sum())
    )


def contractor_drivers(contractor_costs: pl.LazyFrame, baseline_months: int) -> pl.LazyFrame:
    """Per quarter: contractor hours replaced = sum over months of max(0, baseline - hours),
    baseline = mean monthly hours of the first `baseline_months` months in the data (the level
    before in-house engineers took over)."""
    n = max(1, int(baseline_months))
    monthly = (
        contractor_costs.group_by(month=pl.col("period_start").cast(pl.Date))
        .agg(hours=_f("hours").sum())
        .sort("month")
    )
    return (
        monthly.with_columns(baseline=pl.col("hours").head(n).mean())
        .with_columns(replaced=(pl.col("baseline") - pl.col("hours")).clip(lower_bound=0.0))
        .group_by(quarter=pl.col("month").dt.truncate("1q"))
        .agg(contractor_hours_replaced=pl.col("replaced").sum())
    )


def fleet_drivers(fleet_size: pl.LazyFrame, coverage: pl.LazyFrame) -> pl.LazyFrame:
    """Per quarter: certified GPU-years = sum over months of GPUs x certified share of the team
    (certification_coverage, segment `all`) / 12. A month without a coverage row counts as
    uncertified, so missing data never inflates the return."""
    share = (
        coverage.filter(pl.col("segment_type") == "all")
        .group_by(month=pl.col("month_end").cast(pl.Date).dt.month_start())
        .agg(share=_f("any_cert_share").mean())
    )
    monthly = (
        fleet_size.group_by(month=pl.col("month_end").cast(pl.Date).dt.month_start())
        .agg(gpus=_f("gpu_count").sum())
        .join(share, on="month", how="left")
    )
    return monthly.group_by(quarter=pl.col("month").dt.truncate("1q")).agg(
        certified_fleet_gpu_years=(pl.col("gpus") * _f("share")).sum() / 12.0
    )


def deployment_drivers(
    projects: pl.LazyFrame, fleet_size: pl.LazyFrame, coverage: pl.LazyFrame
) -> pl.LazyFrame:
    """Per quarter of acceptance into production, once per expansion: the moments of the
    GPU-hours of commissioning, 24 x GPUs x days x s^k (s the certified share of the leads on
    the delivery day; the model prices the days saved from them), and the GPUs deployed by
    certified leads, sum of GPUs x s. Without capacity projects, the GPUs deployed are the
    fleet's growth per cluster and month (a cluster that appears after the first month counts
    whole) times the certified share of the team that month."""
    done = projects.filter(
        pl.col("accepted_on").is_not_null()
        & (_f("days_to_production") > 0)
        & (_f("gpus_added") > 0)
    ).with_columns(
        quarter=pl.col("accepted_on").cast(pl.Date).dt.truncate("1q"),
        s=_f("certified_share_of_leads"),
        g=24.0 * _f("gpus_added") * _f("days_to_production"),
    )
    moments = done.group_by("quarter").agg(
        certified_gpus_deployed=(_f("gpus_added") * pl.col("s")).sum(),
        **{
            m: (pl.col("g") * pl.col("s").pow(k)).sum()
            for k, m in enumerate(COMMISSIONING_MOMENTS, 1)
        },
    )
    if projects.select(pl.len()).collect().item():
        return moments
    share = (
        coverage.filter(pl.col("segment_type") == "all")
        .group_by(month=pl.col("month_end").cast(pl.Date).dt.month_start())
        .agg(share=_f("any_cert_share").mean())
    )
    first = fleet_size.select(pl.col("month_end").cast(pl.Date).dt.month_start().min()).collect()
    grown = (
        fleet_size.group_by("cluster", month=pl.col("month_end").cast(pl.Date).dt.month_start())
        .agg(gpus=_f("gpu_count").sum())
        .sort("cluster", "month")
        .with_columns(added=pl.col("gpus").diff().over("cluster").fill_null(pl.col("gpus")))
        .filter(pl.col("month") > first.item())
        .join(share, on="month", how="left")
    )
    return grown.group_by(quarter=pl.col("month").dt.truncate("1q")).agg(
        certified_gpus_deployed=(pl.col("added").clip(lower_bound=0.0) * _f("share")).sum()
    )


def efficiency_drivers(utilisation: pl.LazyFrame) -> pl.LazyFrame:
    """Per quarter: GPU-hours available x 10 x the team's certified share, over cluster-months
    (a month without a team counts as uncertified)."""
    return utilisation.group_by(quarter=pl.col("month").cast(pl.Date).dt.truncate("1q")).agg(
        certified_share_gpu_hours=(_f("gpu_hours_available") * 10.0 * _f("certified_share")).sum()
    )


def quarterly_drivers(*parts: pl.LazyFrame) -> pl.LazyFrame:
    """Outer-join per-quarter driver frames on quarter; a driver absent in a quarter is 0."""
    quarters = pl.concat([p.select("quarter") for p in parts]).unique()
    out = quarters
    for p in parts:
        out = out.join(p, on="quarter", how="left")
    present = set(out.collect_schema().names())
    return out.with_columns(
        [_f(c).alias(c) if c in present else pl.lit(0.0).alias(c) for c in DRIVER_COLUMNS]
    ).sort("quarter")


STATED_ITEMS = ("efficiency", "faster_deployment")


def _empty_effects(frame: pl.DataFrame | None) -> pl.DataFrame:
    if frame is not None:
        return frame
    return pl.DataFrame(
        schema={c: pl.Float64 for c in ("estimate", "ci_low", "ci_high")} | {"metric": pl.String}
    )


def _effect_row(certification_effect: pl.DataFrame, metric: str) -> dict:
    rows = certification_effect.filter(pl.col("metric") == metric)
    if rows.height != 1:
        raise RoiInputError(
            f"marts.certification_effect: expected one row with metric = '{metric}', found "
            f"{rows.height}; run the statistics asset (marts/certification_effect) first"
        )
    return rows.row(0, named=True)


def unavailable_effects(certification_effect: pl.DataFrame) -> dict[str, str]:
    """Metric -> why it is not estimable, for the ratios the ROI prices: flagged so by the mart
    (`estimable` false, with `not_estimable_reason`) or without a finite positive estimate and
    interval. Such an effect is never turned into a return."""
    out = {}
    for metric in EFFECT_METRICS:
        r = _effect_row(certification_effect, metric)
        vals = (r["ci_low"], r["estimate"], r["ci_high"])
        finite = all(v is not None and math.isfinite(v) and v > 0 for v in vals)
        if r.get("estimable") is False or not finite:
            out[metric] = str(r.get("not_estimable_reason") or "no estimate with a finite interval")
    return out


def effect_params(certification_effect: pl.DataFrame) -> dict[str, tuple[float, float, float]]:
    """(ci_low, estimate, ci_high) of the estimable incident-rate, MTTR and attrition hazard
    ratios; a metric missing from the mart is an error that names it."""
    skip = unavailable_effects(certification_effect)
    out = {}
    for metric in EFFECT_METRICS:
        if metric in skip:
            continue
        r = _effect_row(certification_effect, metric)
        lo, est, hi = (float(r[k]) for k in ("ci_low", "estimate", "ci_high"))
        out[metric] = (min(lo, est), est, max(hi, est))
    return out


def warehouse_assumptions(
    assumptions: Mapping[str, Assumption],
    certification_effect: pl.DataFrame,
    operations_effect: pl.DataFrame | None = None,
) -> dict[str, Assumption]:
    """The assumptions with the ratios replaced by the measured effect and its CI; a ratio that
    is not estimable is set to 1 (no effect) so that it prices no return. The operations
    effects join them (`operations_assumptions`)."""
    out = dict(assumptions)
    out.update(operations_assumptions(_empty_effects(operations_effect)))
    measured = effect_params(certification_effect)
    for name in ("incident_rate_ratio", "mttr_ratio"):
        if name not in measured and name in out:
            out[name] = replace(
                out[name],
                basis=f"{out[name].basis}; not estimable from the data "
                "(marts.certification_effect has no estimate), so the assumed range is used",
            )
    for name, (lo, est, hi) in measured.items():
        out[name] = replace(
            out[name],
            low=lo,
            base=est,
            high=hi,
            basis="marts.certification_effect (estimate, 95 % CI)",
        )
    unavailable = unavailable_effects(certification_effect)
    for metrics in EFFECT_ITEMS.values():  # a line resting on one missing effect prices nothing
        why = "; ".join(f"{m} not estimable: {unavailable[m]}" for m in metrics if m in unavailable)
        for name in metrics if why else ():
            out[name] = replace(out[name], low=1.0, base=1.0, high=1.0, basis=why)
    return out


# prices a mart of this company can measure: the assumption it replaces -> (mart, the row
# holding the measured price)
MEASURED_PRICE_MARTS = {"replacement_cost_usd_per_exit": ("replacement_cost", "measured_total")}


def measured_prices(
    replacement_cost: pl.DataFrame,
    assumptions: Mapping[str, Assumption],
    min_group_size: int = 5,
) -> tuple[dict[str, Assumption], frozenset[str]]:
    """The assumptions with the prices this company's data measure in their place, and the
    names of the prices that come from the company (`evidence.price_evidence` reads them): those
    measured here, and the company's own figures its named owner states in the assumptions file
    (source_type company, e.g. finance's cost of a GPU-year).

    The replacement cost per voluntary exit is measured when marts.replacement_cost stands on at
    least `min_group_size` filled backfills of voluntary exits: its `measured_total` (hiring
    cost + vacancy) becomes the base, the 95 % interval of that mean its range. The new hire's
    ramp-up is not in it: nothing here measures it, and a price that mixed an assumed part into
    a measured one would be neither (README, "Measured prices"). Fewer backfills, or no
    requisitions export: the assumed price stays, and so does its evidence."""
    out = dict(assumptions)
    # the company's own figures (source_type company, with their owner) price as its data do
    stated = frozenset(n for n, a in out.items() if a.source_type == "company")
    name = "replacement_cost_usd_per_exit"
    rows = {r["component"]: r for r in replacement_cost.iter_rows(named=True)}
    total, a = rows.get("measured_total"), out.get(name)
    if a is None or total is None or total["amount_usd"] is None:
        return out, stated
    n = int(total["backfills"] or 0)
    if n < min_group_size:
        return out, stated
    base = float(total["amount_usd"])
    lo, hi = total["ci_low_usd"], total["ci_high_usd"]
    parts = ", ".join(
        f"{rows[c]['label'].split(':')[0].lower()} {rows[c]['amount_usd']:,.0f} USD"
        for c in ("hiring_cost", "vacancy_cost")
        if c in rows and rows[c]["amount_usd"] is not None
    )
    out[name] = replace(
        a,
        base=base,
        low=max(0.0, min(base, float(lo))) if lo is not None else base,
        high=max(base, float(hi)) if hi is not None else base,
        source=f"marts.replacement_cost: the mean over {n} filled backfills of voluntary exits "
        f"({parts}); the new hire's ramp-up is not measured and not included",
        source_type="measured",
        basis="marts.replacement_cost (mean, 95 % interval of the mean)",
        published_range="",
        file="",
        line=None,
    )
    return out, stated | {name}


OPERATIONS_UNITS = {
    "commissioning_time_ratio": "ratio (days to production, all leads certified / none)",
    "lost_share_per_10_points": "difference in the lost share of available GPU-hours per 10 "
    "points of certified team",
}


def operations_assumptions(operations_effect: pl.DataFrame) -> dict[str, Assumption]:
    """Each operations effect as the ROI prices it: the estimate with its 95 % interval and the
    flag `<metric>_used` at 1 when it is estimable (the line is priced from it), at 0 when not
    (the line keeps its stated value). Estimated but not distinguishable from none still prices
    the line, as "not shown", which the headline does not count."""
    evidence = read_effect_evidence(operations_effect) if operations_effect.height else {}
    out: dict[str, Assumption] = {}
    for metric, null in OPERATIONS_EFFECTS.items():
        e = evidence.get(metric)
        used = e is not None and e.estimable
        lo, est, hi = (e.ci_low, e.estimate, e.ci_high) if used else (null, null, null)
        source = "marts.operations_effect (estimate, 95 % CI)"
        out[metric] = Assumption(
            name=metric,
            unit=OPERATIONS_UNITS[metric],
            source=source,
            low=min(lo, est),  # type: ignore[type-var]
            base=est,  # type: ignore[arg-type]
            high=max(hi, est),  # type: ignore[type-var]
            used_by=("warehouse",),
            basis=source if used else f"not estimable: {e.reason if e else 'no row'}",
            source_type="estimate",
        )
        flag = 1.0 if used else 0.0
        out[f"{metric}_used"] = Assumption(
            name=f"{metric}_used",
            unit="1 = the effect prices the line, 0 = its stated value does",
            source=source,
            low=flag,
            base=flag,
            high=flag,
            used_by=("warehouse",),
        )
    return out


def item_status(
    item: str, category: str, unavailable: Mapping[str, str], params: Params | None = None
) -> tuple[str, str]:
    """(status, note) of a summary line: investment, measured, stated or unavailable."""
    if category == "investment":
        return "investment", ""
    if item in STATED_ITEMS and formula_mode(item, params or {}) == "measured":
        return "measured", "priced from marts.operations_effect at the fleet's cost per GPU-hour"
    if item in STATED_ITEMS:
        return (
            "stated",
            "priced from stated values in the assumptions file (the operations "
            "effect it would rest on is not estimable)",
        )
    missing = [m for m in EFFECT_ITEMS.get(item, ()) if m in unavailable]
    if missing:
        return "unavailable", "; ".join(
            f"{m.replace('_', ' ')} not estimable: {unavailable[m]}" for m in missing
        )
    return "measured", ""


def roi_by_period(drivers: pl.LazyFrame, params: Params) -> pl.LazyFrame:
    """Quarter rows priced per quarter, and calendar-year rows summed from them."""
    q = compute_items(drivers, params).with_columns(
        period_type=pl.lit("quarter"), period_start=pl.col("quarter")
    )
    y = add_totals(
        q.group_by(period_start=pl.col("quarter").dt.truncate("1y"))
        .agg([pl.col(c).sum() for c in (*DRIVER_COLUMNS, *ITEM_COLUMNS)])
        .with_columns(period_type=pl.lit("year"))
    )
    cols = [
        "period_type",
        "period_start",
        "period_end",
        *DRIVER_COLUMNS,
        *ITEM_COLUMNS,
        "investment_usd",
        "return_usd",
        "net_return_usd",
        "net_roi",
        "gross_return_multiple",
    ]
    both = pl.concat([q.drop("quarter"), y], how="diagonal_relaxed").with_columns(
        period_end=pl.when(pl.col("period_type") == "quarter")
        .then(pl.col("period_start").dt.offset_by("3mo"))
        .otherwise(pl.col("period_start").dt.offset_by("1y"))
        .dt.offset_by("-1d")
    )
    return both.select(cols).sort("period_type", "period_start")


# Drivers that count people (not events, hours or money): the inputs text names a group of
# 1..min_group_size-1 of them as "fewer than k", as the marts do.
PEOPLE_DRIVERS = ("apprentices",)


def driver_text(name: str, value: float, min_group_size: int) -> str:
    """`name=value` for the inputs column; a count of 1..k-1 people reads `name=fewer than k`."""
    if name in PEOPLE_DRIVERS and is_small(value, min_group_size):
        return f"{name}=fewer than {min_group_size}"
    return f"{name}={value:,.6g}"


# investment lines priced from the data alone (fees, discounts, support paid); the others
# multiply a measured quantity by an assumed value
MEASURED_INVESTMENT = ("course_fees", "bootcamp_fees", "exam_fees", "vendor_discounts",
                       "transition_support")  # fmt: skip


def evidence_tags(
    li, mine: list, params: Params, measured: frozenset[str] = frozenset()
) -> tuple[str, str]:
    """(effect_evidence, price_evidence) of a summary line. A return's effect is `measured` when
    it rests on effects estimated from this company's data (shown or not: `evidence` says
    which), `assumed` when it rests on a stated value or on an effect that is not estimable; its
    price is `measured` when the data supply every price, else `assumed`. An investment line has
    no effect (`investment`); its price is measured for fees charged, assumed where a quantity is
    multiplied by an assumed value."""
    if li.category == "investment":
        return "investment", "measured" if li.item in MEASURED_INVESTMENT else "assumed"
    estimated = any(c.evidence in ("measured", "not_shown") for c in mine)
    prices = {c.price_evidence for c in mine} or {price_evidence(li.item, params, measured)}
    return ("measured" if estimated else "assumed"), (
        "measured" if prices == {"measured"} else "assumed"
    )


def roi_summary(
    drivers: pl.LazyFrame,
    params: Params,
    unavailable: Mapping[str, str] | None = None,
    effects: Mapping[str, EffectEvidence] | None = None,
    min_group_size: int = 5,
    measured: frozenset[str] = frozenset(),
) -> pl.DataFrame:
    """One row per line item over the whole window, with its formula, priced inputs and status
    (investment, measured, stated, unavailable: no amount, the note says why), and the strength
    of the evidence behind a return (`evidence.py`): `counted_usd` is the part resting only on
    effects this company's data show, the part the report's headline adds up."""
    window = (
        drivers.select(start=pl.col("quarter").min(), end=pl.col("quarter").max()).collect().row(0)
    )
    summed = (
        drivers.select([_f(c).sum().alias(c) for c in DRIVER_COLUMNS]).collect().row(0, named=True)
    )
    result = totals(pl.LazyFrame({k: [v] for k, v in summed.items()}), params)
    end = window[1]
    period_end = (
        None
        if end is None
        else (pl.select(pl.lit(end).dt.offset_by("3mo").dt.offset_by("-1d")).item())
    )
    parts = components(summed, params, effects or {}, measured) if effects is not None else []
    rows = []
    for li in LINE_ITEMS:
        drivers, names = active_inputs(li, params)
        inputs = [driver_text(d, summed[d], min_group_size) for d in drivers] + [
            f"{p}={params[p]:,.6g}" for p in names
        ]
        status, note = item_status(li.item, li.category, unavailable or {}, params)
        mine = [c for c in parts if c.item == li.item]
        kinds = sorted({c.evidence for c in mine})
        effect_ev, price_ev = evidence_tags(li, mine, params, measured)
        rows.append(
            {
                "category": li.category,
                "item": li.item,
                "label": li.label,
                "amount_usd": None if status == "unavailable" else result[li.column],
                "status": status,
                "note": note,
                "formula": li.formula,
                "inputs": "; ".join(inputs),
                "evidence": "investment"
                if li.category == "investment"
                else (" + ".join(kinds) if kinds else None),
                "effect_evidence": effect_ev,
                "price_evidence": price_ev,
                "rests_on": ", ".join(m for m in ALL_EFFECTS if any(m in c.rests_on for c in mine))
                or None,
                "counted_usd": None
                if status == "unavailable"
                else sum(c.amount or 0.0 for c in mine if c.evidence == "measured"),
                "period_start": window[0],
                "period_end": period_end,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "category": pl.String,
            "item": pl.String,
            "label": pl.String,
            "amount_usd": pl.Float64,
            "status": pl.String,
            "note": pl.String,
            "formula": pl.String,
            "inputs": pl.String,
            "evidence": pl.String,
            "effect_evidence": pl.String,
            "price_evidence": pl.String,
            "rests_on": pl.String,
            "counted_usd": pl.Float64,
            "period_start": pl.Date,
            "period_end": pl.Date,
        },
    )


def roi_sensitivity(
    drivers: pl.LazyFrame,
    assumptions: Mapping[str, Assumption],
    measured: frozenset[str] = frozenset(),
) -> pl.DataFrame:
    """Tornado table over the window's net ROI; the drivers are summed once, then re-priced."""
    summed = drivers.select([_f(c).sum().alias(c) for c in DRIVER_COLUMNS]).collect()
    lf = summed.lazy()
    used = {p for li in LINE_ITEMS for p in li.params}
    ranges = {
        n: (a.low, a.base, a.high)
        for n, a in assumptions.items()
        if (n in used and "warehouse" in a.used_by) or n in EFFECT_METRICS
    }
    # contractor replaced hours do not depend on the rates; the contractor-baseline window is a
    # driver choice, not a price, so it is left out of the tornado.
    joint = {
        "certification_effect CI (all ratios)": {
            m: (assumptions[m].low, assumptions[m].high) for m in EFFECT_METRICS
        }
    }
    table = sensitivity(lambda p: totals(lf, p)["net_roi"], ranges, base_params(assumptions), joint)
    # a measured price moves over the interval of its mean, as an effect does
    statistical = [*ALL_EFFECTS, *joint, *measured]
    return table.with_columns(
        kind=pl.when(pl.col("assumption").is_in(statistical))
        .then(pl.lit("statistical"))
        .otherwise(pl.lit("assumption"))
    )


OPTIONAL_TYPES = {
    "accepted_on": pl.Date,
    "month": pl.Date,
    "project_id": pl.String,
    "cluster": pl.String,
    "metric": pl.String,
    "component": pl.String,
}


def _optional(marts: Mapping[str, pl.LazyFrame], name: str) -> pl.LazyFrame:
    """An optional input mart, or an empty frame with its columns when the warehouse lacks it."""
    if name in marts:
        return marts[name]
    return pl.LazyFrame(schema={c: OPTIONAL_TYPES.get(c, pl.Float64) for c in INPUT_MARTS[name]})


def build_roi_tables(
    marts: Mapping[str, pl.LazyFrame],
    assumptions: Mapping[str, Assumption],
    min_group_size: int = 5,
) -> dict[str, pl.DataFrame]:
    """All three output tables from the input marts (LazyFrames keyed by mart name)."""
    effect = marts["certification_effect"].collect()
    operations = _optional(marts, "operations_effect").collect()
    assumed, measured = measured_prices(
        _optional(marts, "replacement_cost").collect(),
        warehouse_assumptions(assumptions, effect, operations),
        min_group_size,
    )
    params = base_params(assumed)
    drivers = (
        quarterly_drivers(
            investment_drivers(marts["training_spend"]),
            downtime_drivers(marts["incident_downtime"]),
            contractor_drivers(
                marts["contractor_costs"], int(params["contractor_baseline_months"])
            ),
            fleet_drivers(marts["fleet_size"], marts["certification_coverage"]),
            attrition_drivers(marts["attrition"]),
            deployment_drivers(
                _optional(marts, "capacity_commissioning"),
                marts["fleet_size"],
                marts["certification_coverage"],
            ),
            efficiency_drivers(_optional(marts, "cluster_utilisation")),
        )
        .collect()
        .lazy()
    )  # collect once: three tables read the same drivers
    return {
        "roi_by_period": roi_by_period(drivers, params).collect(),
        "roi_summary": roi_summary(
            drivers,
            params,
            unavailable_effects(effect),
            read_effect_evidence(pl.concat([effect, operations], how="diagonal_relaxed")),
            min_group_size,
            measured,
        ),
        "roi_sensitivity": roi_sensitivity(drivers, assumed, measured),
    }


def read_marts(
    con, names=tuple(INPUT_MARTS), db_label: str = "the build file"
) -> dict[str, pl.LazyFrame]:
    """Read input marts through Arrow into Polars; a missing mart or column is named."""
    out = {}
    for name in names:
        schema = INPUT_SCHEMAS.get(name, "marts")
        exists = con.execute(
            "select count(*) from information_schema.tables where table_schema = ? and table_name = ?",
            [schema, name],
        ).fetchall()[0][0]
        if not exists and name in OPTIONAL_MARTS:
            continue
        if not exists:
            raise RoiInputError(
                f"{schema}.{name} is missing from {db_label}: the ROI assets need it. Build it "
                f"first (materialise {schema}/{name}), then rerun the ROI assets."
            )
        frame = pl.from_arrow(con.sql(f"select * from {schema}.{name}").to_arrow_table())
        missing = [c for c in INPUT_MARTS.get(name, ()) if c not in frame.columns]
        if missing:
            raise RoiInputError(
                f"{schema}.{name} in {db_label} lacks column(s) {', '.join(missing)} that the ROI "
                "model reads (docs/architecture.md lists them); rebuild the mart"
            )
        out[name] = frame.lazy()
    return out


TABLE_COMMENTS = {
    "roi_by_period": "ROI per quarter and calendar year: investment, return, net return and ratios "
    "(totals only; the per-driver detail is restricted). Grain: (period_type in quarter/year, "
    "period_start).",
    "roi_summary": "ROI line items over the data window, with formula and inputs. "
    "Grain: (category, item).",
    "roi_sensitivity": "ROI tornado: each assumption at low and high, others at base. "
    "Grain: assumption.",
}

COLUMN_COMMENTS = {
    "roi_by_period": {
        "period_type": "quarter or year",
        "period_start": "first day of the quarter or calendar year",
        "period_end": "first day after the period",
        "investment_usd": "USD invested in the period (fees, materials, labs, time, support)",
        "return_usd": "USD returned in the period (measured and stated returns)",
        "net_return_usd": "return_usd - investment_usd",
        "net_roi": "ratio (return - investment) / investment, e.g. 3.65 = 365 %; NULL when "
        "nothing was invested",
        "gross_return_multiple": "ratio return / investment; NULL when nothing was invested",
    },
    "roi_summary": {
        "category": "investment or return",
        "item": "line item key",
        "label": "line item label",
        "amount_usd": "USD over the data window (NULL when unavailable)",
        "status": "investment, measured, stated (priced from stated per-GPU values) or unavailable",
        "note": "why the line has its status",
        "formula": "how the amount is computed",
        "inputs": "the summed drivers and assumption values behind the amount",
        "evidence": "for a return: measured (rests on effects this company's data show), "
        "not_shown (on effects estimated but not distinguishable from none), assumed (no effect "
        "estimate supports it) or unavailable; 'measured + not_shown' when a line splits",
        "effect_evidence": "for a return: measured (the effect it prices rests on estimates from "
        "this company's data, certification_effect or operations_effect; `evidence` says whether "
        "they are shown) or assumed (a stated value of the assumptions file, or an effect that "
        "is not estimable); investment for an investment line",
        "price_evidence": "measured (every price of the line comes from this company's data: "
        "fees charged, the replacement cost per exit from marts.replacement_cost) or assumed (a "
        "value of the assumptions file prices it, e.g. the replacement cost per exit without "
        "the requisitions export, or the fleet's cost per GPU-hour)",
        "rests_on": "the effects (certification_effect.metric, operations_effect.metric) the "
        "return rests on",
        "counted_usd": "USD of the return resting only on effects the data show (the other "
        "effects at 1, no effect): the part the report's headline counts",
        "period_start": "first day of the data window",
        "period_end": "last day of the data window",
    },
    "roi_sensitivity": {
        "assumption": "the assumption varied",
        "low_value": "its low value",
        "base_value": "its base value",
        "high_value": "its high value",
        "roi_at_low": "net ROI (ratio) over the window with the assumption at low",
        "roi_at_high": "net ROI (ratio) over the window with the assumption at high",
        "base_roi": "net ROI (ratio) with every assumption at base",
        "swing": "absolute difference roi_at_high - roi_at_low",
        "kind": "statistical (an effect ratio over its 95 % interval) or assumption (a value of "
        "the assumptions file over its low-high range)",
    },
}


def published_form(name: str, df: pl.DataFrame) -> pl.DataFrame:
    """What the analyst-facing copy of an ROI table holds (roi_by_period: totals only)."""
    return df.select(PUBLISHED_BY_PERIOD) if name == "roi_by_period" else df


def write_tables(con, tables: Mapping[str, pl.DataFrame]) -> None:
    """Create or replace each table in schema restricted (full) and marts (published form), with
    table and column descriptions as comments."""
    for schema in ("restricted", "marts"):
        con.execute(f"create schema if not exists {schema}")
    for name, df in tables.items():
        for schema, frame in (("restricted", df), ("marts", published_form(name, df))):
            arrow = frame.to_arrow()  # noqa: F841 - referenced by name in the SQL below
            con.execute(f"create or replace table {schema}.{name} as select * from arrow")
        db.describe(con, f"marts.{name}", TABLE_COMMENTS[name], COLUMN_COMMENTS[name])
