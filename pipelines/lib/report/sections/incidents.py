"""Incidents and time to restore by certification status, and the estimated effect of
certification with the plain comparison beside it (definitions from `effects`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

import pandas as pd
from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, nice, num, ratio, sentence
from pipelines.lib.report.intervals import poisson_rate_interval
from pipelines.lib.report.labels import count, label
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Section, Table, table, unavailable
from pipelines.lib.report.sections.effects import (
    ENGINEERS,
    EVENTS,
    Effect,
    effect_sentence,
    effect_status,
    estimate_text,
    read_effects,
)
from pipelines.lib.report.suppression import hidden_label, mask_label, shown, suppression_mask

STATUS_LABELS = {  # incident_rates.certification_status, in reading order
    "certified": "Certified (active)",
    "not_yet_certified": "Not yet certified (certify later)",
    "never_certified": "Never certified",
    "lapsed": "Lapsed (certification expired)",
    "all": "All engineers",
}


@dataclass(frozen=True)
class QuarterIncidents:
    rate: float  # incidents per 100 engineer-months, all engineers
    mttr_median: float | None  # minutes
    engineers: float = 0.0  # engineers employed during the quarter


@dataclass(frozen=True)
class IncidentFacts:
    now: QuarterIncidents | None
    prev: QuarterIncidents | None
    year_ago: QuarterIncidents | None
    effects: dict[str, Effect] = field(default_factory=dict)


def status_label(code: object) -> str:
    return STATUS_LABELS.get(str(code), nice(code))


def _quarter_all(ir: pd.DataFrame | None, start: date) -> QuarterIncidents | None:
    if ir is None:
        return None
    x = ir[
        (ir["breakdown"] == "quarter_by_status")
        & (ir["certification_status"] == "all")
        & (ir["quarter"] == start)
    ]
    if x.empty or not float(x["engineer_months"].iloc[0]):
        return None
    r = x.iloc[0]
    rate = poisson_rate_interval(r["incidents"], r["engineer_months"], per=100)[0]
    med = r["mttr_median_minutes"]
    return QuarterIncidents(
        rate, None if med != med or med is None else float(med), float(r["engineers"])
    )


CHART_WORDS = {
    "shown": "the months before certifying are flat around 1, and the change after it is the "
    "effect the estimate measures",
    "not_shown": "read the change after certifying with the status: {why}",
    "not_estimable": "too few engineers to estimate the effect",
}


def _event_charts(
    es: pd.DataFrame | None, effects: dict[str, Effect], thr: int, notes: list
) -> list[charts.Chart]:
    out = []
    for metric in sorted(es["metric"].unique()) if es is not None and not es.empty else []:
        m = es[es["metric"] == metric].sort_values("relative_month")
        hidden = ~(m["engineers"].astype("float64") >= thr)  # NULL: suppressed upstream
        if hidden.any():
            notes.append(
                f"{nice(metric)}: {int(hidden.sum())} relative months with fewer engineers than "
                f"the minimum group size ({thr}) are left out of the chart."
            )
        m = m[~hidden]
        if m.empty:
            continue
        name = {"incident_rate_ratio": "Incident rate", "mttr_ratio": "Time to restore"}.get(
            metric, nice(metric)
        )
        caption: Markup | str = ""
        e = effects.get(metric)
        if e is not None:
            caption = sentence(
                "{label} ({status}): {words}.",
                label=e.label,
                status=effect_status(e),
                words=CHART_WORDS[e.status].format(why=e.why),
            )
        svg = charts.event_study_chart(
            f"event-study-{metric}",
            m["relative_month"].astype(int).tolist(),
            m["estimate"].astype(float).tolist(),
            m["ci_low"].astype(float).tolist(),
            m["ci_high"].astype(float).tolist(),
            title=f"{name} by month relative to certification",
            alt=f"Line chart with a 95 % band: {name.lower()} of engineers who certified, in "
            "each month from 12 before to 12 after certifying, as a ratio to the month before "
            "certifying.",
        )
        out.append(charts.Chart(f"event-study-{metric}", svg, caption))
    return out


def effects_table(effects: dict[str, Effect], thr: int) -> Table:
    rows = []
    for e in effects.values():
        if e.n_engineers is not None and e.n_engineers < thr:
            rows.append([e.label, mask_label(thr), effect_status(e), "", "", "", ""])
            continue
        adjusted = estimate_text(e) if e.estimable else "–"
        naive = (
            fig(f"naive-{e.metric}", ratio(e.naive_estimate))
            if e.naive_estimate is not None
            else "–"
        )
        rows.append(
            [
                e.label,
                adjusted,
                effect_status(e),
                naive,
                sentence(
                    "{n} {what}", n=fig(f"n-engineers-{e.metric}", num(e.n_engineers)),
                    what=ENGINEERS.get(e.metric, "engineers"),
                ),
                sentence(
                    "{n} {what}", n=fig(f"n-events-{e.metric}", num(e.n_events)),
                    what=EVENTS.get(e.metric, "events"),
                ),
                "–" if e.mde_ratio is None else fig(f"mde-{e.metric}", ratio(e.mde_ratio)),
            ]
        )  # fmt: skip
    window = next((e.window for e in effects.values() if e.window), "")
    return table(
        "Estimated effect of certification (ratio; 1 = no difference)",
        [
            "Outcome",
            "Estimate (95 % CI)",
            "Status",
            "Plain comparison",
            "Engineers",
            "Events",
            "Smallest detectable ratio",
        ],  # fmt: skip
        rows,
        key="effects",
        note="Estimated from complete months"
        + (f" ({window})" if window else "")
        + ": the latest month of the data is still being delivered and enters once the next "
        "month's exports arrive. Smallest detectable ratio: the smallest reduction these data "
        "find 4 times in 5 (80 % power, 5 % two-sided; Bloom 1995). The method appendix says "
        "how each is estimated.",
    )


def _status_rows(st: pd.DataFrame, thr: int, quarter: bool = True) -> list[list]:
    order = {k: i for i, k in enumerate(STATUS_LABELS)}
    st = st.assign(_o=st["certification_status"].map(lambda v: order.get(v, 99))).sort_values(
        ["_o", "certification_status"]
    )
    groups = st[st["certification_status"] != "all"]
    mask = suppression_mask(
        dict(zip(groups["certification_status"], groups["engineers"], strict=True)),
        thr,
        also_hidden=hidden_in_marts(groups, "certification_status"),
    )
    rows = []
    for r in st.itertuples():
        h = mask.get(r.certification_status, False)
        rate = poisson_rate_interval(r.incidents, r.engineer_months, per=100)
        is_all = r.certification_status == "all" and quarter
        rate_txt = f"{rate[0]:.1f}"
        rows.append(
            [
                status_label(r.certification_status),
                fig("employed", num(r.engineers))
                if is_all
                else shown(r.engineers, h, thr, size=r.engineers),
                shown(r.engineer_months, h, thr, size=r.engineers),
                shown(r.incidents, h, thr, size=r.engineers),
                hidden_label(r.engineers, thr)
                if h
                else (fig("incident-rate", rate_txt) if is_all else rate_txt)
                + f" ({rate[1]:.1f}–{rate[2]:.1f})",
                hidden_label(r.engineers, thr)
                if h
                else (
                    fig("mttr-median", num(r.mttr_median_minutes))
                    if is_all
                    else num(r.mttr_median_minutes)
                ),
            ]
        )
    return rows


def incidents_section(marts: Marts, q: Quarter, thr: int) -> tuple[Section, IncidentFacts]:
    sid, title = "incidents", "Incidents and time to restore"
    eff, es, ir = (
        marts.get("certification_effect"),
        marts.get("certification_event_study"),
        marts.get("incident_rates"),
    )
    effects = read_effects(eff)
    facts = IncidentFacts(
        _quarter_all(ir, q.start),
        _quarter_all(ir, q.previous().start),
        _quarter_all(ir, q.trailing(5)[0].start),
        effects,
    )
    if eff is None and es is None and ir is None:
        why = "Not available: the incident and effect marts are missing."
        return unavailable(sid, title, why), facts
    section = Section(sid, title)
    if ir is not None and not ir.empty:
        st = ir[(ir["breakdown"] == "quarter_by_status") & (ir["quarter"] == q.start)]
        scope = q.label
        if st.empty:
            st, scope = ir[ir["breakdown"] == "status"], "whole observation window"
        rows = _status_rows(st, thr, quarter=scope == q.label)
        section.tables.append(
            table(
                f"Incidents as primary responder, {scope}",
                [
                    "Certification status",
                    label("employed").capitalize()
                    if scope == q.label
                    else "Engineers employed in the window",
                    "Engineer-months",
                    "Incidents",
                    "Per 100 eng.-months (95 % CI)",
                    "Median time to restore (min)",
                ],
                rows,
                key="incident-status",
            )
        )
        section.notes.append(
            "Statuses are per engineer-month: an engineer whose status changed during the "
            "period counts once in each status held, so engineers add up to more than the "
            "total while engineer-months and incidents add up."
        )
    if effects:
        section.tables.append(effects_table(effects, thr))
    section.charts += _event_charts(es, effects, thr, section.notes)
    parts = [effect_sentence(e) for e in effects.values()]
    now = facts.now
    lead = (
        sentence(
            "In {q}, {rate} incidents per 100 engineer-months across the {n}; median time to "
            "restore {mttr} minutes. ",
            q=q.label,
            rate=fig("incident-rate", f"{now.rate:.1f}"),
            n=count("employed", now.engineers),
            mttr=fig("mttr-median", num(now.mttr_median)),
        )
        if now is not None
        else Markup("")
    )
    section.lead = lead + (
        Markup(" ").join(parts)
        if parts
        else "Effect estimates are not available (certification_effect is not in the published "
        "warehouse); the figures below are plain comparisons."
    )
    return section, facts


def split_charts(section: Section, prefix: str) -> list[charts.Chart]:
    """Take the charts named `prefix...` out of a section, for the method appendix."""
    moved = [c for c in section.charts if c.name.startswith(prefix)]
    section.charts = [c for c in section.charts if c not in moved]
    return moved
