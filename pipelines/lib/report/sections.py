"""Figures of the quarterly report, section by section, as plain data for the template.

Each `*_section` takes the marts, the quarter and the minimum group size and returns a dict:
`id, title, available, lead (plain-language summary), charts, tables, notes`, plus `facts` the
headline page and the quarter-over-quarter table reuse. A missing mart or an empty quarter
makes a section say so instead of failing the whole report. Every group figure passes through
`suppression` before it becomes text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import date, timedelta
from typing import Any

import pandas as pd

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.stats import poisson_rate_interval, wilson_interval
from pipelines.lib.report.suppression import mask_label, shown, suppression_mask

Section = dict[str, Any]


# --- formatting --------------------------------------------------------------------------
def fraction(v: object) -> float | None:
    """Shares arrive as fractions; a value above 1 is taken as a percentage."""
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return None
    f = float(v)  # type: ignore[arg-type]
    return f / 100 if f > 1.0 else f


def pct(v: float | None, decimals: int = 0) -> str:
    return "–" if v is None or v != v else f"{v * 100:.{decimals}f} %"


def num(v: object, decimals: int = 0) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    return f"{float(v):,.{decimals}f}"  # type: ignore[arg-type]


def usd(v: object) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "–"
    f = float(v)  # type: ignore[arg-type]
    return f"−${-f:,.0f}" if f < 0 else f"${f:,.0f}"


def month_label(d: date) -> str:
    return d.strftime("%b %Y")


_UPPER = {"usd": "USD", "gpu": "GPU", "gpus": "GPUs", "mttr": "MTTR", "roi": "ROI", "ci": "CI"}


def nice(code: object) -> str:
    """`faster_deployment_usd_per_gpu_year` → `Faster deployment USD per GPU year`."""
    if code is None:
        return "–"
    words = str(code).replace("_", " ").split(" ")
    words = [_UPPER.get(w.lower(), w) for w in words]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def table(
    caption: str,
    columns: Sequence[str],
    rows: list[list[str]],
    *,
    total: list[str] | None = None,
    key: str = "",
) -> dict[str, Any]:
    return {"caption": caption, "columns": list(columns), "rows": rows, "total": total, "key": key}


def unavailable(sid: str, title: str, why: str) -> Section:
    return {
        "id": sid,
        "title": title,
        "available": False,
        "lead": why,
        "charts": [],
        "tables": [],
        "notes": [],
        "facts": {},
    }


def _months_up_to(q: Quarter, quarters: int = 8) -> list[date]:
    return [m for qq in q.trailing(quarters) for m in qq.months]


# --- certification coverage --------------------------------------------------------------
def coverage_section(marts: Marts, q: Quarter, thr: int, target: float) -> Section:
    sid, title = "coverage", "Certification coverage against target"
    cov = marts.get("certification_coverage")
    if cov is None:
        return unavailable(sid, title, "Not available: the mart certification_coverage is missing.")
    allrows = cov[cov["segment_type"] == "all"].set_index("month").sort_index()
    if q.last_month not in allrows.index:
        return unavailable(
            sid, title, f"Not available: no coverage snapshot for {month_label(q.last_month)}."
        )
    cur = allrows.loc[q.last_month]
    prev_m = q.previous().last_month
    prev = allrows.loc[prev_m] if prev_m in allrows.index else None
    months = [m for m in _months_up_to(q) if m in allrows.index]
    series = {
        "holds ≥1 active certification": [
            fraction(allrows.loc[m, "coverage_share"]) for m in months
        ],
        "meets all role requirements": [
            fraction(allrows.loc[m, "compliance_share"]) for m in months
        ],
    }
    trend = charts.line_chart(
        "coverage-trend",
        [m.strftime("%b %y") for m in months],
        series,
        title="Share of engineers certified, month end",
        target=target,
        target_label="target (role requirements)",
    )
    teams = cov[(cov["segment_type"] == "team") & (cov["month"] == q.last_month)].sort_values(
        "segment_value"
    )
    mask = suppression_mask(dict(zip(teams["segment_value"], teams["headcount"], strict=True)), thr)
    rows, bars, labels, names = [], [], [], []
    for r in teams.itertuples():
        h = mask[r.segment_value]
        rows.append(
            [
                str(r.segment_value),
                shown(r.headcount, h, thr),
                shown(r.certified_headcount, h, thr),
                shown(r.fully_compliant_headcount, h, thr),
                mask_label(thr) if h else pct(fraction(r.compliance_share)),
            ]
        )
        names.append(str(r.segment_value))
        bars.append(None if h else fraction(r.compliance_share))
        labels.append(mask_label(thr) + " (hidden)" if h else pct(fraction(r.compliance_share)))
    by_team = charts.bar_chart(
        "coverage-by-team",
        names,
        bars,
        labels=labels,
        percent=True,
        title="Engineers meeting all role requirements, by team",
        reference=[target] * len(names),
        reference_label="target",
    )
    cur_cov, cur_comp = fraction(cur["coverage_share"]), fraction(cur["compliance_share"])
    qrows = allrows.loc[[m for m in q.months if m in allrows.index]]
    attempts, passes = float(qrows["exam_attempts"].sum()), float(qrows["exam_passes"].sum())
    facts = {
        "headcount": float(cur["headcount"]),
        "compliant_headcount": float(cur["fully_compliant_headcount"]),
        "certified_headcount": float(cur["certified_headcount"]),
        "coverage": cur_cov,
        "compliance": cur_comp,
        "coverage_prev": fraction(prev["coverage_share"]) if prev is not None else None,
        "compliance_prev": fraction(prev["compliance_share"]) if prev is not None else None,
        "headcount_prev": float(prev["headcount"]) if prev is not None else None,
        "target": target,
        "exam_attempts": attempts,
        "exam_passes": passes,
        "expiring_90d": float(cur["expiring_next_90d"]),
        "median_months_to_first_cert": cur.get("median_months_to_first_cert"),
    }
    total = [
        "All teams",
        num(cur["headcount"]),
        num(cur["certified_headcount"]),
        num(cur["fully_compliant_headcount"]),
        pct(cur_comp),
    ]
    lead = (
        f"At the end of {month_label(q.last_month)}, {pct(cur_cov)} of "
        f"{num(cur['headcount'])} engineers held at least one active certification and "
        f"{pct(cur_comp)} met every certification their role requires (target {pct(target)})."
    )
    notes = []
    if attempts:
        notes.append(
            f"Exams this quarter: {num(attempts)} attempts, {num(passes)} passed "
            f"({pct(passes / attempts)} pass rate)."
        )
    return {
        "id": sid,
        "title": title,
        "available": True,
        "lead": lead,
        "charts": [trend, by_team],
        "tables": [
            table(
                f"Certification by team, {month_label(q.last_month)}",
                ["Team", "Engineers", "Certified", "Meet role requirements", "Share meeting"],
                rows,
                total=total,
                key="coverage-teams",
            )
        ],
        "notes": notes,
        "facts": facts,
    }


# --- required-certification gaps by role --------------------------------------------------
def gaps_section(marts: Marts, q: Quarter, thr: int) -> Section:
    sid, title = "gaps", "Required-certification gaps by role"
    tc = marts.get("team_composition")
    if tc is None:
        return unavailable(sid, title, "Not available: the mart team_composition is missing.")
    cur = tc[tc["month"] == q.last_month]
    if cur.empty:
        return unavailable(
            sid, title, f"Not available: no team composition for {month_label(q.last_month)}."
        )
    g = (
        cur.groupby("role_family")
        .agg(
            headcount=("headcount", "sum"),
            template=("template_headcount", "sum"),
            compliant=("fully_compliant_headcount", "sum"),
            codes=(
                "required_certification_codes",
                lambda s: ", ".join(
                    sorted(
                        {
                            c.strip()
                            for v in s.dropna()
                            for c in str(v).replace(";", ",").split(",")
                            if c.strip()
                        }
                    )
                ),
            ),
        )
        .reset_index()
        .sort_values("role_family")
    )
    mask = suppression_mask(dict(zip(g["role_family"], g["headcount"], strict=True)), thr)
    rows, names, vals, labels = [], [], [], []
    for r in g.itertuples():
        h = mask[r.role_family]
        missing = r.headcount - r.compliant
        share = r.compliant / r.headcount if r.headcount else None
        rows.append(
            [
                nice(r.role_family),
                r.codes or "–",
                shown(r.headcount, h, thr),
                shown(r.compliant, h, thr),
                shown(missing, h, thr),
                num(r.template),
            ]
        )
        names.append(nice(r.role_family))
        vals.append(None if h or share is None else share)
        labels.append(
            mask_label(thr) + " (hidden)"
            if h
            else (pct(share) if share is not None else "no one in role")
        )
    tot_h, tot_c = float(g["headcount"].sum()), float(g["compliant"].sum())
    chart = charts.bar_chart(
        "gaps-by-role",
        names,
        vals,
        labels=labels,
        percent=True,
        title="Engineers holding every certification their role requires",
    )
    lead = (
        f"{num(tot_h - tot_c)} of {num(tot_h)} engineers lack at least one certification "
        "their role requires under the team template for their cluster's current fleet size."
    )
    return {
        "id": sid,
        "title": title,
        "available": True,
        "lead": lead,
        "charts": [chart],
        "tables": [
            table(
                f"Role requirements and gaps, {month_label(q.last_month)}",
                [
                    "Role",
                    "Required (current fleet size)",
                    "Engineers",
                    "Meet requirements",
                    "Missing ≥1",
                    "Template headcount",
                ],
                rows,
                total=[
                    "All roles",
                    "",
                    num(tot_h),
                    num(tot_c),
                    num(tot_h - tot_c),
                    num(g["template"].sum()),
                ],
                key="gaps-roles",
            )
        ],
        "notes": [],
        "facts": {
            "gap_people": tot_h - tot_c,
            "headcount": tot_h,
            "largest_gaps": [
                (nice(r.role_family), float(r.headcount - r.compliant), float(r.headcount))
                for r in g.assign(gap=g["headcount"] - g["compliant"])
                .sort_values(["gap", "role_family"], ascending=[False, True])
                .itertuples()
                if not mask[r.role_family] and r.headcount - r.compliant > 0
            ][:3],
        },
    }


# --- certifications expiring next quarter ------------------------------------------------
def expiring_section(marts: Marts, q: Quarter, thr: int) -> Section:
    sid, title = "expiring", f"Certifications expiring in {q.next().label}"
    cov = marts.get("certification_coverage")
    if cov is None:
        return unavailable(sid, title, "Not available: the mart certification_coverage is missing.")
    snap = cov[cov["month"] == q.last_month]
    teams = snap[snap["segment_type"] == "team"].sort_values("segment_value")
    allrow = snap[snap["segment_type"] == "all"]
    if teams.empty or allrow.empty:
        return unavailable(
            sid, title, f"Not available: no snapshot for {month_label(q.last_month)}."
        )
    mask = suppression_mask(dict(zip(teams["segment_value"], teams["headcount"], strict=True)), thr)
    rows, names, vals, labels = [], [], [], []
    for r in teams.itertuples():
        h = mask[r.segment_value]
        rows.append([str(r.segment_value), shown(r.expiring_next_90d, h, thr)])
        names.append(str(r.segment_value))
        vals.append(None if h else float(r.expiring_next_90d))
        labels.append(mask_label(thr) + " (hidden)" if h else num(r.expiring_next_90d))
    total = float(allrow["expiring_next_90d"].iloc[0])
    chart = charts.bar_chart(
        "expiring-by-team",
        names,
        vals,
        labels=labels,
        title=f"Active certifications expiring in the 90 days after {q.end:%d %b %Y}",
        xlabel="certifications",
    )
    visible = sorted(
        (
            (float(r.expiring_next_90d), str(r.segment_value))
            for r in teams.itertuples()
            if not mask[r.segment_value] and r.expiring_next_90d > 0
        ),
        key=lambda t: (-t[0], t[1]),
    )
    most = [f"{t} ({num(n)})" for n, t in visible if n == visible[0][0]] if visible else []
    lead = (
        f"{num(total)} active certifications expire between {q.end + timedelta(days=1):%d %b} "
        f"and {q.end + timedelta(days=90):%d %b %Y} unless renewed"
        + (f"; most in {', '.join(most)}" if most else "")
        + ". Plan the renewal exams and their budget now."
    )
    return {
        "id": sid,
        "title": title,
        "available": True,
        "lead": lead,
        "charts": [chart],
        "tables": [
            table(
                "Expiring certifications by team",
                ["Team", "Expiring"],
                rows,
                total=["All teams", num(total)],
                key="expiring-teams",
            )
        ],
        "notes": [],
        "facts": {"expiring": total},
    }


# --- attrition ---------------------------------------------------------------------------
def attrition_section(marts: Marts, q: Quarter, thr: int) -> Section:
    sid, title = "attrition", "Attrition: certified and not certified"
    att = marts.get("attrition")
    if att is None:
        return unavailable(sid, title, "Not available: the mart attrition is missing.")
    qa = att[att["period_type"] == "quarter"]
    quarters = [qq.start for qq in q.trailing(4)]
    if q.start not in set(qa["period_start"]):
        return unavailable(sid, title, f"Not available: no attrition figures for {q.label}.")

    def window(seg_type: str, seg_value: str, starts: list[date]) -> tuple[float, float, float]:
        w = qa[
            (qa["segment_type"] == seg_type)
            & (qa["segment_value"] == seg_value)
            & qa["period_start"].isin(starts)
        ]
        if w.empty:
            return (math.nan, math.nan, math.nan)
        return (
            float(w["separations"].sum()),
            float(w["average_headcount"].mean()),
            float(w["voluntary_separations"].sum()),
        )

    statuses = sorted(
        qa[qa["segment_type"] == "certification_status"]["segment_value"].dropna().unique()
    )
    groups = [("certification_status", s) for s in statuses] + [("all", "all")]
    sizes = {s: window("certification_status", s, [q.start])[1] for s in statuses}
    mask = suppression_mask(sizes, thr)
    rows, labels, points = [], [], []
    facts: dict[str, Any] = {}
    for seg_type, seg in groups:
        h = mask.get(seg, False)
        qs, qh, qv = window(seg_type, seg, [q.start])
        ts, th, tv = window(seg_type, seg, quarters)
        rq, rt = wilson_interval(qs, round(qh)), wilson_interval(ts, round(th))
        name = "All engineers" if seg_type == "all" else nice(seg)
        rows.append(
            [
                name,
                shown(qh, h, thr),
                shown(qs, h, thr),
                mask_label(thr) if h else _rate_ci(rq),
                shown(ts, h, thr),
                mask_label(thr) if h else _rate_ci(rt),
                shown(tv, h, thr),
            ]
        )
        labels += [f"{name}, {q.label}", f"{name}, 12 months"]
        points += [None if h or math.isnan(rq[0]) else rq, None if h or math.isnan(rt[0]) else rt]
        if not h:
            facts[seg] = {"quarter": rq, "t12m": rt, "separations": qs}
    chart = charts.interval_chart(
        "attrition-intervals",
        labels,
        points,
        rows_per_colour=2,
        title="Separations per average headcount, with 95 % Wilson intervals",
    )
    allq = qa[(qa["segment_type"] == "all")].set_index("period_start").sort_index()
    trend_q = [qq for qq in q.trailing(8) if qq.start in allq.index]
    trend = charts.line_chart(
        "attrition-trend",
        [qq.label for qq in trend_q],
        {
            "all separations": [
                float(allq.loc[qq.start, "separations"])
                / float(allq.loc[qq.start, "average_headcount"])
                for qq in trend_q
            ],
            "voluntary": [
                float(allq.loc[qq.start, "voluntary_separations"])
                / float(allq.loc[qq.start, "average_headcount"])
                for qq in trend_q
            ],
        },
        title="Quarterly turnover, all engineers",
    )
    lead = _attrition_lead(facts, q)
    notes = [
        "A certified engineer is one holding an active certification at the start of the "
        "period. Ever-certified vs never-certified comparisons overstate the benefit "
        "(immortal-time bias); the hazard ratio in the next section is the adjusted figure."
    ]
    return {
        "id": sid,
        "title": title,
        "available": True,
        "lead": lead,
        "charts": [chart, trend],
        "tables": [
            table(
                f"Separations, {q.label} and trailing 12 months",
                [
                    "Group",
                    "Avg. headcount (quarter)",
                    "Leavers (quarter)",
                    "Quarter rate (95 % CI)",
                    "Leavers (12 months)",
                    "12-month rate (95 % CI)",
                    "Voluntary (12 months)",
                ],
                rows,
                key="attrition-groups",
            )
        ],
        "notes": notes,
        "facts": facts,
    }


def _rate_ci(r: tuple[float, float, float]) -> str:
    """`4.5 % (0.8–21.8)`: the interval in the same unit as the rate."""
    if math.isnan(r[0]):
        return "–"
    return f"{r[0] * 100:.1f} % ({r[1] * 100:.1f}–{r[2] * 100:.1f})"


def _attrition_lead(facts: dict[str, Any], q: Quarter) -> str:
    allf = facts.get("all")
    if not allf:
        return "Attrition figures are hidden because the groups are below the minimum size."
    text = (
        f"{num(allf['separations'])} engineers left in {q.label} "
        f"({pct(allf['quarter'][0], 1)} of average headcount); over 12 months "
        f"{pct(allf['t12m'][0], 1)}."
    )
    cert = facts.get("certified")
    other = next((v for k, v in facts.items() if k not in ("all", "certified")), None)
    if cert and other:
        text += (
            f" Twelve-month attrition was {pct(cert['t12m'][0], 1)} among certified "
            f"engineers and {pct(other['t12m'][0], 1)} among the others."
        )
    return text


# --- incidents and the certification effect ---------------------------------------------
EFFECT_WORDS = {
    "incident_rate_ratio": ("Incident rate", "incidents per engineer-month"),
    "mttr_ratio": ("Time to restore (MTTR)", "resolve time"),
    "attrition_hazard_ratio": ("Voluntary attrition hazard", "monthly risk of leaving"),
}


# outcome label, what is measured, words for a ratio below / above 1
EFFECT_TEXT = {
    "incident_rate_ratio": ("Incidents", "incidents per engineer-month", "fewer", "more"),
    "mttr_ratio": ("Time to restore (MTTR)", "time to restore", "shorter", "longer"),
    "attrition_hazard_ratio": (
        "Voluntary attrition",
        "monthly rate of leaving voluntarily",
        "lower",
        "higher",
    ),
}
NAIVE_KIND = {
    "incident_rate_ratio": "plain before/after",
    "mttr_ratio": "plain before/after",
    "attrition_hazard_ratio": "ever- vs never-certified",
}

STATUS_LABELS = {  # incident_rates.certification_status, in reading order
    "certified": "Certified (active)",
    "not_yet_certified": "Not yet certified (certify later)",
    "never_certified": "Never certified",
    "lapsed": "Lapsed (certification expired)",
    "all": "All engineers",
}


def status_label(code: object) -> str:
    return STATUS_LABELS.get(str(code), nice(code))


def _ratio_words(ratio: float, down: str, up: str) -> str:
    return f"{abs(ratio - 1) * 100:.0f} % {down if ratio < 1 else up}"


def pretrend(caveats: object) -> tuple[str, bool] | None:
    """The event study's pre-trend p-value quoted in the caveats, and whether it warns."""
    m = re.search(r"Pre-trend check[^:]*:\s*p\s*=\s*([0-9.]+)", str(caveats or ""))
    if not m:
        return None
    return m.group(1).rstrip("."), "WARNING" in str(caveats)


