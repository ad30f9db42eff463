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


@app.command("init-profile")
def init_profile(
    file: Path = typer.Argument(
        ..., help="A delivered export no profile reads, e.g. sources/hris/'ADP roster.csv'."
    ),
    export: list[str] = typer.Option(
        None,
        "--export",
        help="The export(s) the file holds (employees, job_history, enrolments, incidents, ...); "
        "repeat for a file that feeds several. Default: guessed from the header.",
    ),
    name: str = typer.Option(None, "--name", help="Profile name (default: from the file name)."),
    output: Path = typer.Option(
        None, "--output", help="Where to write it (default: <sources>/profiles/<name>.yaml)."
    ),
    force: bool = typer.Option(False, "--force", help="Replace a profile file that exists."),
) -> None:
    """Write a starting profile for a tool's export: the columns it can guess mapped (by name
    and the known spellings of our columns, date formats from the values), the rest marked
    TODO for you; then says what to do next."""
    from pipelines.lib.contracts import EXPORTS
    from pipelines.lib.ingest.mapping import describe_draft, starting_profile
    from pipelines.lib.ingest.profiles import ProfileError
    from pipelines.lib.ingest.reader import FileError

    unknown = [e for e in export or () if e not in EXPORTS]
    if unknown:
        typer.echo(
            f"talent sources init-profile: unknown export {', '.join(unknown)}; known: "
            f"{', '.join(EXPORTS)}",
            err=True,
        )
        raise typer.Exit(2)
    if not file.is_file():
        typer.echo(f"talent sources init-profile: {file} is not a file", err=True)
        raise typer.Exit(2)
    try:
        draft = starting_profile(file, list(export or ()), name)
    except (FileError, ProfileError, ValueError) as exc:
        typer.echo(f"talent sources init-profile: {exc}", err=True)
        raise typer.Exit(2) from exc
    target = output or draft.target
    if target.exists() and not force:
        typer.echo(
            f"talent sources init-profile: {target} exists; give another --name, or --force to "
            "replace it",
            err=True,
        )
        raise typer.Exit(1)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(draft.text, encoding="utf-8")
    typer.echo(describe_draft(draft, file, target))
