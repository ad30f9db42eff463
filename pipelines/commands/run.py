"""`talent run`: materialise every asset once, as the nightly schedule would."""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.commands import options


def command(
    sources: Path = options.SOURCES,
    warehouse_dir: Path = options.WAREHOUSE_DIR,
    reports_dir: Path = options.REPORTS_DIR,
    quarter: str = typer.Option(
        "", "--quarter", help="Report quarter (YYYY-Qn); default: the latest complete quarter."
    ),
    skip_report: bool = typer.Option(False, "--skip-report", help="Do not render the report."),
    verbose: bool = typer.Option(
        False, "--verbose", "-v", help="Print every Dagster and dbt message, not only progress."
    ),
    publish_dsn: str = options.PUBLISH_DSN,
    build_target: str = options.BUILD_TARGET,
    build_dsn: str = options.BUILD_DSN,
) -> None:
    from pipelines.execution import RunLockedError, run_nightly, run_report, warehouse_lock

    settings = options.settings_from_cli(
        "run",
        sources_dir=sources,
        warehouse_dir=warehouse_dir,
        reports_dir_override=reports_dir,
        publish_dsn=publish_dsn,
        build_target=build_target,
        build_dsn=build_dsn,
    )
    from pipelines.lib.preflight import preflight

    problems = preflight(settings)
    if problems:
        for problem in problems:
            typer.echo(f"talent run: {problem}", err=True)
        raise typer.Exit(2)
    options.warn_demo_key(settings)
    settings.ensure_dirs()
    try:
        with warehouse_lock(settings.warehouse_dir, "talent run"):
            typer.echo(f"talent run: {settings.sources_dir} -> {settings.warehouse_dir}", err=True)
            outcome = run_nightly(settings, verbose)
            typer.echo(outcome.describe(), err=True)
            if not outcome.success:
                typer.echo(
                    f"The run failed; {settings.published_db} was left as it was "
                    "(nothing half-built is published). Fix the cause above and run again: "
                    "files already loaded are not loaded twice.",
                    err=True,
                )
                raise typer.Exit(1)
            typer.echo(f"published: {settings.published_db}", err=True)
            if settings.publish_dsn:
                from pipelines.lib.postgres import describe

                typer.echo(f"published: {describe(settings.publish_dsn)} schema marts", err=True)
            if skip_report:
                return
            from pipelines.lib.report import latest_complete_quarter

            label = quarter or str(latest_complete_quarter(settings.published_db))
            report = run_report(settings, label, verbose)
            typer.echo(report.describe(), err=True)
            if not report.success:
                raise typer.Exit(1)
            out = settings.reports_dir / label
            typer.echo(f"report: {out / 'talent-report.html'} and {out / 'talent-report.pdf'}")
    except RunLockedError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from None
    finally:
        from pipelines.lib.memory import freeze_at_exit

        freeze_at_exit()  # the command ends here (pipelines/lib/memory.py)
