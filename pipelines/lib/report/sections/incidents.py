"""Incidents and time to restore by certification status, and the estimated effect of
certification with the plain comparison beside it (definitions from `effects`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

import pandas as pd
from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import DASH, fig, nice, num, ratio, sentence
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
    incidents: float = 0.0
    gpu_months: float | None = None  # GPUs in the fleet summed over the quarter's months

    @property
    def per_1000_gpus(self) -> float | None:
        """Incidents a month per 1,000 GPUs of the fleet (None without the fleet)."""
        return self.incidents / self.gpu_months * 1000 if self.gpu_months else None

    @property
    def gpus(self) -> float | None:
        """The fleet's average size over the quarter."""
        return self.gpu_months / 3 if self.gpu_months else None


@dataclass(frozen=True)
class IncidentFacts:
    now: QuarterIncidents | None
    prev: QuarterIncidents | None
    year_ago: QuarterIncidents | None
    effects: dict[str, Effect] = field(default_factory=dict)


def status_label(code: object) -> str:
    return STATUS_LABELS.get(str(code), nice(code))


def gpu_months(fleet: pd.DataFrame | None, q: Quarter) -> float | None:
    """GPUs of the fleet (`fleet_size`) summed over the quarter's three months; None unless all
    three are there."""
    if fleet is None or fleet.empty or "gpu_count" not in fleet.columns:
        return None
    days = pd.to_datetime(fleet["month_end"]).dt.date
    inq = fleet[[q.start <= d <= q.end for d in days]]
    if pd.to_datetime(inq["month_end"]).dt.month.nunique() < 3:
        return None
    return float(pd.to_numeric(inq["gpu_count"], errors="coerce").fillna(0).sum()) or None


def _quarter_all(
    ir: pd.DataFrame | None, start: date, fleet: pd.DataFrame | None = None
) -> QuarterIncidents | None:
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
        rate,
        None if med != med or med is None else float(med),
        float(r["engineers"]),
        float(r["incidents"]),
        gpu_months(fleet, Quarter.containing(start)),
    )


def year_change(now: QuarterIncidents | None, ago: QuarterIncidents | None, q: Quarter) -> Markup:
    """The change in the incident rate since the same quarter a year earlier, and the same
    change per 1,000 GPUs: incidents come from the machines as well as from the people, so a
    fleet that grew faster than the team raises incidents per engineer without anyone working
    worse."""
    if now is None or ago is None:
        return Markup("")
    text = sentence(
        " A year earlier ({q}) the rate was {r} per 100 engineer-months.",
        q=q.trailing(5)[0].label,
        r=fig("incident-rate-year-ago", f"{ago.rate:.1f}"),
    )
    if now.per_1000_gpus is None or ago.per_1000_gpus is None:
        return text + Markup(
            " The fleet's size is not known for both quarters, so the change cannot be put per GPU."
        )
    grew = (now.gpus or 0) / (ago.gpus or 1) - 1
    return text + sentence(
        " Incidents come from the machines as well as from the people: the fleet went from "
        "{g0} to {g1} GPUs ({gg}) while the engineers' months went from {e0} to {e1} ({eg}); "
        "the monthly rate per 1,000 GPUs was {p1} against {p0} a year earlier ({pg}).",
        g0=num(ago.gpus), g1=num(now.gpus), gg=_signed_pct(grew),
        e0=num(ago.incidents / ago.rate * 100 if ago.rate else None),
        e1=num(now.incidents / now.rate * 100 if now.rate else None),
        eg=_signed_pct((now.incidents / now.rate) / (ago.incidents / ago.rate) - 1)
        if now.rate and ago.rate and ago.incidents else "–",
        p1=fig("incidents-per-1000-gpus", f"{now.per_1000_gpus:.1f}"),
        p0=fig("incidents-per-1000-gpus-year-ago", f"{ago.per_1000_gpus:.1f}"),
        pg=_signed_pct(now.per_1000_gpus / ago.per_1000_gpus - 1),
    )  # fmt: skip


def year_table(now: QuarterIncidents | None, ago: QuarterIncidents | None, q: Quarter):
    """The quarter and the same quarter a year earlier, per engineer-month and per GPU."""
    if now is None or ago is None:
        return None
    rows = []
    for quarter, x, key in ((q.trailing(5)[0], ago, "-year-ago"), (q, now, "")):
        per_gpu = x.per_1000_gpus
        rows.append([
            quarter.label, num(x.incidents),
            num(x.incidents / x.rate * 100 if x.rate else None),
            fig(f"incident-rate{key}", f"{x.rate:.1f}"),
            num(x.gpus) if x.gpus else "not known",
            fig(f"incidents-per-1000-gpus{key}", f"{per_gpu:.1f}") if per_gpu else "–",
        ])  # fmt: skip
    return table(
        "Incidents a year apart, per engineer-month and per GPU",
        ["Quarter", "Incidents", "Engineer-months", "Per 100 engineer-months",
         "GPUs in the fleet (average)", "Incidents a month per 1,000 GPUs"],
        rows,
        key="incident-year",
        scope="full",  # on screen, collapsed; the lead's sentence carries it in print
        note="GPUs: fleet_size over the quarter's three months.",
    )  # fmt: skip


