"""Dagster wiring for the programme and career statistics (logic: `pipelines/lib/careers/`).

`programme_career_statistics` reads the programme episodes as of the end of the last complete
month (`intermediate.int_programme_episodes_complete`) and the statistics' complete-month panels
(`int_engineer_months_complete`, `int_incident_responses_complete`) read-only from the build
file, and writes four marts into schema `marts` of the same file with their descriptions as
comments; `programme_comparison` and `promotion_effect` also into schema `restricted`, where a
row that is not estimable keeps the naive figures the published mart leaves out. `programme_costs` prices the episodes as of the as-of date
(`intermediate.int_programme_episodes`, the episodes `marts.programme_outcomes` counts) with the
base values of the assumptions file. Both are kept under the same rule as the certification
statistics: a run computes them only when the decision before it (`versions.decide`) found
their inputs, code or the settings they read changed. All three inputs of the statistics
change only when a month closes (or a late delivery reaches back), so a nightly in the middle
of a month keeps them.
"""

import dagster as dg

from pipelines.defs import versions
from pipelines.defs.effects import (
    _number,
    read_used,
    write_effect_mart,
    write_table,
)
from pipelines.defs.resources import TalentResource
from pipelines.lib import db

# pandas, pyarrow and the statistics (SciPy, lifelines, statsmodels) are imported when the
# asset runs: loading the definitions should not pay for them.

EPISODES_KEY = dg.AssetKey(["intermediate", "int_programme_episodes_complete"])
EPISODES_TO_DATE_KEY = dg.AssetKey(["intermediate", "int_programme_episodes"])
MONTHS_KEY = dg.AssetKey(["intermediate", "int_engineer_months_complete"])
INCIDENTS_KEY = dg.AssetKey(["intermediate", "int_incident_responses_complete"])
INPUT_KEYS = [EPISODES_KEY, MONTHS_KEY, INCIDENTS_KEY]
# the careers package estimates with pipelines.lib.effects: both are the code
CODE_VERSION = versions.source_version("pipelines.lib.careers", "pipelines.lib.effects")
MART_KEYS = {
    name: dg.AssetKey(["marts", name])
    for name in (
        "time_to_certify",
        "programme_comparison",
        "programme_next_level",
        "time_in_level",
        "promotion_effect",
    )
}
COSTS_KEY = dg.AssetKey(["marts", "programme_costs"])
# marts with an `estimable` flag: written with a restricted twin that keeps the naive figures of
# the rows that are not estimable, which the published mart leaves out
EFFECT_MARTS = ("programme_comparison", "promotion_effect")
# what each mart is computed from (the step reads all three and recomputes all five together)
DEPS = {
    "time_to_certify": [EPISODES_KEY],
    "programme_comparison": INPUT_KEYS,
    "time_in_level": [MONTHS_KEY],
    "promotion_effect": [MONTHS_KEY],
    "programme_next_level": [EPISODES_KEY, MONTHS_KEY],
}
DESCRIPTIONS = {
    "time_to_certify": "Kaplan-Meier time from first enrolment to certification by programme, "
    "track and cohort (median, quartiles, shares certified within 6 and 12 months).",
    "programme_comparison": "Each programme against online courses, adjusted for level, tenure "
    "and track: time to certify, first-attempt pass odds, voluntary exit, and the incident and "
    "MTTR ratios of the engineers it certified; naive figures beside.",
    "time_in_level": "Kaplan-Meier months at each skill level until promotion, against the "
    "ladder's time bands.",
    "programme_next_level": "Kaplan-Meier months from a programme episode's first enrolment to "
    "the next skill level, per programme type.",
    "promotion_effect": "Cox hazard ratio of promotion while certified vs not, at equal tenure "
    "and level, with the naive ever-vs-never figure beside.",
}


def _write(con, table: str, df, min_group_size: int) -> None:
    """Create or replace `marts.<table>` with its descriptions as comments; an effect mart
    (`EFFECT_MARTS`) also `restricted.<table>` (`write_effect_mart`)."""
    from pipelines.lib.careers import MART_DESCRIPTIONS

    if table in EFFECT_MARTS:
        write_effect_mart(con, table, df, min_group_size, MART_DESCRIPTIONS[table])
    else:
        write_table(con, "marts", table, df, MART_DESCRIPTIONS[table])


def comparison_metadata(frame) -> dict:
    """One JSON entry per programme: its metrics' estimates, intervals and naive figures."""
    import pandas as pd

    meta: dict = {}
    for programme, rows in frame.groupby("programme_type", sort=False):
        meta[f"vs_online/{programme}"] = dg.MetadataValue.json(
            {
                row.metric: {
                    "estimate": _number(row.estimate),
                    "ci_low": _number(row.ci_low),
                    "ci_high": _number(row.ci_high),
                    "naive_estimate": _number(row.naive_estimate),
                    "estimable": bool(row.estimable),
                    "finding": bool(row.finding),
                    "not_estimable_reason": None
                    if pd.isna(row.not_estimable_reason)
                    else str(row.not_estimable_reason),
                }
                for row in rows.itertuples(index=False)
            }
        )
    return meta


