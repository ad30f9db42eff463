"""Dagster wiring for the quarterly talent report: one partition per calendar quarter.

Partitions are a time window with a cron on quarter starts (1 Jan, 1 Apr, 1 Jul, 1 Oct), so a
quarter's partition appears only once the quarter is over and the schedule/backfill UI shows
quarters as a time line. The partition key is the quarter's first day (`2026-07-01`); it maps to
the report label `2026-Q3`. A static list would need editing every quarter; dynamic partitions
would need a sensor to add them.
"""

# No `from __future__ import annotations`: Dagster inspects the context type hint at runtime.
from pathlib import Path

import dagster as dg

from pipelines.defs import versions
from pipelines.defs.resources import TalentResource
from pipelines.lib.project_files import STATIC_DIR, TEMPLATES_DIR
from pipelines.lib.report.quarters import Quarter

# First quarter a report can be asked for; earlier partitions would have no marts to read.
REPORT_START = "2015-01-01"

quarterly_partitions = dg.TimeWindowPartitionsDefinition(
    start=REPORT_START,
    fmt="%Y-%m-%d",
    cron_schedule="0 0 1 1,4,7,10 *",
    timezone="UTC",
)


def partition_of_quarter(label: str) -> str:
    """`2026-Q3` → `2026-07-01`, the partition key of that quarter's report."""
    return Quarter.parse(label).start.isoformat()


def quarter_of_partition(partition_key: str) -> str:
    """`2026-07-01` → `2026-Q3`."""
    from datetime import date

    return Quarter.containing(date.fromisoformat(partition_key)).label


@dg.asset(
    key=["report", "quarterly_talent_report"],
    group_name="report",
    partitions_def=quarterly_partitions,
    deps=[dg.AssetKey(["warehouse", "published"])],
    kinds={"html", "pdf"},
    # rendered whenever it is asked for (a run of the report job); the version names the code
    code_version=versions.source_version(
        "pipelines.lib.report", str(TEMPLATES_DIR), str(STATIC_DIR)
    ),
    description="Quarterly talent report for leadership (HTML + PDF) from the published marts.",
)
def quarterly_talent_report(
    context: dg.AssetExecutionContext, talent: TalentResource
) -> dg.MaterializeResult:
    from pipelines.lib.report.render import render_report  # heavy: matplotlib, WeasyPrint

    s = talent.settings
    quarter = quarter_of_partition(context.partition_key)
    result = render_report(
        s.published_db,
        quarter,
        s.reports_dir,
        min_group_size=s.min_group_size,
        assumptions_path=s.assumptions_file,
        restricted_db=s.build_db,
    )
    context.log.info("Rendered %s to %s", quarter, result["html"])
    return dg.MaterializeResult(
        metadata={
            "quarter": quarter,
            "html": dg.MetadataValue.path(str(Path(result["html"]))),
            "pdf": dg.MetadataValue.path(str(Path(result["pdf"]))),
            "charts": result["charts"],
            "sections_unavailable": ", ".join(k for k, v in result["sections"].items() if not v)
            or "none",
            "headlines": dg.MetadataValue.md("\n".join(f"- {h}" for h in result["headlines"])),
        }
    )
