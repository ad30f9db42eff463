"""The workforce plan as a budget request: one per quarter (whom to hire, which programmes to
start, what it costs), its payback from the measured effects only, and beside it how far the
same planner was off when run 4 and 8 quarters ago on the company's own history.

Reads `marts.workforce_plan` (the plan), `marts.workforce_plan_backtest` (the backtest) and the
ROI's measured return per certified engineer (`actions.measured_return`, the figure page 1 and
the actions section use): the returns of the ROI resting on effects measured in this company's
data (`marts.certification_effect`), counted over the last 12 months, per certified engineer on
average over them. A quarter's payback is the training spent to date (the programme starts;
hires and their pay staff the fleet and are not paid back by certification) over the yearly
measured return of the engineers the plan certifies beyond the team left alone.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

import pandas as pd

from pipelines.lib.report.data import Marts
from pipelines.lib.report.fmt import fig, nice, num, pct, sentence, usd
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Data, Section, table, unavailable
from pipelines.lib.report.sections.roi import RoiFacts

PROGRAMMES = ("online", "bootcamp", "apprenticeship", "vendor_partnership", "internal")
MEASURE_WORDS = {
    "headcount": "Headcount",
    "certified_engineers": "Engineers holding their role's track",
    "exits": "Exits",
    "training_spend_usd": "Training spend",
}


@dataclass(frozen=True)
class MeasuredReturn:
    """The ROI's measured return per certified engineer a year, with its 95 % range, and the
    lines it counts (label and the effects it rests on)."""

    per_engineer: float
    low: float
    high: float
    lines: tuple[str, ...]


@dataclass(frozen=True)
class Request:
    quarter: str
    hires: dict[str, int]  # role family -> hires
    starts: dict[str, int]  # programme -> starts
    cost: float  # everything the plan adds in the quarter
    training: float  # of it, the programme starts
    training_to_date: float
    added: float | None  # certified engineers beyond the team left alone (None: suppressed)
    template: float
    shortfall: float

    def payback_years(self, per_engineer: float | None) -> float | None:
        if per_engineer is None or not self.added or self.added <= 0 or per_engineer <= 0:
            return None
        return self.training_to_date / (self.added * per_engineer)


@dataclass(frozen=True)
class BacktestLine:
    back: int
    origin: str
    measure: str
    last_quarter: str
    forecast: float | None
    actual: float | None
    mean_abs_relative: float | None  # over the quarters forecast


@dataclass
class PlanFacts:
    as_of: str
    requests: list[Request]
    probability: float
    measured: MeasuredReturn | None
    backtest: list[BacktestLine] = field(default_factory=list)
    rates: tuple[int, int] | None = None  # (measured in the company's data, all) of the plan

    @property
    def total(self) -> float:
        return sum(r.cost for r in self.requests)

    @property
    def training_total(self) -> float:
        return sum(r.training for r in self.requests)


def measured_return(roi: RoiFacts | None, certified_12m: float | None) -> MeasuredReturn | None:
    """The return counted over the last 12 months (measured effects only) per certified engineer
    on average over them; None when no effect of certification is measured."""
    year = roi.year if roi is not None else None
    if year is None or not year.of("measured") or not certified_12m:
        return None
    lines = tuple(
        f"{c.label} ({', '.join(c.rests_on)})" if c.rests_on else c.label
        for c in year.of("measured")
    )
    return MeasuredReturn(
        year.counted / certified_12m,
        year.counted_low / certified_12m,
        year.counted_high / certified_12m,
        lines,
    )


def quarter_label(v: object) -> str:
    """YYYY-Qn: the report's loader reads a `quarter` column as the quarter's first day."""
    return Quarter.containing(v).label if isinstance(v, date) else str(v)


def _requests(wp: pd.DataFrame) -> list[Request]:
    out, to_date = [], 0.0
    for q, g in wp.groupby("quarter", sort=True):
        hires = g.groupby("role_family")["hires"].sum()
        starts = {p: int(g[f"starts_{p}"].sum()) for p in PROGRAMMES if g[f"starts_{p}"].sum()}
        training = float(g["training_cost_usd"].sum())
        to_date += training
        added = g["added_certified_engineers"]
        out.append(
            Request(
                quarter_label(q),
                {str(k): int(v) for k, v in hires.items() if v},
                starts,
                float(g["cost_usd"].sum()),
                training,
                to_date,
                None if added.isna().all() else float(added.sum()),
                float(g["template_headcount"].fillna(0).sum()),
                float(g["shortfall"].fillna(0).sum()),
            )
        )
    return out


def _backtest(bt: pd.DataFrame | None) -> list[BacktestLine]:
    if bt is None or bt.empty:
        return []
    out = []
    for (back, measure), g in bt.groupby(["quarters_back", "measure"], sort=True):
        g = g.sort_values("quarters_ahead")
        last = g.iloc[-1]
        rel = g["relative_error"].dropna().abs()
        out.append(
            BacktestLine(
                int(back),
                str(last["origin_quarter"]),
                str(measure),
                quarter_label(last["quarter"]),
                None if pd.isna(last["forecast"]) else float(last["forecast"]),
                None if pd.isna(last["actual"]) else float(last["actual"]),
                float(rel.mean()) if len(rel) else None,
            )
        )
    order = list(MEASURE_WORDS)
    return sorted(out, key=lambda b: (b.back, order.index(b.measure) if b.measure in order else 9))


def plan_facts(marts: Marts, roi: RoiFacts | None, certified_12m: float | None) -> PlanFacts | None:
    wp = marts.get("workforce_plan")
    if wp is None or wp.empty:
        return None
    as_of = pd.Timestamp(wp["as_of_date"].iloc[0]).date()
    return PlanFacts(
        f"{as_of:%d %B %Y}",
        _requests(wp),
        float(wp["plan_probability"].iloc[0]),
        measured_return(roi, certified_12m),
        _backtest(marts.get("workforce_plan_backtest")),
        _rates(marts.get("workforce_plan_rates")),
    )


def _rates(wr: pd.DataFrame | None) -> tuple[int, int] | None:
    if wr is None or wr.empty:
        return None
    return int(wr["measured"].astype(bool).sum()), len(wr)


def hire_words(r: Request) -> str:
    if not r.hires:
        return "none"
    return ", ".join(f"{nice(k).lower()} {v}" for k, v in sorted(r.hires.items()))


def start_words(r: Request) -> str:
    if not r.starts:
        return "none"
    return ", ".join(f"{nice(k).lower()} {v}" for k, v in r.starts.items())


def payback_words(r: Request, m: MeasuredReturn | None) -> str:
    if m is None:
        return "not measurable: no effect of certification is measured"
    years = r.payback_years(m.per_engineer)
    if years is None:
        return "no engineer certified beyond the team left alone yet"
    slow, fast = r.payback_years(m.low), r.payback_years(m.high)
    span = f" ({fast:.1f}–{slow:.1f})" if slow is not None and fast is not None else ""
    return f"{years:.1f} years{span}"


def payback_sentence(r: Request, m: MeasuredReturn | None) -> str:
    """Page 1's words: the training to date pays back in so many years, or why it cannot."""
    text = payback_words(r, m)
    return f"the training to date pays back in {text}" if text[0].isdigit() else text