def effect_sentence(
    metric: str,
    est: float,
    lo: float,
    hi: float,
    naive: float | None,
    caveats: object = None,
) -> str:
    """One plain sentence: the adjusted change in percent with its interval, the naive figure
    beside it and, for incidents, the pre-trend test result."""
    label, what, down, up = EFFECT_TEXT.get(
        metric, (nice(metric), nice(metric).lower(), "lower", "higher")
    )
    if hi < 1:
        span = f"95 % CI {(1 - hi) * 100:.0f}–{(1 - lo) * 100:.0f} % {down}"
    elif lo > 1:
        span = f"95 % CI {(lo - 1) * 100:.0f}–{(hi - 1) * 100:.0f} % {up}"
    else:
        span = (
            f"95 % CI from {(1 - lo) * 100:.0f} % {down} to {(hi - 1) * 100:.0f} % {up}, "
            "so not yet conclusive"
        )
    text = (
        f"{label}: {_ratio_words(est, down, up)} {what} while certified, after adjustment "
        f"(ratio {est:.2f}; {span})"
    )
    if naive is not None:
        text += (
            f"; the naive ({NAIVE_KIND.get(metric, 'unadjusted')}) comparison says "
            f"{_ratio_words(naive, down, up)} ({naive:.2f})"
        )
    pt = pretrend(caveats)
    if pt is not None:
        p, warns = pt
        text += (
            f". Pre-trend test p = {p}: rates already differed before certifying, so part of "
            "this may reflect who certifies"
            if warns
            else f". Pre-trend test p = {p}: no sign of a difference before certifying"
        )
    return text + "."


