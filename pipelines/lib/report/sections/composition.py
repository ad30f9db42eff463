"""Team composition against the seed's small / medium / large templates: roles, level mix, and
the hiring and training needed to reach the template, costed at the seed's salary and training
figures. Only role and company totals are printed, never a person's figure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, coverage_hidden
from pipelines.lib.report.fmt import fig, month_label, nice, num, pct, sentence, signed, usd
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import (
    Section,
    Table,
    extremes,
    printed,
    table,
    team_bar_chart,
    team_tables,
    unavailable,
)
from pipelines.lib.report.suppression import mask_label, shown, suppression_mask

LEVELS = {
    1: "1 Foundation",
    2: "2 Operational",
    3: "3 Professional",
    4: "4 Expert",
    5: "5 Architect",
}


@dataclass(frozen=True)
class CostBasis:
    """Seed figures the plan is priced at: salary band per skill level (USD/yr, min and max)
    and the training cost of bringing one engineer to a required certification (USD)."""

    salary: Mapping[int, tuple[float, float]]
    training_per_engineer: float | None


@dataclass(frozen=True)
class RolePlan:
    role: str
    engineers: float
    template: float
    hires: float  # sum over teams of the engineers the template asks for beyond those present
    to_train: float  # engineers lacking a required certification
    hire_cost: float | None  # a year of salary at the middle of the template's level band
    train_cost: float | None


@dataclass
class CompositionFacts:
    headcount: float = 0.0
    template: float = 0.0
    in_band: float | None = None
    plans: list[RolePlan] = field(default_factory=list)

    @property
    def hires(self) -> float:
        return sum(p.hires for p in self.plans)

    @property
    def hire_cost(self) -> float | None:
        return _known_sum([p.hire_cost for p in self.plans if p.hires])

    @property
    def to_train(self) -> float:
        return sum(p.to_train for p in self.plans)

    @property
    def train_cost(self) -> float | None:
        return _known_sum([p.train_cost for p in self.plans if p.to_train])


def _known_sum(costs: list[float | None]) -> float | None:
    """A total only when every part is known: an unpriced part leaves the total unknown."""
    return None if any(c is None for c in costs) else sum(costs)  # type: ignore[arg-type]


def _salary(basis: CostBasis | None, lo: object, hi: object) -> float | None:
    if basis is None or lo != lo or hi != hi or lo is None:
        return None
    bands = [basis.salary.get(int(lv)) for lv in range(int(lo), int(hi) + 1)]  # type: ignore[call-overload]
    if not bands or any(b is None for b in bands):
        return None
    return sum((a + b) / 2 for a, b in bands) / len(bands)  # type: ignore[misc]


def role_plans(cur: pd.DataFrame, basis: CostBasis | None) -> list[RolePlan]:
    out = []
    for role, part in cur.groupby("role_family"):
        short = (part["template_headcount"] - part["headcount"]).clip(lower=0)
        hire_cost = 0.0
        for (_, r), n in zip(part.iterrows(), short, strict=True):
            if n:
                s = _salary(basis, r["level_min"], r["level_max"])
                hire_cost = None if s is None or hire_cost is None else hire_cost + n * s
        to_train = float((part["headcount"] - part["required_cert_compliant_headcount"]).sum())
        per = basis.training_per_engineer if basis else None
        out.append(
            RolePlan(
                str(role),
                float(part["headcount"].sum()),
                float(part["template_headcount"].sum()),
                float(short.sum()),
                to_train,
                hire_cost,
                None if per is None else to_train * per,
            )
        )
    return sorted(out, key=lambda p: p.role)


def _plan_table(f: CompositionFacts, thr: int, when: str, hidden: set) -> Table:
    mask = suppression_mask({p.role: p.engineers for p in f.plans}, thr, also_hidden=hidden)
    rows = [
        [
            nice(p.role),
            num(p.template),
            shown(p.engineers, mask[p.role], thr),
            num(p.hires),
            mask_label(thr) if mask[p.role] else num(p.to_train),
            usd(p.hire_cost) if p.hires else "–",
            mask_label(thr) if mask[p.role] else usd(p.train_cost),
        ]
        for p in f.plans
    ]
    return table(
        f"Roles against the template and what it takes to reach it, {when}",
        [
            "Role",
            "Template",
            "Engineers",
            "To hire (teams below template)",
            "To train (missing a required cert.)",
            "Hiring cost (salaries, a year)",
            "Training cost",
        ],
        rows,
        total=[
            "All roles",
            num(f.template),
            num(f.headcount),
            fig("hires-needed", num(f.hires)),
            fig("train-needed", num(f.to_train)),
            fig("hire-cost", usd(f.hire_cost)),
            fig("train-cost", usd(f.train_cost)),
        ],
        key="role-plan",
    )


def _teams(cur: pd.DataFrame, thr: int, when: str, hidden: set) -> tuple[str, list[Table]]:
    t = (
        cur.groupby("team")
        .agg(
            gpus=("gpu_count", "max"),
            size_class=("fleet_size_class", "first"),
            headcount=("headcount", "sum"),
            template=("template_headcount", "sum"),
        )
        .reset_index()
        .sort_values("team")
    )
    mask = suppression_mask(dict(zip(t["team"], t["headcount"], strict=True)), thr, hidden)
    rows, names, diff = [], [], {}
    for r in t.itertuples():
        name, h = str(r.team), mask[r.team]
        rows.append(
            [
                name,
                num(r.gpus),
                str(r.size_class),
                num(r.template),
                shown(r.headcount, h, thr),
                mask_label(thr) if h else signed(r.headcount - r.template),
            ]
        )
        names.append(name)
        diff[name] = None if h else float(r.headcount - r.template)
    far, near = extremes(names, lambda n: None if diff[n] is None else abs(diff[n]))
    picked = printed(names, far, near)
    chart = team_bar_chart(
        "composition-by-team",
        picked,
        diff,
        signed,
        thr,
        title="Engineers per team minus the template for its fleet size"
        + ("" if len(names) <= 10 else ": 5 furthest from and 5 closest to the template"),
        xlabel="engineers above (+) or below (−) the template",
    )
    total = [
        "All teams",
        num(t["gpus"].sum()),
        "",
        num(t["template"].sum()),
        num(t["headcount"].sum()),
        signed(t["headcount"].sum() - t["template"].sum()),
    ]
    tables = team_tables(
        f"Teams against the template, {when}",
        ["Team (cluster)", "GPUs", "Fleet size", "Template", "Engineers", "vs template"],
        rows,
        names,
        far,
        near,
        total=total,
        key="composition-teams",
        far_words="furthest from the template",
    )
    return chart, tables


def template_levels(cur: pd.DataFrame) -> dict[int, float]:
    """Share of the template's headcount at each level: each team's role seats spread evenly
    over the role's level band (a band 2-3 puts half a seat at 2 and half at 3)."""
    seats: dict[int, float] = {}
    for r in cur.itertuples():
        if r.level_min != r.level_min or r.level_max != r.level_max or not r.template_headcount:
            continue
        band = range(int(r.level_min), int(r.level_max) + 1)
        for lv in band:
            seats[lv] = seats.get(lv, 0.0) + float(r.template_headcount) / len(band)
    total = sum(seats.values())
    return {lv: n / total for lv, n in seats.items()} if total else {}


