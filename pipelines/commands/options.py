"""Options shared by the `talent` commands, and the one place the command line builds `Settings`.

A flag given on the command line wins; a flag left out falls back to its TALENT_* environment
variable, then to the default (README: "Settings").
"""

from __future__ import annotations

import os
from pathlib import Path

import typer

from pipelines.lib.settings import Settings, SettingsError

SOURCES = typer.Option(
    None,
    "--sources",
    help="Folder with hris/, lms/, incidents/, fleet/ (default: TALENT_SOURCES or sources/sample).",
)
WAREHOUSE_DIR = typer.Option(
    None,
    "--warehouse-dir",
    help="Where the warehouse files are kept (default: TALENT_WAREHOUSE_DIR or ./warehouse).",
)
REPORTS_DIR = typer.Option(
    None,
    "--reports-dir",
    "--out",
    help="Where reports are written (default: TALENT_REPORTS_DIR or <warehouse-dir>/reports).",
)
MIN_GROUP_SIZE = typer.Option(
    None,
    "--min-group-size",
    help="Groups smaller than this are suppressed (default: TALENT_MIN_GROUP_SIZE or 5).",
)

PUBLISH_DSN = typer.Option(
    None,
    "--publish-dsn",
    help="Also publish the marts into this PostgreSQL database, e.g. "
    "postgresql://talent@db:5432/talent (no password: PGPASSWORD; default: TALENT_PUBLISH_DSN).",
)
BUILD_TARGET = typer.Option(
    None,
    "--build-target",
    help="Where dbt builds: duckdb, postgres (TALENT_BUILD_DSN) or spark (a local session) "
    "(default: TALENT_BUILD_TARGET or duckdb).",
)
BUILD_DSN = typer.Option(
    None,
    "--build-dsn",
    help="The PostgreSQL database dbt builds in with --build-target postgres; never the one "
    "analysts read (default: TALENT_BUILD_DSN).",
)


def settings_from_cli(command: str, **flags: object) -> Settings:
    """Settings of this invocation: flags over the environment over the defaults."""
    try:
        return Settings.from_env(os.environ, **flags)
    except SettingsError as exc:
        typer.echo(f"talent {command}: {exc}", err=True)
        raise typer.Exit(2) from None


def warn_demo_key(settings: Settings) -> None:
    if settings.uses_demo_key:
        typer.echo(
            "warning: TALENT_PSEUDONYM_KEY is not set: person pseudonyms use the public demo key "
            "and can be reversed by anyone who has the employee ids. Set it to a secret kept "
            "outside the warehouse before loading real data.",
            err=True,
        )
    if not settings.archive_key:
        typer.echo(
            "warning: TALENT_ARCHIVE_KEY is not set: the archive's copies of the delivered files "
            "(names, e-mails, salaries) are written unencrypted. Make a key with `talent archive "
            "new-key`, keep it outside the warehouse, and run `talent archive rotate-key` once "
            "to encrypt what is there.",
            err=True,
        )


def resolved(path: Path | None) -> Path | None:
    return path.expanduser().resolve() if path is not None else None