def effect_phrase(metric: str, estimate: float) -> str:
    """`0.70` → "30 % lower incidents per engineer-month"."""
    what = EFFECT_WORDS.get(metric, (nice(metric), nice(metric).lower()))[1]
    change = estimate - 1
    return f"{abs(change) * 100:.0f} % {'lower' if change < 0 else 'higher'} {what}"


def incidents_section(marts: Marts, q: Quarter, thr: int) -> Section:
    sid, title = "incidents", "Incidents and time to restore, before and after certification"
    eff, es, ir = (
        marts.get("certification_effect"),
        marts.get("certification_event_study"),
        marts.get("incident_rates"),
    )
    if eff is None and es is None and ir is None:
        return unavailable(sid, title, "Not available: the incident and effect marts are missing.")
    out_charts, tables, notes = [], [], []
    facts: dict[str, Any] = {"effects": {}}
    if es is not None and not es.empty:
        for metric in sorted(es["metric"].unique()):
            m = es[(es["metric"] == metric)].sort_values("relative_month")
            hidden = m["engineers"] < thr
            if hidden.any():
                notes.append(
                    f"{nice(metric)}: {int(hidden.sum())} relative months with fewer than "
                    f"{thr} engineers are left out of the chart."
                )
            m = m[~hidden]
            if m.empty:
                continue
            out_charts.append(
                charts.event_study_chart(
                    f"event-study-{metric}",
                    m["relative_month"].astype(int).tolist(),
                    m["estimate"].astype(float).tolist(),
                    m["ci_low"].astype(float).tolist(),
                    m["ci_high"].astype(float).tolist(),
                    title=f"{EFFECT_WORDS.get(metric, (nice(metric),))[0]} by month relative to certification",
                )
            )
    if eff is not None and not eff.empty:
        rows = []
        for r in eff.sort_values("metric").itertuples():
            h = r.n_engineers is None or r.n_engineers < thr
            label = EFFECT_WORDS.get(r.metric, (nice(r.metric),))[0]
            if h:
                rows.append([label, mask_label(thr), "", "", shown(r.n_engineers, True, thr), ""])
                continue
            rows.append(
                [
                    label,
                    f"{r.estimate:.2f} ({r.ci_low:.2f}–{r.ci_high:.2f})",
                    f"{r.naive_estimate:.2f}" if r.naive_estimate == r.naive_estimate else "–",
                    str(r.method or ""),
                    f"{num(r.n_engineers)} / {num(r.n_events)}",
                    str(r.comparison or ""),
                ]
            )
            facts["effects"][r.metric] = (
                float(r.estimate),
                float(r.ci_low),
                float(r.ci_high),
                float(r.naive_estimate) if r.naive_estimate == r.naive_estimate else None,
                str(r.caveats or ""),
            )
            if r.caveats:
                notes.append(f"{label}: {r.caveats}")
        tables.append(
            table(
                "Estimated effect of certification (ratio; 1 = no difference)",
                [
                    "Outcome",
                    "Adjusted estimate (95 % CI)",
                    "Naive figure",
                    "Method",
                    "Engineers / events",
                    "Compared with",
                ],
                rows,
                key="effects",
            )
        )
    if ir is not None and not ir.empty:
        st = ir[ir["breakdown"] == "quarter_by_status"]
        st = st[st["quarter"] == q.start]
        if st.empty:
            st = ir[ir["breakdown"] == "status"]
            scope = "whole observation window"
        else:
            scope = q.label
        order = {k: i for i, k in enumerate(STATUS_LABELS)}
        st = st.assign(_o=st["certification_status"].map(lambda v: order.get(v, 99))).sort_values(
            ["_o", "certification_status"]
        )
        groups = st[st["certification_status"] != "all"]
        mask = suppression_mask(
            dict(zip(groups["certification_status"], groups["engineers"], strict=True)), thr
        )
        rows, labels, points = [], [], []
        for r in st.itertuples():
            h = mask.get(r.certification_status, False)
            rate = poisson_rate_interval(r.incidents, r.engineer_months, per=100)
            rows.append(
                [
                    status_label(r.certification_status),
                    shown(r.engineers, h, thr),
                    shown(r.engineer_months, h, thr),
                    shown(r.incidents, h, thr),
                    mask_label(thr) if h else f"{rate[0]:.1f} ({rate[1]:.1f}–{rate[2]:.1f})",
                    mask_label(thr) if h else num(r.mttr_median_minutes),
                    mask_label(thr) if h else num(r.mttr_mean_minutes),
                ]
            )
            labels.append(status_label(r.certification_status))
            points.append(None if h or math.isnan(rate[0]) else rate)
            if r.certification_status == "all" and not h:
                facts["rate_all"] = rate[0]
        out_charts.append(
            charts.interval_chart(
                "incident-rates",
                labels,
                points,
                percent=False,
                title=f"Incidents per 100 engineer-months, {scope}, with exact Poisson 95 % intervals",
            )
        )
        tables.append(
            table(
                f"Incidents as primary responder, {scope}",
                [
                    "Status",
                    "Engineers",
                    "Engineer-months",
                    "Incidents",
                    "Per 100 eng.-months (95 % CI)",
                    "MTTR median (min)",
                    "MTTR mean (min)",
                ],
                rows,
                key="incident-status",
            )
        )
        notes.append(
            "Statuses are per engineer-month: an engineer whose status changed during the "
            "period counts once in each status held, so engineers add up to more than the "
            "total while engineer-months and incidents add up. Lapsed: held a certification "
            "that has since expired; not yet certified: certifies later in the data."
        )
        ev = ir[ir["breakdown"] == "event_time"]
        if not ev.empty:
            ba = []
            for name, part in (
                ("12 months before", ev[ev["relative_month"] < 0]),
                ("12 months after", ev[ev["relative_month"] >= 0]),
            ):
                e, x = float(part["incidents"].sum()), float(part["engineer_months"].sum())
                rate = poisson_rate_interval(e, x, per=100)
                w = part["resolved_incidents"].fillna(0)
                mttr = (
                    float((part["mttr_mean_minutes"].fillna(0) * w).sum() / w.sum())
                    if w.sum()
                    else math.nan
                )
                ba.append(
                    [
                        name,
                        num(x),
                        num(e),
                        f"{rate[0]:.1f} ({rate[1]:.1f}–{rate[2]:.1f})" if x else "–",
                        num(mttr),
                    ]
                )
            tables.append(
                table(
                    "Plain before/after for engineers who certified (not adjusted)",
                    [
                        "Window",
                        "Engineer-months",
                        "Incidents",
                        "Per 100 eng.-months (95 % CI)",
                        "MTTR mean (min)",
                    ],
                    ba,
                    key="before-after",
                )
            )
    lead = _effect_lead(facts["effects"])
    notes.append(CAVEAT)
    return {
        "id": sid,
        "title": title,
        "available": True,
        "lead": lead,
        "charts": out_charts,
        "tables": tables,
        "notes": notes,
        "facts": facts,
    }


