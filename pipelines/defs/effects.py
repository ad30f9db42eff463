"""Dagster wiring for the certification-effect statistics (logic: `pipelines/lib/effects/`).

Reads the complete months of the two intermediate models from the build file (the month in
progress is left out, `lib/effects/window.py`), estimates, and writes the two marts back into
schema `marts` of the same file. When those rows (and the statistics code and settings) are the
ones the marts in the file were estimated from, the marts are kept (`lib.fingerprint`): a night
that only adds to the month in progress does not re-estimate. Each DuckDB connection is closed
before the next step so dbt (a subprocess) can open the file again.
"""

import math

import dagster as dg

from pipelines.defs.resources import TalentResource
from pipelines.lib import db, fingerprint

# pandas, pyarrow, DuckDB and the statistics (SciPy, lifelines) are imported when the asset
# runs: loading the definitions should not pay for them.

INPUT_KEYS = [
    dg.AssetKey(["intermediate", "int_engineer_months"]),
    dg.AssetKey(["intermediate", "int_incident_responses"]),
]
OUTPUT_TABLES = ("marts.certification_effect", "marts.certification_event_study")
STEP = "certification_statistics"
EFFECT_KEY = dg.AssetKey(["marts", "certification_effect"])
EVENT_STUDY_KEY = dg.AssetKey(["marts", "certification_event_study"])


def _write(con, table: str, df) -> None:
    """Create or replace `marts.<table>` with its descriptions as comments; Arrow turns NaN into
    SQL NULL (not a float NaN)."""
    import pyarrow as pa

    from pipelines.lib.effects import result

    arrow = pa.Table.from_pandas(df, preserve_index=False)  # noqa: F841 (used by name in SQL)
    con.execute("create schema if not exists marts")
    con.execute(f"create or replace table marts.{table} as select * from arrow")
    described = {
        "certification_effect": (result.EFFECT_TABLE, result.EFFECT_DESCRIPTIONS),
        "certification_event_study": (result.EVENT_STUDY_TABLE, result.EVENT_STUDY_DESCRIPTIONS),
    }
    db.describe(con, f"marts.{table}", *described[table])


def _number(x) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else round(float(x), 4)


def effect_metadata(effects) -> dict:
    """Estimates with CIs and naive values, one JSON entry per metric, for the asset page."""
    import pandas as pd

    meta = {}
    for row in effects.itertuples(index=False):
        meta[row.metric] = dg.MetadataValue.json(
            {
                "estimate": _number(row.estimate),
                "ci_low": _number(row.ci_low),
                "ci_high": _number(row.ci_high),
                "naive_estimate": _number(row.naive_estimate),
                "n_engineers": None if pd.isna(row.n_engineers) else int(row.n_engineers),
                "n_events": None if pd.isna(row.n_events) else int(row.n_events),
                "estimable": bool(row.estimable),
                "finding": bool(row.finding),
                "pretrend_p": _number(row.pretrend_p),
                "not_estimable_reason": None
                if pd.isna(row.not_estimable_reason)
                else str(row.not_estimable_reason),
            }
        )
    meta["dagster/row_count"] = len(effects)
    return meta


@dg.multi_asset(
    name="certification_statistics",
    group_name="statistics",
    specs=[
        dg.AssetSpec(
            EFFECT_KEY,
            deps=INPUT_KEYS,
            description="Adjusted effect of holding a certification on incident rate, MTTR and "
            "voluntary exit, with 95 % CIs and the naive figures beside them.",
            kinds={"python", "duckdb"},
        ),
        dg.AssetSpec(
            EVENT_STUDY_KEY,
            deps=INPUT_KEYS,
            description="Incident rate ratio by month relative to first certification "
            "(-12..+12, reference month -1).",
            kinds={"python", "duckdb"},
        ),
    ],
)
def certification_statistics(context: dg.AssetExecutionContext, talent: TalentResource):
    """Estimates the effects, unless the inputs are those of the effects already in the file."""
    from pipelines.lib.effects.window import complete_month_queries

    s = talent.settings
    with db.connect(s.build_db, read_only=True) as con:
        through, queries = complete_month_queries(con)
        fp = fingerprint.queries_fingerprint(
            con,
            queries,
            fingerprint.package_source("pipelines.lib.effects"),
            f"min_group_size={s.min_group_size}",
        )
        kept = fingerprint.is_current(con, STEP, fp, OUTPUT_TABLES)
        if kept:
            effects = con.execute("select * from marts.certification_effect").df()
            study = con.execute("select * from marts.certification_event_study").df()
        else:
            months, incidents = (con.execute(sql).df() for sql in queries.values())
    window = f"complete months through {through:%Y-%m}" if through else "no complete month yet"
    if kept:
        context.log.info(f"inputs unchanged since the last estimate ({window}): the marts are kept")
    else:
        context.log.info(f"estimating from {window}; the month in progress is left out")
        effects, study = _estimate(s, months, incidents, fp)
    _log_effects(context, effects)
    yield dg.MaterializeResult(
        asset_key=EFFECT_KEY,
        metadata={
            **effect_metadata(effects),
            "inputs_unchanged": kept,
            "complete_months_through": str(through) if through else None,
        },
    )
    yield dg.MaterializeResult(
        asset_key=EVENT_STUDY_KEY,
        metadata={
            "dagster/row_count": len(study),
            "estimated_months": int(study["estimate"].notna().sum()),
            "inputs_unchanged": kept,
        },
    )


def _estimate(s, months, incidents, fp: str):
    """Estimate; write both marts and the fingerprint `fp` of their inputs (one connection)."""
    from pipelines.lib import effects as estimators

    effects, study = estimators.analyse(months, incidents, min_group_size=s.min_group_size)
    with db.connect(s.build_db) as con:
        _write(con, "certification_effect", effects)
        _write(con, "certification_event_study", study)
        fingerprint.remember(con, STEP, fp)
    return effects, study


def _log_effects(context, effects) -> None:
    for row in effects.itertuples(index=False):
        context.log.info(
            f"{row.metric}: {row.estimate:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}], "
            f"naive {row.naive_estimate:.3f}"
            if row.estimable
            else f"{row.metric}: not estimable: {row.not_estimable_reason}"
        )
