"""`talent plan`: the cheapest way to staff a fleet plan, from the warehouse's measured rates.

Reads the build file of `--warehouse-dir` (run `talent run` first) and the fleet plan
(`--fleet-plan`, default `<sources>/plans/fleet_plan.csv`). A plan that cannot meet a template in
time, or costs more than `--budget`, is refused (exit 1) with what is missing or what the
budget buys. `--case` plans one of the domain's worked cases (`pipelines/lib/plan/cases.py`)
with the company's rates where a warehouse exists (the domain's otherwise), beside the
domain's own figures.
"""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.commands.options import SOURCES, WAREHOUSE_DIR, resolved, settings_from_cli


def _table(run) -> str:
    """Per quarter: hires, starts per programme, certified, exits, cost, probability."""
    from pipelines.lib.plan.build import added_cost
    from pipelines.lib.plan.rates import PROGRAMMES

    plan = run.plan
    p = plan.expected
    head = ["quarter", "hires", *(s[:10] for s in PROGRAMMES), "certified", "exits", "cost USD"]
    lines = ["  ".join(f"{h:>10}" for h in head)]
    cost = added_cost(run).sum((0, 1))
    for t, q in enumerate(plan.problem.quarter_labels):
        cells = [q, f"{p.hires[0, ..., t].sum():.0f}"]
        cells += [f"{p.starts[0, ..., k, t].sum():.0f}" for k in range(len(PROGRAMMES))]
        cells += [f"{p.certified[0, ..., t].sum():.1f}", f"{p.exits[0, ..., t].sum():.1f}"]
        cells.append(f"{cost[t]:,.0f}")
        lines.append("  ".join(f"{c:>10}" for c in cells))
    return "\n".join(lines)


def render(run, title: str) -> str:
    plan = run.plan
    measured = [r for r in run.rates.all() if r.measured]
    lines = [
        title,
        "=" * len(title),
        f"Team and rates as of {run.as_of}; {len(measured)} of {len(run.rates.all())} rates "
        "measured in the company's data, the others the domain's figures (named in "
        "marts.workforce_plan_rates).",
        "",
        _table(run),
        "",
        f"Cost over {len(plan.problem.quarter_labels)} quarters: {plan.cost:,.0f} USD "
        "(hiring, programme starts and the added people's pay).",
        f"Probability of meeting every template in every quarter: {plan.probability:.0%} "
        f"(target {plan.problem.target_probability:.0%}, {plan.problem.draws} Monte Carlo draws "
        "of the rates).",
    ]
    lines += [f"Note: {n}" for n in plan.notes]
    return "\n".join(lines)


def render_case(run, case) -> str:
    from pipelines.lib.plan.cases import SOURCE

    source = (
        "the company's measured rates"
        if any(r.measured for r in run.rates.all())
        else ("the domain's figures (no warehouse)")
    )
    return "\n".join(
        [
            render(run, f"{case.title}: the planner with {source}"),
            "",
            f"The domain's own figures ({SOURCE}): {case.domain}",
            f"Assumed for the plan: {case.assumed}",
        ]
    )


def command(
    fleet_plan: Path = typer.Option(
        None, "--fleet-plan", help="Fleet plan file (default: <sources>/plans/fleet_plan.csv)."
    ),
    quarters: int = typer.Option(8, "--quarters", min=4, max=8, help="Quarters to plan (4-8)."),
    budget: float = typer.Option(
        None, "--budget", help="USD over the quarters: what does this budget buy?"
    ),
    target_probability: float = typer.Option(
        0.8, "--target-probability", min=0.0, max=1.0, help="Chance to meet every template."
    ),
    case: str = typer.Option(
        None,
        "--case",
        help="Plan one of the domain's worked cases instead: rapid-scale-up, organic-growth "
        "or insourcing.",
    ),
    sources: Path = SOURCES,
    warehouse_dir: Path = WAREHOUSE_DIR,
) -> None:
    """Plan hires and programme starts for the fleet plan at the least cost."""
    from pipelines.lib import db
    from pipelines.lib.plan.build import plan_from_warehouse
    from pipelines.lib.plan.cases import CASES, plan_case
    from pipelines.lib.plan.fleet import PlanInputError, find_fleet_plan, read_fleet_plan
    from pipelines.lib.plan.optimise import PlanInfeasible
    from pipelines.lib.roi.assumptions import load_assumptions

    s = settings_from_cli(
        "plan", sources_dir=resolved(sources), warehouse_dir=resolved(warehouse_dir)
    )
    options = {"budget": budget, "target_probability": target_probability}
    try:
        assumptions = load_assumptions(s.assumptions_file)
        if case is not None:
            if case not in CASES:
                raise PlanInputError(f"no case {case!r}: choose one of {', '.join(CASES)}.")
            con = db.connect(s.build_db, read_only=True) if s.build_db.exists() else None
            try:
                typer.echo(render_case(*plan_case(CASES[case], con, assumptions, **options)))
            finally:
                if con is not None:
                    con.close()
            return
        if not s.build_db.exists():
            raise PlanInputError(
                f"{s.build_db} does not exist: run `talent run` first (the plan reads the "
                "measured rates and the team from it), or plan a --case."
            )
        fleet = read_fleet_plan(resolved(fleet_plan) or find_fleet_plan(s.sources_dir))
        with db.connect(s.build_db, read_only=True) as con:
            run = plan_from_warehouse(
                con, fleet, quarters, assumptions, s.min_group_size, **options
            )
    except (PlanInputError, PlanInfeasible) as exc:
        typer.echo(f"talent plan: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(render(run, "Workforce plan"))
