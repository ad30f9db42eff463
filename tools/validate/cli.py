"""`python -m tools validate`: coverage, bias and false positives of the effect estimators on
companies generated with planted effects."""

from __future__ import annotations

import time
from pathlib import Path

import typer


def command(
    seeds: int = typer.Option(20, "--seeds", min=1, help="How many companies to generate."),
    employees: int = typer.Option(3000, "--employees", min=50, help="Headcount of each."),
    years: int = typer.Option(4, "--years", min=1, help="Years of history of each."),
    world: str = typer.Option(
        "planted",
        "--world",
        help="planted (default effects), null (all effects 1.0), selection (certifiers have "
        "fewer incidents anyway, unrecorded), shock (people certify after a bad spell) or "
        "heterogeneous (incident effect differs by level and grows after certifying); for the "
        "programme and career statistics: programmes (planted programme effects), "
        "programme_selection (the same, programme choice tilted by level) or programme_null "
        "(no programme or promotion effect); for the operations effects: operations (planted) "
        "or operations_null (no operations effect).",
    ),
    first_seed: int = typer.Option(
        1000, "--first-seed", help="Seeds first-seed .. first-seed + seeds - 1."
    ),
    csv: Path | None = typer.Option(None, "--csv", help="Also write every seed's rows here."),
    link: str = typer.Option(
        "name",
        "--link",
        help="Operations worlds: name (implementers and leads linked by unique full name, as "
        "the generated files name them) or email (all linked, as an export naming them by "
        "e-mail or employee id).",
    ),
) -> None:
    from tools.validate import WORLDS, format_table, run_world, summarise
    from tools.validate.operations import (
        OPERATIONS_WORLDS,
        format_operations_table,
        run_operations_world,
        summarise_operations,
    )
    from tools.validate.programmes import (
        PROGRAMME_WORLDS,
        format_programme_table,
        run_programme_world,
        summarise_programmes,
    )

    if world not in WORLDS and world not in PROGRAMME_WORLDS and world not in OPERATIONS_WORLDS:
        known = ", ".join([*WORLDS, *PROGRAMME_WORLDS, *OPERATIONS_WORLDS])
        typer.echo(f"validate: unknown world {world!r}; choose one of {known}", err=True)
        raise typer.Exit(2)
    started = time.perf_counter()
    seed_list = list(range(first_seed, first_seed + seeds))
    if world in OPERATIONS_WORLDS:
        results = run_operations_world(world, seed_list, employees, years, link=link)
        table = format_operations_table(
            world, employees, years, summarise_operations(results), link
        )
    elif world in PROGRAMME_WORLDS:
        results = run_programme_world(world, seed_list, employees, years)
        table = format_programme_table(world, employees, years, summarise_programmes(results))
    else:
        results = run_world(world, seed_list, employees, years)
        table = format_table(world, employees, years, summarise(results))
    if csv is not None:
        results.to_csv(csv, index=False)
    typer.echo(table)
    typer.echo(f"\n({time.perf_counter() - started:.0f} s)")
