"""`talent erase`: remove people from every file of the warehouse on a valid request (GDPR
article 17), then rebuild the marts without them (`pipelines/lib/privacy/erase.py`)."""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.commands import options


def command(
    employee_id: list[str] = typer.Option(
        None, "--employee-id", help="The person's employee id (repeat for several)."
    ),
    email: list[str] = typer.Option(
        None, "--email", help="The person's work e-mail (repeat for several)."
    ),
    ids_file: Path = typer.Option(
        None, "--ids-file", help="A text file with one employee id per line ('#' comments)."
    ),
    reference: str = typer.Option(
        ..., "--reference", help="The request's reference (a ticket number), kept in the log."
    ),
    by: str = typer.Option(None, "--by", help="Who asked for it (default: this user)."),
    sources: Path = options.SOURCES,
    warehouse_dir: Path = options.WAREHOUSE_DIR,
    no_rebuild: bool = typer.Option(
        False, "--no-rebuild", help="Do not run the nightly afterwards (the next run rebuilds)."
    ),
    verbose: bool = typer.Option(False, "--verbose", "-v", help="Print every Dagster message."),
) -> None:
    from pipelines.execution import RunLockedError, warehouse_lock
    from pipelines.lib import db
    from pipelines.lib.privacy.crypto import archive_problem, cipher_of
    from pipelines.lib.privacy.erase import erase, recover
    from pipelines.lib.privacy.subjects import identify, subject_lines

    settings = options.settings_from_cli("erase", sources_dir=sources, warehouse_dir=warehouse_dir)
    ids = list(employee_id or []) + _ids_from(ids_file)
    if not ids and not email:
        _fail("name the person: --employee-id, --email or --ids-file.", 2)
    if not settings.raw_db.exists():
        _fail(f"{settings.raw_db} does not exist: there is no warehouse to erase from.", 2)
    problem = archive_problem(settings.archive_dir, cipher_of(settings))
    if problem:
        _fail(problem, 2)
    options.warn_demo_key(settings)
    say = lambda text: typer.echo(f"talent erase: {text}", err=True)  # noqa: E731
    try:
        with warehouse_lock(settings.warehouse_dir, "talent erase"):
            recover(settings, say)
            with db.connect(settings.raw_db, read_only=True) as con:
                subject = identify(con, ids, list(email or []))
                found = sum(len(v) for v in subject_lines(con, subject).values())
            if not found:
                say(
                    "no rows of this person are in the warehouse; the erasure is recorded all "
                    "the same, so that their rows are left out of any later delivery."
                )
            result = erase(settings, subject, reference, requested_by=by)
            say(
                f"erased {result.rows_removed} raw row(s) of {len(subject.ids) or len(ids)} "
                f"person(s); {result.files_rewritten} archived file(s) written again without "
                f"them; logged as erasure {result.erasure_id} in raw.erasures (keyed hashes only)."
            )
            removed = scrub_runs(settings, subject)
            if removed:
                say(f"{removed} Dagster run(s) whose records named the person were deleted.")
            if no_rebuild:
                say("the marts still count the person until the next `talent run` rebuilds them.")
                return
            _rebuild(settings, verbose, say)
    except RunLockedError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from None


def _ids_from(path: Path | None) -> list[str]:
    if path is None:
        return []
    try:
        text = path.read_text(encoding="utf-8-sig")
    except OSError as e:
        _fail(f"--ids-file {path} cannot be read ({e.strerror or e}).", 2)
    return [
        line.split("#", 1)[0].strip() for line in text.splitlines() if line.split("#", 1)[0].strip()
    ]


def _fail(message: str, code: int) -> None:
    typer.echo(f"talent erase: {message}", err=True)
    raise typer.Exit(code)


def _rebuild(settings, verbose: bool, say) -> None:
    from pipelines.execution import run_nightly

    say("rebuilding the marts and the published file without them (the nightly)...")
    outcome = run_nightly(settings, verbose)
    typer.echo(outcome.describe(), err=True)
    if not outcome.success:
        _fail(
            "the erasure is done in the archive and the raw layer, but the rebuild failed: "
            f"{settings.published_db} still counts the person until a `talent run` succeeds. "
            "Fix the cause above and run it.",
            1,
        )
    say(f"published without them: {settings.published_db}")


def scrub_runs(settings, subject) -> int:
    """Delete the Dagster runs whose event records or captured logs name the person (values
    in clear, held in memory for this command only), then compact the instance's SQLite files
    so that the deleted records do not stay in their free pages. Returns how many."""
    import shutil
    import sqlite3

    import dagster as dg

    from pipelines.execution import instance_for

    instance = instance_for(settings)
    root = Path(instance.root_directory)
    doomed = []
    for record in instance.get_run_records():
        run_id = record.dagster_run.run_id
        texts = [dg.serialize_value(e) for e in instance.all_logs(run_id)]
        logs = root / "storage" / run_id
        if logs.is_dir():
            texts += [p.read_text(errors="replace") for p in logs.rglob("*") if p.is_file()]
        if any(_names(subject, text) for text in texts):
            doomed.append(run_id)
    for run_id in doomed:
        instance.delete_run(run_id)
        shutil.rmtree(root / "storage" / run_id, ignore_errors=True)
    if doomed:
        for path in sorted((root / "history").rglob("*.db")):
            with sqlite3.connect(path) as con:
                con.execute("VACUUM")
                con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return len(doomed)


def _names(subject, text: str) -> bool:
    low = text.lower()
    return (
        subject.mentioned_in(text)
        or any(f"{first} {last}".lower() in low for first, last in subject.first_last)
        or any(i in text for i in subject.ids if len(i) >= 5)
    )
