"""`talent sources check DIR`: what a load would make of every file, without loading."""

from __future__ import annotations

from pathlib import Path

import typer

app = typer.Typer(
    name="sources",
    help="Inspect a sources folder before loading it.",
    no_args_is_help=True,
    add_completion=False,
)


@app.command("check")
def check(
    sources_dir: Path = typer.Argument(
        ..., help="Sources folder holding hris/ lms/ incidents/ fleet/ (and sources.yml)."
    ),
) -> None:
    """List every file: recognised as which export and vendor, period, rows, encoding, locale,
    what will be quarantined and why; and every file that matches nothing, with the closest
    profile and its missing columns. Exits 1 when a file would fail, be blocked as a
    shrinking re-delivery, or matches nothing."""
    from pipelines.lib.ingest.check import check_sources, format_report
    from pipelines.lib.ingest.profiles import ProfileError

    if not sources_dir.is_dir():
        typer.echo(f"talent sources check: {sources_dir} is not a folder", err=True)
        raise typer.Exit(2)
    try:
        report = check_sources(sources_dir)
    except ProfileError as exc:
        typer.echo(f"talent sources check: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(format_report(report))
    if any(f.status in ("fails", "unknown", "blocked") for f in report.files):
        raise typer.Exit(1)
