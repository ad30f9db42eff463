"""Page 1, the decision page: is training paying off, on what evidence, and what to do.

One sentence answers the question with the return of the last 12 months, its range and the
payback period; a chart splits the return by the strength of its evidence (only what is
measured here counts); a table says in plain words what the data show for each effect and
whether it is in the headline; six KPI tiles give the quarter against the one before and a year
before, each against a target only when someone owns one; the recommended actions carry their
costs and the return the evidence supports; external benchmarks stand beside the company's
figures, labelled as external. Every figure comes from a section's facts, tagged with the key
the section's tables use.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.benchmarks import Benchmark
from pipelines.lib.report.fmt import fig, money, num, pct, pts, roi_pct, sentence, signed, usd
from pipelines.lib.report.sections.effects import EFFECT_TEXT, Effect, effect_plain, effect_status
from pipelines.lib.report.sections.facts import Facts
from pipelines.lib.report.sections.roi import (
    ASSUMPTION_LABELS,
    VERDICT,
    VERDICT_SHORT,
    RoiFacts,
    effect_label,
    lower_first,
    payback_text,
    unit_value,
)
from pipelines.lib.roi.assumptions import Target, base_params
from pipelines.lib.roi.evidence import Component, line_prices
from pipelines.lib.roi.model import HOURS_PER_YEAR

# --- the verdict ------------------------------------------------------------------------------


def verdict(r: RoiFacts) -> Markup:
    """The one sentence that answers "is it paying off"."""
    h = r.year
    if h is None:
        return sentence(
            "Is training paying off? The return cannot be priced: {why}.",
            why=r.why_not or "the ROI tables are missing",
        )
    rng = (
        sentence(
            " ({lo} to {hi} over the 95 % intervals of the measured effects)",
            lo=roi_pct(h.net_roi_low),
            hi=roi_pct(h.net_roi_high),
        )
        if h.of("measured")
        else ""
    )
    if r.verdict == "nothing":
        return sentence(
            "Is training paying off? {verdict}. Last 12 months ({w}): {inv} invested, and no "
            "return rests on an effect measured here, so none is counted{rest}.",
            verdict=VERDICT[r.verdict],
            w=r.year_label,
            inv=fig("roi-investment", usd(h.investment)),
            rest=sentence(
                "; {v} rests on effects not distinguishable from none or on assumptions",
                v=usd(h.total("not_shown") + h.total("assumed")),
            )
            if h.total("not_shown") + h.total("assumed")
            else "",
        )
    text = sentence(
        "Is training paying off? {verdict}. Last 12 months ({w}): {ret} returned on {inv} "
        "invested, a net return of {roi}{rng}; it {payback}. Counted: {made}.",
        verdict=VERDICT[r.verdict],
        w=r.year_label,
        ret=fig("roi-counted", usd(h.counted)),
        inv=fig("roi-investment", usd(h.investment)),
        roi=fig("roi-net", roi_pct(h.net_roi)),
        rng=rng,
        payback=payback_text(h),
        made=Markup("; ").join(multiplied(c, r) for c in h.of("measured")),
    )
    text += flips(r)
    left_out = [sentence("{v} on effects not distinguishable from none", v=usd(v))
                for v in [h.total("not_shown")] if v]  # fmt: skip
    if (assumed := assumed_lines(r)) != "":
        left_out.append(assumed)
    if left_out:
        text += sentence(" Not counted: {rest}.", rest=Markup("; ").join(left_out))
    return text


# what each price is per, as page 1 names it
PRICE_UNITS = {
    "replacement_cost_usd_per_exit": "per voluntary exit",
    "downtime_cost_usd_per_gpu_hour": "per GPU-hour of downtime",
    "contractor_rate_usd_per_hour": "per contractor hour",
    "employee_rate_usd_per_hour": "per employee hour",
    "faster_deployment_usd_per_gpu": "per GPU deployed",
}


# what a price measured from this company's data leaves out, said wherever page 1 names it
MEASURED_LEAVES_OUT = {
    "replacement_cost_usd_per_exit": (
        "hiring and vacancy; the new hire's ramp-up is not measured and not included, "
        "so it is a lower bound"
    ),
}


def price_text(name: str, r: RoiFacts) -> str:
    """`$150,000 per voluntary exit`; the fleet's cost per GPU-year prices GPU-hours; a measured
    price says what it leaves out."""
    a = r.assumptions.get(name)
    if a is None:
        return name
    if name == "fleet_cost_usd_per_gpu_year":
        return f"${a.base / HOURS_PER_YEAR:,.2f} per GPU-hour of capacity{stated_by(a)}"
    text = f"{usd(a.base)} {PRICE_UNITS.get(name, 'per unit')}"
    if a.source_type == "measured" and name in MEASURED_LEAVES_OUT:
        text += f" ({MEASURED_LEAVES_OUT[name]})"
    return text + stated_by(a)


def stated_by(a) -> str:
    """` (stated by Finance, 2026-01-15)` for the company's own figure, else nothing."""
    if a.source_type != "company":
        return ""
    return f" (stated by {a.owner}{', ' + a.set_on if a.set_on else ''})"