CAVEAT = (
    "What these figures can and cannot show: the adjusted estimates compare engineers after "
    "certifying with colleagues not yet certified in the same calendar months, adjusting for "
    "level, tenure and fleet growth. They are associations from observational data, not "
    "proof of cause: engineers may certify after a bad quarter (regression to the mean), "
    "experienced people certify earlier, incidents have several responders, and small groups "
    "give wide intervals. The naive figure (plain before/after or ever/never) is shown only to "
    "make the size of these biases visible."
)


def _effect_lead(effects: dict[str, tuple]) -> str:
    parts = [effect_sentence(metric, *effects[metric][:4]) for metric in ordered_effects(effects)]
    if not parts:
        return (
            "Adjusted effect estimates are not available (certification_effect is not in the "
            "published warehouse); the figures below are plain, unadjusted comparisons."
        )
    return " ".join(parts) + " Associations, not proof of cause: see the caveat below."


def ordered_effects(effects: dict[str, Any]) -> list[str]:
    """Incidents, time to restore, then attrition; unknown metrics last by name."""
    known = list(EFFECT_TEXT)
    return sorted(effects, key=lambda m: (m not in known, known.index(m) if m in known else 0, m))


# --- training spend and ROI --------------------------------------------------------------
def _col(df: pd.DataFrame, *names: str) -> str | None:
    for n in names:
        if n in df.columns:
            return n
    for n in names:
        hit = next((c for c in df.columns if n in c), None)
        if hit:
            return hit
    return None


