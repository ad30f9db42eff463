"""Dagster wiring for the workforce plan (logic: `pipelines/lib/plan/`).

`workforce_plan` reads the fleet plan (`<sources>/plans/fleet_plan.csv` or `.yaml`), the measured
rates and the team today from the build file, finds the cheapest plan for the next
`PLAN_QUARTERS` quarters (HiGHS; Monte Carlo over the rates' intervals) and writes
`marts.workforce_plan` and `marts.workforce_plan_rates`. A fleet plan the templates cannot be met
for in time gives the closest plan, its shortfall per role and quarter in the mart (the run
warns; `talent plan` refuses it with what is missing). Without a fleet plan both marts are
written empty and the run says why. The fleet plan's content is part of the step's code
version (`versions.SETTINGS_READ`): a new plan, new rates or new code plan again.
"""

import dagster as dg

from pipelines.defs import versions
from pipelines.defs.effects import write_table
from pipelines.defs.resources import TalentResource
from pipelines.lib import db

PLAN_KEY = dg.AssetKey(["marts", "workforce_plan"])
RATES_KEY = dg.AssetKey(["marts", "workforce_plan_rates"])
PLAN_QUARTERS = 8
TIME_LIMIT_SECONDS = 60.0  # a backstop: the node limit (optimise.Problem.node_limit) stops HiGHS first, so a plan does not depend on the machine's speed
INPUT_KEYS = [
    dg.AssetKey(["restricted", "attrition"]),
    dg.AssetKey(["restricted", "level_progression"]),
    dg.AssetKey(["restricted", "salary_bands"]),
    dg.AssetKey(["marts", "time_to_certify"]),
    dg.AssetKey(["marts", "programme_costs"]),
    dg.AssetKey(["intermediate", "int_engineer_months"]),
    dg.AssetKey(["intermediate", "int_programme_episodes"]),
]
CODE_VERSION = versions.source_version("pipelines.lib.plan")


@dg.multi_asset(
    name="workforce_plan",
    group_name="plan",
    specs=[
        dg.AssetSpec(
            PLAN_KEY,
            deps=INPUT_KEYS,
            description="The cheapest plan (HiGHS) staffing the fleet plan's team templates "
            "with the company's measured rates: hires, programme starts, expected engineers, "
            "cost and probability of meeting the templates per quarter, role family and level.",
            kinds={"python", "duckdb"},
            code_version=CODE_VERSION,
        ),
        dg.AssetSpec(
            RATES_KEY,
            deps=INPUT_KEYS,
            description="Every rate the workforce plan used: value, interval, the mart and "
            "window it was measured in, or the domain figure it falls back to.",
            kinds={"python", "duckdb"},
            code_version=CODE_VERSION,
        ),
    ],
)
def workforce_plan(context: dg.AssetExecutionContext, talent: TalentResource):
    """Plans again unless the inputs, the fleet plan, the code and the settings are those the
    marts were computed from (the decision before the run, `versions.decide`, leaves it out of
    the run then)."""
    s = talent.settings
    from pipelines.lib.plan.build import (
        PLAN_COLUMNS,
        PLAN_DESCRIPTION,
        RATES_COLUMNS,
        RATES_DESCRIPTION,
        empty_frames,
        plan_frame,
        plan_from_warehouse,
        rates_frame,
    )
    from pipelines.lib.plan.fleet import PlanInputError, find_fleet_plan, read_fleet_plan
    from pipelines.lib.plan.optimise import PlanInfeasible
    from pipelines.lib.roi.assumptions import RoiInputError, load_assumptions

    meta: dict = {}
    run = None
    try:
        fleet = read_fleet_plan(find_fleet_plan(s.sources_dir))
    except PlanInputError as exc:
        if "no fleet plan in" not in str(exc):
            raise dg.Failure(str(exc)) from exc
        context.log.warning(f"no workforce plan: {exc}")
        frames, meta["note"] = empty_frames(), str(exc)
    else:
        try:
            assumptions = load_assumptions(s.assumptions_file)
            with db.connect(s.build_db, read_only=True) as con:
                run = plan_from_warehouse(
                    con,
                    fleet,
                    PLAN_QUARTERS,
                    assumptions,
                    s.min_group_size,
                    closest=True,
                    time_limit=TIME_LIMIT_SECONDS,
                )
        except (PlanInputError, RoiInputError) as exc:
            raise dg.Failure(str(exc)) from exc
        except PlanInfeasible as exc:
            # the company's data give no plan (a cost that is not a number): the plan is empty
            # and says why; the night goes on
            context.log.warning(f"no workforce plan: {exc}")
            run = None
            frames, meta["note"] = empty_frames(), f"no workforce plan: {exc}"
    if run is not None:
        for note in run.plan.notes:
            context.log.warning(note)
        frames = (plan_frame(run, s.min_group_size), rates_frame(run.rates))
        meta |= {
            "cost_usd": dg.MetadataValue.float(run.plan.cost),
            "probability": dg.MetadataValue.float(run.plan.probability),
            "shortfall_engineer_quarters": dg.MetadataValue.float(float(run.plan.shortfall.sum())),
            "measured_rates": int(frames[1]["measured"].sum()),
        }
    with db.connect(s.build_db) as con:
        write_table(con, "marts", "workforce_plan", frames[0], (PLAN_DESCRIPTION, PLAN_COLUMNS))
        write_table(
            con, "marts", "workforce_plan_rates", frames[1], (RATES_DESCRIPTION, RATES_COLUMNS)
        )
    for key, frame in zip((PLAN_KEY, RATES_KEY), frames, strict=True):
        yield dg.MaterializeResult(
            asset_key=key,
            metadata={"dagster/row_count": len(frame), **meta, **versions.because_of(context)},
        )


