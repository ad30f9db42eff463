"""Training spend and return on investment, measured return first.

The headline ROI counts only what the data measure: contractor cost avoided and downtime avoided
(priced at the stated GPU-hour cost through the estimated certification effect), with the range
the effect's 95 % interval implies. Efficiency and faster deployment rest on stated per-GPU
values from the assumptions file: they are shown apart, as a range, and never summed into the
headline. A return that rests on an effect that is not estimable is unavailable, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, money, nice, num, roi_pct, sentence, usd, window_label
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Section, Table, table, unavailable
from pipelines.lib.report.sections.effects import Effect
from pipelines.lib.report.suppression import mask_label, shown, suppression_mask
from pipelines.lib.roi.model import LINE_ITEMS

# Returns priced from stated per-GPU values, not measured (pipelines/lib/roi/README.md), and the
# assumptions each one scales with.
STATED_RETURNS = {
    "efficiency": ("fleet_cost_usd_per_gpu_year", "efficiency_share_of_fleet_cost"),
    "faster_deployment": ("faster_deployment_usd_per_gpu_year",),
}
# Measured returns and the effects they rest on.
EFFECT_RETURNS = {
    "downtime_avoided": ("incident_rate_ratio", "mttr_ratio"),
    "attrition_cost_avoided": ("attrition_hazard_ratio",),
}
EFFECT_CI_ROW = "certification_effect CI"  # the row moving every effect to its bounds


@dataclass(frozen=True)
class Item:
    item: str
    label: str
    amount: float
    kind: str  # investment | measured | stated | unavailable
    low: float | None = None
    high: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class WorkedExample:
    """The seed's worked example (one year, 100 GPUs): item -> amount, and the investment."""

    investment: float
    items: dict[str, float]


@dataclass
class RoiFacts:
    spend: float | None = None
    spend_prev: float | None = None
    spend_year_ago: float | None = None
    spend_12m: float | None = None
    exam_spend_per_attempt: float | None = None
    items: list[Item] = field(default_factory=list)
    investment: float = 0.0
    measured: float = 0.0
    measured_low: float | None = None
    measured_high: float | None = None
    window: str = ""
    years: float = 0.0

    @property
    def net_ratio(self) -> float | None:
        return (self.measured - self.investment) / self.investment if self.investment else None

    def net_ratio_at(self, measured: float | None) -> float | None:
        if measured is None or not self.investment:
            return None
        return (measured - self.investment) / self.investment

    def of(self, kind: str) -> list[Item]:
        return [i for i in self.items if i.kind == kind]


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


def _spend(marts: Marts, q: Quarter, thr: int, facts: RoiFacts, section: Section) -> None:
    ts = marts.get("training_spend")
    if ts is None or ts.empty:
        return
    cur = ts[ts["quarter"] == q.start].sort_values("spend_category")
    if cur.empty:
        return

    total = _spend_figures(ts, q, facts)
    mask = suppression_mask(
        dict(zip(cur["spend_category"], cur["participants"], strict=True)),
        thr,
        also_hidden=hidden_in_marts(cur, "spend_category"),
    )
    rows = []
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
    section.tables.append(
        table(
            f"Training spend, {q.label}",
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
            key="spend",
        )
    )
    year = [x for x in q.trailing(4)]
    section.tables.append(
        table(
            "Training and exam spend, the last four quarters",
            ["Quarter", "Spend"],
            [[x.label, usd(total(x.start))] for x in year],
            total=["12 months", fig("spend-12m", usd(facts.spend_12m))],
            key="spend-quarters",
        )
    )
    section.lead = sentence(
        "{spend} was spent on training and exams in {q} ({y} over the last 12 months).",
        spend=fig("spend", usd(facts.spend)),
        q=q.label,
        y=fig("spend-12m", usd(facts.spend_12m)),
    )


