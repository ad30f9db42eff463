"""A plan from the build file: the fleet plan's demand, the team today, the measured rates;
and the plan as the rows of `marts.workforce_plan` and `marts.workforce_plan_rates`."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date

import numpy as np
import pandas as pd

from pipelines.lib.plan import warehouse as wh
from pipelines.lib.plan.fleet import FleetRow
from pipelines.lib.plan.model import Layout, project, rate_arrays
from pipelines.lib.plan.optimise import Plan, Problem, plan_cost, solve
from pipelines.lib.plan.rates import PROGRAMMES, Rates

PLAN_DESCRIPTION = (
    "The cheapest plan found (HiGHS) that staffs the fleet plan's team templates with the "
    "company's measured rates: per quarter, role family and level, whom to hire, whom to start "
    "in which programme, the engineers expected, the cost and the probability (Monte Carlo over "
    "the rates' intervals) of meeting the template. Grain: quarter, role_family, skill_level."
)
PLAN_COLUMNS = {
    "as_of_date": "the team and the rates as of this day (the last month of the HR data)",
    "quarter": "planned quarter, YYYY-Qn",
    "role_family": "role family of a team template the fleet plan needs",
    "skill_level": "skill level 1-5",
    "hires": "engineers to hire at this level in the quarter (join at its end, uncertified)",
    **{f"starts_{p}": f"engineers to start preparing in {p.replace('_', ' ')}" for p in PROGRAMMES},
    "expected_headcount": "engineers expected at the quarter's end (NULL when suppressed)",
    "expected_compliant": "of them holding every certification of the role's track, if every "
    "planned start finds an idle engineer (where a plan starts nearly all it expects idle, "
    "fewer do: probability_met counts only whom a simulated team has idle; NULL when "
    "suppressed)",
    "expected_certified": "certifications expected to be earned in the quarter (NULL when "
    "suppressed)",
    "expected_exits": "engineers expected to leave in the quarter (NULL when suppressed)",
    "added_certified_engineers": "engineers expected to hold at least one certification of "
    "the role's track at the quarter's end beyond those the team left alone (no hire, no "
    "start) would hold: whom the measured return per certified engineer applies to (NULL when "
    "suppressed)",
    "cost_usd": "what the plan adds in the quarter: hiring, programme starts and the added "
    "people's pay",
    "training_cost_usd": "of cost_usd, the programme starts (starts x the cost per start of "
    "workforce_plan_rates)",
    "template_headcount": "engineers the role's templates need in the quarter (all levels of "
    "the band, on the role's first level row)",
    "shortfall": "engineers the plan cannot have ready in the quarter (role, first level row)",
    "probability_met": "share of Monte Carlo draws meeting the role's templates in the quarter",
    "plan_probability": "share of draws meeting every template in every quarter",
    "suppressed": "the role and level has 1..min_group_size-1 people today: expected counts "
    "left out",
}
RATES_DESCRIPTION = (
    "Every rate the workforce plan used, with its interval, source (the mart and window it was "
    "measured in, or the domain's or an estimate's name) and whether the company measured it. "
    "Grain: rate."
)
RATES_COLUMNS = {
    "rate": "what the rate is (level, programme, certification)",
    "value": "the value the plan's expected counts use",
    "low": "low end of the interval the Monte Carlo draws from",
    "high": "high end of the interval",
    "source": "table it was measured in, or the domain figure or estimate it falls back to",
    "data_window": "first..last day measured (empty for other sources)",
    "measured": "true when measured in the company's own data",
}


@dataclass
class PlanRun:
    plan: Plan
    demand: wh.Demand
    rates: Rates
    head_today: np.ndarray  # [R, L]
    as_of: date


def plan_from_warehouse(
    con,
    fleet: list[FleetRow],
    quarters: int = 8,
    assumptions: dict | None = None,
    min_group: int = 5,
    closest: bool = False,
    month: date | None = None,
    programme_rates=None,
    **problem_kw,
) -> PlanRun:
    """Plan the next `quarters` quarters after the HR data's last month (or after `month`, a
    past month the backtest plans from, with `programme_rates` measuring the programmes as
    they were known then: `warehouse.read_rates`)."""
    month = month or wh.last_month(con)
    as_of = wh.month_end(month)
    labels = wh.next_quarters(wh.quarter_of(as_of), quarters)
    demand = wh.demand_from_fleet(fleet, labels)
    codes = sorted({c for r in demand.roles for c in r.track})
    rates = wh.read_rates(con, codes, as_of, assumptions, min_group, programme_rates)
    layout = Layout(demand.roles, len(labels))
    idle0, head = wh.read_team(con, layout, month)
    problem = Problem(layout, rates, idle0, demand.headcount, labels, **problem_kw)
    return PlanRun(solve(problem, closest=closest), demand, rates, head, as_of)


def left_alone(run: PlanRun):
    """The team's expected counts with no hire and no start (what the plan is measured from)."""
    lay = run.plan.problem.layout
    return project(
        np.zeros((1, lay.n_decisions)),
        lay,
        rate_arrays(run.rates, lay),
        run.plan.problem.idle0,
        run.rates.senior_levels,
    )


