"""Attrition: quarterly and 12-month turnover, certified and not certified, with intervals."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from datetime import date

import pandas as pd

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, nice, num, pct, rate_ci, sentence
from pipelines.lib.report.intervals import wilson_interval
from pipelines.lib.report.labels import count, label
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Section, table, unavailable
from pipelines.lib.report.suppression import hidden_label, shown, suppression_mask

Rate = tuple[float, float, float]  # share, 95 % interval low, high


@dataclass(frozen=True)
class AttritionFacts:
    leavers: float  # all engineers, this quarter
    average: float  # engineers on average over the quarter
    voluntary_12m: Rate  # voluntary leavers over 12 months / average engineers
    quarter: Rate
    t12m: Rate  # the four quarters ending with this one
    t12m_prev: Rate | None  # ... ending with the previous quarter
    t12m_year_ago: Rate | None  # ... ending with the same quarter last year
    by_status: dict[str, Rate] = field(default_factory=dict)  # 12 months, visible groups


class _Window:
    def __init__(self, qa: pd.DataFrame):
        self.qa = qa

    def totals(self, seg_type: str, seg: str, starts: list[date]) -> tuple[float, float, float]:
        qa = self.qa
        w = qa[
            (qa["segment_type"] == seg_type)
            & (qa["segment_value"] == seg)
            & qa["period_start"].isin(starts)
        ]
        if w.empty:
            return (math.nan, math.nan, math.nan)
        return (
            float(w["separations"].sum()),
            float(w["average_headcount"].mean()),
            float(w["voluntary_separations"].sum()),
        )

    def t12m(self, q: Quarter, seg_type: str = "all", seg: str = "all") -> Rate | None:
        starts = [qq.start for qq in q.trailing(4)]
        if not set(starts) <= set(self.qa["period_start"]):
            return None
        s, h, _ = self.totals(seg_type, seg, starts)
        return None if math.isnan(h) else wilson_interval(s, h)


def _trend(qa: pd.DataFrame, q: Quarter) -> charts.Chart:
    allq = qa[qa["segment_type"] == "all"].set_index("period_start").sort_index()
    trend_q = [qq for qq in q.trailing(8) if qq.start in allq.index]

    def share(col: str) -> list[float | None]:
        return [
            float(allq.loc[qq.start, col]) / float(allq.loc[qq.start, "average_headcount"])
            for qq in trend_q
        ]

    svg = charts.line_chart(
        "attrition-trend",
        [qq.label for qq in trend_q],
        {"all separations": share("separations"), "voluntary": share("voluntary_separations")},
        title="Quarterly turnover: leavers ÷ engineers on average over the quarter",
        alt=f"Line chart: leavers each quarter as a share of the engineers on average over the "
        f"quarter, all separations and voluntary ones, {trend_q[0].label} to {trend_q[-1].label}.",
        ylabel="",
    )
    return charts.Chart("attrition-trend", svg)


def attrition_section(marts: Marts, q: Quarter, thr: int) -> tuple[Section, AttritionFacts | None]:
    sid, title = "attrition", "Attrition: certified and not certified"
    att = marts.get("attrition")
    if att is None:
        return unavailable(sid, title, "Not available: the mart attrition is missing."), None
    qa = att[att["period_type"] == "quarter"]
    if q.start not in set(qa["period_start"]):
        return unavailable(sid, title, f"Not available: no attrition figures for {q.label}."), None
    w = _Window(qa)
    year = [qq.start for qq in q.trailing(4)]
    statuses = sorted(
        qa[qa["segment_type"] == "certification_status"]["segment_value"].dropna().unique()
    )
    now = qa[(qa["period_start"] == q.start) & (qa["segment_type"] == "certification_status")]
    mask = suppression_mask(
        {s: w.totals("certification_status", s, [q.start])[1] for s in statuses},
        thr,
        also_hidden=hidden_in_marts(now, "segment_value"),
    )
    rows, by_status = [], {}
    for seg_type, seg in [("certification_status", s) for s in statuses] + [("all", "all")]:
        h = mask.get(seg, False)
        qs, qh, _ = w.totals(seg_type, seg, [q.start])
        ts, th, tv = w.totals(seg_type, seg, year)
        rq, rt = wilson_interval(qs, qh), wilson_interval(ts, th)
        name = "All engineers" if seg_type == "all" else nice(seg)
        gone = hidden_label(qh, thr)  # the size the mask weighed: the quarter's average
        t12 = gone if h else rate_ci(rt)
        if seg_type == "all":
            t12 = fig("attrition-12m", pct(rt[0], 1)) + f" ({rate_ci(rt).split('(')[1]}"
        elif not h:
            t12 = fig(f"attrition-12m-{seg}", pct(rt[0], 1)) + f" ({rate_ci(rt).split('(')[1]}"
        is_all = seg_type == "all"
        rows.append(
            [
                name,
                fig("average-headcount", num(qh)) if is_all else shown(qh, h, thr, size=qh),
                fig("leavers", num(qs)) if is_all else shown(qs, h, thr, size=qh),
                gone if h else rate_ci(rq),
                fig("leavers-12m", num(ts)) if is_all else shown(ts, h, thr, size=qh),
                t12,
                shown(tv, h, thr, size=qh),
            ]
        )
        if not h and seg_type != "all":
            by_status[seg] = rt
    qs, qh, _ = w.totals("all", "all", [q.start])
    ts, th, tv = w.totals("all", "all", year)
    facts = AttritionFacts(
        leavers=qs,
        average=qh,
        voluntary_12m=wilson_interval(tv, th),
        quarter=wilson_interval(qs, round(qh)),
        t12m=w.t12m(q) or wilson_interval(*w.totals("all", "all", year)[:2]),
        t12m_prev=w.t12m(q.previous()),
        t12m_year_ago=w.t12m(q.trailing(5)[0]),
        by_status=by_status,
    )
    t = table(
        f"Leavers, {q.label} and the 12 months to its end",
        [
            "Group",
            label("average-headcount").capitalize(),
            "Leavers in the quarter",
            "Quarter rate (95 % CI)",
            "Leavers in the 12 months",
            "12-month rate (95 % CI)",
            "Voluntary leavers (12 months)",
        ],
        rows,
        key="attrition-groups",
    )
    notes = [
        "Certified: holding an active certification on their last day in the period (for a "
        "leaver, the day they left). The difference between the groups is not the effect of "
        "certification: the estimate (incidents section) compares engineers of the same tenure "
        "and level."
    ]
    return Section(sid, title, True, _lead(facts, q), [_trend(qa, q)], [t], notes), facts


def _lead(f: AttritionFacts, q: Quarter):
    text = sentence(
        "{n} ({q}): {rate} of the {avg}. Over the 12 months to {end} turnover was {t12}, "
        "voluntary {v12}.",
        n=count("leavers", f.leavers),
        q=q.label,
        rate=pct(f.quarter[0], 1),
        avg=count("average-headcount", f.average),
        end=f"{q.end:%b %Y}",
        t12=fig("attrition-12m", pct(f.t12m[0], 1)),
        v12=fig("attrition-12m-voluntary", pct(f.voluntary_12m[0], 1)),
    )
    cert = f.by_status.get("certified")
    other = next((k for k in f.by_status if k != "certified"), None)
    if cert and other:
        text += sentence(
            " Twelve-month turnover was {c} among certified engineers and {o} among the others.",
            c=fig("attrition-12m-certified", pct(cert[0], 1)),
            o=fig(f"attrition-12m-{other}", pct(f.by_status[other][0], 1)),
        )
    return text
