"""The domain's worked cases through the planner, against the domain's own figures."""

import numpy as np

from pipelines.lib.plan.cases import CASES, plan_case

# seed-facts.md "Team composition by fleet size": a medium team (100-1,000 GPUs) costs
# 1.2-1.6 million USD a year, all of it; the plan adds only part of such a team.
MEDIUM_TEAM_USD_PER_YEAR = 1_600_000


def test_organic_growth_costs_the_order_of_the_domains_team_and_hires_no_surplus():
    run, case = plan_case(CASES["organic-growth"], None, draws=40, time_limit=2.0)
    plan = run.plan
    years = case.quarters / 4
    assert plan.cost <= MEDIUM_TEAM_USD_PER_YEAR * years
    # hires at most each role's largest template, less its people today, plus the exits
    need = plan.problem.demand.max(1).sum()
    today = plan.problem.idle0.sum()
    exits = plan.expected.exits[0].sum()
    assert plan.expected.hires.sum() <= need - today + np.ceil(exits) + 1
    # the case's two IT staff start training in the first quarter, as in the domain's case
    assert plan.expected.starts[0, ..., 0].sum() == 2
