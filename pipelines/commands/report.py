"""`talent report`: render the quarterly talent report from the published warehouse."""

from __future__ import annotations

from pathlib import Path

import typer


def command(
    quarter: str = typer.Option(
        None,
        "--quarter",
        "-q",
        help="Quarter to report, YYYY-Qn (e.g. 2026-Q3). Default: the latest complete quarter.",
    ),
    warehouse_dir: Path = typer.Option(
        None,
        "--warehouse-dir",
        help="Folder holding talent.duckdb (default: TALENT_WAREHOUSE_DIR).",
    ),
    out: Path = typer.Option(
        None, "--out", help="Reports folder (default: TALENT_REPORTS_DIR or dashboards/reports)."
    ),
    min_group_size: int = typer.Option(
        None,
        "--min-group-size",
        help="Suppression threshold (default: TALENT_MIN_GROUP_SIZE or 5).",
    ),
    coverage_target: float = typer.Option(
        0.80, "--coverage-target", help="Target share of engineers meeting their role requirements."
    ),
) -> None:
    """Render <out>/<quarter>/talent-report.html and .pdf."""
    from dataclasses import replace

    from pipelines.config import Settings
    from pipelines.lib.report import latest_complete_quarter, render_report

    s = Settings.from_env()
    if warehouse_dir:
        s = replace(s, warehouse_dir=warehouse_dir.expanduser().resolve())
    out_dir = out.expanduser().resolve() if out else s.reports_dir
    try:
        q = quarter or latest_complete_quarter(s.published_db)
        result = render_report(
            s.published_db,
            q,
            out_dir,
            min_group_size=min_group_size if min_group_size is not None else s.min_group_size,
            coverage_target=coverage_target,
        )
    except (FileNotFoundError, ValueError) as exc:
        typer.echo(f"talent report: {exc}", err=True)
        raise typer.Exit(1) from exc
    typer.echo(f"Report {result['quarter']}: {result['html']}")
    typer.echo(f"                 {result['pdf']}")
    missing = [k for k, v in result["sections"].items() if not v]
    if missing:
        typer.echo(f"Sections not available (missing marts): {', '.join(missing)}", err=True)