def _kind(r: pd.Series, effects: dict[str, Effect]) -> tuple[str, str]:
    """What an roi_summary line is (from its `status` column when the mart has one) and a note:
    why it is unavailable, or that it rests on an effect the data do not show."""
    if str(r["category"]).lower() == "investment":
        return "investment", ""
    item = str(r.get("item", ""))
    status = str(r.get("status") or "").lower()
    if status not in ("measured", "stated", "unavailable"):
        status = "stated" if item in STATED_RETURNS else "measured"
    if status != "measured":
        return status, str(r.get("note") or "") if status == "unavailable" else ""
    used = [effects[m] for m in EFFECT_RETURNS.get(item, ()) if m in effects]
    for e in used:
        if not e.estimable:
            return (
                "unavailable",
                f"{e.label.lower()} effect not estimable: {e.not_estimable_reason}",
            )
    weak = [e.label.lower() for e in used if not e.finding]
    if weak:
        return "measured", f"rests on an effect the data do not show ({', '.join(weak)})"
    return "measured", ""


def _ranges(items: list[Item], sens: pd.DataFrame | None, facts: RoiFacts) -> list[Item]:
    """Low and high of each stated item from the one-at-a-time sensitivity rows (each assumption
    scales its item linearly), and of the measured total from the effect-interval row."""
    if sens is None or sens.empty or not facts.investment:
        return items
    base = float(sens["base_roi"].iloc[0])
    by = {str(r["assumption"]): r for _, r in sens.iterrows()}
    out = []
    for it in items:
        if it.kind == "stated" and it.amount:
            lo = hi = 1.0
            for name in STATED_RETURNS[it.item]:
                if name in by:
                    d = [
                        (float(by[name][c]) - base) * facts.investment / it.amount + 1
                        for c in ("roi_at_low", "roi_at_high")
                    ]
                    lo, hi = lo * min(d), hi * max(d)
            it = Item(it.item, it.label, it.amount, it.kind, it.amount * lo, it.amount * hi)
        out.append(it)
    stated_total = sum(i.amount for i in out if i.kind == "stated")
    ci_row = next((by[k] for k in by if k.startswith(EFFECT_CI_ROW)), None)
    # with a line unavailable the sensitivity rows may still price it: no range then
    if ci_row is not None and not any(i.kind == "unavailable" for i in out):
        ends = [
            (float(ci_row[c]) + 1) * facts.investment - stated_total
            for c in ("roi_at_low", "roi_at_high")
        ]
        facts.measured_low, facts.measured_high = min(ends), max(ends)
    return out


def _items(summ: pd.DataFrame, effects: dict[str, Effect], facts: RoiFacts) -> None:
    name = "label" if "label" in summ.columns else "item"
    status = summ["status"] if "status" in summ.columns else pd.Series("", index=summ.index)
    s = summ[summ["amount_usd"].notna() | (status == "unavailable")]
    for _, r in s.iterrows():
        kind, reason = _kind(r, effects)
        amount = 0.0 if kind == "unavailable" else float(r["amount_usd"])
        facts.items.append(
            Item(str(r.get("item", r[name])), str(r[name]), amount, kind, reason=reason)
        )
    facts.investment = sum(i.amount for i in facts.of("investment"))
    facts.measured = sum(i.amount for i in facts.of("measured"))
    if {"period_start", "period_end"} <= set(s.columns) and len(s):
        start, end = pd.Timestamp(s["period_start"].min()), pd.Timestamp(s["period_end"].max())
        facts.window = window_label(start.date(), end.date())
        facts.years = ((end - start).days + 1) / 365.25


def _measured_table(f: RoiFacts) -> Table:
    rows: list[list] = [
        [i.label, "investment", usd(-i.amount)] for i in f.of("investment") if i.amount
    ]
    rows += [
        [i.label, "measured return" + (f"; {i.reason}" if i.reason else ""), usd(i.amount)]
        for i in f.of("measured")
    ]
    rows += [[i.label, "unavailable", i.reason] for i in f.of("unavailable")]
    rng = (
        f" ({money(f.measured_low)}–{money(f.measured_high)})" if f.measured_low is not None else ""
    )
    rows.append(
        [
            "Measured return",
            "total",
            sentence("{m}{r}", m=fig("roi-measured", usd(f.measured)), r=rng),
        ]
    )
    rows.append(["Investment", "total", fig("roi-investment", usd(f.investment))])
    return table(
        f"Measured return on the investment, {f.window}",
        ["Item", "Kind", "Amount"],
        rows,
        total=[
            "Net ROI on measured returns",
            "(return − investment) ÷ investment",
            fig("roi-net-measured", roi_pct(f.net_ratio)),
        ],
        key="roi-measured",
    )


