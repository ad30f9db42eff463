"""The cheapest plan that staffs the fleet plan: a mixed-integer programme solved by HiGHS
(`scipy.optimize.milp`), then checked by Monte Carlo over the rates' intervals.

Variables (`model.Layout`): whole hires per role, level and quarter; whole programme starts per
role, level, stage of the track, programme and quarter; vendor groups of ten per quarter; and a
shortfall per role and quarter that costs far more than any plan (so the solver reports what is
missing instead of failing). The expected counts are affine in the decisions, so the
constraint rows are read from `model.project` itself. Constraints: the role's people in the
template's level band holding the whole track at least the template's headcount (plus a
margin), no more starts than idle people, trainees at most `trainee_cap` of the larger of
the team today and the team the templates need (`trainee_ceiling`), one senior per
apprentice, vendor-partnership starts in groups of ten, hires only after the time to fill,
and the budget. The margin rises where the Monte Carlo draws (each with its own rates and
binomial flows) meet the template less often than the target probability.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from pipelines.lib.plan.model import VENDOR, Layout, Projection, RateArrays, project, rate_arrays
from pipelines.lib.plan.rates import PROGRAMMES, Rates

SHORTFALL_USD = 1e8  # per missing engineer and quarter: dearer than any plan
VENDOR_GROUP = 10  # seed-facts.md: vendor discounts for groups of 10 or more


class PlanInfeasible(ValueError):
    """No plan meets the templates (or the budget); the message says what is missing."""


@dataclass
class Problem:
    layout: Layout
    rates: Rates
    idle0: np.ndarray  # [R, L, G+1] people today by level and stage
    demand: np.ndarray  # [R, T] template headcount (in band, holding the track)
    quarter_labels: list[str]
    trainee_cap: float = 0.3
    budget: float | None = None
    target_probability: float = 0.8
    draws: int = 400
    seed: int = 0
    time_limit: float = 10.0  # seconds HiGHS may search; the plan names the gap it stopped at
    # branch-and-bound nodes HiGHS may search: the limit that stops it first on ordinary plans,
    # so that the same inputs give the same plan on a fast machine and a slow one (a time limit
    # alone stops at whatever it reached); the time limit is the backstop
    node_limit: int = 200


@dataclass
class Plan:
    problem: Problem
    x: np.ndarray  # decisions [n_decisions]
    expected: Projection  # batch of one
    cost: float
    probability: float  # all templates met in every quarter, over the draws
    probability_by_role: np.ndarray  # [R, T]
    margin: np.ndarray  # [R, T] extra expected engineers the plan carries
    shortfall: np.ndarray  # [R, T] engineers the closest plan leaves missing (0 when feasible)
    gap: float = 0.0  # HiGHS's relative MIP gap when it stopped (0: proven cheapest)
    notes: list[str] = field(default_factory=list)


def trainee_ceiling(problem: Problem) -> float:
    """Trainees at most `trainee_cap` of the larger of the team today and the team the fleet
    plan needs (its largest template headcount); a team may always spare one trainee. The
    ceiling does not grow with hires: people hired beyond the templates run no cluster, so
    they free no one to train. (A cap on a share of a team that includes new hires made
    surplus hires the cheapest way to train more, and kept a team of two from training.)"""
    need = float(problem.demand.sum(0).max(initial=0.0))
    return max(1.0, problem.trainee_cap * max(need, float(problem.idle0.sum())))


def plan_cost(p: Projection, base_payroll: np.ndarray) -> np.ndarray:
    """[B, R, L, T] what the plan adds: hiring, training and the added people's pay."""
    return p.hiring_cost + p.training_cost + (p.payroll - base_payroll)


def _affine(problem: Problem, arrays: RateArrays) -> Projection:
    """Batch 0: no decision; batch i + 1: decision i alone (the counts are affine in them)."""
    n = problem.layout.n_decisions
    x = np.vstack([np.zeros((1, n)), np.eye(n)])
    return project(x, problem.layout, arrays, problem.idle0, problem.rates.senior_levels)