def roi_section(marts: Marts, q: Quarter, thr: int) -> Section:
    sid, title = "roi", "Training spend and return on investment"
    ts = marts.get("training_spend")
    out_charts, tables, notes = [], [], []
    facts: dict[str, Any] = {}
    lead = ""
    if ts is not None and not ts.empty:
        cur = ts[ts["quarter"] == q.start].sort_values("spend_category")
        prev = ts[ts["quarter"] == q.previous().start]
        year = ts[ts["quarter"].isin([qq.start for qq in q.trailing(4)])]
        if not cur.empty:
            mask = suppression_mask(
                dict(zip(cur["spend_category"], cur["participants"], strict=True)), thr
            )
            rows, names, vals, labels = [], [], [], []
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
                names.append(nice(r.spend_category))
                vals.append(None if h else float(r.spend_usd))
                labels.append(mask_label(thr) + " (hidden)" if h else usd(r.spend_usd))
            spend = float(cur["spend_usd"].sum())
            facts.update(
                spend=spend,
                spend_prev=float(prev["spend_usd"].sum()) if not prev.empty else None,
                spend_12m=float(year["spend_usd"].sum()),
            )
            out_charts.append(
                charts.bar_chart(
                    "spend-by-category",
                    names,
                    vals,
                    labels=labels,
                    title=f"Training spend by programme type, {q.label}",
                    xlabel="USD charged after discounts",
                    money=True,
                )
            )
            tables.append(
                table(
                    f"Training spend, {q.label}",
                    [
                        "Programme type",
                        "Participants",
                        "Completions",
                        "Spend",
                        "Discounts",
                        "Hours",
                    ],
                    rows,
                    total=[
                        "All",
                        "",
                        "",
                        usd(spend),
                        usd(cur["discount_usd"].sum()),
                        num(cur["training_hours"].sum()),
                    ],
                    key="spend",
                )
            )
            lead = (
                f"{usd(spend)} was spent on training and exams in {q.label} "
                f"({usd(facts['spend_12m'])} over the last 12 months)."
            )
    roi_parts = _roi_parts(marts, q)
    lead = " ".join([lead, *roi_parts["lead"]]).strip()
    out_charts += roi_parts["charts"]
    tables += roi_parts["tables"]
    notes += roi_parts["notes"]
    facts.update(roi_parts["facts"])
    if not lead and not roi_parts["charts"]:
        return unavailable(
            sid, title, "Not available: training_spend and the ROI tables are missing."
        )
    return {
        "id": sid,
        "title": title,
        "available": True,
        "lead": lead,
        "charts": out_charts,
        "tables": tables,
        "notes": notes,
        "facts": facts,
    }


