"""The Dagster code location: the whole graph from export file to report.

Each part of the graph lives in `pipelines/defs/<part>.py`; this module only merges them and
applies project-wide policy (one process, so DuckDB sees one writer at a time).
"""

from __future__ import annotations

import dagster as dg

from pipelines.defs import automation, dbt, ingestion, publish, quality, report, roi, stats

defs = dg.Definitions.merge(
    ingestion.defs,
    dbt.defs,
    stats.defs,
    roi.defs,
    quality.defs,
    publish.defs,
    report.defs,
    automation.defs,
    dg.Definitions(executor=dg.in_process_executor),
)
