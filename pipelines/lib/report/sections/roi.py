"""Return on investment: what the headline counts, what it leaves out, every input and its source.

The ROI is priced here from the drivers of `roi_by_period` (the build file's restricted copy, one
row per quarter) with the ROI model itself (`pipelines.lib.roi.evidence`), over two windows the
report states once: the last 12 months (the four quarters ending with the report's quarter) and
the data since the start (its first quarter to the report's quarter's end). The headline counts
only returns resting on effects this company's data show (status "shown"); returns resting on
effects not distinguishable from none, or on assumptions, are listed beside it and never added.
Its range moves the measured effects to the ends of their 95 % intervals (statistical); the
assumptions are moved one at a time in a separate chart, each with the verdict at both ends.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import pandas as pd
import polars as pl
from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import (
    fig,
    money,
    nice,
    num,
    roi_pct,
    sentence,
    usd,
    window_label,
)
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Data, Section, Table, table, unavailable
from pipelines.lib.report.sections.effects import (
    EFFECT_TEXT,
    EVIDENCE_WORDS,
    Effect,
    estimate_text,
    read_effects,
    status_tag,
)
from pipelines.lib.report.suppression import is_small, mask_label, shown, suppression_mask
from pipelines.lib.roi.assumptions import (
    SOURCE_TYPES,
    Assumption,
    RoiInputError,
    base_params,
    load_assumptions,
)
from pipelines.lib.roi.evidence import (
    ALL_EFFECTS,
    EFFECT_METRICS,
    Component,
    EffectEvidence,
    Headline,
    Swing,
    headline,
    headline_sensitivity,
    window_drivers,
)
from pipelines.lib.roi.model import (
    COMMISSIONING_MOMENTS,
    DRIVER_COLUMNS,
    HOURS_PER_YEAR,
    LINE_ITEMS,
    OPERATIONS_EFFECTS,
    active_inputs,
)
from pipelines.lib.roi.warehouse import (
    DRIVER_SOURCES,
    PEOPLE_DRIVERS,
    measured_prices,
    warehouse_assumptions,
)

EVIDENCE_ORDER = {"measured": 0, "not_shown": 1, "assumed": 2, "unavailable": 3}
EVIDENCE_STATUS = {"measured": "shown", "not_shown": "not_shown", "unavailable": "not_estimable"}
VERDICT = {
    "pays": "Yes: it pays off even at the unfavourable end of the measured effects' intervals",
    "likely": "Probably: it pays off at the estimates, but not at the unfavourable end of "
    "their intervals",
    "not_shown": "No: the returns measured here do not cover the investment",
    "nothing": "Not measurable yet: no effect of certification is measured in this company's data",
}


@dataclass(frozen=True)
class InputRow:
    name: str
    year: str  # value over the last 12 months (or the value used)
    since: str  # value since the start ("" when it is the same)
    source: Markup | str
    csv: list  # numbers as numbers for the appendix file
    evidence: str = ""  # measured (this company's data) | assumed (the assumptions file)


@dataclass
class RoiFacts:
    spend: float | None = None
    spend_prev: float | None = None
    spend_year_ago: float | None = None
    spend_12m: float | None = None
    exam_spend_per_attempt: float | None = None
    year: Headline | None = None  # the last 12 months
    since: Headline | None = None  # since the start
    swings: list[Swing] = field(default_factory=list)
    assumptions: dict[str, Assumption] = field(default_factory=dict)
    inputs: list[InputRow] = field(default_factory=list)
    why_not: str = ""
    # the months the outcome data behind the returns cover (the effects' windows), which may
    # begin after the spend data do
    outcomes_start: date | None = None
    outcomes_end: date | None = None

    @property
    def year_label(self) -> str:
        return _label(self.year)

    @property
    def since_label(self) -> str:
        """`Oct 2020 – Sep 2026; outcome data Oct 2022 – Sep 2026` when the returns rest on
        outcome data that begin later than the spend."""
        text = _label(self.since)
        h = self.since
        if self.outcomes_start and h is not None and h.start and self.outcomes_start > h.start:
            text += "; returns from outcome data of " + window_label(
                self.outcomes_start, self.outcomes_end or h.end
            )
        return text

    @property
    def verdict(self) -> str:
        if self.year is None:
            return "nothing"
        if not self.year.of("measured"):
            return "nothing"
        return self.year.verdict


def _label(h: Headline | None) -> str:
    return "" if h is None else window_label(h.start, h.end)


# --- spend ------------------------------------------------------------------------------------


def _spend_figures(ts: pd.DataFrame, q: Quarter, facts: RoiFacts):
    """Spend of the quarter, the one before, a year before and the last 12 months, and the
    year's exam spend per attempt; returns the per-quarter total for the quarters table."""

    def total(start) -> float | None:
        part = ts[ts["quarter"] == start]
        return None if part.empty else float(part["spend_usd"].sum())

    year = ts["quarter"].isin([x.start for x in q.trailing(4)])
    facts.spend = total(q.start)
    facts.spend_prev = total(q.previous().start)
    facts.spend_year_ago = total(q.trailing(5)[0].start)
    facts.spend_12m = float(ts[year]["spend_usd"].sum())
    exams = ts[(ts["spend_category"] == "certification_exam") & year]
    if "enrolments" in exams.columns and float(exams["enrolments"].sum()) > 0:
        facts.exam_spend_per_attempt = float(exams["spend_usd"].sum()) / float(
            exams["enrolments"].sum()
        )
    return total


