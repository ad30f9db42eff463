"""`talent generate`: not built yet."""

import typer


def command() -> None:
    typer.echo("talent generate is not implemented yet", err=True)
    raise typer.Exit(2)