def _level_mix(
    lm: pd.DataFrame, cur_tc: pd.DataFrame, q: Quarter, thr: int, hidden: set
) -> str | None:
    """Level mix of all engineers against the template's; the labels carry count and share,
    so no table repeats the chart."""
    cur = lm[lm["month"] == q.last_month].groupby("skill_level")["headcount"].sum()
    if cur.empty:
        return None
    tpl = template_levels(cur_tc) if not cur_tc.empty else {}
    levels = sorted({int(v) for v in cur.index} | set(tpl))
    hidden_levels = {int(v) for v in hidden if str(v).isdigit()}
    mask = suppression_mask({lv: float(cur.get(lv, 0)) for lv in levels}, thr, hidden_levels)
    total = float(cur.sum())
    share = {lv: None if mask[lv] else float(cur.get(lv, 0)) / total for lv in levels}
    return charts.bar_chart(
        "level-mix",
        [LEVELS.get(lv, str(lv)) for lv in levels],
        [share[lv] for lv in levels],
        labels=[
            f"{mask_label(thr)} (hidden)"
            if mask[lv]
            else f"{num(cur.get(lv, 0))} ({pct(share[lv])}; template {pct(tpl.get(lv, 0))})"
            for lv in levels
        ],
        percent=True,
        title="Level mix of engineers against the template",
        xlabel="share of engineers",
        reference=[tpl.get(lv) for lv in levels] if tpl else None,
        reference_label="template",
    )


def composition_section(
    marts: Marts, q: Quarter, thr: int, basis: CostBasis | None = None
) -> tuple[Section, CompositionFacts | None]:
    sid, title = "composition", "Team composition against the template"
    tc, lm = marts.get("team_composition"), marts.get("level_mix")
    cur = tc[tc["month"] == q.last_month] if tc is not None else pd.DataFrame()
    section, facts = Section(sid, title), None
    when = month_label(q.last_month)
    if not cur.empty:
        facts = CompositionFacts(
            headcount=float(cur["headcount"].sum()),
            template=float(cur["template_headcount"].sum()),
            in_band=float(cur["headcount_in_level_band"].sum()) / float(cur["headcount"].sum())
            if float(cur["headcount"].sum())
            else None,
            plans=role_plans(cur, basis),
        )
        roles = coverage_hidden(marts, q.last_month, "role_family")
        section.tables.append(_plan_table(facts, thr, when, roles))
        chart, tables = _teams(cur, thr, when, coverage_hidden(marts, q.last_month, "team"))
        section.charts.append(chart)
        section.tables += tables
        section.lead = _lead(facts)
    levels = coverage_hidden(marts, q.last_month, "level")
    mix = _level_mix(lm, cur, q, thr, levels) if lm is not None else None
    if mix:
        section.charts.append(mix)
    if not section.tables and not section.charts:
        return unavailable(sid, title, f"Not available: no composition snapshot for {when}."), None
    return section, facts


def _lead(f: CompositionFacts):
    text = sentence(
        "The teams have {hc} engineers against a template of {tpl} for their current fleet "
        "sizes; {band} sit in the level band the template sets for their role. Reaching the "
        "template takes {hires} hires in the teams below it and training for {train} engineers "
        "missing a required certification",
        hc=num(f.headcount),
        tpl=num(f.template),
        band=pct(f.in_band),
        hires=fig("hires-needed", num(f.hires)),
        train=fig("train-needed", num(f.to_train)),
    )
    if f.hire_cost is not None and f.train_cost is not None:
        text += sentence(
            ": about {h} a year in salaries at the middle of the seed's level bands and {t} of "
            "training at the seed's course and exam fees",
            h=fig("hire-cost", usd(f.hire_cost)),
            t=fig("train-cost", usd(f.train_cost)),
        )
    return text + "."