def _spend(marts: Marts, q: Quarter, thr: int, facts: RoiFacts) -> list[Table]:
    ts = marts.get("training_spend")
    if ts is None or ts.empty:
        return []
    cur = ts[ts["quarter"] == q.start].sort_values("spend_category")
    if cur.empty:
        return []
    _spend_figures(ts, q, facts)
    mask = suppression_mask(
        dict(zip(cur["spend_category"], cur["participants"], strict=True)),
        thr,
        also_hidden=hidden_in_marts(cur, "spend_category"),
    )
    rows, data = [], []
    for r in cur.itertuples():
        h = mask[r.spend_category]
        rows.append(
            [
                nice(r.spend_category),
                shown(r.participants, h, thr),
                shown(r.completions, h, thr),
                mask_label(thr) if h else usd(r.spend_usd),
                mask_label(thr) if h else usd(r.discount_usd),
                shown(r.training_hours, h, thr),
            ]
        )
        data.append(
            [nice(r.spend_category)]
            + ([None] * 5 if h else [int(r.participants), int(r.completions),
                                      round(float(r.spend_usd), 2), round(float(r.discount_usd), 2),
                                      round(float(r.training_hours), 1)])
            + [bool(h)]
        )  # fmt: skip
    return [
        table(
            f"Training and exam spend charged in {q.label}, by programme type",
            ["Programme type", "Participants", "Completions", "Spend", "Discounts", "Hours"],
            rows,
            total=[
                "All",
                "",
                "",
                fig("spend", usd(facts.spend)),
                usd(cur["discount_usd"].sum()),
                num(cur["training_hours"].sum()),
            ],
            key="spend-all",
            scope="full",
            data=Data(
                ["Programme type", "Participants (count)", "Completions (count)",
                 "Spend charged (USD)", "Discounts (USD)", "Training hours (hours)",
                 "Hidden: fewer than the minimum group size (true/false)"],
                data,
            ),
        )
    ]  # fmt: skip


# --- the ROI over two windows -----------------------------------------------------------------


def evidence_of(effects: dict[str, Effect]) -> dict[str, EffectEvidence]:
    """The report's one reading of each effect, handed to the ROI model: the same status
    governs the effects table, the sentences and the ROI lines."""
    return {
        m: EffectEvidence(
            m,
            e.estimate,
            e.ci_low,
            e.ci_high,
            e.estimable,
            e.finding,
            e.not_estimable_reason if not e.estimable else e.why,
            e.data_needed if not e.estimable else "",
        )
        for m, e in effects.items()
    }


def operations_effects(marts: Marts) -> dict[str, Effect]:
    """The operations effects the ROI rests on (marts.operations_effect), read as the
    certification effects are; empty when the warehouse has none."""
    frame = marts.get("operations_effect")
    found = read_effects(frame) if frame is not None else {}
    return {m: e for m, e in found.items() if m in OPERATIONS_EFFECTS}


def _effect_frame(effects: dict[str, Effect]) -> pl.DataFrame:
    return pl.DataFrame(
        [
            {
                "metric": e.metric,
                "estimate": e.estimate,
                "ci_low": e.ci_low,
                "ci_high": e.ci_high,
                "estimable": e.estimable,
                "not_estimable_reason": None if e.estimable else e.not_estimable_reason,
            }
            for e in effects.values()
        ],
        schema={
            "metric": pl.String,
            "estimate": pl.Float64,
            "ci_low": pl.Float64,
            "ci_high": pl.Float64,
            "estimable": pl.Boolean,
            "not_estimable_reason": pl.String,
        },
    )