# Returns priced from stated per-GPU values in the assumptions file, not measured from the data
# (pipelines/lib/roi/README.md): they dominate the total, so the report shows ROI without them.
STATED_RETURNS = ("efficiency", "faster_deployment")


def floor_percent(ratio: float | None) -> str:
    """ROI ratios print as whole percent rounded down, as the ROI module documents
    (3.655 → 365 %)."""
    if ratio is None or ratio != ratio:
        return "–"
    return f"{math.floor(ratio * 100 + 1e-9):,} %".replace("-", "−")


def _roi_parts(marts: Marts, q: Quarter) -> dict[str, Any]:
    """Waterfall and totals from `roi_summary`, the quarter from `roi_by_period`, the tornado
    from `roi_sensitivity` (columns as in pipelines/lib/roi/README.md). A missing table or
    column is reported in words instead of failing the report."""
    parts: dict[str, Any] = {"charts": [], "tables": [], "notes": [], "facts": {}, "lead": []}
    summ, by_period, sens = (
        marts.get("roi_summary"),
        marts.get("roi_by_period"),
        marts.get("roi_sensitivity"),
    )
    if summ is None:
        parts["notes"].append(
            "ROI: not available (the ROI tables are not in the published "
            "warehouse). Spend figures above are actual charges."
        )
        return parts
    need = {"category", "amount_usd"}
    if not need <= set(summ.columns) or not ({"label", "item"} & set(summ.columns)):
        parts["notes"].append(
            "ROI: roi_summary lacks the columns category, item/label and "
            "amount_usd; it is shown as delivered."
        )
        parts["tables"].append(
            table(
                "ROI summary",
                [nice(c) for c in summ.columns],
                [[_cell(v) for v in row] for row in summ.itertuples(index=False)],
            )
        )
    else:
        name = "label" if "label" in summ.columns else "item"
        s = summ.dropna(subset=["amount_usd"])
        inv = s[s["category"].str.lower() == "investment"]
        ret = s[s["category"].str.lower() == "return"]
        is_stated = (
            ret["item"].astype(str).isin(STATED_RETURNS)
            if "item" in ret.columns
            else pd.Series(False, index=ret.index)
        )
        measured, stated = ret[~is_stated], ret[is_stated]
        steps = [(str(r[name]), -float(r["amount_usd"])) for _, r in inv.iterrows()]
        steps += [(str(r[name]), float(r["amount_usd"])) for _, r in measured.iterrows()]
        steps = [st for st in steps if abs(st[1]) >= 0.005]
        stated_steps = [
            (str(r[name]), float(r["amount_usd"]))
            for _, r in stated.iterrows()
            if abs(float(r["amount_usd"])) >= 0.005
        ]
        invested, returned = float(inv["amount_usd"].sum()), float(ret["amount_usd"].sum())
        measured_ret = float(measured["amount_usd"].sum())
        window = ""
        if {"period_start", "period_end"} <= set(s.columns) and len(s):
            window = f", {pd.Timestamp(s['period_start'].min()):%b %Y} – {pd.Timestamp(s['period_end'].max()):%b %Y}"
        without = "net without stated values" if stated_steps else "net return"
        if steps:
            parts["charts"].append(
                charts.waterfall_chart(
                    "roi-waterfall",
                    steps,
                    title=f"Investment and measured return{window}",
                    total_label=without,
                )
            )
        if stated_steps:
            parts["charts"].append(
                charts.waterfall_chart(
                    "roi-waterfall-stated",
                    stated_steps,
                    title="Adding the stated per-GPU values (assumptions, not measured)",
                    total_label="net return, all items",
                    start=(without, measured_ret - invested),
                )
            )
        net_roi = (returned - invested) / invested if invested else None
        gross = returned / invested if invested else None
        net_measured = (measured_ret - invested) / invested if invested else None
        parts["facts"].update(
            roi_net=returned - invested,
            roi_investment=invested,
            roi_net_ratio=net_roi,
            roi_window=window.lstrip(", "),
            roi_stated=float(stated["amount_usd"].sum()),
            roi_stated_labels=[str(r[name]).lower() for _, r in stated.iterrows()],
            roi_measured=measured_ret,
            roi_net_ratio_measured=net_measured,
        )
        if len(stated):
            parts["tables"].append(
                table(
                    "ROI with and without the stated per-GPU values",
                    ["Returns counted", "Return", "Investment", "Net", "Net ROI"],
                    [
                        [
                            "All items (model as configured)",
                            usd(returned),
                            usd(invested),
                            usd(returned - invested),
                            floor_percent(net_roi),
                        ],
                        [
                            "Without efficiency and faster deployment (measured items only)",
                            usd(measured_ret),
                            usd(invested),
                            usd(measured_ret - invested),
                            floor_percent(net_measured),
                        ],
                    ],
                    key="roi-stated",
                )
            )
        rows = [[nice(r["category"]), str(r[name]), usd(r["amount_usd"])] for _, r in s.iterrows()]
        parts["tables"].append(
            table(
                f"ROI line items{window}",
                ["Category", "Item", "Amount"],
                rows,
                total=[
                    "Net",
                    f"return {usd(returned)} − investment {usd(invested)}",
                    usd(returned - invested),
                ],
                key="roi-summary",
            )
        )
        text = (
            f"Net ROI over the window: {floor_percent(net_roi)} ((return − investment) ÷ "
            f"investment); gross return multiple: {floor_percent(gross)} (return ÷ investment)."
        )
        if len(stated):
            text += (
                " Efficiency and faster deployment are stated per-GPU values from the "
                "assumptions file, not measurements; without them the net ROI is "
                f"{floor_percent(net_measured)}."
            )
        parts["lead"].append(text)
    if by_period is not None and {
        "period_type",
        "period_start",
        "investment_usd",
        "return_usd",
    } <= set(by_period.columns):
        bq = by_period[by_period["period_type"] == "quarter"].copy()
        bq["period_start"] = bq["period_start"].map(lambda v: pd.Timestamp(v).date())
        wanted = {qq.start: qq.label for qq in q.trailing(4)}
        bq = bq[bq["period_start"].isin(wanted)].sort_values("period_start")
        if not bq.empty:
            rows = [
                [
                    wanted[r["period_start"]],
                    usd(r["investment_usd"]),
                    usd(r["return_usd"]),
                    usd(r["return_usd"] - r["investment_usd"]),
                    floor_percent(r.get("net_roi")),
                ]
                for _, r in bq.iterrows()
            ]
            parts["tables"].append(
                table(
                    "ROI by quarter (investment booked when spent, returns when they occur)",
                    ["Quarter", "Investment", "Return", "Net", "Net ROI"],
                    rows,
                    key="roi-quarters",
                )
            )
    if sens is None or sens.empty:
        parts["notes"].append("ROI sensitivity: not available (roi_sensitivity is missing).")
    elif {"assumption", "roi_at_low", "roi_at_high", "base_roi"} <= set(sens.columns):
        rows = [
            (nice(r["assumption"]), float(r["roi_at_low"]), float(r["roi_at_high"]))
            for _, r in sens.dropna(subset=["roi_at_low", "roi_at_high"]).iterrows()
        ]
        if rows:
            wide = max(rows, key=lambda r: abs(r[2] - r[1]))
            parts["facts"]["roi_widest"] = wide
            parts["lead"].append(
                f"The most uncertain assumption ({wide[0]}) alone moves the net ROI "
                f"between {floor_percent(min(wide[1], wide[2]))} and "
                f"{floor_percent(max(wide[1], wide[2]))}."
            )
            parts["charts"].append(
                charts.tornado_chart(
                    "roi-tornado",
                    rows[:10],
                    float(sens["base_roi"].iloc[0]),
                    title="Net ROI when each assumption moves to its low or high value",
                )
            )
    else:
        parts["notes"].append(
            "ROI sensitivity: roi_sensitivity lacks the columns assumption, "
            "roi_at_low, roi_at_high and base_roi; no tornado chart."
        )
    return parts


