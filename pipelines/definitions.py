"""The Dagster code location (`dagster dev`, the daemon): the whole graph from export file to
report, over settings read once from the environment (README: "Settings")."""

import os

from pipelines.defs import build_definitions
from pipelines.lib.settings import Settings

defs = build_definitions(Settings.from_env(os.environ), os.environ)