def _stated_table(f: RoiFacts) -> Table:
    rows = [
        [
            i.label,
            fig(f"stated-{i.item}", usd(i.amount)),
            f"{money(i.low)}–{money(i.high)}" if i.low is not None else "–",
        ]
        for i in f.of("stated")
    ]
    return table(
        "Stated values: per-GPU assumptions, not measured, not in the ROI above",
        ["Item", "At the assumed base value", "Over the assumed range"],
        rows,
        key="roi-stated",
    )


def _worked_table(f: RoiFacts, w: WorkedExample) -> Table:
    per_year = (lambda v: v / f.years) if f.years else (lambda v: v)
    here = {i.item: i for i in f.items}
    rows = [["Investment", usd(w.investment), usd(per_year(f.investment)), "measured"]]
    for item, amount in w.items.items():
        it = here.get(item)
        if not amount and (it is None or not it.amount):
            continue  # a line neither the example nor this company has
        verdict = {
            "measured": "supported by this company's data"
            if it and it.amount > 0
            else "not supported: no measured return",
            "stated": "assumption only: not measured here",
            "unavailable": "not estimable here",
        }.get(it.kind if it else "", "not in the model")
        if not amount:
            verdict = "not claimed in the worked example; measured here"
        rows.append(
            [
                it.label if it else nice(item),
                usd(amount),
                usd(per_year(it.amount)) if it and it.kind != "unavailable" else "–",
                verdict,
            ]
        )
    return table(
        "Against the seed's worked example (100 GPUs, per year)",
        ["Item", "Worked example", "This company, per year", "Reading"],
        rows,
        total=[
            "Return counted",
            fig("we-return", usd(sum(w.items.values()))),
            fig("we-measured-per-year", usd(per_year(f.measured))),
            "measured returns only",
        ],
        key="roi-worked-example",
    )


def _worked_line(f: RoiFacts, w: WorkedExample) -> Markup:
    """The comparison in one sentence: which of the example's claims the data support."""
    here = {i.item: i for i in f.items}

    def label(k: str) -> str:
        return (here[k].label if k in here else nice(k)).lower()

    claims = [k for k, v in w.items.items() if v]
    yes = [k for k in claims if k in here and here[k].kind == "measured" and here[k].amount > 0]
    supported = [label(k) for k in yes]
    other = [label(k) for k in claims if k not in yes]
    return sentence(
        " The seed's worked example turns {inv} into {ret} a year; this company's measured "
        "return is {here} a year. The data support its {yes}{no}.",
        inv=usd(w.investment),
        ret=fig("we-return", usd(sum(w.items.values()))),
        here=fig("we-measured-per-year", usd(f.measured / f.years if f.years else f.measured)),
        yes=" and ".join(supported) or "no claim",
        no=f", not its {' and '.join(other)}" if other else "",
    )


def _side(name: str) -> str:
    """Which side of the ROI an assumption moves: investment, return, or both (or neither)."""
    sides = {li.category for li in LINE_ITEMS if name in li.params}
    if name.startswith(EFFECT_CI_ROW):
        sides = {"return"}
    return sides.pop() if len(sides) == 1 else "both"


def measured_roi(roi_all: float, f: RoiFacts, side: str) -> float | None:
    """Net ROI on measured returns from a sensitivity row's ROI on all returns. Stated returns S
    do not move with any non-stated assumption. A return-side assumption leaves the investment I
    fixed: measured = roi - S / I. An investment-side one leaves the return R (all items) fixed,
    so I' = R / (roi + 1) and measured = (R - S) / I' - 1."""
    stated = sum(i.amount for i in f.of("stated"))
    if side == "return":
        return roi_all - stated / f.investment
    if side == "investment":
        total = f.measured + stated
        return (roi_all + 1) * (total - stated) / total - 1 if total else None
    return None  # moves both sides: not recoverable from the table


