"""`python -m tools COMMAND`: the development commands (the product's own CLI is `talent`)."""

from __future__ import annotations

import typer

from tools.generate.cli import command as generate
from tools.validate.cli import command as validate

app = typer.Typer(
    name="tools",
    help="talent-metrics development tools: synthetic companies with planted effects.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)
app.command(
    name="generate",
    help="Write a synthetic company's exports with planted effects (ground_truth.json).",
)(generate)
app.command(
    name="validate",
    help="Generate N companies with planted effects and report how often the estimators' 95 % "
    "intervals cover them (coverage, bias, width, false positives, pre-trend rejections).",
)(validate)
# A typer app with one command runs it without its name; this keeps `tools generate ...`.
app.callback()(lambda: None)
