"""Page 1: where the team stands. Six KPI tiles with the change against last quarter and the same
quarter last year and a status against target; three findings; three recommended actions, each
with the figure behind it. Every figure comes from a section's facts, tagged with the same key
the section's table uses."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import timedelta

from markupsafe import Markup

from pipelines.lib.report.fmt import fig, nice, num, pct, pts, roi_pct, signed, usd
from pipelines.lib.report.fmt import sentence as S
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.effects import effect_sentence
from pipelines.lib.report.sections.facts import Facts
from pipelines.lib.report.sections.roi import RoiFacts


@dataclass(frozen=True)
class Targets:
    """What leadership aims for. A KPI without a target is judged against a year ago."""

    compliance: float = 0.80  # share meeting every required certification
    certified: float | None = None  # share holding >= 1 active certification
    attrition_12m: float | None = None  # at most
    incident_rate: float | None = None  # per 100 engineer-months, at most
    mttr_median: float | None = None  # minutes, at most


@dataclass(frozen=True)
class Tile:
    label: str
    value: Markup
    vs_prev: str
    vs_year: str
    status: str
    state: str  # ok | warn | none (CSS class)


def _status(now, target, year_ago, higher_is_better: bool, show: Callable) -> tuple[str, str]:
    if now is None:
        return "no data", "none"
    better = (lambda a, b: a >= b) if higher_is_better else (lambda a, b: a <= b)
    if target is not None:
        word = "at least" if higher_is_better else "at most"
        ok = better(now, target)
        return (f"{'on' if ok else 'off'} target ({word} {show(target)})", "ok" if ok else "warn")
    if year_ago is None:
        return "no target set", "none"
    ok = better(now, year_ago)
    return ("better than a year ago" if ok else "worse than a year ago", "ok" if ok else "warn")


def _tile(label, key, now, prev, year, show, delta, target, higher_is_better) -> Tile:
    def change(other):
        return "–" if now is None or other is None else delta(now - other)

    status, state = _status(now, target, year, higher_is_better, show)
    value = fig(key, show(now)) if now is not None else Markup("–")
    return Tile(label, value, change(prev), change(year), status, state)


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
    target: float | None
    higher_is_better: bool


def _share(v: float) -> str:
    return pct(v, 1)


def _money_delta(d: float) -> str:
    return ("+" if d >= 0 else "") + usd(d)


def kpis(f: Facts, t: Targets) -> list[Kpi]:
    out: list[Kpi] = []
    if (c := f.coverage) is not None:
        p, y = c.prev, c.year_ago
        out += [
            Kpi("Meet required certifications", "compliance", c.now.compliance,
                p and p.compliance, y and y.compliance, _share, pts, c.target, True),
            Kpi("Hold ≥1 active certification", "coverage", c.now.coverage,
                p and p.coverage, y and y.coverage, _share, pts, t.certified, True),
        ]  # fmt: skip
    if (a := f.attrition) is not None:
        prev, year = a.t12m_prev, a.t12m_year_ago
        out.append(Kpi("Attrition, 12 months", "attrition-12m", a.t12m[0], prev and prev[0],
                       year and year[0], _share, pts, t.attrition_12m, False))  # fmt: skip
    if (i := f.incidents) is not None and i.now is not None:
        p, y = i.prev, i.year_ago
        out += [
            Kpi("Incidents per 100 engineer-months", "incident-rate", i.now.rate, p and p.rate,
                y and y.rate, lambda v: f"{v:.1f}", lambda d: signed(d, 1), t.incident_rate,
                False),
            Kpi("Median time to restore (min)", "mttr-median", i.now.mttr_median,
                p and p.mttr_median, y and y.mttr_median, num, signed, t.mttr_median, False),
        ]  # fmt: skip
    if (r := f.roi) is not None and r.spend is not None:
        out.append(Kpi("Training spend, quarter", "spend", r.spend, r.spend_prev,
                       r.spend_year_ago, usd, _money_delta, None, True))  # fmt: skip
    return out


def tiles(f: Facts, t: Targets) -> list[Tile]:
    out = []
    for k in kpis(f, t):
        tile = _tile(k.label, k.key, k.now, k.prev, k.year, k.show, k.delta, k.target,
                     k.higher_is_better)  # fmt: skip
        if k.key == "spend" and f.roi is not None:  # spend has no target: show the year
            tile = Tile(tile.label, tile.value, tile.vs_prev, tile.vs_year,
                        f"{usd(f.roi.spend_12m)} over 12 months", "none")  # fmt: skip
        out.append(tile)
    return out


def findings(f: Facts, q: Quarter) -> list[Markup]:
    out: list[Markup] = []
    c = f.coverage
    if c is not None and c.now.compliance is not None:
        short = c.target - c.now.compliance
        out.append(
            S(
                "{comp} of engineers hold every certification their role requires, {gap} the "
                "{target} target{was}.",
                comp=fig("compliance", pct(c.now.compliance, 1)),
                gap=f"{short * 100:.1f} points below" if short > 0 else "at or above",
                target=pct(c.target),
                was=f" ({pct(c.prev.compliance, 1)} a quarter ago)" if c.prev else "",
            )
        )
    effects = f.incidents.effects if f.incidents else {}
    pick = next((e for e in effects.values() if e.finding), next(iter(effects.values()), None))
    if pick is not None:
        out.append(effect_sentence(pick))
    if f.roi is not None and f.roi.investment:
        out.append(_roi_finding(f.roi))
    return out[:3]


def _roi_finding(r: RoiFacts) -> Markup:
    text = S(
        "Training returned {m} in measured savings on {inv} invested ({roi} net) over {w}.",
        m=fig("roi-measured", usd(r.measured)),
        inv=fig("roi-investment", usd(r.investment)),
        roi=fig("roi-net-measured", roi_pct(r.net_ratio)),
        w=r.window or "the data window",
    )
    weak = [i for i in r.of("measured") if i.reason]
    if weak:
        text += S(
            " Of this, {amount} ({labels}) rests on effects the data do not show.",
            amount=usd(sum(i.amount for i in weak)),
            labels=" and ".join(i.label.lower() for i in weak),
        )
    if r.of("stated"):
        text += S(
            " The larger returns the seed's example counts ({labels}) rest on assumptions, not "
            "on this data.",
            labels=" and ".join(i.label.lower() for i in r.of("stated")),
        )
    return text


def actions(f: Facts, q: Quarter) -> list[Markup]:
    out: list[Markup] = []
    g = f.gaps
    if g is not None and g.largest:
        out.append(
            S(
                "Close the certification gaps in {roles} first: {n} engineers there lack a "
                "certification their role requires ({total} in all).",
                roles=", ".join(
                    f"{nice(x.role)} ({num(x.missing)} of {num(x.headcount)}; {x.codes})"
                    for x in g.largest
                ),
                n=num(sum(x.missing for x in g.largest)),
                total=fig("gap-people", num(g.gap_people)),
            )
        )
    e = f.expiring
    if e is not None and e.expiring:
        per = f.roi.exam_spend_per_attempt if f.roi else None
        out.append(
            S(
                "Budget {n} certification renewals due by {date}{cost}.",
                n=fig("expiring", num(e.expiring)),
                date=f"{q.end + timedelta(days=90):%d %b %Y}",
                cost=f": about {usd(e.expiring * per)} at this year's exam spend of {usd(per)} per "
                "attempt"
                if per
                else "",
            )
        )
    cp = f.composition
    if cp is not None and cp.hires:
        out.append(
            S(
                "Hire {h} engineers into the teams below their template{cost}, or move engineers "
                "from teams above it.",
                h=fig("hires-needed", num(cp.hires)),
                cost=S(" (about {c} a year in salaries)", c=fig("hire-cost", usd(cp.hire_cost)))
                if cp.hire_cost is not None
                else "",
            )
        )
    return out[:3]