def request_rows(f: PlanFacts) -> list[list]:
    return [
        [
            r.quarter,
            num(sum(r.hires.values())),
            start_words(r),
            fig(f"plan-cost-{r.quarter}", usd(r.cost)),
            fig(f"plan-training-{r.quarter}", usd(r.training)),
            num(r.added, 1) if r.added is not None else "hidden",
            payback_words(r, f.measured),
        ]
        for r in f.requests
    ]


def hires_table(f: PlanFacts):
    """Hires by role family (rows) and quarter (columns): on screen and in the appendix file,
    out of print (page 1 names the roles of the first quarters)."""
    roles = sorted({k for r in f.requests for k in r.hires})
    quarters = [r.quarter for r in f.requests]
    return table(
        "Whom to hire, by role and quarter",
        ["Role", *quarters],
        [[nice(k), *(num(r.hires.get(k, 0)) for r in f.requests)] for k in roles],
        key="plan-hires",
        scope="full",
        data=Data(
            ["role_family", *quarters],
            [[k, *(r.hires.get(k, 0) for r in f.requests)] for k in roles],
        ),
    )


def _backtest_cell(b: BacktestLine) -> str:
    show = usd if b.measure.endswith("_usd") else (lambda v: num(v, 0))
    off = pct(b.mean_abs_relative) if b.mean_abs_relative is not None else "–"
    return f"{show(b.forecast)} / {show(b.actual)}; off by {off} on average"