def _cell(v: object) -> str:
    if isinstance(v, float):
        return num(v, 2) if abs(v) < 100 else num(v)
    return "–" if v is None else str(v)


# --- team composition and level mix ------------------------------------------------------
LEVELS = {
    1: "1 Foundation",
    2: "2 Operational",
    3: "3 Professional",
    4: "4 Expert",
    5: "5 Architect",
}


def _level_band_table(tc: pd.DataFrame, thr: int, when: str) -> dict[str, Any]:
    """Per role: the level band the template sets and the share of engineers inside it. Level
    counts per role are not printed: with the role totals they would give away groups smaller
    than the minimum size; the level mix chart shows the levels of all engineers together."""
    rows = []
    g = tc.groupby("role_family")
    sizes = {str(r): float(part["headcount"].sum()) for r, part in g}
    hidden = suppression_mask(sizes, thr)
    for r, part in g:
        pairs = sorted(
            {
                (int(a), int(b))
                for a, b in zip(part["level_min"], part["level_max"], strict=True)
                if a == a and b == b
            }
        )
        band = " or ".join(f"{a}–{b}" if a != b else str(a) for a, b in pairs) or "–"
        hc = sizes[str(r)]
        share = float(part["headcount_in_level_band"].sum()) / hc if hc else None
        h = hidden[str(r)]
        rows.append(
            [
                nice(r),
                band,
                num(part["template_headcount"].sum()),
                shown(hc, h, thr),
                mask_label(thr) if h else pct(share),
            ]
        )
    hc_all = float(tc["headcount"].sum())
    return table(
        f"Roles against the template, {when}",
        ["Role", "Template levels", "Template headcount", "Engineers", "In template band"],
        rows,
        total=[
            "All roles",
            "",
            num(tc["template_headcount"].sum()),
            num(hc_all),
            pct(float(tc["headcount_in_level_band"].sum()) / hc_all if hc_all else None),
        ],
        key="level-band",
    )


