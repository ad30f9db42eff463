"""The planner's optimiser against an exhaustive search, and its expected counts against an
independent person-by-person simulation of a company whose true rates are planted."""

import itertools

import numpy as np
import pytest

from pipelines.lib.plan.model import MAX_AGE, Layout, Role, project, rate_arrays, track
from pipelines.lib.plan.optimise import (
    PlanInfeasible,
    Problem,
    build_and_solve,
    plan_cost,
    solve,
    trainee_ceiling,
)
from pipelines.lib.plan.rates import LEVELS, PROGRAMMES, domain_rates, weibull_cdf

CODES = ["NCA-AIIO", "NCP-AII", "CKA"]


@pytest.fixture(scope="module")
def rates():
    return domain_rates(CODES)


def small_problem(rates, demand, idle_ops=4, **kw):
    lay = Layout((Role("operations_engineer", (2, 2), track(("NCA-AIIO",))),), 2)
    idle0 = np.zeros((1, len(LEVELS), lay.stages + 1))
    idle0[0, 1, 0] = idle_ops
    idle0[0, 1, 1] = 1
    return Problem(lay, rates, idle0, np.array([demand], float), ["2027-Q1", "2027-Q2"], **kw)


def test_the_milp_finds_the_cheapest_plan_an_exhaustive_search_finds(rates):
    problem = small_problem(rates, [1, 2], idle_ops=6)
    lay, arrays = problem.layout, rate_arrays(rates, problem.layout)
    x, short, cost, _ = build_and_solve(problem, np.zeros((1, 2)), arrays)
    assert (short < 1e-6).all()
    # every plan of 0-3 hires in quarter 2 and 0-3 starts per programme and quarter
    hires = [k for k, (_, _, t) in enumerate(lay.hire_index()) if t >= 1]
    starts = [
        lay.n_hires + k
        for k, (_, _, _, p, _) in enumerate(lay.start_index())
        if PROGRAMMES[p] in ("online", "bootcamp", "apprenticeship")
    ]
    grid = np.array(list(itertools.product(range(4), repeat=len(hires) + len(starts))))
    xs = np.zeros((len(grid), lay.n_decisions))
    xs[:, hires + starts] = grid
    p = project(xs, lay, arrays, problem.idle0)
    base = project(np.zeros((1, lay.n_decisions)), lay, arrays, problem.idle0)
    ok = (p.in_band(lay, p.compliant)[:, 0] >= problem.demand[0] - 1e-9).all(1)
    ok &= (p.starts.sum(4) <= p.idle_before + 1e-9).all((1, 2, 3, 4))
    ok &= (p.trainees <= trainee_ceiling(problem) + 1e-9).all(1)
    ok &= (p.apprentices <= p.seniors + 1e-9).all(1)
    costs = plan_cost(p, base.payroll).sum((1, 2, 3))
    best = costs[ok].min()
    assert ok.any()
    assert cost == pytest.approx(best, rel=1e-6)


def test_a_quarter_too_soon_and_a_budget_too_small_are_refused(rates):
    with pytest.raises(PlanInfeasible, match="2027-Q1: operations engineer .* needs 9"):
        solve(small_problem(rates, [9, 9], draws=50))
    with pytest.raises(PlanInfeasible, match="USD short"):
        solve(small_problem(rates, [1, 2], idle_ops=6, budget=1000.0, draws=50))


def test_hires_never_exceed_the_template_and_the_exits_to_train_more(rates):
    """A team as large as its template, uncertified, with too little training capacity to
    certify everyone in time: surplus hires run no cluster, so they buy no trainee places, and
    the closest plan hires at most the people it loses (a band up to level 5: promotions stay
    in it)."""
    lay = Layout((Role("operations_engineer", (2, 5), track(("NCA-AIIO",))),), 6)
    idle0 = np.zeros((1, len(LEVELS), lay.stages + 1))
    idle0[0, 1, 0] = 20
    labels = [f"2027-Q{q}" for q in (1, 2, 3, 4)] + ["2028-Q1", "2028-Q2"]
    problem = Problem(lay, rates, idle0, np.full((1, 6), 20.0), labels, draws=20)
    plan = solve(problem, closest=True)
    assert plan.shortfall.sum() > 0  # capacity binds: the case the ceiling is about
    exits = plan.expected.exits[0].sum()
    assert plan.expected.hires.sum() <= np.ceil(exits) + 1
    assert (plan.expected.trainees[0] <= problem.trainee_cap * 20 + 1e-6).all()


def simulate_people(rates, lay, idle0, hires, starts, reps, rng):
    """Each engineer on their own, quarter by quarter, with the planted rates (no arrays): per
    draw, the head [reps, level, quarter] and the holders of the whole track at each level, and
    the exits [reps, quarter]. A planned start finds whom it finds idle, no more."""
    head = np.zeros((reps, len(LEVELS), lay.quarters))
    full = np.zeros((reps, len(LEVELS), lay.quarters))
    gone = np.zeros((reps, lay.quarters))
    role = lay.roles[0]
    for rep in range(reps):
        people = [
            {"level": lvl + 1, "stage": g, "prep": None}
            for lvl in range(len(LEVELS))
            for g in range(lay.stages + 1)
            for _ in range(int(idle0[0, lvl, g]))
        ]
        for t in range(lay.quarters):
            for (lvl, g, p), n in starts[t].items():
                idle = [
                    q for q in people if q["level"] == lvl and q["stage"] == g and not q["prep"]
                ]
                for q in idle[:n]:
                    q["prep"] = (p, 0)
            stay = []
            for q in people:
                rate = rates.exit[(q["level"], q["stage"] >= 1)].value
                if rng.random() < rate:
                    gone[rep, t] += 1
                    continue
                stay.append(q)
            people = stay
            for q in people:
                if q["prep"]:
                    p, age = q["prep"]
                    code = role.track[q["stage"]]
                    median = rates.median_months[(p, code)].value
                    f0, f1 = weibull_cdf(np.array([3 * age, 3 * age + 3]), median)
                    if rng.random() < (f1 - f0) / (1 - f0):
                        q["stage"] += 1
                        q["prep"] = None
                    else:
                        q["prep"] = None if age + 1 >= MAX_AGE else (p, age + 1)
            for q in people:
                if q["level"] < 5 and rng.random() < rates.promote[q["level"]].value:
                    q["level"] += 1
            people += [
                {"level": lvl, "stage": 0, "prep": None}
                for lvl in hires[t]
                for _ in range(hires[t][lvl])
            ]
            for q in people:
                head[rep, q["level"] - 1, t] += 1
                full[rep, q["level"] - 1, t] += q["stage"] == len(role.track)
        del people
    return head, full, gone


