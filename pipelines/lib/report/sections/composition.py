"""Team composition against the seed's small / medium / large templates: roles, level mix, and
what it takes to reach the template. Seats empty in teams below their template are first filled
by moving engineers of the same role from teams above theirs; only what a role lacks overall is
a hire, priced at the middle of the seed's salary bands. Certifying the engineers who miss a
required certification is priced at this company's own ROI investment per certification earned
(the same figure the recommended actions use). Only role and company totals are printed, never a
person's figure."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, coverage_hidden
from pipelines.lib.report.fmt import fig, month_label, nice, num, pct, sentence, signed, usd
from pipelines.lib.report.labels import count
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import (
    Data,
    Section,
    Table,
    extremes,
    printed,
    table,
    team_bar_chart,
    team_tables,
    unavailable,
)
from pipelines.lib.report.suppression import hidden_label, shown, suppression_mask

LEVELS = {
    1: "1 Foundation",
    2: "2 Operational",
    3: "3 Professional",
    4: "4 Expert",
    5: "5 Architect",
}


@dataclass(frozen=True)
class CostBasis:
    """What the plan is priced at: salary band per skill level (USD/yr, min and max, from the
    seed) and the cost of one certification (USD) with where that figure comes from."""

    salary: Mapping[int, tuple[float, float]]
    training_per_engineer: float | None
    training_source: str = "the seed's course and exam fees"


@dataclass(frozen=True)
class RolePlan:
    role: str
    engineers: float
    template: float
    short: float  # seats empty in the teams below their template, summed over those teams
    to_train: float  # engineers lacking a required certification
    short_cost: float | None  # a year of salary for the empty seats, middle of each seat's band
    train_cost: float | None
    surplus: float = 0.0  # engineers above the template in the other teams

    @property
    def hires(self) -> float:
        """What the role lacks overall once engineers above template in one team fill the
        empty seats of another."""
        return max(0.0, self.short - self.surplus)

    @property
    def hire_cost(self) -> float | None:
        if not self.hires:
            return 0.0
        if self.short_cost is None or not self.short:
            return None
        return self.hires * self.short_cost / self.short


@dataclass
class CompositionFacts:
    headcount: float = 0.0
    template: float = 0.0
    in_band: float | None = None
    plans: list[RolePlan] = field(default_factory=list)
    training_source: str = ""

    @property
    def short(self) -> float:
        return sum(p.short for p in self.plans)

    @property
    def movable(self) -> float:
        return sum(min(p.short, p.surplus) for p in self.plans)

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
        surplus = (part["headcount"] - part["template_headcount"]).clip(lower=0)
        short_cost: float | None = 0.0
        for (_, r), n in zip(part.iterrows(), short, strict=True):
            if n:
                s = _salary(basis, r["level_min"], r["level_max"])
                short_cost = None if s is None or short_cost is None else short_cost + n * s
        to_train = float((part["headcount"] - part["required_cert_compliant_headcount"]).sum())
        per = basis.training_per_engineer if basis else None
        out.append(
            RolePlan(
                str(role),
                float(part["headcount"].sum()),
                float(part["template_headcount"].sum()),
                float(short.sum()),
                to_train,
                short_cost,
                None if per is None else to_train * per,
                surplus=float(surplus.sum()),
            )
        )
    return sorted(out, key=lambda p: p.role)


def _plan_table(f: CompositionFacts, thr: int, when: str, hidden: set) -> Table:
    mask = suppression_mask({p.role: p.engineers for p in f.plans}, thr, also_hidden=hidden)
    rows = [
        [
            nice(p.role),
            num(p.template),
            shown(p.engineers, mask[p.role], thr, size=p.engineers),
            num(p.short),
            num(p.hires),
            usd(p.hire_cost) if p.hires else "–",
            hidden_label(p.engineers, thr) if mask[p.role] else num(p.to_train),
            hidden_label(p.engineers, thr) if mask[p.role] else usd(p.train_cost),
        ]
        for p in f.plans
    ]
    return table(
        f"Roles against the template and what it takes to reach it, {when}",
        [
            "Role",
            "Template seats",
            "Engineers at quarter end",
            "Empty seats",
            "Hires after moves",
            "Their salaries a year",
            "Missing a required certification",
            "Certifying them, one-off",
        ],
        rows,
        total=[
            "All roles",
            fig("template-seats", num(f.template)),
            fig("headcount", num(f.headcount)),
            fig("seats-short", num(f.short)),
            fig("hires-needed", num(f.hires)),
            fig("hire-cost", usd(f.hire_cost)),
            fig("gap-people", num(f.to_train)),
            fig("train-cost", usd(f.train_cost)),
        ],
        key="role-plan",
        note=f"Empty seats: in teams below their template. Hires after moves: what the role "
        f"lacks once engineers above template in other teams move. A certification is priced "
        f"at {f.training_source}.",
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
    rows, names, diff, seats, data = [], [], {}, {}, []
    for r in t.itertuples():
        name, h = str(r.team), mask[r.team]
        rows.append(
            [
                name,
                num(r.gpus),
                str(r.size_class),
                num(r.template),
                shown(r.headcount, h, thr, size=r.headcount),
                hidden_label(r.headcount, thr) if h else signed(r.headcount - r.template),
            ]
        )
        data.append(
            [name, None if r.gpus != r.gpus else int(r.gpus), str(r.size_class), int(r.template)]
            + ([None, None] if h else [int(r.headcount), int(r.headcount - r.template)])
            + [bool(h)]
        )
        names.append(name)
        diff[name] = None if h else float(r.headcount - r.template)
        seats[name] = (float(r.headcount), float(r.template))
    far, near = extremes(names, lambda n: None if diff[n] is None else abs(diff[n]))
    picked = printed(names, far, near)
    chart = team_bar_chart(
        "composition-by-team",
        picked,
        diff,
        lambda n, v: f"{signed(v)} ({num(seats[n][0])} in {num(seats[n][1])} seats)",
        thr,
        title="Engineers minus template seats, by team"
        + ("" if len(names) <= 10 else ": the 5 furthest and 5 closest"),
        alt=f"Bar chart: engineers above or below the template in {len(picked)} of "
        f"{len(names)} teams, {when}, each with its engineers and template seats.",
        xlabel="engineers above (+) or below (−) the template",
    )
    total = [
        "All teams",
        num(t["gpus"].sum()),
        "",
        fig("template-seats", num(t["template"].sum())),
        fig("headcount", num(t["headcount"].sum())),
        signed(t["headcount"].sum() - t["template"].sum()),
    ]
    tables = team_tables(
        f"Teams against the template, {when}",
        ["Team (cluster)", "GPUs", "Fleet size", "Template seats", "Engineers at quarter end",
         "vs template"],
        rows,
        names,
        far,
        near,
        total=total,
        key="composition-teams",
        far_words="furthest from the template",
        printed_table=False,
        data=Data(
            ["Team (cluster)", "GPUs (count)", "Fleet size class", "Template seats (count)",
             "Engineers at quarter end (count)", "Engineers minus template seats (count)",
             "Hidden: fewer than the minimum group size (true/false)"],
            data,
        ),
    )  # fmt: skip
    return charts.Chart("composition-by-team", chart), tables


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
) -> Table | None:
    """Level mix of all engineers against the template's, one column per level: the count, the
    share and the template's share (a small level is hidden with its complement)."""
    cur = lm[lm["month"] == q.last_month].groupby("skill_level")["headcount"].sum()
    if cur.empty:
        return None
    tpl = template_levels(cur_tc) if not cur_tc.empty else {}
    levels = sorted({int(v) for v in cur.index} | set(tpl))
    hidden_levels = {int(v) for v in hidden if str(v).isdigit()}
    mask = suppression_mask({lv: float(cur.get(lv, 0)) for lv in levels}, thr, hidden_levels)
    total = float(cur.sum())

    def cell(lv: int, text: str) -> str:
        return hidden_label(float(cur.get(lv, 0)), thr) if mask[lv] else text

    return table(
        f"Level mix of engineers against the template, {month_label(q.last_month)}",
        ["Skill level", *[LEVELS.get(lv, str(lv)) for lv in levels]],
        [
            ["Engineers at quarter end", *[cell(lv, num(cur.get(lv, 0))) for lv in levels]],
            [
                "Share of engineers",
                *[cell(lv, pct(float(cur.get(lv, 0)) / total)) for lv in levels],
            ],
            ["Share of template seats", *[pct(tpl.get(lv, 0)) for lv in levels]],
        ],
        key="level-mix",
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
            training_source=basis.training_source if basis else "",
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
        section.tables.append(mix)
    if not section.tables and not section.charts:
        return unavailable(sid, title, f"Not available: no composition snapshot for {when}."), None
    return section, facts


def _lead(f: CompositionFacts):
    text = sentence(
        "The teams have {hc} against {tpl} for their current fleet sizes; {band} sit in the "
        "level band the template sets for their role. There are {short}, while other teams hold "
        "engineers of the same roles above theirs: moving {moves} of them leaves {hires}",
        hc=count("headcount", f.headcount),
        tpl=count("template-seats", f.template),
        band=pct(f.in_band),
        short=count("seats-short", f.short),
        moves=num(f.movable),
        hires=count("hires-needed", f.hires),
    )
    if f.hires and f.hire_cost is not None:
        text += sentence(
            " (about {h} a year in salaries at the middle of the seed's level bands)",
            h=fig("hire-cost", usd(f.hire_cost)),
        )
    return text + "."
