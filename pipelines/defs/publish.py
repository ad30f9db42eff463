"""Publishing: the analyst-facing warehouse file, replaced atomically after every check passed.

The publish asset depends on every `marts/*` asset, so a failed dbt test, a failed blocking
check or a failed statistics/ROI step leaves the previous published file in place.
"""

import warnings
from datetime import timedelta
from pathlib import Path

import dagster as dg

from pipelines.defs import careers, dbt, deliveries, effects, plan, roi, versions
from pipelines.defs.resources import TalentResource
from pipelines.lib.publish import PostgresPublish, PublishError, publish

PUBLISHED_KEY = dg.AssetKey(["warehouse", "published"])
# Metadata of the publish: what publishing to PostgreSQL did to analysts' sessions and views
# (run summary warnings, pipelines/execution.py)
POSTGRES_NOTES = "postgres_notes"
# The nightly run must have published within this window, or the freshness check fails.
FRESHNESS_WINDOW = timedelta(hours=26)

# Policy: the published file waits for every mart, so nothing half-built is ever published.
MART_KEYS = sorted(
    {
        key
        for assets in (
            dbt.warehouse_dbt,
            deliveries.source_deliveries,
            effects.certification_statistics,
            effects.operations_statistics,
            careers.programme_career_statistics,
            careers.programme_costs,
            roi.roi_tables,
            plan.workforce_plan,
            plan.workforce_plan_backtest,
        )
        for key in assets.keys
        if key.path[0] == "marts"
    },
    key=lambda k: k.to_user_string(),
)


def mart_grains() -> dict:
    """Each dbt mart's grain, as its dbt tests state it (primary keys on PostgreSQL)."""
    import json

    from pipelines.lib.serving import mart_grains as grains_of

    return grains_of(json.loads(Path(dbt.dbt_project.manifest_path).read_text()))


@dg.asset(
    key=PUBLISHED_KEY,
    group_name="publish",
    deps=MART_KEYS,
    kinds={"duckdb"},
    code_version=versions.source_version(
        "pipelines.lib.publish", "pipelines.lib.postgres", "pipelines.lib.serving"
    ),
    description=(
        "warehouse/talent.duckdb: the analyst-facing file. Schema `marts` copied from the "
        "build file, checked for personal data, checkpointed, then swapped in atomically "
        "(readers keep their snapshot). Open it read-only. With TALENT_PUBLISH_DSN the same "
        "marts replace schema `marts` of that PostgreSQL database in one transaction."
    ),
    freshness_policy=dg.FreshnessPolicy.time_window(fail_window=FRESHNESS_WINDOW),
)
def published(context: dg.AssetExecutionContext, talent: TalentResource):
    """Publishes the marts. A run publishes only when a mart changed since the last publish
    (the decision before the run, `versions.decide`): a night with nothing new leaves the
    analysts' file (and their open connections) alone."""
    s = talent.settings
    try:
        result = publish(
            s.build_db,
            s.published_db,
            run_id=context.run_id,
            min_group_size=s.min_group_size,
            postgres=PostgresPublish(s.publish_dsn, s.publish_reader_role, mart_grains())
            if s.publish_dsn
            else None,
        )
    except PublishError as exc:
        raise dg.Failure(description=str(exc)) from exc
    for note in result.postgres_notes:
        context.log.warning(f"PostgreSQL: {note}")
    yield dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(result.published_path)),
            "size_mb": round(result.size_bytes / 1e6, 2),
            "tables": len(result.tables),
            "rows_by_table": dg.MetadataValue.json(result.tables),
            "published_at": result.published_at,
            **({"postgres": result.postgres} if result.postgres else {}),
            **({POSTGRES_NOTES: result.postgres_notes} if result.postgres_notes else {}),
            **versions.because_of(context),
        }
    )


with warnings.catch_warnings():
    # "superseded" by FreshnessPolicy, which the asset has too; the check and its sensor are what
    # make a stale warehouse a failed check that alerting can watch (README: Automation). The
    # sensor runs from the start, like the schedules.
    warnings.simplefilter("ignore", dg.SupersessionWarning)
    freshness_checks = dg.build_last_update_freshness_checks(
        assets=[published], lower_bound_delta=FRESHNESS_WINDOW
    )
    warehouse_freshness_sensor = dg.build_sensor_for_freshness_checks(
        freshness_checks=freshness_checks,
        name="warehouse_freshness_sensor",
        default_status=dg.DefaultSensorStatus.RUNNING,
    )