def composition_section(marts: Marts, q: Quarter, thr: int) -> Section:
    sid, title = "composition", "Team composition and level mix against the template"
    tc, lm = marts.get("team_composition"), marts.get("level_mix")
    if tc is None and lm is None:
        return unavailable(sid, title, "Not available: team_composition and level_mix are missing.")
    out_charts, tables = [], []
    facts: dict[str, Any] = {}
    if tc is not None and not tc[tc["month"] == q.last_month].empty:
        cur = tc[tc["month"] == q.last_month]
        t = (
            cur.groupby("team")
            .agg(
                gpus=("gpu_count", "max"),
                size_class=("fleet_size_class", "first"),
                headcount=("headcount", "sum"),
                template=("template_headcount", "sum"),
                in_band=("headcount_in_level_band", "sum"),
            )
            .reset_index()
            .sort_values("team")
        )
        mask = suppression_mask(dict(zip(t["team"], t["headcount"], strict=True)), thr)
        rows, names, vals, labels, refs = [], [], [], [], []
        for r in t.itertuples():
            h = mask[r.team]
            diff = r.headcount - r.template
            rows.append(
                [
                    str(r.team),
                    num(r.gpus),
                    str(r.size_class),
                    num(r.template),
                    shown(r.headcount, h, thr),
                    mask_label(thr) if h else f"{diff:+,.0f}",
                    mask_label(thr) if h else pct(r.in_band / r.headcount if r.headcount else None),
                ]
            )
            names.append(str(r.team))
            vals.append(None if h else float(r.headcount))
            labels.append(mask_label(thr) + " (hidden)" if h else num(r.headcount))
            refs.append(float(r.template))
        out_charts.append(
            charts.bar_chart(
                "composition-by-team",
                names,
                vals,
                labels=labels,
                reference=refs,
                title="Engineers per team against the template",
                xlabel="engineers",
            )
        )
        tables.append(
            table(
                f"Teams against the template, {month_label(q.last_month)}",
                [
                    "Team (cluster)",
                    "GPUs",
                    "Fleet size",
                    "Template",
                    "Engineers",
                    "vs template",
                    "In level band",
                ],
                rows,
                total=[
                    "All teams",
                    num(t["gpus"].sum()),
                    "",
                    num(t["template"].sum()),
                    num(t["headcount"].sum()),
                    f"{t['headcount'].sum() - t['template'].sum():+,.0f}",
                    pct(
                        t["in_band"].sum() / t["headcount"].sum() if t["headcount"].sum() else None
                    ),
                ],
                key="composition-teams",
            )
        )
        facts.update(
            headcount=float(t["headcount"].sum()),
            template=float(t["template"].sum()),
            in_band=float(t["in_band"].sum()) / float(t["headcount"].sum())
            if float(t["headcount"].sum())
            else None,
            short=[
                (str(r.team), float(r.headcount - r.template))
                for r in t.assign(d=t["headcount"] - t["template"])
                .sort_values(["d", "team"])
                .itertuples()
                if not mask[r.team] and r.headcount < r.template
            ],
        )
    if lm is not None and not lm[lm["month"] == q.last_month].empty:
        cur = lm[lm["month"] == q.last_month].groupby("skill_level")["headcount"].sum()
        levels = sorted(int(v) for v in cur.index)
        mask = suppression_mask({lv: float(cur.loc[lv]) for lv in levels}, thr)
        total = float(cur.sum())
        names = [LEVELS.get(lv, str(lv)) for lv in levels]
        vals = [None if mask[lv] else float(cur.loc[lv]) / total for lv in levels]
        labels = [
            mask_label(thr) + " (hidden)"
            if mask[lv]
            else f"{num(cur.loc[lv])} ({pct(float(cur.loc[lv]) / total)})"
            for lv in levels
        ]
        out_charts.append(
            charts.bar_chart(
                "level-mix",
                names,
                vals,
                labels=labels,
                percent=True,
                title="Level mix, share of engineers",
            )
        )
        tables.append(
            table(
                f"Engineers by skill level, {month_label(q.last_month)}",
                ["Level", "Engineers", "Share"],
                [
                    [
                        n,
                        shown(cur.loc[lv], mask[lv], thr),
                        mask_label(thr) if mask[lv] else pct(float(cur.loc[lv]) / total),
                    ]
                    for n, lv in zip(names, levels, strict=True)
                ],
                total=["All levels", num(total), "100 %"],
                key="level-mix",
            )
        )
        if tc is not None and not tc[tc["month"] == q.last_month].empty:
            tables.append(
                _level_band_table(tc[tc["month"] == q.last_month], thr, month_label(q.last_month))
            )
    if not out_charts:
        return unavailable(
            sid, title, f"Not available: no composition snapshot for {month_label(q.last_month)}."
        )
    lead = ""
    if "headcount" in facts:
        d = facts["headcount"] - facts["template"]
        lead = (
            f"The teams have {num(facts['headcount'])} engineers against a template of "
            f"{num(facts['template'])} for the current fleet sizes "
            f"({'+' if d >= 0 else '−'}{num(abs(d))})"
        )
        if facts.get("in_band") is not None:
            lead += (
                f"; {pct(facts['in_band'])} of engineers sit in the level band the template "
                "sets for their role"
            )
        short = facts.get("short") or []
        if short:
            worst = min(v for _, v in short)
            lead += (
                f". Below template: {len(short)} team{'s' if len(short) != 1 else ''}, most "
                f"{', '.join(n for n, v in short if v == worst)} ({num(worst)})"
            )
        lead += "."
    return {
        "id": sid,
        "title": title,
        "available": True,
        "lead": lead,
        "charts": out_charts,
        "tables": tables,
        "notes": [],
        "facts": facts,
    }