def _by_period(marts: Marts) -> pl.DataFrame | None:
    bp = marts.get("roi_by_period")
    if bp is None or bp.empty or not set(DRIVER_COLUMNS) <= set(bp.columns):
        return None
    bp = bp[bp["period_type"] == "quarter"].copy()
    bp["period_start"] = pd.to_datetime(bp["period_start"]).dt.date
    cols = ["period_type", "period_start", *DRIVER_COLUMNS]
    return pl.from_pandas(bp[cols].astype({c: "float64" for c in DRIVER_COLUMNS}))


def _no_replacement_cost() -> pl.DataFrame:
    return pl.DataFrame(schema={"component": pl.String, "amount_usd": pl.Float64})


def price_windows(
    marts: Marts,
    q: Quarter,
    effects: dict[str, Effect],
    assumptions_path: Path | None,
    min_group_size: int = 5,
) -> tuple[Headline, Headline, list[Swing], dict[str, Assumption]] | str:
    """The headline of the last 12 months and since the start, the sensitivity of the first,
    and the assumptions as priced (a price measured from marts.replacement_cost in place of
    its assumption); or why the ROI cannot be priced."""
    bp = _by_period(marts)
    if bp is None:
        return (
            "the drivers of roi_by_period are not at hand (the report reads them from the "
            "build file's restricted.roi_by_period; run the pipeline, or pass the build file)"
        )
    missing = [m for m in EFFECT_METRICS if m not in effects]
    if missing:
        return f"certification_effect has no row for {', '.join(missing)}"
    if assumptions_path is None or not Path(assumptions_path).is_file():
        return f"the assumptions file {assumptions_path} is missing"
    ops = operations_effects(marts)
    try:
        assumed = warehouse_assumptions(
            load_assumptions(assumptions_path), _effect_frame(effects), _effect_frame(ops)
        )
    except RoiInputError as exc:
        return str(exc)
    rc = marts.get("replacement_cost")
    assumed, measured = measured_prices(
        pl.from_pandas(rc) if rc is not None and not rc.empty else _no_replacement_cost(),
        assumed,
        min_group_size,
    )
    params = base_params(assumed)
    ev = evidence_of({**effects, **ops})
    quarters = sorted(d for d in bp["period_start"].to_list() if d <= q.start)
    if not quarters:
        return f"roi_by_period has no quarter up to {q.label}"
    year_start = max(q.trailing(4)[0].start, quarters[0])
    year = headline(
        window_drivers(bp, year_start, q.start), params, ev, year_start, q.end, measured
    )
    since = headline(
        window_drivers(bp, quarters[0], q.start), params, ev, quarters[0], q.end, measured
    )
    swings = headline_sensitivity(window_drivers(bp, year_start, q.start), assumed, ev, measured)
    return year, since, swings, assumed


def _roi_range(h: Headline) -> str:
    if h.net_roi_low is None or h.net_roi_high is None:
        return ""
    return f"{roi_pct(h.net_roi_low)} to {roi_pct(h.net_roi_high)}"


# the operations effects' names where the effects module has none (it words the certification
# effects of marts.certification_effect)
OPERATIONS_LABELS = {
    "commissioning_time_ratio": "Commissioning time (delivery to production)",
    "lost_share_per_10_points": "Lost GPU-hours (failed jobs)",
}


def effect_label(metric: str) -> str:
    """The outcome an effect is about, as every ROI table and caption names it."""
    if metric in EFFECT_TEXT:
        return EFFECT_TEXT[metric][0]
    return OPERATIONS_LABELS.get(metric, nice(metric))


def lower_first(text: str) -> str:
    """`Lost GPU-hours` -> `lost GPU-hours`: a label inside a sentence keeps its acronyms."""
    return text[:1].lower() + text[1:]