def _backtest_table(f: PlanFacts):
    """One row per measure, one column per backtest: forecast / actual in the last quarter
    forecast, and the mean |forecast − actual| ÷ actual over its quarters."""
    runs = sorted({(b.back, b.origin, b.last_quarter) for b in f.backtest})
    cells = {(b.back, b.measure): _backtest_cell(b) for b in f.backtest}
    rows = [
        [words, *(cells.get((back, m), "–") for back, _, _ in runs)]
        for m, words in MEASURE_WORDS.items()
        if any((back, m) in cells for back, _, _ in runs)
    ]
    return table(
        "How far the planner was off: run on what was known then, forecast / actual in "
        + (runs[-1][2] if runs else "the last quarter"),
        ["Measure", *(f"Run {back} quarters ago (as of {origin})" for back, origin, _ in runs)],
        rows,
        key="plan-backtest",
    )


def _lead(f: PlanFacts) -> str:
    short = [r for r in f.requests if r.shortfall > 0.5]
    reach = (
        sentence(
            "It cannot meet every template in time: in {q} the roles still need {n} more engineers "
            "holding their track, so the probability of meeting every template in every quarter "
            "is {p}; the shortfall closes to {m} by {last}.",
            q=short[0].quarter,
            n=num(short[0].shortfall),
            p=pct(f.probability),
            m=num(f.requests[-1].shortfall),
            last=f.requests[-1].quarter,
        )
        if short
        else sentence(
            "It meets every template in every quarter with probability {p} (Monte Carlo over the "
            "measured rates' intervals).",
            p=pct(f.probability),
        )
    )
    rates = (
        sentence(
            "{m} of its {a} rates measured in the company's data up to {d}, the others the "
            "domain's figures or estimates",
            m=f.rates[0],
            a=f.rates[1],
            d=f.as_of,
        )
        if f.rates
        else sentence("the company's rates as of {d}", d=f.as_of)
    )
    return sentence(
        "The fleet plan's team templates staffed at the lowest cost the planner found (HiGHS, "
        "{rates}; each rate, its mart and window are in workforce_plan_rates): {t} over {n} "
        "quarters, of which {tr} for programme starts, the rest hiring and the added "
        "engineers' pay. {reach}",
        rates=rates,
        t=fig("plan-total", usd(f.total)),
        n=len(f.requests),
        tr=fig("plan-training-total", usd(f.training_total)),
        reach=reach,
    )


def plan_section(f: PlanFacts | None) -> tuple[Section, PlanFacts | None]:
    sid, title = "plan", "The budget request: staffing the fleet plan, quarter by quarter"
    if f is None:
        why = (
            "Not available: no workforce plan (a fleet plan in "
            "sources/<folder>/plans/fleet_plan.csv turns page 1's actions into a budget request)."
        )
        return unavailable(sid, title, why), None
    section = Section(sid, title, True, _lead(f))
    section.tables.append(
        table(
            "Budget request by quarter",
            ["Quarter", "Hires", "Programme starts", "Cost",
             "Of it, training", "Certified beyond the team left alone",
             "Payback of training to date (95 % range)"],
            request_rows(f),
            total=["All quarters", "", "", fig("plan-total", usd(f.total)),
                   fig("plan-training-total", usd(f.training_total)), "", ""],
            key="plan-request",
        )
    )  # fmt: skip
    if any(r.hires for r in f.requests):
        section.tables.append(hires_table(f))
    m = f.measured
    section.notes.append(
        sentence(
            "Payback rests on the effects measured in this company's data only: {lines}; "
            "{v} a year per certified engineer (the ROI's measured return over the last 12 "
            "months per certified engineer on average over them), applied to the engineers the "
            "plan certifies beyond those the team would hold if left alone. Estimated and "
            "assumed returns are left out.",
            lines="; ".join(m.lines),
            v=fig("plan-return-per-engineer", usd(m.per_engineer)),
        )
        if m is not None
        else "No effect of certification is measured in this company's data, so the request "
        "has no payback here: it rests on the templates alone."
    )
    if f.backtest:
        section.tables.append(_backtest_table(f))
        section.notes.append(
            "The backtest plans as of 4 and 8 quarters ago with the team, rates and programme "
            "results known then and the fleet as it actually grew. Headcount and exits test "
            "the rates; certified engineers and training spend also show how far the company "
            "did less (or more) than such a plan would have asked."
        )
    else:
        section.notes.append(
            "No backtest: the HR data do not reach 4 quarters before the last complete quarter."
        )
    return section, f
