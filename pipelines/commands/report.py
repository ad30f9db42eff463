"""`talent report`: render the quarterly talent report from the published warehouse."""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.commands import options


def command(
    quarter: str = typer.Option(
        None,
        "--quarter",
        "-q",
        help="Quarter to report, YYYY-Qn (e.g. 2026-Q3). Default: the latest complete quarter.",
    ),
    warehouse_dir: Path = options.WAREHOUSE_DIR,
    out: Path = options.REPORTS_DIR,
    min_group_size: int = options.MIN_GROUP_SIZE,
) -> None:
    """Render <reports-dir>/<quarter>/talent-report.html and .pdf.

    Targets are not a flag: they are set, each with its owner, in the assumptions file
    (TALENT_ASSUMPTIONS, `targets:`); without one the report says "no target set"."""
    from pipelines.lib.report import latest_complete_quarter, render_report

    s = options.settings_from_cli(
        "report",
        warehouse_dir=warehouse_dir,
        reports_dir_override=out,
        min_group_size=min_group_size,
    )
    try:
        q = quarter or latest_complete_quarter(s.published_db)
        result = render_report(
            s.published_db,
            q,
            s.reports_dir,
            min_group_size=s.min_group_size,
            assumptions_path=s.assumptions_file,
            restricted_db=s.build_db,
        )
    except (FileNotFoundError, ValueError) as exc:  # RoiInputError is a ValueError
        typer.echo(f"talent report: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"Report {result['quarter']}: {result['html']}")
    typer.echo(f"                 {result['pdf']}")
    missing = [k for k, v in result["sections"].items() if not v]
    if missing:
        typer.echo(f"Sections not available (missing marts): {', '.join(missing)}", err=True)