def multiplied(c: Component, r: RoiFacts) -> Markup:
    """`attrition cost avoided, $2,230,327 (measured effect × assumed price of $150,000 per
    voluntary exit)`."""
    names = line_prices(c.item, base_params(r.assumptions))
    # a price of the company's own (stated by its owner) is named so, not "measured"
    own = bool(names) and all(
        getattr(r.assumptions.get(n), "source_type", "") == "company" for n in names
    )
    return sentence(
        "{label}, {v} (measured effect × {ev} price of {p})",
        v=usd(c.amount or 0.0),
        label=lower_first(c.label),
        ev="the company's own" if own else c.price_evidence,
        p=" and ".join(price_text(n, r) for n in names),
    )


def flips(r: RoiFacts) -> Markup:
    """The verdict at both ends of every assumed value whose range changes it, in one sentence."""
    h = r.year
    assert h is not None
    # a flip is from paying off to not (or back), as the verdicts at the ends are worded
    base = VERDICT_SHORT[h.verdict]
    turn = [
        s
        for s in r.swings
        if s.kind == "assumption"
        and {VERDICT_SHORT[s.verdict_at_low], VERDICT_SHORT[s.verdict_at_high]} != {base}
    ]
    if not turn:
        return sentence(" No assumed value changes the verdict across its range.")
    return sentence(
        " The verdict changes within the range of {n}: {ends}.",
        n="an assumed value" if len(turn) == 1 else f"{len(turn)} assumed values",
        ends=Markup("; ").join(
            sentence(
                "{name} at {lo} {rlo} ({vlo}), at {hi} {rhi} ({vhi})",
                name=lower_first(ASSUMPTION_LABELS.get(s.name, s.name)),
                lo=unit_value(r.assumptions[s.name], s.low_value),
                rlo=roi_pct(s.roi_at_low),
                vlo=VERDICT_SHORT[s.verdict_at_low],
                hi=unit_value(r.assumptions[s.name], s.high_value),
                rhi=roi_pct(s.roi_at_high),
                vhi=VERDICT_SHORT[s.verdict_at_high],
            )
            for s in turn
        ),
    )


# the export that would measure a return resting on assumptions (sources/README.md)
MEASURE_WITH = {
    "efficiency": "the gpu_usage export would measure it",
    "faster_deployment": "the capacity_changes export would measure it",
    "contractor_cost_avoided": "no export here shows that training replaced the hours",
}
# the same, when the export was delivered but holds too little to estimate the effect
MEASURE_MORE = {
    "efficiency": "the gpu_usage export holds too few clusters and months to measure it",
    "faster_deployment": "the capacity_changes export holds too few expansions to measure it",
}


def how_to_measure(c) -> str:
    """What would measure a return resting on assumptions: the export, or more of it when the
    export is there and its effect is not estimable (`Component.missing`)."""
    if c.item in MEASURE_MORE and c.missing:
        return MEASURE_MORE[c.item]
    return MEASURE_WITH.get(c.item, c.why)


def assumed_lines(r: RoiFacts) -> Markup:
    """Money resting on assumptions, as text (never a bar): how much, and how to measure it.
    The reasons in full are in the ROI section's table."""
    h = r.year
    if h is None or not [c for c in h.of("assumed") if c.amount]:
        return Markup("")
    return sentence(
        "resting on assumptions, never drawn, {lines}",
        lines=Markup(", ").join(
            sentence(
                "{label} {v} ({how})",
                label=lower_first(c.label),
                v=money(c.amount or 0.0),
                how=how_to_measure(c),
            )
            for c in h.of("assumed")
            if c.amount
        ),
    )


