"""`marts/source_deliveries`: which exports this warehouse was built from, and what is missing.

Thin wiring over `pipelines.lib.deliveries`: reads the raw layer's manifest and writes one row
per export of the contract into the build file (after dbt built it), so analysts and the
report's first page see the same "no fleet export: team templates by fleet size not shown"
that the run summary prints.
"""

from collections.abc import Iterator

import dagster as dg

from pipelines.defs import versions
from pipelines.defs.resources import TalentResource
from pipelines.lib import db
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.deliveries import write_source_deliveries
from pipelines.lib.ingest.check import MISSING_CONSEQUENCE

SOURCE_DELIVERIES_KEY = dg.AssetKey(["marts", "source_deliveries"])


@dg.asset(
    key=SOURCE_DELIVERIES_KEY,
    group_name="warehouse",
    # every raw export it summarises; a dbt mart orders it after the build file exists
    deps=[dg.AssetKey(["raw", name]) for name in EXPORTS] + [dg.AssetKey(["marts", "dim_date"])],
    kinds={"python", "duckdb"},
    code_version=versions.source_version("pipelines.lib.deliveries", "pipelines.lib.ingest.check"),
    description="What the warehouse was built from (grain: export): files, rows loaded and "
    "quarantined, periods and vendor profiles per export; for an export not delivered, what "
    "cannot be shown without it.",
)
def source_deliveries(
    context: dg.AssetExecutionContext, talent: TalentResource
) -> Iterator[dg.MaterializeResult]:
    s = talent.settings
    if not s.build_db.exists():
        raise dg.Failure(f"{s.build_db} does not exist: run the warehouse (dbt) assets first.")
    with db.connect(s.build_db) as con:
        missing = write_source_deliveries(con, s.raw_db)
    for name in missing:
        context.log.info(f"{name} not delivered: {MISSING_CONSEQUENCE[name]}")
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(EXPORTS),
            "exports_delivered": len(EXPORTS) - len(missing),
            "exports_missing": dg.MetadataValue.json(missing),
            **versions.because_of(context),
        }
    )
