"""`talent subject-access`: one person's copy of what the warehouse holds about them (GDPR
article 15), as one JSON file (`pipelines/lib/privacy/access.py`)."""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.commands import options


def command(
    employee_id: str = typer.Option(..., "--employee-id", help="The person's employee id."),
    out: Path = typer.Option(..., "--out", help="The file to write (JSON)."),
    warehouse_dir: Path = options.WAREHOUSE_DIR,
) -> None:
    from pipelines.lib.privacy.access import write_subject_copy

    settings = options.settings_from_cli("subject-access", warehouse_dir=warehouse_dir)
    if not settings.raw_db.exists():
        typer.echo(f"talent subject-access: {settings.raw_db} does not exist.", err=True)
        raise typer.Exit(2)
    copy = write_subject_copy(settings, employee_id, out)
    counts = ", ".join(
        f"{len(copy[k]['rows'])} {k}"
        for k in ("employees", "job_history", "enrolments", "certifications", "responders")
    )
    typer.echo(
        f"talent subject-access: {out} ({counts}; {len(copy['rejected_lines'])} rejected line(s))"
    )
