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
        "heterogeneous (incident effect differs by level and grows after certifying).",
    ),
    first_seed: int = typer.Option(
        1000, "--first-seed", help="Seeds first-seed .. first-seed + seeds - 1."
    ),
    csv: Path | None = typer.Option(None, "--csv", help="Also write every seed's rows here."),
) -> None:
    from tools.validate import WORLDS, format_table, run_world, summarise

    if world not in WORLDS:
        typer.echo(
            f"validate: unknown world {world!r}; choose one of {', '.join(WORLDS)}", err=True
        )
        raise typer.Exit(2)
    started = time.perf_counter()
    results = run_world(world, list(range(first_seed, first_seed + seeds)), employees, years)
    if csv is not None:
        results.to_csv(csv, index=False)
    typer.echo(format_table(world, employees, years, summarise(results)))
    typer.echo(f"\n({time.perf_counter() - started:.0f} s)")