def evidence_cell(c: Component) -> Markup:
    """The evidence of a component in the words of the effects it rests on, tagged per effect."""
    if c.evidence == "assumed":
        return sentence("assumed: {why}; price {p}", why=c.why, p=c.price_evidence)
    status = EVIDENCE_STATUS[c.evidence]
    # an unavailable return names the effects that are not estimable; an effect it also rests
    # on that was estimated keeps its own status, stated where that effect is reported
    metrics = c.missing if c.evidence == "unavailable" and c.missing else c.rests_on
    tags = Markup(", ").join(
        sentence(
            "{label} {tag}",
            label=lower_first(effect_label(m)),
            tag=status_tag(m, status, EVIDENCE_WORDS),
        )
        for m in metrics
    )
    if c.evidence == "unavailable":
        return tags
    return sentence("{tags}; price {p}", tags=tags, p=c.price_evidence)


def _evidence_table(f: RoiFacts) -> Table:
    year, since = f.year, f.since
    assert year is not None and since is not None
    key = lambda c: (c.item, c.evidence)  # noqa: E731
    later = {key(c): c for c in since.parts}
    parts = sorted(year.parts, key=lambda c: EVIDENCE_ORDER[c.evidence])

    def amount(c: Component | None, tag: str = "") -> Markup | str:
        if c is None:
            return "–"
        if c.amount is None:
            return "not estimable"
        return fig(tag, usd(c.amount)) if tag else usd(c.amount)

    rows = [
        [
            c.label,
            evidence_cell(c),
            amount(c, f"roi-part-{c.item}-{c.evidence}"),
            amount(later.get(key(c))),
        ]
        for c in parts
    ]

    def counted(h: Headline, tag: str = "") -> Markup:
        rng = f" ({money(h.counted_low)}–{money(h.counted_high)})" if h.of("measured") else ""
        return sentence("{m}{r}", m=fig(tag, usd(h.counted)) if tag else usd(h.counted), r=rng)

    rows += [
        ["Return counted: measured here", "the headline", counted(year, "roi-counted"),
         counted(since)],
        ["Investment", "", fig("roi-investment", usd(year.investment)), usd(since.investment)],
    ]  # fmt: skip
    return table(
        "What the return rests on, and what the headline counts",
        ["Return", "Evidence", f"Last 12 months ({f.year_label})",
         f"Since the start ({f.since_label})"],
        rows,
        total=[
            "Net return on investment, measured returns only",
            "(counted − investment) ÷ investment; range over the 95 % intervals",
            sentence("{r} ({rng})", r=fig("roi-net", roi_pct(year.net_roi)), rng=_roi_range(year)),
            sentence("{r} ({rng})", r=roi_pct(since.net_roi), rng=_roi_range(since)),
        ],
        key="roi-evidence",
    )  # fmt: skip


INVESTMENT_ITEMS = (
    ("exam_materials", "Exam materials"),
    ("lab_access", "Lab access"),
    ("apprenticeship_senior_time", "Apprenticeship: senior's lost productivity"),
    ("engineers_own_time", "Engineers' own time in training"),
    ("transition_support", "Transition support"),
)
FEES = ("course_fees", "bootcamp_fees", "exam_fees", "vendor_discounts")


def _investment_table(f: RoiFacts) -> Table:
    year, since = f.year, f.since
    assert year is not None and since is not None
    fees_year = sum(year.items[i] for i in FEES)
    fees_since = sum(since.items[i] for i in FEES)
    same = f.spend_12m is not None and abs(fees_year - f.spend_12m) < 0.5
    rows = [
        [
            "Training and exam fees charged (list price − discounts)",
            fig("spend-12m", usd(f.spend_12m)) if same else usd(fees_year),
            usd(fees_since),
        ]
    ]
    rows += [
        [label, usd(year.items[item]), usd(since.items[item])]
        for item, label in INVESTMENT_ITEMS
        if year.items[item] or since.items[item]
    ]
    return table(
        "Investment: the fees charged and the cost of time and materials",
        [
            "Investment item",
            f"Last 12 months ({f.year_label})",
            f"Since the start ({f.since_label})",
        ],
        rows,
        total=["Investment", fig("roi-investment", usd(year.investment)), usd(since.investment)],
        key="roi-investment",
        note="The fees charged are the training_spend mart's spend; the other items are priced "
        "from the data's quantities with the values of the inputs table.",
    )


