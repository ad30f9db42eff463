"""The domain's three worked cases (seed-facts.md "Worked cases") through the same planner.

Each case is a starting team and a fleet over the case's quarters; the planner staffs the team
templates of that fleet with the company's measured rates where a warehouse exists (the
domain's figures where it does not), and the case's own outcome is printed beside the plan.
The domain does not say everything a plan needs; what a case assumes is in its `assumed`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np

from pipelines.lib.plan import warehouse as wh
from pipelines.lib.plan.build import PlanRun
from pipelines.lib.plan.fleet import FleetRow
from pipelines.lib.plan.model import Layout
from pipelines.lib.plan.optimise import Problem, solve
from pipelines.lib.plan.rates import domain_rates

SOURCE = 'seed-facts.md "Worked cases"'


@dataclass(frozen=True)
class Case:
    title: str
    quarters: int
    team: dict[tuple[str, int], int]  # (role family, level) -> uncertified people at the start
    gpus: tuple[int, ...]  # the fleet in each quarter (one cluster)
    domain: str  # what the domain reports
    assumed: str  # what the case assumes that the domain does not say


CASES = {
    "rapid-scale-up": Case(
        "Financial services, rapid scale-up (6 months to 500 GPUs)",
        4,
        {("operations_engineer", 2): 5},
        (0, 500, 500, 500),
        "5 traditional IT engineers: 4 of 5 associate-certified, 2 professional within the "
        "first year; 180,000 USD training + 300,000 USD contractor support.",
        "the 5 IT engineers are uncertified level-2 operations engineers; the 500 GPUs must "
        "be staffed from the second quarter (month 6).",
    ),
    "organic-growth": Case(
        "Health system, organic growth over 2 years (50 then 200 GPUs)",
        8,
        {("operations_engineer", 2): 2},
        (50, 50, 50, 50, 200, 200, 200, 200),
        "Year 1: 1 level-3 hire, 2 IT staff to NVIDIA training; year 2: the hire promoted to "
        "level 4, 2 level-2 operations engineers added, whole team associate-certified; a "
        "5-person team runs 400 GPUs.",
        "the 2 IT staff are uncertified level-2 operations engineers (the 2 AI researchers "
        "do not run the cluster); 50 GPUs in year 1, 200 in year 2.",
    ),
    "insourcing": Case(
        "Technology start-up, outsourced to in-house over 18 months",
        6,
        {},
        (0, 0, 0, 0, 200, 200),
        "1 level-4 architect and 2 level-2 engineers hired in months 1-6, 2 more level-2 in "
        "months 13-18; all associate-certified, the architect professional; 60 % cost "
        "reduction at twice the deployment speed.",
        "the team starts empty; the fleet (200 GPUs, the domain gives no size) is run "
        "in-house from month 13 (full control); before that the outsourced operation runs it.",
    ),
}


def plan_case(case: Case, con=None, assumptions: dict | None = None, **problem_kw):
    """(PlanRun, Case): the case's closest plan with the company's rates (con) or the domain's."""
    as_of = wh.month_end(wh.last_month(con)) if con is not None else date.today()
    labels = wh.next_quarters(wh.quarter_of(as_of), case.quarters)
    fleet = [
        FleetRow("case", q, g, i + 2)
        for i, (q, g) in enumerate(zip(labels, case.gpus, strict=True))
    ]
    demand = wh.demand_from_fleet(fleet, labels)
    codes = sorted({c for r in demand.roles for c in r.track})
    if con is not None:
        rates = wh.read_rates(con, codes, as_of, assumptions)
    else:
        rates = domain_rates(codes, assumptions)
    layout = Layout(demand.roles, len(labels))
    idle0 = np.zeros((len(layout.roles), 5, layout.stages + 1))
    names = [r.name for r in layout.roles]
    for (role, level), n in case.team.items():
        if role in names:
            idle0[names.index(role), level - 1, 0] = n
    problem = Problem(layout, rates, idle0, demand.headcount, labels, **problem_kw)
    plan = solve(problem, closest=True)
    return PlanRun(plan, demand, rates, idle0.sum(2), as_of), case