def build_and_solve(problem: Problem, margin: np.ndarray, arrays: RateArrays):
    """Solve the MILP once; return (x, shortfall [R, T], cost, gap)."""
    from scipy.optimize import Bounds, LinearConstraint, milp

    lay = problem.layout
    n, nd, nt, nr = lay.n_vars, lay.n_decisions, lay.quarters, len(lay.roles)
    p = _affine(problem, arrays)
    base_payroll = p.payroll[:1]
    cost_all = plan_cost(p, base_payroll).sum((1, 2, 3))
    c0, jc = cost_all[0], cost_all[1:] - cost_all[0]
    if not np.all(np.isfinite(cost_all)):
        raise PlanInfeasible(
            "a cost the plan would pay is not a number (a hire, a programme start or a level's "
            "pay with no measured value and no domain figure): the rates of "
            "marts.workforce_plan_rates say which are missing"
        )

    def lin(q: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        q = q.reshape(q.shape[0], -1)
        return q[0], (q[1:] - q[0]).T  # constant [k], matrix [k, nd]

    def pad(m: np.ndarray) -> np.ndarray:
        return np.hstack([m, np.zeros((m.shape[0], n - nd))])

    cons = []
    d0, dj = lin(p.in_band(lay, p.compliant))
    short = np.zeros((nr * nt, n))
    short[np.arange(nr * nt), nd + nt + np.arange(nr * nt)] = 1
    cons.append(LinearConstraint(pad(dj) + short, (problem.demand + margin).ravel() - d0, np.inf))
    i0, ij = lin(p.idle_before)
    s_rows = np.zeros((i0.size, n))
    for k, (r, lvl, g, _, t) in enumerate(lay.start_index()):
        row = np.ravel_multi_index((r, lvl - 1, g, t), p.idle_before.shape[1:])
        s_rows[row, lay.n_hires + k] += 1
    keep = np.abs(s_rows).sum(1) > 0
    cons.append(LinearConstraint((s_rows - pad(ij))[keep], -np.inf, i0[keep]))
    n0, nj = lin(p.trainees)
    cons.append(LinearConstraint(pad(nj), -np.inf, trainee_ceiling(problem) - n0))
    a0, aj = lin(p.apprentices - p.seniors)
    cons.append(LinearConstraint(pad(aj), -np.inf, -a0))
    vendor = np.zeros((nt, n))
    for k, (_, _, _, prog, t) in enumerate(lay.start_index()):
        if prog == VENDOR:
            vendor[t, lay.n_hires + k] = 1
    vendor[np.arange(nt), nd + np.arange(nt)] = -VENDOR_GROUP
    cons.append(LinearConstraint(vendor, 0, 0))
    if problem.budget is not None:
        cons.append(LinearConstraint(pad(jc[None, :]), -np.inf, problem.budget - c0))
    lower, upper = np.zeros(n), np.full(n, np.inf)
    for k, (_, _, t) in enumerate(lay.hire_index()):
        if t < problem.rates.time_to_fill_quarters:
            upper[k] = 0
    for k, (r, _, g, prog, _) in enumerate(lay.start_index()):
        if not arrays.available[r, g, prog]:
            upper[lay.n_hires + k] = 0
    integrality = np.r_[np.ones(nd + nt), np.zeros(nr * nt)]
    objective = np.r_[jc, np.zeros(nt), np.full(nr * nt, SHORTFALL_USD)]
    res = milp(
        objective,
        constraints=cons,
        integrality=integrality,
        bounds=Bounds(lower, upper),
        options={
            "time_limit": problem.time_limit,
            "node_limit": problem.node_limit,
            "mip_rel_gap": 1e-6,
        },
    )
    if res.x is None:
        raise PlanInfeasible(f"the solver found no plan: {res.message}")
    x = np.rint(res.x[:nd])
    gap = float(getattr(res, "mip_gap", 0.0) or 0.0) if res.status == 1 else 0.0
    return x, res.x[nd + nt :].reshape(nr, nt), float(c0 + jc @ x), gap


def draw_rates(problem: Problem) -> RateArrays:
    """The Monte Carlo draws of every rate, once per plan (each draw its own rates)."""
    rng = np.random.default_rng(problem.seed)
    return rate_arrays(problem.rates, problem.layout, problem.draws, rng)


def monte_carlo(
    problem: Problem, x: np.ndarray, drawn: RateArrays | None = None
) -> tuple[float, np.ndarray]:
    """P(every template met in every quarter), and per role and quarter, over the draws.

    The same draws and the same binomial stream for every candidate plan (common random
    numbers): two plans differ in probability because they differ, not by chance."""
    drawn = drawn if drawn is not None else draw_rates(problem)
    rng = np.random.default_rng(problem.seed + 1)
    xs = np.broadcast_to(x[None, :], (problem.draws, x.size))
    p = project(xs, problem.layout, drawn, problem.idle0, problem.rates.senior_levels, sample=rng)
    met = p.in_band(problem.layout, p.compliant) >= problem.demand[None] - 1e-9
    return float(met.all((1, 2)).mean()), met.mean(0)


def missing_text(problem: Problem, short: np.ndarray, have: np.ndarray) -> str:
    lines = []
    for r, t in zip(*np.nonzero(short > 0.5), strict=True):
        role = problem.layout.roles[r]
        lines.append(
            f"{problem.quarter_labels[t]}: {role.name.replace('_', ' ')} (levels "
            f"{role.band[0]}-{role.band[1]}, holding {', '.join(role.track)}) needs "
            f"{problem.demand[r, t]:.0f}; the closest plan has {have[r, t]:.1f} ready by then "
            f"({short[r, t]:.1f} missing)"
        )
    ttf = problem.rates.time_to_fill_quarters
    return (
        "no plan meets the team templates: hires take "
        f"{ttf} quarter{'s' if ttf != 1 else ''} to fill and certifications take their "
        "programmes' time, so\n  " + "\n  ".join(lines) + "\nPlan the growth later, or start "
        "earlier (hire or train before the first quarter of the fleet plan)."
    )


def _raise_margin(problem: Problem, margin: np.ndarray, by_role: np.ndarray) -> np.ndarray:
    """One more engineer where a role and quarter fall short of its share of the target."""
    needed = problem.demand > 0
    share = problem.target_probability ** (1 / max(needed.sum(), 1))
    low = (by_role < share) & needed
    if not low.any():
        low = needed & (by_role == by_role[needed].min())
    return margin + low


def solve(problem: Problem, closest: bool = False) -> Plan:
    """The cheapest plan whose probability of meeting the templates reaches the target.

    A plan that cannot meet some template raises PlanInfeasible naming what is missing; with
    `closest` it is returned instead, its shortfall per role and quarter in `Plan.shortfall`."""
    lay = problem.layout
    arrays = rate_arrays(problem.rates, lay)
    margin = np.zeros_like(problem.demand, dtype=float)
    budget, problem.budget = problem.budget, None
    x, short, cost, gap = build_and_solve(problem, margin, arrays)
    notes: list[str] = []
    short = np.where(short > 0.5, short, 0.0)
    if short.any():
        text = missing_text(problem, short, _expected(problem, x, arrays))
        if not closest:
            problem.budget = budget
            raise PlanInfeasible(text)
        notes.append(text)
    drawn = draw_rates(problem)
    prob, by_role = monte_carlo(problem, x, drawn)
    for _ in range(12 if not short.any() else 0):
        if prob >= problem.target_probability:
            break
        margin = _raise_margin(problem, margin, by_role)
        x2, short2, cost2, gap2 = build_and_solve(problem, margin, arrays)
        if (short2 > 0.5).any():
            break  # the margin cannot be carried: report the probability reached
        x, cost, gap = x2, cost2, gap2
        prob, by_role = monte_carlo(problem, x, drawn)
    problem.budget = budget
    if budget is not None and cost > budget + 0.5:
        raise PlanInfeasible(
            f"the cheapest plan meeting the templates with probability {prob:.0%} costs "
            f"{cost:,.0f} USD over {lay.quarters} quarters; the budget of {budget:,.0f} USD is "
            f"{cost - budget:,.0f} USD short. {buys_text(problem, arrays, margin)}"
        )
    expected = project(x[None, :], lay, arrays, problem.idle0, problem.rates.senior_levels)
    if prob < problem.target_probability and not short.any():
        notes.append(
            f"the plan meets every template with probability {prob:.0%}, below the target "
            f"{problem.target_probability:.0%}: the rates' intervals are too wide (or the lead "
            "times too long) for more"
        )
    if gap > 1e-6:
        notes.append(
            f"HiGHS stopped at its search limit ({problem.node_limit} nodes or "
            f"{problem.time_limit:.0f} s) with this plan; "
            f"the cheapest possible is within {gap:.1%} of its objective"
        )
    return Plan(problem, x, expected, cost, prob, by_role, margin, short, gap, notes)


def _expected(problem: Problem, x: np.ndarray, arrays: RateArrays) -> np.ndarray:
    p = project(x[None, :], problem.layout, arrays, problem.idle0, problem.rates.senior_levels)
    return p.in_band(problem.layout, p.compliant)[0]


def buys_text(problem: Problem, arrays: RateArrays, margin: np.ndarray) -> str:
    """What the budget buys: the plan within it, and the engineers it leaves missing."""
    x, short, _, _ = build_and_solve(problem, margin, arrays)
    missing = short.sum(0)
    worst = int(np.argmax(missing))
    return (
        f"Within the budget the templates lack {missing.max():.1f} engineers at most "
        f"({problem.quarter_labels[worst]}); {int(x.sum())} hires and starts."
    )


__all__ = ["PROGRAMMES", "Plan", "PlanInfeasible", "Problem", "solve", "monte_carlo"]