DRIVER_LABELS = {
    "course_list_price_usd": "Course fees, list price",
    "bootcamp_list_price_usd": "Bootcamp fees, list price",
    "exam_list_price_usd": "Exam fees, list price",
    "discounts_usd": "Discounts on list prices",
    "exam_attempts": "Exam attempts",
    "lab_enrolments": "Enrolments needing lab access",
    "apprentices": "Apprentices",
    "training_hours": "Hours in training",
    "certified_downtime_gpu_hours": "Downtime in certified engineers' incidents",
    "certified_voluntary_exits": "Voluntary exits of certified engineers",
    "contractor_hours_replaced": "Contractor hours below their early level",
    "certified_fleet_gpu_years": "Certified GPU-years",
    "certified_share_gpu_hours": "GPU-hours available × 10 × the team's certified share",
    "certified_gpus_deployed": "GPUs deployed by certified leads",
    "commissioning_gpu_hours_share_pow1": "GPU-hours of commissioning × certified share of "
    "the leads",
}
ASSUMPTION_LABELS = {
    "replacement_cost_usd_per_exit": "Replacement cost per voluntary exit",
    "downtime_cost_usd_per_gpu_hour": "Cost of a GPU-hour of downtime",
    "lab_access_usd_per_enrolment": "Lab access per enrolment",
    "exam_materials_usd_per_attempt": "Exam materials per attempt",
    "employee_rate_usd_per_hour": "Engineer's hourly cost (own time)",
    "contractor_rate_usd_per_hour": "Contractor's hourly rate",
    "senior_rate_usd_per_hour": "Senior engineer's hourly cost",
    "hours_per_month": "Working hours per month",
    "apprenticeship_months": "Apprenticeship length",
    "apprenticeship_senior_productivity_loss": "Senior's time an apprentice takes",
    "efficiency_share_of_fleet_cost": "Efficiency gain, share of fleet cost",
    "fleet_cost_usd_per_gpu_year": "Fleet cost per GPU-year",
    "faster_deployment_usd_per_gpu": "Faster deployment, value per GPU deployed",
    "contractor_baseline_months": "Months of contractor baseline",
}


def short_source(a: Assumption) -> str:
    """The kind of source and its short name: the section of the domain document, the studies
    with their years and the range they support, or that it is an estimate."""
    text = " ".join(a.source.split())
    if a.source_type == "measured":
        return f"this company's data: {text}"
    if a.source_type == "company":
        when = f" on {a.set_on}" if a.set_on else ""
        return f"this company's own figure, stated by {a.owner}{when}: {text}"
    if a.source_type == "domain":
        m = re.search(r'seed-facts\.md "[^"]+"', text)
        return f"domain document: {m.group(0) if m else text}"
    if a.source_type == "study":
        studies = re.findall(r"([A-Z][A-Za-z]+(?: and [A-Z][A-Za-z]+)?) \((\d{4})\)", text)
        named = "; ".join(f"{n} ({y})" for n, y in studies) or text
        return f"published studies: {named}; they support {a.published_range}"
    return "estimate: nobody has measured it here; replace it with your own"


VERDICT_SHORT = {"pays": "pays off", "likely": "pays off", "not_shown": "does not pay off"}


def unit_value(a: Assumption, v: float | None) -> str:
    """One value of an assumption in its unit: `$31,500`, `10 %`, `4.5 months per apprentice`."""
    if v is None:
        return "–"
    if a.unit.startswith("share"):
        return f"{v * 100:g} %"
    if a.unit.startswith("USD"):
        return usd(v) if v >= 100 else f"${v:,.2f}".replace(".00", "")
    return f"{v:,.6g} {a.unit}"


def assumption_value(a: Assumption) -> str:
    """`$150,000 per voluntary exit (range $31,500–$300,000)`, `20 % (range 10 %–30 %)`."""
    if a.unit.startswith("share"):
        show = lambda v: f"{v * 100:g} %"  # noqa: E731
        per = ""
    elif a.unit.startswith("USD"):
        show = lambda v: usd(v) if v >= 100 else f"${v:,.2f}".replace(".00", "")  # noqa: E731
        per = " per " + a.unit.split("/", 1)[1] if "/" in a.unit else ""
    else:
        show = lambda v: f"{v:,.6g}"  # noqa: E731
        per = f" {a.unit}"
    return f"{show(a.base)}{per} (range {show(a.low)}–{show(a.high)})"


def _value(v: float, unit: str) -> str:
    if unit == "USD":
        return usd(v)
    if unit.startswith("share"):
        return f"{v * 100:g} %"
    decimals = 0 if abs(v) >= 100 or float(v).is_integer() else 2
    return f"{num(v, decimals)} {unit}".strip()