def _tornado(sens: pd.DataFrame | None, f: RoiFacts) -> str | None:
    """Net ROI on measured returns as each assumption moves to its low and high value. The
    stated-value assumptions do not move it and are left out, as is any assumption that moves
    both the investment and the return (the table does not separate them)."""
    if sens is None or sens.empty or not f.investment or f.of("unavailable"):
        return None
    stated_names = {n for names in STATED_RETURNS.values() for n in names}
    rows = []
    for _, r in sens.dropna(subset=["roi_at_low", "roi_at_high"]).iterrows():
        name = str(r["assumption"])
        side = _side(name)
        lo, hi = (measured_roi(float(r[c]), f, side) for c in ("roi_at_low", "roi_at_high"))
        if name not in stated_names and lo is not None and hi is not None:
            rows.append((nice(name), lo, hi))
    if not rows:
        return None
    return charts.tornado_chart(
        "roi-tornado",
        sorted(rows, key=lambda t: -abs(t[2] - t[1]))[:10],
        f.net_ratio,  # type: ignore[arg-type]
        title="Net ROI on measured returns as each assumption moves to its low or high value",
    )


def _lead(f: RoiFacts) -> Markup:
    rng = (
        sentence(
            " ({lo} to {hi} over the 95 % interval of the certification effect)",
            lo=money(f.measured_low),
            hi=money(f.measured_high),
        )  # type: ignore[arg-type]
        if f.measured_low is not None
        else ""
    )
    text = sentence(
        "Measured return over {window}: {m}{rng} on {inv} invested, a net ROI of {roi}.",
        window=f.window or "the data window",
        m=fig("roi-measured", usd(f.measured)),
        rng=rng,
        inv=fig("roi-investment", usd(f.investment)),
        roi=fig("roi-net-measured", roi_pct(f.net_ratio)),
    )
    stated = f.of("stated")
    if stated:
        lo = sum(i.low if i.low is not None else i.amount for i in stated)
        hi = sum(i.high if i.high is not None else i.amount for i in stated)
        text += sentence(
            " Not counted: {labels}, valued at {lo} to {hi} from stated per-GPU assumptions, "
            "not measured.",
            labels=" and ".join(i.label.lower() for i in stated),
            lo=money(lo),
            hi=money(hi),
        )
    for i in f.of("unavailable"):
        text += sentence(" {label}: unavailable ({why}).", label=i.label, why=i.reason)
    for i in f.of("measured"):
        if i.reason:
            text += sentence(" Of the measured return, {label} ({amount}) {why}.",
                             label=i.label.lower(), amount=usd(i.amount), why=i.reason)  # fmt: skip
    return text


def roi_section(
    marts: Marts,
    q: Quarter,
    thr: int,
    effects: dict[str, Effect],
    worked_example: WorkedExample | None = None,
) -> tuple[Section, RoiFacts]:
    sid, title = "roi", "Return on investment and training spend"
    section, facts = Section(sid, title), RoiFacts()
    _spend(marts, q, thr, facts, section)
    summ, sens = marts.get("roi_summary"), marts.get("roi_sensitivity")
    if summ is None or not {"category", "amount_usd"} <= set(summ.columns):
        section.notes.append(
            "ROI: not available (the ROI tables are not in the published warehouse). "
            "Spend figures are actual charges."
        )
    else:
        _items(summ, effects, facts)
        facts.items = _ranges(facts.items, sens, facts)
        lead = _lead(facts)  # what was measured comes first, the spend details after
        first = [_measured_table(facts)]
        if facts.of("stated"):
            first.append(_stated_table(facts))
        if worked_example is not None:
            first.append(_worked_table(facts, worked_example))
            lead += _worked_line(facts, worked_example)
        section.lead = lead + (Markup(" ") + section.lead if section.lead else "")
        section.tables[:0] = first
        tornado = _tornado(sens, facts)
        if tornado:
            section.charts.append(tornado)
    if not section.lead and not section.tables:
        why = "Not available: training_spend and the ROI tables are missing."
        return unavailable(sid, title, why), facts
    return section, facts
