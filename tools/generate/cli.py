"""`python -m tools generate`: write a synthetic company's exports with planted ground truth."""

from __future__ import annotations

from datetime import date, datetime
from pathlib import Path

import typer


def _parse_day(value: str | None, option: str) -> date | None:
    if value is None:
        return None
    try:
        return datetime.strptime(value, "%Y-%m-%d").date()
    except ValueError:
        raise typer.BadParameter(
            f"{value!r} is not a date; write it as YYYY-MM-DD, e.g. 2026-09-30", param_hint=option
        ) from None


# the planted world (tools/generate/model.py); 1.0 plants no effect
IRR_OPTION = typer.Option(0.70, "--incident-rate-ratio", min=0.01, help="Planted incident ratio.")
MTTR_OPTION = typer.Option(0.80, "--mttr-ratio", min=0.01, help="Planted MTTR ratio.")
HR_OPTION = typer.Option(0.60, "--attrition-hazard-ratio", min=0.01, help="Planted hazard ratio.")
SELECTION_OPTION = typer.Option(
    0.0,
    "--proneness-selection",
    help="Engineers with fewer incidents anyway certify more: start hazard x "
    "frailty^-VALUE (0 = no selection; 2 is strong). Frailty is not in the exports.",
)
SHOCK_OPTION = typer.Option(
    0.0,
    "--shock-probability",
    min=0.0,
    max=1.0,
    help="Monthly probability of a bad spell (3 months, twice the incident rate, six times "
    "the certifying hazard): people certify after a bad spell (0 = none).",
)
RENEWAL_OPTION = typer.Option(
    0.65, "--renewal-probability", min=0.0, max=1.0, help="Share of awards renewed."
)
SEEDS_DIR_OPTION = typer.Option(
    None,
    "--seeds-dir",
    help="Folder with the dbt seed CSVs to build the company from (default: the project's "
    "dbt_project/seeds).",
)


OUT_OPTION = typer.Option(
    ...,
    "--out",
    help="Folder to write hris/, lms/, incidents/, fleet/ and ground_truth.json into.",
)
EMPLOYEES_OPTION = typer.Option(3000, "--employees", min=50, help="Company headcount at the start.")
YEARS_OPTION = typer.Option(4, "--years", min=1, help="Years of history to simulate.")
END_DATE_OPTION = typer.Option(
    ..., "--end-date", help="Last day covered by the exports (YYYY-MM-DD)."
)
SEED_OPTION = typer.Option(
    42, "--seed", help="Random seed; the same seed gives byte-identical files."
)
DAILY_FROM_OPTION = typer.Option(
    None,
    "--daily-from",
    help="Records dated on or after this day go to daily files <export>_YYYY-MM-DD.csv.",
)
QUIET_OPTION = typer.Option(False, "--quiet", help="No progress lines on stderr.")
CLEAN_OPTION = typer.Option(
    False,
    "--clean",
    help="No realistic dirt (duplicates, corrected re-delivery, blanks, mixed-case e-mails, CRLF, BOMs).",
)
GARBAGE_ROWS_OPTION = typer.Option(
    False,
    "--garbage-rows",
    help="Add two unreadable lines to one incidents file for the quarantine.",
)
OVERWRITE_OPTION = typer.Option(
    False,
    "--overwrite",
    help="Replace exports already in --out (otherwise refuse to mix two companies).",
)


def command(
    out: Path = OUT_OPTION,
    employees: int = EMPLOYEES_OPTION,
    years: int = YEARS_OPTION,
    end_date: str = END_DATE_OPTION,
    seed: int = SEED_OPTION,
    daily_from: str | None = DAILY_FROM_OPTION,
    quiet: bool = QUIET_OPTION,
    clean: bool = CLEAN_OPTION,
    garbage_rows: bool = GARBAGE_ROWS_OPTION,
    overwrite: bool = OVERWRITE_OPTION,
    incident_rate_ratio: float = IRR_OPTION,
    mttr_ratio: float = MTTR_OPTION,
    attrition_hazard_ratio: float = HR_OPTION,
    proneness_selection: float = SELECTION_OPTION,
    shock_probability: float = SHOCK_OPTION,
    renewal_probability: float = RENEWAL_OPTION,
    seeds_dir: Path | None = SEEDS_DIR_OPTION,
) -> None:
    from tools.generate import PlantedModel, generate_company, reference

    if seeds_dir is not None:
        try:
            reference.use_seeds(seeds_dir)
        except FileNotFoundError as exc:
            typer.echo(f"generate: {exc}", err=True)
            raise typer.Exit(2) from None

    end = _parse_day(end_date, "--end-date")
    daily = _parse_day(daily_from, "--daily-from")
    try:
        summary = generate_company(
            out,
            employees,
            years,
            end,
            seed,
            daily_from=daily,
            progress=not quiet,
            dirt=not clean,
            garbage_rows=garbage_rows,
            overwrite=overwrite,
            model=PlantedModel(
                incident_rate_ratio=incident_rate_ratio,
                mttr_ratio=mttr_ratio,
                attrition_hazard_ratio=attrition_hazard_ratio,
                proneness_selection=proneness_selection,
                shock_probability=shock_probability,
                renewal_probability=renewal_probability,
            ),
        )
    except ValueError as exc:
        typer.echo(f"generate: {exc}", err=True)
        raise typer.Exit(2) from None
    if not quiet:
        rows = ", ".join(f"{k} {v}" for k, v in summary["rows"].items())
        typer.echo(
            f"wrote {summary['files_written']} files to {out} ({rows}); "
            f"{summary['infra_engineers']} infrastructure engineers; ground truth in ground_truth.json",
            err=True,
        )