def return_chart(r: RoiFacts) -> charts.Chart | None:
    """The last 12 months' return by component, one row per strength of evidence."""
    h = r.year
    if h is None:
        return None
    # money resting on assumptions is never a bar: it is the caption's text
    rows = {
        "invested": "Invested",
        "measured": "Measured here: counted",
        "not_shown": "Not distinguishable from none",
    }
    segments = [charts.Segment(rows["invested"], "_investment", h.investment, "invested")]
    totals = {"invested": h.investment}
    for c in h.parts:
        if c.evidence not in rows or not c.amount or c.amount <= 0:
            continue
        segments.append(charts.Segment(rows[c.evidence], c.label, c.amount, c.evidence))
        totals[c.evidence] = totals.get(c.evidence, 0.0) + c.amount
    used = [k for k in rows if k in totals]
    decide = max([totals.get(k, 0.0) for k in ("invested", "measured", "not_shown")] + [1.0])
    cap = decide * 1.6
    labels = [money(totals[k]) + (" (off the scale)" if totals[k] > cap else "") for k in used]
    svg = charts.stacked_bars(
        "roi-components",
        [rows[k] for k in used],
        segments,
        title=f"Return of the last 12 months by strength of evidence ({r.year_label})",
        alt=f"Stacked bar chart: investment of the last 12 months, {money(h.investment)}, "
        f"against the return measured here, {money(h.counted)}, and the return not counted "
        f"that rests on effects not distinguishable from none, "
        f"{money(h.total('not_shown'))}; each split by component. Returns resting on "
        "assumptions are named in the sentence above, not drawn.",
        row_totals=labels,
        cap=cap,
    )
    return charts.Chart("roi-components", svg)


# --- effects in words -------------------------------------------------------------------------


def _in_headline(e: Effect, r: RoiFacts) -> Markup | str:
    h = r.year
    if h is None:
        return "–"
    parts = [c for c in h.parts if e.metric in c.rests_on]
    counted = [c for c in parts if c.evidence == "measured"]
    if e.status != "shown" or not counted:
        return "not counted"
    # a line resting on several effects (less downtime: fewer incidents and faster restore) is
    # one amount: printed on the row of its first effect, named on the others
    first = [c for c in counted if c.rests_on[0] == e.metric]
    if not first:
        return sentence(
            "counted once, with {other}: {what}",
            other=lower_first(effect_label(counted[0].rests_on[0])),
            what=", ".join(c.label.lower() for c in counted),
        )
    counted = first
    text = sentence(
        "counted: {v} ({what})",
        v=usd(sum(c.amount or 0.0 for c in counted)),
        what=", ".join(c.label.lower() for c in counted),
    )
    if e.metric == "attrition_hazard_ratio" and "replacement_cost_usd_per_exit" in r.assumptions:
        a = r.assumptions["replacement_cost_usd_per_exit"]
        text += sentence(
            " at {kind} {v} per exit (range {lo}–{hi})",
            kind="a measured" if a.source_type == "measured" else "an assumed",
            v=usd(a.base),
            lo=money(a.low),
            hi=money(a.high),
        )
    return text


def effect_rows(effects: Mapping[str, Effect], r: RoiFacts) -> list[list]:
    return [
        [EFFECT_TEXT.get(m, (e.label,))[0], effect_plain(e), effect_status(e), _in_headline(e, r)]
        for m, e in effects.items()
    ]


# --- KPI tiles --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Tile:
    label: str
    value: Markup
    vs_prev: str
    vs_year: str
    status: str
    state: str  # ok | warn | none (CSS class)


def _status(now, target: Target | None, year_ago, higher: bool, show: Callable) -> tuple[str, str]:
    if now is None:
        return "no data", "none"
    better = (lambda a, b: a >= b) if higher else (lambda a, b: a <= b)
    if target is not None:
        word = "at least" if target.higher_is_better else "at most"
        ok = better(now, target.value)
        return (
            f"{'on' if ok else 'off'} target ({word} {show(target.value)}, {target.owner})",
            "ok" if ok else "warn",
        )
    if year_ago is None:
        return "no target set", "none"
    ok = better(now, year_ago)
    return f"no target set · {'better' if ok else 'worse'} than a year ago", "ok" if ok else "warn"


@dataclass(frozen=True)
class Kpi:
    """One tile's figures: now, a quarter ago, a year ago (None when not available)."""

    label: str
    key: str
    now: float | None
    prev: float | None
    year: float | None
    show: Callable[[float], str]
    delta: Callable[[float], str]
    target: Target | None
    higher_is_better: bool


