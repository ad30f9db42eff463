"""`talent roi`: not built yet."""

import typer


def command() -> None:
    typer.echo("talent roi is not implemented yet", err=True)
    raise typer.Exit(2)