def _active(f: RoiFacts) -> tuple[set[str], set[str]]:
    """The drivers and assumptions the window's formulas use (an operations return uses the
    drivers of its measured formula or of its stated one, not both)."""
    params = base_params(f.assumptions)
    drivers: set[str] = set()
    names: set[str] = set()
    for li in LINE_ITEMS:
        d, n = active_inputs(li, params)
        drivers |= set(d)
        names |= set(n)
    return drivers, names


def _driver_rows(f: RoiFacts, thr: int, year: dict, since: dict) -> list[InputRow]:
    active, _ = _active(f)
    rows: list[InputRow] = []
    for d in DRIVER_COLUMNS:
        mart, what, unit = DRIVER_SOURCES[d]
        # the higher moments of commissioning time only carry the arithmetic of the days saved
        if d in COMMISSIONING_MOMENTS[1:] or d not in active:
            continue
        if not mart or (not year.get(d) and not since.get(d)):
            continue
        hide = [d in PEOPLE_DRIVERS and is_small(v, thr) for v in (year[d], since[d])]
        rows.append(
            InputRow(
                DRIVER_LABELS.get(d, what),
                mask_label(thr) if hide[0] else _value(year[d], unit),
                mask_label(thr) if hide[1] else _value(since[d], unit),
                f"this company's data: {mart}, {what}",
                [what, unit, None if hide[0] else year[d], None if hide[1] else since[d],
                 f"this company's data: {mart}", "", "measured"],
                "measured",
            )
        )  # fmt: skip
    return rows


def _effect_rows(f: RoiFacts, effects: dict[str, Effect]) -> list[InputRow]:
    _, names = _active(f)
    rows: list[InputRow] = []
    for m in (*EFFECT_METRICS, *OPERATIONS_EFFECTS):
        e = effects.get(m)
        if e is None or (m in OPERATIONS_EFFECTS and m not in names):
            continue
        mart = "certification_effect" if m in EFFECT_METRICS else "operations_effect"
        unit = "difference per 10 points" if OPERATIONS_EFFECTS.get(m) == 0.0 else "ratio"
        value = estimate_text(e) if e.estimable else Markup("–")
        rows.append(
            InputRow(
                f"Effect of certification: {lower_first(effect_label(m))} ({unit})",
                value,
                "",
                sentence(
                    "this company's data: {mart}, {w}; status {s}",
                    mart=mart,
                    w=e.window or "its months",
                    s=status_tag(m, e.status),
                ),
                [f"effect: {m}", unit, e.estimate, None, f"data: {mart}", "",
                 "measured" if e.estimable else "not estimable"],
                "measured" if e.estimable else "not estimable",
            )
        )  # fmt: skip
    return rows


def _assumption_row(a: Assumption, name: str) -> InputRow:
    kind = SOURCE_TYPES.get(a.source_type, a.source_type)
    # the company's own figure prices as its data do (roi/README.md, "Measured prices")
    evidence = "measured" if a.source_type in ("measured", "company") else "assumed"
    # a measured price names its mart in its source; a stated one the file and line to change
    where = a.location or ("marts.replacement_cost" if evidence == "measured" else
                           "assumptions file")  # fmt: skip
    shown = (
        sentence("{src}", src=short_source(a))
        if a.source_type == "measured"
        else sentence("{src}; {where}", src=short_source(a), where=where)
    )
    return InputRow(
        ASSUMPTION_LABELS.get(name, nice(name)),
        assumption_value(a),
        "",
        shown,
        [name, a.unit, a.base, None, f"{kind}: {' '.join(a.source.split())}", where, evidence],
        evidence,
    )  # fmt: skip


def _gpu_hour_row(a: Assumption) -> InputRow:
    """The price of a GPU-hour of capacity, derived from the fleet's cost per GPU-year."""
    per = [v / HOURS_PER_YEAR for v in (a.base, a.low, a.high)]
    return InputRow(
        "Cost of a GPU-hour of capacity",
        f"${per[0]:,.2f} per GPU-hour (range ${per[1]:,.2f}–${per[2]:,.2f})",
        "",
        sentence(
            "fleet cost per GPU-year ÷ {h} hours; {src}; {where}",
            h=f"{HOURS_PER_YEAR:,.0f}",
            src=short_source(a),
            where=a.location or "assumptions file",
        ),
        ["gpu_hour_cost_usd", "USD/GPU-hour", per[0], None,
         "fleet_cost_usd_per_gpu_year / 8,760 hours", a.location, "assumed"],
        "assumed",
    )  # fmt: skip


