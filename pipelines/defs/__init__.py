"""Dagster wiring, one module per part of the graph.

Each module defines its assets, checks, jobs and sensors at module level and takes its settings
from the `talent` resource (`resources.py`); reusable logic lives in `pipelines.lib`, free of
Dagster. `build_definitions` loads the modules and applies project-wide policy once: one resource
built from the run's `Settings`, every step in one process (DuckDB allows one writer per file),
the settings each step reads folded into its code version (`versions.with_code_versions`: what
is rebuilt follows Dagster's code and data versions), and the schedules at the settings' crons. (`publish.py` holds the other policy: the published
file waits for every mart.)
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping

import dagster as dg

from pipelines.lib.settings import Settings


def build_definitions(
    settings: Settings, environ: Mapping[str, str] | None = None
) -> dg.Definitions:
    """The whole graph over `settings`; `environ` names what came from the environment."""
    from pipelines.defs import (
        automation,
        careers,
        dbt,
        deliveries,
        effects,
        ingestion,
        plan,
        publish,
        quality,
        report,
        roi,
        versions,
    )
    from pipelines.defs.resources import TalentResource

    with warnings.catch_warnings():
        # "in preview": the loader is the stable core of `load_from_defs_folder`, which cannot
        # take the resources built from this run's settings.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        parts = dg.load_definitions_from_modules(
            [
                ingestion,
                dbt,
                deliveries,
                effects,
                careers,
                roi,
                plan,
                quality,
                publish,
                report,
                automation,
            ],
            resources={
                "talent": TalentResource.from_settings(settings, environ),
                "dbt": dbt.dbt_resource(),
            },
            executor=dg.in_process_executor,
        )
    return dg.Definitions(
        assets=versions.with_code_versions(list(parts.assets or []), settings),
        asset_checks=parts.asset_checks,
        jobs=parts.jobs,
        sensors=parts.sensors,
        schedules=[*(parts.schedules or []), *automation.schedules(settings)],
        resources=parts.resources,
        executor=parts.executor,
    )
