"""The Dagster code location (`dagster dev`, the daemon): the whole graph from export file to
report, over settings read once from the environment (README: "Settings")."""

import os

from pipelines.lib.memory import collect_less_often, numpy_small_pages

numpy_small_pages()  # before anything imports NumPy (pipelines/lib/memory.py says why)
collect_less_often()  # before the imports, which make most of the process's objects (same)

from pipelines.defs import build_definitions  # noqa: E402
from pipelines.lib.settings import Settings  # noqa: E402

defs = build_definitions(Settings.from_env(os.environ), os.environ)