def _share(v: float) -> str:
    return pct(v, 1)


def _money_delta(d: float) -> str:
    return ("+" if d >= 0 else "") + usd(d)


def kpis(f: Facts, targets: Mapping[str, Target]) -> list[Kpi]:
    out: list[Kpi] = []
    t = targets.get
    if (c := f.coverage) is not None:
        p, y = c.prev, c.year_ago
        out += [
            Kpi("Meet required certifications", "compliance", c.now.compliance,
                p and p.compliance, y and y.compliance, _share, pts,
                t("required_cert_compliance"), True),
            Kpi("Hold ≥1 active certification", "coverage", c.now.coverage,
                p and p.coverage, y and y.coverage, _share, pts, t("certified_share"), True),
        ]  # fmt: skip
    if (a := f.attrition) is not None:
        prev, year = a.t12m_prev, a.t12m_year_ago
        out.append(Kpi("Turnover, 12 months", "attrition-12m", a.t12m[0], prev and prev[0],
                       year and year[0], _share, pts, t("attrition_12m"), False))  # fmt: skip
    if (i := f.incidents) is not None and i.now is not None:
        p, y = i.prev, i.year_ago
        out += [
            Kpi("Incidents per 100 engineer-months", "incident-rate", i.now.rate, p and p.rate,
                y and y.rate, lambda v: f"{v:.1f}", lambda d: signed(d, 1),
                t("incident_rate"), False),
            Kpi("Median time to restore (min)", "mttr-median", i.now.mttr_median,
                p and p.mttr_median, y and y.mttr_median, num, signed,
                t("median_time_to_restore_minutes"), False),
        ]  # fmt: skip
    if (r := f.roi) is not None and r.spend is not None:
        out.append(Kpi("Training spend, quarter", "spend", r.spend, r.spend_prev,
                       r.spend_year_ago, usd, _money_delta, None, True))  # fmt: skip
    return out


def tiles(f: Facts, targets: Mapping[str, Target]) -> list[Tile]:
    out = []
    for k in kpis(f, targets):

        def change(other, k=k):
            return "–" if k.now is None or other is None else k.delta(k.now - other)

        status, state = _status(k.now, k.target, k.year, k.higher_is_better, k.show)
        value = fig(k.key, k.show(k.now)) if k.now is not None else Markup("–")
        if k.key == "spend" and f.roi is not None:  # spend has no target: show the year
            status = sentence("{v} over 12 months", v=fig("spend-12m", usd(f.roi.spend_12m)))
            state = "none"
        out.append(Tile(k.label, value, change(k.prev), change(k.year), status, state))
    return out


# --- external benchmarks ----------------------------------------------------------------------


def benchmark_rows(f: Facts, benchmarks: Mapping[str, Benchmark]) -> list[list]:
    """Measure | this company | external figure | source and year; only benchmarks that exist."""
    rows = []
    tech = benchmarks.get("technology_turnover")
    if tech is not None and tech.value is not None and f.attrition is not None:
        a = f.attrition
        rows.append(
            [
                "Turnover over 12 months",
                sentence(
                    "{t} (voluntary {v})",
                    t=fig("attrition-12m", pct(a.t12m[0], 1)),
                    v=fig("attrition-12m-voluntary", pct(a.voluntary_12m[0], 1)),
                ),
                f"{pct(tech.value, 1)}: {tech.scope}, voluntary and involuntary",
                tech.cited,
            ]
        )
    dora = benchmarks.get("time_to_restore")
    if dora is not None and dora.bands and f.incidents is not None and f.incidents.now:
        med = f.incidents.now.mttr_median
        band = dora.band_of(med) if med is not None else None
        rows.append(
            [
                "Median time to restore",
                sentence("{m} minutes", m=fig("mttr-median", num(med))),
                "; ".join(f"{b.label}: {b.text}" for b in dora.bands)
                + (f" (this company: {band.label} band)" if band else ""),
                dora.cited,
            ]
        )
    cov = benchmarks.get("certification_coverage")
    if cov is not None and f.coverage is not None and f.coverage.now.compliance is not None:
        rows.append(
            [
                "Meet required certifications",
                fig("compliance", pct(f.coverage.now.compliance, 1)),
                pct(cov.value, 1) if cov.value is not None else "no published figure found",
                cov.cited or "–",
            ]
        )
    return rows
