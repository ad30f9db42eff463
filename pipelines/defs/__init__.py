"""Dagster wiring, one module per part of the graph.

Each module defines its assets, checks, jobs and sensors at module level and takes its settings
from the `talent` resource (`resources.py`); reusable logic lives in `pipelines.lib`, free of
Dagster. `build_definitions` loads the modules the way Dagster's project layout does
(`dg.load_from_defs_folder`, the package named by pyproject.toml's `[tool.dg.project]`) and
applies project-wide policy once: one resource
built from the run's `Settings`, every step in one process (DuckDB allows one writer per file),
the settings each step reads folded into its code version (`versions.with_code_versions`: what
is rebuilt follows Dagster's code and data versions), and the schedules at the settings' crons. (`publish.py` holds the other policy: the published
file waits for every mart.)
"""

from __future__ import annotations

from collections.abc import Mapping

import dagster as dg

from pipelines.lib.settings import Settings


def build_definitions(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> dg.Definitions:
    """The whole graph over `settings`; `environ` names what came from the environment."""
    from pipelines.defs import automation, dbt, versions
    from pipelines.defs.resources import TalentResource
    from pipelines.lib.project_files import ROOT

    # Dagster's project layout (pyproject.toml, [tool.dg.project] defs_module): every module
    # of this package is loaded and its definitions collected
    parts = dg.load_from_defs_folder(path_within_project=ROOT)
    resources = {
        "talent": TalentResource.from_settings(settings, environ),
        "dbt": dbt.dbt_resource(),
    }
    return dg.Definitions(
        assets=versions.with_code_versions(list(parts.assets or []), settings),
        asset_checks=parts.asset_checks,
        jobs=parts.jobs,
        sensors=parts.sensors,
        schedules=[*(parts.schedules or []), *automation.schedules(settings)],
        resources=resources,
        executor=dg.in_process_executor,
    )
