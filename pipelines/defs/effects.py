"""Dagster wiring for the certification-effect statistics (logic: `pipelines/lib/effects/`).

Reads the statistics' panels from the build file (`intermediate.int_engineer_months_complete`
and `int_incident_responses_complete`: the complete months, the month in progress left out),
estimates, and writes the two marts back into schema `marts` of the same file, and
`restricted.certification_effect` beside them: the naive figures of a metric that is not
estimable, which the published mart leaves out. The panels report
their content as their data version, so a night that only adds to the month in progress leaves
them unchanged and the marts are kept (`pipelines/defs/versions.py`). Each DuckDB connection is
closed before the next step so dbt (a subprocess) can open the file again.
"""

import math

import dagster as dg

from pipelines.defs import versions
from pipelines.defs.resources import TalentResource
from pipelines.lib import db

# pandas, pyarrow and the statistics (SciPy, lifelines) are imported when the asset runs:
# loading the definitions should not pay for them.

INPUT_KEYS = [
    dg.AssetKey(["intermediate", "int_engineer_months_complete"]),
    dg.AssetKey(["intermediate", "int_incident_responses_complete"]),
]
OUTPUT_TABLES = (
    "marts.certification_effect",
    "restricted.certification_effect",
    "marts.certification_event_study",
)
CODE_VERSION = versions.source_version("pipelines.lib.effects")
EFFECT_KEY = dg.AssetKey(["marts", "certification_effect"])
EVENT_STUDY_KEY = dg.AssetKey(["marts", "certification_event_study"])


def write_table(con, schema: str, table: str, df, described: tuple[str, dict]) -> None:
    """Create or replace `<schema>.<table>` with its descriptions as comments; Arrow turns NaN
    and pandas' NA into SQL NULL (not a float NaN)."""
    import pyarrow as pa

    arrow = pa.Table.from_pandas(df, preserve_index=False)  # noqa: F841 (used by name in SQL)
    con.execute(f"create schema if not exists {schema}")
    con.execute(f"create or replace table {schema}.{table} as select * from arrow")
    db.describe(con, f"{schema}.{table}", *described)


def write_effect_mart(
    con, table: str, df, min_group_size: int, described: tuple[str, dict]
) -> None:
    """An effect mart twice: `restricted.<table>` (never published) with every figure, the
    naive one of a row that is not estimable too, and `marts.<table>` as published, where such
    a row shows no figure and no interval (`published_effects`)."""
    from pipelines.lib.effects.result import published_effects, restricted_effects

    table_text, columns = described
    restricted = (f"Restricted copy of marts.{table}, never published: {table_text}", columns)
    write_table(con, "restricted", table, restricted_effects(df, min_group_size), restricted)
    write_table(con, "marts", table, published_effects(df, min_group_size), described)


def with_restricted_twins(exists, tables: tuple[str, ...]):
    """`exists` for a step whose marts in `tables` have a restricted twin: the mart counts as
    present only with its twin (a build file from before the twins is computed again)."""

    def both(key: dg.AssetKey) -> bool:
        twin = dg.AssetKey(["restricted", key.path[-1]])
        return exists(key) and (key.path[-1] not in tables or exists(twin))

    return both


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
            code_version=CODE_VERSION,
        ),
        dg.AssetSpec(
            EVENT_STUDY_KEY,
            deps=INPUT_KEYS,
            description="Incident rate ratio by month relative to first certification "
            "(-12..+12, reference month -1).",
            kinds={"python", "duckdb"},
            code_version=CODE_VERSION,
        ),
    ],
)
def certification_statistics(context: dg.AssetExecutionContext, talent: TalentResource):
    """Estimates the effects, unless their panels, code and settings are those the marts in the
    build file were estimated from (the decision before the run, `versions.decide`, leaves it
    out of the run then)."""
    s = talent.settings
    because = versions.because_of(context)
    context.log.info(f"estimating: {because[versions.COMPUTED_BECAUSE]}")
    from pipelines.lib import effects as estimators
    from pipelines.lib.effects.prepare import ENGINEER_MONTHS, INCIDENT_RESPONSES, StatsInputError
    from pipelines.lib.memory import give_back

    with db.connect(s.build_db, read_only=True) as con:
        months, incidents = (
            read_used(con, table) for table in (ENGINEER_MONTHS, INCIDENT_RESPONSES)
        )
    through = months["month"].max() if len(months) else None
    window = f"complete months through {through:%Y-%m}" if through else "no complete month yet"
    context.log.info(f"estimating from {window}; the month in progress is left out")
    try:
        panels = estimators.prepare(months, incidents)
    except StatsInputError as exc:
        raise dg.Failure(str(exc)) from exc
    del months, incidents  # the frames as read: the fits need only the prepared panels
    give_back()
    effects, study = _estimate(s, panels)
    del panels
    give_back()  # the fits' memory, before the next step (pipelines/lib/memory.py)
    _log_effects(context, effects)
    yield dg.MaterializeResult(
        asset_key=EFFECT_KEY,
        metadata={
            **effect_metadata(effects),
            "complete_months_through": str(through.date()) if through else None,
            **because,
        },
    )
    yield dg.MaterializeResult(
        asset_key=EVENT_STUDY_KEY,
        metadata={
            "dagster/row_count": len(study),
            "estimated_months": int(study["estimate"].notna().sum()),
            **because,
        },
    )


