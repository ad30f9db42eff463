"""`talent run`: not built yet."""

import typer


def command() -> None:
    typer.echo("talent run is not implemented yet", err=True)
    raise typer.Exit(2)