BACKTEST_KEY = dg.AssetKey(["marts", "workforce_plan_backtest"])
# the backtest measures the programmes from the episodes as they were known on its day, not
# from marts.time_to_certify and programme_costs (which know every later pass)
BACKTEST_INPUT_KEYS = [
    *(k for k in INPUT_KEYS if k.path[-1] not in ("time_to_certify", "programme_costs")),
    dg.AssetKey(["restricted", "level_mix"]),
    dg.AssetKey(["restricted", "training_spend"]),
    dg.AssetKey(["marts", "fleet_size"]),
]


@dg.asset(
    key=BACKTEST_KEY,
    group_name="plan",
    deps=BACKTEST_INPUT_KEYS,
    kinds={"python", "duckdb"},
    # the backtest measures the programmes with the careers code (Kaplan-Meier, costs)
    code_version=versions.source_version("pipelines.lib.plan", "pipelines.lib.careers"),
    description="The workforce planner run as of 4 and 8 quarters ago on what was known then "
    "(the team then, rates measured from data before that day, the fleet as it actually grew "
    "as the plan), against the headcount, certified engineers, exits and training spend that "
    "followed: forecast, actual and forecast error per quarter and measure.",
)
def workforce_plan_backtest(context: dg.AssetExecutionContext, talent: TalentResource):
    """Backtests again unless the inputs, the code and the settings are those the mart was
    computed from (the decision before the run, `versions.decide`, leaves it out of the run
    then). It needs no fleet plan: the fleet's history is the plan."""
    s = talent.settings
    from pipelines.lib.plan.backtest import BACKTEST_COLUMNS, BACKTEST_DESCRIPTION, backtest_frame
    from pipelines.lib.plan.fleet import PlanInputError
    from pipelines.lib.roi.assumptions import RoiInputError, base_params, load_assumptions

    try:
        assumptions = load_assumptions(s.assumptions_file)
        with db.connect(s.build_db, read_only=True) as con:
            frame, notes = backtest_frame(
                con,
                assumptions,
                base_params(assumptions),
                s.min_group_size,
                time_limit=TIME_LIMIT_SECONDS,
            )
    except (PlanInputError, RoiInputError) as exc:
        raise dg.Failure(str(exc)) from exc
    for note in notes:
        context.log.warning(note)
    with db.connect(s.build_db) as con:
        write_table(
            con,
            "marts",
            "workforce_plan_backtest",
            frame,
            (BACKTEST_DESCRIPTION, BACKTEST_COLUMNS),
        )
    yield dg.MaterializeResult(
        metadata={
            "dagster/row_count": len(frame),
            "origins": ", ".join(sorted(set(frame["origin_quarter"].astype(str)))),
            **versions.because_of(context),
        }
    )