def read_used(con, table: str):
    """`table`'s used columns as a pandas frame, equal strings shared (`share_text_columns`:
    at 1,000,000 employees the panels' person keys alone were 1.1 GB as one string per row)."""
    from pipelines.lib.effects.prepare import share_text_columns

    return share_text_columns(con.execute(select_used(con, table)).df())


def select_used(con, table: str) -> str:
    """The select of `table`'s columns the estimators use (`prepare.USED_COLUMNS`); a used
    column the table lacks is left out here, so `prepare` names it in its error."""
    from pipelines.lib.effects.prepare import USED_COLUMNS

    present = {row[0] for row in con.execute(f"describe {table}").fetchall()}
    columns = [f'"{c}"' for c in USED_COLUMNS[table] if c in present]
    return f"select {', '.join(columns) or '*'} from {table}"


def _estimate(s, panels):
    """Estimate and write both marts (one connection), certification_effect with its
    restricted twin; returns them as published."""
    from pipelines.lib import effects as estimators
    from pipelines.lib.effects import result

    effects, study = estimators.analyse_prepared(panels, min_group_size=s.min_group_size)
    with db.connect(s.build_db) as con:
        write_effect_mart(
            con,
            "certification_effect",
            effects,
            s.min_group_size,
            (result.EFFECT_TABLE, result.CERTIFICATION_EFFECT_DESCRIPTIONS),
        )
        write_table(
            con,
            "marts",
            "certification_event_study",
            study,
            (result.EVENT_STUDY_TABLE, result.EVENT_STUDY_DESCRIPTIONS),
        )
    return result.published_effects(effects, s.min_group_size), study


OPERATIONS_INPUT_KEYS = [
    dg.AssetKey(["intermediate", "int_changes"]),
    dg.AssetKey(["restricted", "cluster_utilisation"]),
    dg.AssetKey(["restricted", "capacity_commissioning"]),
]
OPERATIONS_EFFECT_KEY = dg.AssetKey(["marts", "operations_effect"])
OPERATIONS_READS = (
    "intermediate.int_changes",
    "restricted.cluster_utilisation",
    "restricted.capacity_commissioning",
)


@dg.asset(
    key=OPERATIONS_EFFECT_KEY,
    group_name="statistics",
    deps=OPERATIONS_INPUT_KEYS,
    description="What a certified team changes in operations: change failure ratio within "
    "engineer, busy and lost GPU-hour shares per 10 points of certified share (wild cluster "
    "bootstrap), commissioning time ratio; the columns of marts.certification_effect.",
    kinds={"python", "duckdb"},
    code_version=CODE_VERSION,
)
def operations_statistics(context: dg.AssetExecutionContext, talent: TalentResource):
    """Estimates the operations effects, unless their inputs, code and settings are those the
    mart in the build file was estimated from (the decision before the run, `versions.decide`,
    leaves it out of the run then)."""
    s = talent.settings
    from pipelines.lib.effects.operations import (
        OPERATIONS_EFFECT_DESCRIPTIONS,
        OPERATIONS_EFFECT_TABLE,
        operations_effects,
    )

    with db.connect(s.build_db, read_only=True) as con:
        frames = [con.execute(f"select * from {table}").df() for table in OPERATIONS_READS]
    effects = operations_effects(*frames, min_group_size=s.min_group_size)
    with db.connect(s.build_db) as con:
        write_effect_mart(
            con,
            "operations_effect",
            effects,
            s.min_group_size,
            (OPERATIONS_EFFECT_TABLE, OPERATIONS_EFFECT_DESCRIPTIONS),
        )
    _log_effects(context, effects)
    yield dg.MaterializeResult(
        asset_key=OPERATIONS_EFFECT_KEY,
        metadata={**effect_metadata(effects), **versions.because_of(context)},
    )


def _log_effects(context, effects) -> None:
    for row in effects.itertuples(index=False):
        context.log.info(
            f"{row.metric}: {row.estimate:.3f} [{row.ci_low:.3f}, {row.ci_high:.3f}], "
            f"naive {row.naive_estimate:.3f}"
            if row.estimable
            else f"{row.metric}: not estimable: {row.not_estimable_reason}"
        )