def inputs_rows(
    f: RoiFacts, effects: dict[str, Effect], thr: int, year: dict, since: dict
) -> list[InputRow]:
    """Every value the ROI uses, with its source and evidence: this company's data (mart and
    window: measured), the effect estimates (mart, months, status), and each assumption with its
    kind of source and the line of the assumptions file a user changes (assumed)."""
    rows = _driver_rows(f, thr, year, since) + _effect_rows(f, effects)
    _, active = _active(f)
    measured_ops = any(
        f.assumptions.get(f"{m}_used") and f.assumptions[f"{m}_used"].base
        for m in OPERATIONS_EFFECTS
    )
    seen: set[str] = set()
    for name in [p for li in LINE_ITEMS for p in li.params]:
        a = f.assumptions.get(name)
        if a is None or name in seen or name not in active or "warehouse" not in a.used_by:
            continue
        if name in ALL_EFFECTS:
            continue
        seen.add(name)
        rows.append(_assumption_row(a, name))
        if name == "fleet_cost_usd_per_gpu_year" and measured_ops:
            rows.append(_gpu_hour_row(a))
    return rows


def _inputs_table(f: RoiFacts) -> Table:
    def value(r: InputRow) -> Markup | str:
        if not r.since:
            return r.year
        return sentence("{y}; since the start {s}", y=r.year, s=r.since)

    return table(
        "Inputs of the ROI and where each comes from",
        ["Input", f"Value: last 12 months ({f.year_label})", "Evidence: source"],
        [[r.name, value(r), sentence("{e}: {s}", e=r.evidence, s=r.source)] for r in f.inputs],
        key="roi-inputs",
        scope="inputs",
        note="Assumed values show their range (low–high) in brackets; the sensitivity charts "
        "move each to both ends. Counts of people below the minimum group size read as "
        "hidden.",
        data=Data(
            ["Input", "Unit", "Last 12 months (value)", "Since the start (value)", "Source",
             "Where to change it", "Evidence (measured / assumed)"],
            [r.csv for r in f.inputs],
        ),
    )  # fmt: skip


def _swing_charts(f: RoiFacts) -> list[charts.Chart]:
    year = f.year
    if year is None or year.net_roi is None or not f.swings:
        return []
    out = []
    stat = [s for s in f.swings if s.kind == "statistical"]
    if stat:
        rows = [
            (
                effect_label(s.name) + " (95 % interval)"
                if s.name in ALL_EFFECTS
                else "all measured effects together",
                s.roi_at_low,
                s.roi_at_high,
            )
            for s in stat
            if s.roi_at_low is not None and s.roi_at_high is not None
        ]
        caption = Markup(" ").join(
            sentence(
                "{label} ({status}): at the ends of its 95 % interval the net return is {lo} "
                "({vlo}) and {hi} ({vhi}).",
                label=effect_label(s.name),
                status=status_tag(s.name, "shown"),
                lo=roi_pct(s.roi_at_low),
                vlo=VERDICT_SHORT[s.verdict_at_low],
                hi=roi_pct(s.roi_at_high),
                vhi=VERDICT_SHORT[s.verdict_at_high],
            )
            for s in stat
            if s.name in ALL_EFFECTS
        )
        out.append(
            charts.Chart(
                "roi-uncertainty",
                charts.swing_chart(
                    "roi-uncertainty",
                    rows,
                    year.net_roi,
                    title="Statistical uncertainty of the measured effects",
                    alt="Bar chart: the net return on investment of the last 12 months with each "
                    "measured effect at the low and at the high end of its 95 % interval, and "
                    "with all of them together, against break-even.",
                    low_label="ratio at its low end (larger effect)",
                    high_label="ratio at its high end (smaller effect)",
                ),
                caption,
            )
        )
    return out + _assumption_chart(f, year)