def _metadata(name: str, df) -> dict:
    meta: dict = {"dagster/row_count": len(df)}
    if "suppressed" in df:
        meta["suppressed_rows"] = int(df["suppressed"].sum())
    if name == "programme_comparison":
        meta |= comparison_metadata(df)
        meta["estimable_rows"] = int(df["estimable"].sum())
    if name == "promotion_effect" and len(df):
        row = df.iloc[0]
        meta |= {
            "estimate": _number(row["estimate"]),
            "ci_low": _number(row["ci_low"]),
            "ci_high": _number(row["ci_high"]),
            "naive_estimate": _number(row["naive_estimate"]),
            "estimable": bool(row["estimable"]),
        }
    if name == "time_to_certify":
        overall = df[(df["cohort"] == "all") & ~df["suppressed"]]
        meta["groups_with_median"] = int(overall["median_months"].notna().sum())
    return meta


@dg.multi_asset(
    name="programme_career_statistics",
    group_name="statistics",
    specs=[
        dg.AssetSpec(
            key,
            deps=DEPS[name],
            description=DESCRIPTIONS[name],
            kinds={"python", "duckdb"},
            code_version=CODE_VERSION,
        )
        for name, key in MART_KEYS.items()
    ],
)
def programme_career_statistics(context: dg.AssetExecutionContext, talent: TalentResource):
    """Estimates the programme and career statistics, unless their inputs, code and settings
    are those the marts in the build file were estimated from (the decision before the run,
    `versions.decide`, leaves it out of the run then)."""
    s = talent.settings
    because = versions.because_of(context)
    context.log.info(f"estimating: {because[versions.COMPUTED_BECAUSE]}")
    from pipelines.lib import careers
    from pipelines.lib.effects.prepare import ENGINEER_MONTHS, INCIDENT_RESPONSES, StatsInputError
    from pipelines.lib.memory import give_back

    with db.connect(s.build_db, read_only=True) as con:
        months, incidents = (
            read_used(con, table) for table in (ENGINEER_MONTHS, INCIDENT_RESPONSES)
        )
        episodes = _read_episodes(con, careers.EPISODES)
    try:
        inputs = careers.prepare(episodes, months, incidents)
        del months, incidents, episodes  # as read: the fits need only the prepared frames
        give_back()
        frames = careers.programme_and_career_statistics_prepared(inputs, s.min_group_size)
    except StatsInputError as exc:
        raise dg.Failure(str(exc)) from exc
    del inputs
    give_back()  # the fits' memory, before the next step (pipelines/lib/memory.py)
    with db.connect(s.build_db) as con:
        for name in MART_KEYS:
            _write(con, name, frames[name], s.min_group_size)
    from pipelines.lib.effects.result import published_effects

    for name, key in MART_KEYS.items():
        frame = frames[name]
        if name in EFFECT_MARTS:  # what the asset page shows is what is published
            frame = published_effects(frame, s.min_group_size)
        context.log.info(f"marts.{name}: {len(frame)} rows")
        yield dg.MaterializeResult(asset_key=key, metadata={**_metadata(name, frame), **because})


def _read_episodes(con, table: str):
    """The columns of the episodes the step reads (a missing one is named by `prepare`)."""
    from pipelines.lib import careers

    present = {row[0] for row in con.execute(f"describe {table}").fetchall()}
    columns = [f'"{c}"' for c in careers.episode_columns(table) if c in present]
    from pipelines.lib.effects.prepare import share_text_columns

    return share_text_columns(con.execute(f"select {', '.join(columns)} from {table}").df())


@dg.asset(
    key=COSTS_KEY,
    group_name="statistics",
    deps=[EPISODES_TO_DATE_KEY],
    kinds={"python", "duckdb"},
    code_version=CODE_VERSION,
    description="Fees, exam fees and time priced with the assumptions file, per programme and "
    "track, and per certification earned, over the episodes as of the as-of date (those "
    "marts.programme_outcomes counts).",
)
def programme_costs(context: dg.AssetExecutionContext, talent: TalentResource):
    """Prices the programme episodes, unless the episodes, the code and the settings it reads
    (min_group_size, the assumptions file) are those the mart was computed from."""
    s = talent.settings
    from pipelines.lib import careers
    from pipelines.lib.effects.prepare import StatsInputError
    from pipelines.lib.roi.assumptions import RoiInputError, base_params, load_assumptions

    try:
        prices = base_params(load_assumptions(s.assumptions_file))
    except RoiInputError as exc:
        raise dg.Failure(str(exc)) from exc
    with db.connect(s.build_db, read_only=True) as con:
        episodes = _read_episodes(con, careers.EPISODES_TO_DATE)
    try:
        frame = careers.programme_costs(episodes, prices, s.min_group_size)
    except StatsInputError as exc:
        raise dg.Failure(str(exc)) from exc
    with db.connect(s.build_db) as con:
        _write(con, "programme_costs", frame, s.min_group_size)
    context.log.info(f"marts.programme_costs: {len(frame)} rows")
    yield dg.MaterializeResult(
        metadata={**_metadata("programme_costs", frame), **versions.because_of(context)}
    )
