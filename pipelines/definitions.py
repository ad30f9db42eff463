"""The Dagster code location: the whole graph from export file to report.

Each part of the graph lives in `pipelines/defs/<part>.py`; this module only combines them and
applies project-wide policy: every step in one process (DuckDB allows one writer per file), and
the publish asset downstream of every mart so that nothing half-built is ever published.
"""

from __future__ import annotations

from collections.abc import Iterable

import dagster as dg

from pipelines.defs import automation, dbt, ingestion, publish, quality, report, roi, stats


def combine(parts: Iterable[dg.Definitions], **extra) -> dg.Definitions:
    """Merge Definitions whose resources share keys.

    Each part declares the resources it needs so that it can be loaded and tested alone; the
    same key always means the same resource type, so the first declaration wins.
    """
    parts = list(parts)
    resources: dict[str, object] = {}
    for p in parts:
        for key, value in (p.resources or {}).items():
            resources.setdefault(key, value)

    def collect(attr: str) -> list:
        return [item for p in parts for item in (getattr(p, attr) or [])]

    return dg.Definitions(
        assets=collect("assets"),
        asset_checks=collect("asset_checks"),
        jobs=collect("jobs"),
        schedules=collect("schedules"),
        sensors=collect("sensors"),
        resources=resources,
        **extra,
    )


_warehouse_parts = [ingestion.defs, dbt.defs, stats.defs, roi.defs, quality.defs]
_marts = sorted(
    (k for k in combine(_warehouse_parts).resolve_all_asset_keys() if k.path[0] == "marts"),
    key=lambda k: k.to_user_string(),
)

defs = combine(
    [*_warehouse_parts, publish.build_publish_defs(_marts), report.defs, automation.defs],
    executor=dg.in_process_executor,
)