def _assumption_chart(f: RoiFacts, year: Headline) -> list[charts.Chart]:
    """The tornado of the assumptions, with the verdict at the ends of those that flip it."""
    out = []
    assume = [s for s in f.swings if s.kind == "assumption"][:8]
    if assume:
        rows = [(ASSUMPTION_LABELS.get(s.name, nice(s.name)), s.roi_at_low, s.roi_at_high)
                for s in assume]  # fmt: skip
        base = VERDICT_SHORT[year.verdict]
        flips = [s for s in assume
                 if {VERDICT_SHORT[s.verdict_at_low], VERDICT_SHORT[s.verdict_at_high]} != {base}]  # fmt: skip
        caption = Markup(" ").join(
            sentence(
                "{name} at {lo}: net return {rlo} ({vlo}); at {hi}: {rhi} ({vhi}).",
                name=ASSUMPTION_LABELS.get(s.name, nice(s.name)),
                lo=unit_value(f.assumptions[s.name], s.low_value),
                rlo=roi_pct(s.roi_at_low),
                vlo=VERDICT_SHORT[s.verdict_at_low],
                hi=unit_value(f.assumptions[s.name], s.high_value),
                rhi=roi_pct(s.roi_at_high),
                vhi=VERDICT_SHORT[s.verdict_at_high],
            )
            for s in flips
        ) or sentence("No assumption's range changes the verdict.")
        out.append(
            charts.Chart(
                "roi-assumptions",
                charts.swing_chart(
                    "roi-assumptions",
                    rows,
                    year.net_roi,
                    title="Assumptions, each at its low and its high value",
                    alt="Bar chart: the net return on investment of the last 12 months with each "
                    "assumption of the ROI model at the low and at the high end of its range, "
                    "the others at their base value, against break-even.",
                ),
                caption,
            )
        )
    return out


def roi_section(
    marts: Marts,
    q: Quarter,
    thr: int,
    effects: dict[str, Effect],
    assumptions_path: Path | None = None,
) -> tuple[Section, RoiFacts]:
    sid, title = "roi", "Return on investment: what it counts and what it rests on"
    section, facts = Section(sid, title), RoiFacts()
    spend_tables = _spend(marts, q, thr, facts)
    priced = price_windows(marts, q, effects, assumptions_path, thr)
    if isinstance(priced, str):
        facts.why_not = priced
        section.notes.append(f"ROI: not available ({priced}). Spend figures are actual charges.")
        section.tables += spend_tables
        if not spend_tables:
            return unavailable(sid, title, f"Not available: {priced}."), facts
        return section, facts
    facts.year, facts.since, facts.swings, facts.assumptions = priced
    windows = [(e.window_start, e.window_end) for e in effects.values() if e.window_start]
    if windows:
        facts.outcomes_start = min(w[0] for w in windows)
        facts.outcomes_end = max((w[1] for w in windows if w[1]), default=None)
    bp = _by_period(marts)
    assert bp is not None
    y0 = facts.year.start or q.start
    facts.inputs = inputs_rows(
        facts,
        effects,
        thr,
        window_drivers(bp, y0, q.start),
        window_drivers(bp, facts.since.start or q.start, q.start),
    )
    section.lead = sentence(
        "Two windows, each labelled: the last 12 months ({y}) and since the start of the data "
        "({s}). The headline counts only returns resting on effects measured in this company's "
        "data; returns resting on effects not distinguishable from none, or on assumptions, are "
        "listed and not counted.",
        y=facts.year_label,
        s=facts.since_label,
    )
    section.tables += [_evidence_table(facts), _investment_table(facts), _inputs_table(facts)]
    section.tables += spend_tables
    section.charts += _swing_charts(facts)
    section.order = ["roi-evidence", "roi-investment", "roi-uncertainty", "roi-assumptions"]
    return section, facts


# One cost per certification, defined here and used wherever the report prices certifications
# (the composition's gaps, the recommended actions). The programme section's "cost per
# certification" of each programme is a different figure (that programme's own fees and time
# over the certifications earned through it), and is labelled as such there.
PER_CERTIFICATION_LABEL = "ROI investment per certification earned"
PER_CERTIFICATION_DEFINITION = (
    "the last 12 months' ROI investment (fees of every programme, exam materials, labs, "
    "engineers' and seniors' time) ÷ the certifications earned in them; not a programme's own "
    "cost per certification, which counts only that programme's fees and time"
)


def investment_per_certification(r: RoiFacts | None, passes: float | None) -> float | None:
    """The report's one cost per certification (`PER_CERTIFICATION_DEFINITION`)."""
    if r is None or r.year is None or not passes:
        return None
    return r.year.investment / passes


def payback_text(h: Headline) -> str:
    m = h.payback_months
    if m is None or math.isinf(m):
        return "does not pay back on the returns measured here"
    return f"pays back in {m:.1f} months"
