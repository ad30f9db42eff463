"""`talent analysts add NAME` / `remove NAME`: one PostgreSQL login per analyst, in the group
that may read the published marts and nothing else (pipelines/lib/serving.py)."""

from __future__ import annotations

import os

import typer

app = typer.Typer(
    name="analysts",
    help="Logins of analysts on the PostgreSQL database the marts are published to.",
    no_args_is_help=True,
    add_completion=False,
)

DSN = typer.Option(
    None,
    "--publish-dsn",
    help="The serving database, as the pipeline's role (default: TALENT_PUBLISH_DSN); the "
    "password comes from PGPASSWORD or ~/.pgpass.",
)


def _target(dsn: str | None) -> tuple[str, str]:
    """(serving DSN, group role) from the flag and the environment, or exit 2 saying why."""
    from pipelines.lib.settings import Settings, SettingsError

    try:
        settings = Settings.from_env(os.environ, publish_dsn=dsn)
    except SettingsError as exc:
        typer.echo(f"talent analysts: {exc}", err=True)
        raise typer.Exit(2) from None
    if not settings.publish_dsn:
        typer.echo(
            "talent analysts: no serving database: set TALENT_PUBLISH_DSN (or --publish-dsn) "
            "to the database the marts are published to.",
            err=True,
        )
        raise typer.Exit(2)
    return settings.publish_dsn, settings.publish_reader_role


@app.command("add")
def add(
    name: str = typer.Argument(..., help="The login, one per person (e.g. jdoe)."),
    dsn: str | None = DSN,
) -> None:
    """Create NAME's login in the analysts' group (or give it a new password) and print the
    password once. Lists any other database the login could still connect to."""
    from pipelines.lib.postgres import PostgresError, describe
    from pipelines.lib.serving import TIMEOUTS, VIEWS_SCHEMA, add_login

    serving, group = _target(dsn)
    try:
        login = add_login(serving, name, group)
    except PostgresError as exc:
        typer.echo(f"talent analysts add: {exc}", err=True)
        raise typer.Exit(1) from None
    where = describe(serving).split("@", 1)[1]
    typer.echo(
        f"login {login.name} (group {group}) on {where}: reads schema marts, keeps views in "
        f"{VIEWS_SCHEMA}; " + ", ".join(f"{k} {v}" for k, v in TIMEOUTS.items())
    )
    typer.echo(f"password (shown once; hand it over privately): {login.password}")
    for database, statement in login.open_databases.items():
        typer.echo(
            f"warning: {login.name} can still connect to database {database}: as a superuser, "
            f"run `{statement}`",
            err=True,
        )


@app.command("remove")
def remove(
    name: str = typer.Argument(..., help="The login to remove."), dsn: str | None = DSN
) -> None:
    """End NAME's sessions, drop the views NAME owns and the login."""
    from pipelines.lib.postgres import PostgresError
    from pipelines.lib.serving import remove_login

    serving, group = _target(dsn)
    try:
        dropped = remove_login(serving, name, group)
    except PostgresError as exc:
        typer.echo(f"talent analysts remove: {exc}", err=True)
        raise typer.Exit(1) from None
    typer.echo(f"removed login {name}" + (f"; dropped {', '.join(dropped)}" if dropped else ""))