def added_cost(run: PlanRun) -> np.ndarray:
    """[R, L, T] USD the plan adds: hiring, starts, and pay beyond the team left alone."""
    return plan_cost(run.plan.expected, left_alone(run).payroll)[0]


def plan_frame(run: PlanRun, min_group: int = 5) -> pd.DataFrame:
    """`marts.workforce_plan`: one row per quarter, role family and level of the role's band."""
    plan, lay = run.plan, run.plan.problem.layout
    p = plan.expected
    base = left_alone(run)
    cost = plan_cost(p, base.payroll)[0]
    added = p.holding - base.holding
    rows = []
    for r, role in enumerate(lay.roles):
        small = (run.head_today[r] > 0) & (run.head_today[r] < min_group)
        for t, q in enumerate(plan.problem.quarter_labels):
            for lvl in role.levels:
                li, first = lvl - 1, lvl == role.levels[0]
                hidden = bool(small[li])
                row = {
                    "as_of_date": run.as_of,
                    "quarter": q,
                    "role_family": role.name,
                    "skill_level": lvl,
                    "hires": int(p.hires[0, r, li, t]),
                }
                for k, prog in enumerate(PROGRAMMES):
                    row[f"starts_{prog}"] = int(p.starts[0, r, li, :, k, t].sum())
                for name, arr in (
                    ("expected_headcount", p.head),
                    ("expected_compliant", p.compliant),
                    ("expected_certified", p.certified),
                    ("expected_exits", p.exits),
                    ("added_certified_engineers", added),
                ):
                    row[name] = None if hidden else round(float(arr[0, r, li, t]), 2)
                row["cost_usd"] = round(float(cost[r, li, t]), 2)
                row["training_cost_usd"] = round(float(p.training_cost[0, r, li, t]), 2)
                row["template_headcount"] = int(plan.problem.demand[r, t]) if first else None
                row["shortfall"] = round(float(plan.shortfall[r, t]), 2) if first else None
                row["probability_met"] = round(float(plan.probability_by_role[r, t]), 4)
                row["plan_probability"] = round(plan.probability, 4)
                row["suppressed"] = hidden
                rows.append(row)
    return pd.DataFrame(rows, columns=list(PLAN_COLUMNS))


def rates_frame(rates: Rates) -> pd.DataFrame:
    """`marts.workforce_plan_rates`: every rate the plan used, with its source and window."""
    return pd.DataFrame(
        [
            {
                "rate": r.name,
                "value": r.value,
                "low": r.low,
                "high": r.high,
                "source": r.source,
                "data_window": r.window,
                "measured": r.measured,
            }
            for r in rates.all()
        ],
        columns=list(RATES_COLUMNS),
    )


def empty_frames() -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both marts with their columns and no row (no fleet plan to plan for)."""
    text = {"quarter", "role_family", "rate", "source", "data_window"}
    flags = {"suppressed", "measured"}

    def typed(columns) -> pd.DataFrame:
        return pd.DataFrame(
            {
                c: pd.Series(
                    dtype="datetime64[ns]"
                    if c == "as_of_date"
                    else "string"
                    if c in text
                    else "boolean"
                    if c in flags
                    else "float64"
                )
                for c in columns
            }
        )

    return typed(PLAN_COLUMNS), typed(RATES_COLUMNS)
