"""The `talent` command line: run the pipeline, plan ROI, render reports.

Each command lives in `pipelines/commands/<name>.py` and is imported only when it runs, so
`talent --help` stays fast.
"""

from __future__ import annotations

import importlib

from pipelines.lib.memory import collect_less_often, numpy_small_pages

numpy_small_pages()  # before anything imports NumPy (pipelines/lib/memory.py says why)
collect_less_often()  # before the imports, which make most of the process's objects (same)

import typer  # noqa: E402

app = typer.Typer(
    name="talent",
    help="talent-metrics: does the investment in GPU-infrastructure people pay off?",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

# command name -> module in pipelines.commands holding a function `command`
COMMANDS = {
    "run": "Materialise the whole graph once: ingest, dbt, checks, statistics, ROI, publish, report.",
    "roi": "Run the ROI model from a scenario file alone, without a warehouse.",
    "plan": "Plan hires and programme starts that staff the fleet plan at the least cost.",
    "report": "Render the quarterly talent report (HTML and PDF) from the published warehouse.",
    "erase": "Erase people from the archive, the raw layer and the marts on a valid request.",
    "subject-access": "Write everything the warehouse holds about one person to one file.",
}


def _register(name: str, help_text: str) -> None:
    module = importlib.import_module(f"pipelines.commands.{name.replace('-', '_')}")
    app.command(name=name, help=help_text)(module.command)


for _name, _help in COMMANDS.items():
    _register(_name, _help)

# `talent sources check DIR`: a sub-app (one small module, imported when the CLI starts)
app.add_typer(importlib.import_module("pipelines.commands.sources").app, name="sources")
# `talent analysts add NAME` / `remove NAME`: logins on the serving database
app.add_typer(importlib.import_module("pipelines.commands.analysts").app, name="analysts")
# `talent archive new-key | rotate-key`: the archive's encryption key
app.add_typer(importlib.import_module("pipelines.commands.archive").app, name="archive")

if __name__ == "__main__":
    app()