def _signed_pct(v: float) -> str:
    return f"{'+' if v >= 0 else '−'}{abs(v) * 100:.0f} %"


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


def power_table(effects: dict[str, Effect], thr: int) -> Table | None:
    """What the data could have detected: per outcome, the smallest ratio found 4 times in 5,
    the ratio the business case assumes and the engineer-months more that would detect it."""
    rows = []
    for e in effects.values():
        if e.mde_ratio is None or (e.n_engineers is not None and e.n_engineers < thr):
            continue
        more = e.more_engineer_months_needed
        rows.append([
            e.label,
            fig(f"mde-{e.metric}", ratio(e.mde_ratio)),
            DASH if e.claimed_ratio is None else fig(f"claimed-{e.metric}", ratio(e.claimed_ratio)),
            DASH if more is None else (
                fig(f"more-engineer-months-{e.metric}", f"{more:,.0f}") if more else "none"),
            DASH if not e.engineer_months
            else fig("effect-engineer-months", f"{e.engineer_months:,.0f}"),
        ])  # fmt: skip
    if not rows:
        return None
    return table(
        "What these data could detect (80 % power, 5 % two-sided)",
        ["Outcome", "Smallest detectable ratio", "Ratio the business case assumes",
         "Engineer-months more to detect it", "Engineer-months held"],
        rows, key="effects-power",
        note="Smallest ratio found 4 times in 5 (Bloom 1995); the assumed ratio is the "
        "project's assumptions file's; engineer-months more at the present mix.",
    )  # fmt: skip


def effects_table(effects: dict[str, Effect], thr: int) -> Table:
    rows = []
    for e in effects.values():
        if e.n_engineers is not None and e.n_engineers < thr:
            rows.append([e.label, mask_label(thr), effect_status(e), "", "", ""])
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
        ],
        rows,
        key="effects",
        note="Estimated from complete months"
        + (f" ({window})" if window else "")
        + ": the latest month of the data is still being delivered and enters once the next "
        "month's exports arrive. The method appendix says how each is estimated.",
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


def status_table(ir: pd.DataFrame, q: Quarter, thr: int) -> Table:
    """Incidents by certification status in the quarter (the whole window without it)."""
    st = ir[(ir["breakdown"] == "quarter_by_status") & (ir["quarter"] == q.start)]
    scope = q.label
    if st.empty:
        st, scope = ir[ir["breakdown"] == "status"], "whole observation window"
    return table(
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
        _status_rows(st, thr, quarter=scope == q.label),
        key="incident-status",
    )


def incidents_section(marts: Marts, q: Quarter, thr: int) -> tuple[Section, IncidentFacts]:
    sid, title = "incidents", "Incidents and time to restore"
    eff, es, ir = (
        marts.get("certification_effect"),
        marts.get("certification_event_study"),
        marts.get("incident_rates"),
    )
    effects = read_effects(eff)
    fleet = marts.get("fleet_size")
    facts = IncidentFacts(
        _quarter_all(ir, q.start, fleet),
        _quarter_all(ir, q.previous().start, fleet),
        _quarter_all(ir, q.trailing(5)[0].start, fleet),
        effects,
    )
    if eff is None and es is None and ir is None:
        why = "Not available: the incident and effect marts are missing."
        return unavailable(sid, title, why), facts
    section = Section(sid, title)
    if ir is not None and not ir.empty:
        section.tables.append(status_table(ir, q, thr))
        section.notes.append(
            "Statuses are per engineer-month: an engineer whose status changed during the "
            "period counts once in each status held, so engineers add up to more than the "
            "total while engineer-months and incidents add up."
        )
    year = year_table(facts.now, facts.year_ago, q)
    if year is not None:
        section.tables.append(year)
    if effects:
        section.tables.append(effects_table(effects, thr))
        power = power_table(effects, thr)
        if power is not None:
            section.tables.append(power)
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
    section.lead = (
        lead
        + year_change(facts.now, facts.year_ago, q)
        + Markup(" ")
        + (
            Markup(" ").join(parts)
            if parts
            else "Effect estimates are not available (certification_effect is not in the published "
            "warehouse); the figures below are plain comparisons."
        )
    )
    return section, facts


def split_charts(section: Section, prefix: str) -> list[charts.Chart]:
    """Take the charts named `prefix...` out of a section, for the method appendix."""
    moved = [c for c in section.charts if c.name.startswith(prefix)]
    section.charts = [c for c in section.charts if c not in moved]
    return moved
