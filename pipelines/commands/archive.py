"""`talent archive new-key` and `talent archive rotate-key`: the archive's encryption key."""

from __future__ import annotations

from pathlib import Path

import typer

from pipelines.commands import options

app = typer.Typer(
    help="The archive's encryption at rest (TALENT_ARCHIVE_KEY).", no_args_is_help=True
)


@app.command("new-key")
def new_key() -> None:
    """Print a fresh key for TALENT_ARCHIVE_KEY (keep it outside the warehouse)."""
    from pipelines.lib.privacy.crypto import new_key as make

    typer.echo(make())


@app.command("rotate-key")
def rotate_key(warehouse_dir: Path = options.WAREHOUSE_DIR) -> None:
    """Write every archived file under TALENT_ARCHIVE_KEY, reading it with TALENT_ARCHIVE_OLD_KEY
    (or the new key, or unencrypted). Run it again after an interruption: it finishes the job."""
    from pipelines.execution import RunLockedError, warehouse_lock
    from pipelines.lib.privacy.crypto import ArchiveKeyError, cipher_of, rotate

    settings = options.settings_from_cli("archive rotate-key", warehouse_dir=warehouse_dir)
    try:
        with warehouse_lock(settings.warehouse_dir, "talent archive rotate-key"):
            done = rotate(settings.archive_dir, cipher_of(settings))
    except ArchiveKeyError as e:
        typer.echo(f"talent archive rotate-key: {e}", err=True)
        raise typer.Exit(2) from None
    except RunLockedError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(3) from None
    typer.echo(
        f"talent archive rotate-key: {done.rewritten} file(s) now under the new key, "
        f"{done.already} were already; TALENT_ARCHIVE_OLD_KEY is no longer needed."
    )
