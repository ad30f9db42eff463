"""`talent report`: not built yet."""

import typer


def command() -> None:
    typer.echo("talent report is not implemented yet", err=True)
    raise typer.Exit(2)