def close(sim: np.ndarray, expected: np.ndarray) -> bool:
    """The simulation's mean is within 4 standard errors of the expected counts."""
    mean, se = sim.mean(0), sim.std(0) / np.sqrt(len(sim)) + 1e-9
    return bool(np.all(np.abs(mean - expected) < 4 * se + 1e-6))


def test_expected_counts_match_a_simulation_of_the_planted_rates(rates):
    problem = small_problem(rates, [2, 3], idle_ops=8, draws=100, trainee_cap=0.5)
    plan = solve(problem)
    lay = problem.layout
    hires, starts, s = decisions(lay, plan.x)
    assert s.sum() > 0  # the plan trains someone, so certification flows are exercised
    head, full, gone = simulate_people(
        rates, lay, problem.idle0, hires, starts, 3000, np.random.default_rng(7)
    )
    exp = plan.expected
    assert close(head[:, 1], exp.head[0, 0, 1]), (head[:, 1].mean(0), exp.head[0, 0, 1])
    assert close(full[:, 1], exp.compliant[0, 0, 1])
    assert close(gone, exp.exits[0, 0].sum(0))


def decisions(lay, x):
    """The plan's hires and starts as the simulation takes them, per quarter."""
    h, s = lay.split(x[None, :])
    hires = [
        {lvl + 1: int(h[0, 0, lvl, t]) for lvl in range(5) if h[0, 0, lvl, t]}
        for t in range(lay.quarters)
    ]
    starts = [
        {
            (lvl + 1, g, PROGRAMMES[p]): int(s[0, 0, lvl, g, p, t])
            for lvl, g, p in zip(*np.nonzero(s[0, 0, :, :, :, t]), strict=True)
        }
        for t in range(lay.quarters)
    ]
    return hires, starts, s


def point(rates):
    """The planted rates with no uncertainty: every Monte Carlo draw is the rate itself."""
    from dataclasses import replace

    def fix(r):
        return replace(r, low=r.value, high=r.value, events=None, exposure=None)

    return replace(
        rates,
        exit={k: fix(r) for k, r in rates.exit.items()},
        promote={k: fix(r) for k, r in rates.promote.items()},
        median_months={k: fix(r) for k, r in rates.median_months.items()},
        cost_per_start={k: fix(r) for k, r in rates.cost_per_start.items()},
        salary={k: fix(r) for k, r in rates.salary.items()},
        hiring_cost_share=fix(rates.hiring_cost_share),
    )


def test_a_track_with_a_prerequisite_against_the_simulation(rates):
    """NCP-AII after NCA-AIIO over four quarters in a band of two levels (promotions move people
    between them), with the planted rates known exactly. The plan's probability of meeting the
    template is the share of simulated companies that meet it; its head and exits are the
    simulation's means. Its expected holders of the track assume every planned start finds an
    idle engineer: where a plan starts nearly everyone it expects idle, some starts find no one
    in a simulated company, so the expected holders can only overstate the simulation's (the
    probability, which starts only whom it finds, is the figure to trust)."""
    planted = point(rates)
    lay = Layout((Role("senior_engineer", (2, 3), track(("NCP-AII",))),), 4)
    assert lay.roles[0].track == ("NCA-AIIO", "NCP-AII")
    idle0 = np.zeros((1, len(LEVELS), lay.stages + 1))
    idle0[0, 1, 0], idle0[0, 1, 1], idle0[0, 2, 1] = 10, 4, 3
    demand = np.array([[0, 3, 6, 8]], float)
    labels = ["2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4"]
    problem = Problem(lay, planted, idle0, demand, labels, draws=4000, target_probability=0.5)
    plan = solve(problem, closest=True)
    hires, starts, s = decisions(lay, plan.x)
    assert s[0, 0, :, 1].sum() > 0  # the plan starts the professional certification
    head, full, gone = simulate_people(
        planted, lay, idle0, hires, starts, 4000, np.random.default_rng(3)
    )
    exp = plan.expected
    assert close(head[:, 1:3], exp.head[0, 0, 1:3]), (head[:, 1:3].mean(0), exp.head[0, 0])
    assert close(gone, exp.exits[0, 0].sum(0))
    mean, se = full.mean(0), full.std(0) / np.sqrt(len(full))
    assert np.all(mean[1:3] <= exp.compliant[0, 0, 1:3] + 4 * se[1:3] + 1e-6)
    met = (full[:, 1:3].sum(1) >= demand[0] - 1e-9).all(1)
    share, spread = met.mean(), np.sqrt(met.mean() * (1 - met.mean()) / len(met))
    # two independent estimates of one probability, 4,000 companies each
    assert abs(plan.probability - share) < 4 * np.sqrt(2) * spread + 1e-6, (
        plan.probability,
        share,
    )
