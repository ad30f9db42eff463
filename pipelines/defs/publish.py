"""Publishing: the analyst-facing warehouse file, replaced atomically after every check passed.

The publish asset depends on every `marts/*` asset, so a failed dbt test, a failed blocking
check or a failed statistics/ROI step leaves the previous published file in place.
"""

from collections.abc import Sequence
from datetime import timedelta

import dagster as dg

from pipelines.config import TalentSettings
from pipelines.lib.publish import PublishError, publish

PUBLISHED_KEY = dg.AssetKey(["warehouse", "published"])
# The nightly run must have published within this window, or the freshness check fails.
FRESHNESS_WINDOW = timedelta(hours=26)


def build_publish_defs(upstream: Sequence[dg.AssetKey]) -> dg.Definitions:
    """The publish asset over `upstream` (all marts), its freshness check and sensor."""

    @dg.asset(
        key=PUBLISHED_KEY,
        group_name="publish",
        deps=list(upstream),
        kinds={"duckdb"},
        description=(
            "warehouse/talent.duckdb: the analyst-facing file. Schema `marts` copied from the "
            "build file, checked for personal data, checkpointed, then swapped in atomically "
            "(readers keep their snapshot). Open it read-only."
        ),
        freshness_policy=dg.FreshnessPolicy.time_window(fail_window=FRESHNESS_WINDOW),
    )
    def published(
        context: dg.AssetExecutionContext, settings: TalentSettings
    ) -> dg.MaterializeResult:
        s = settings.get()
        try:
            result = publish(s.build_db, s.published_db, run_id=context.run_id)
        except PublishError as exc:
            raise dg.Failure(description=str(exc)) from exc
        return dg.MaterializeResult(
            metadata={
                "path": dg.MetadataValue.path(str(result.published_path)),
                "size_mb": round(result.size_bytes / 1e6, 2),
                "tables": len(result.tables),
                "rows_by_table": dg.MetadataValue.json(result.tables),
                "published_at": result.published_at,
            }
        )

    freshness_checks = dg.build_last_update_freshness_checks(
        assets=[published], lower_bound_delta=FRESHNESS_WINDOW
    )
    return dg.Definitions(
        assets=[published],
        asset_checks=freshness_checks,
        sensors=[
            dg.build_sensor_for_freshness_checks(
                freshness_checks=freshness_checks, name="warehouse_freshness_sensor"
            )
        ],
        resources={"settings": TalentSettings()},
    )
