"""The planner run as of 4 and 8 quarters ago on the company's own history, against what happened.

As of a past quarter's end (the origin) the planner sees only what was known then: the team at
the origin's last month, exits, promotions and pay measured up to it (`warehouse.read_rates`
with that day), and the times to certify and costs per start measured over the programme
episodes that had begun by then, each followed no further than the origin (the Kaplan-Meier and
cost code of the `time_to_certify` and `programme_costs` marts, `pipelines.lib.careers`). Its
"fleet plan" is the fleet as it actually grew after the origin (`marts.fleet_size` at each
quarter's end). The forecast is the planned team's expected counts summed over the roles the
templates need; the actuals are read from the marts for the same roles and quarters:

- headcount: `restricted.level_mix` at the quarter's last month end (the roles' engineers at
  levels 1-5);
- certified_engineers: engineers of those roles holding every certification of their role's
  track at the quarter's last month (`intermediate.int_engineer_months`; a prerequisite counts
  as held when a certification requiring it is, as in the team the planner starts from);
- exits: separations and transfers out of those roles in the quarter (`restricted.attrition`,
  quarter rows by role family: the exits the planner's exit rates are measured from);
- training_spend_usd: the quarter's charged training and exam spend (`restricted.training_spend`,
  all categories) against the plan's programme starts priced at its cost per start.

The forecast error is forecast - actual; its relative error is that over the actual.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from pipelines.lib.plan import warehouse as wh
from pipelines.lib.plan.build import PlanRun, plan_from_warehouse
from pipelines.lib.plan.fleet import FleetRow
from pipelines.lib.plan.model import held_in_track

ORIGINS = (4, 8)  # quarters back from the last quarter of the data
MEASURES = ("headcount", "certified_engineers", "exits", "training_spend_usd")
BACKTEST_DESCRIPTION = (
    "The workforce planner run as of 4 and 8 quarters before the data's last quarter, on what "
    "was known then (the team then, rates measured only from data before that day, the fleet "
    "as it actually grew after it as the fleet plan), against what happened in each quarter "
    "after it: headcount, certified engineers, exits and training spend of the roles the "
    "templates need, with the forecast error. Grain: quarters_back, quarter, measure."
)
BACKTEST_COLUMNS = {
    "quarters_back": "how many quarters before the data's last quarter the planner was run (4 "
    "or 8)",
    "origin_quarter": "the last quarter the planner saw, YYYY-Qn",
    "as_of_date": "the day the planner planned from (the origin quarter's last day)",
    "quarter": "the quarter forecast, YYYY-Qn",
    "quarters_ahead": "quarters between the origin and this quarter (1 = the next)",
    "measure": "headcount, certified_engineers (holding the role's whole track), exits or "
    "training_spend_usd",
    "forecast": "the plan's expected value (NULL when suppressed)",
    "actual": "what the marts record for the quarter (NULL when suppressed)",
    "forecast_error": "forecast - actual (NULL when suppressed)",
    "absolute_error": "|forecast - actual| (NULL when suppressed)",
    "relative_error": "(forecast - actual) / actual; NULL when the actual is 0 or suppressed",
    "plan_cost_usd": "what the backtest plan adds over its quarters (hiring, starts, added pay)",
    "measured_rates": "of the rates the backtest plan used, how many the company's data measured",
    "rates_total": "rates the backtest plan used",
    "suppressed": "the roles had 1..min_group_size-1 engineers at the quarter's end: figures "
    "left out",
}


def fleet_history(con, quarters: list[str]) -> list[FleetRow]:
    """The fleet as it was at each quarter's last month end (`marts.fleet_size`), as a plan."""
    ends = [wh.quarter_end(q) for q in quarters]
    rows = con.execute(
        """
        select cluster, month_end, gpu_count from marts.fleet_size
        where month_end in (select unnest(?::date[])) and gpu_count is not null
        order by cluster, month_end
        """,
        [ends],
    ).fetchall()
    return [FleetRow(c, wh.quarter_of(end), int(g), 0) for c, end, g in rows]


def programme_rates_as_of(as_of: date, prices: dict, min_group: int):
    """Measure the times to certify and the costs per start over the episodes begun by
    `as_of`, each followed no further than it (a pass after it is not yet known)."""
    from pipelines.lib.careers.costs import programme_costs
    from pipelines.lib.careers.programmes import km_summary

    table = "intermediate.int_programme_episodes"

    def measure(con, rates) -> None:
        ep = con.execute(
            f"""
            select person_key, programme_type, certification_code,
                   least(months_followed, date_diff('day', first_enrolled_on, ?::date) / 30.4375)
                       as months,
                   coalesce(certified and certified_on <= ?::date, false) as certified,
                   coalesce(fees_usd, 0) as fees_usd, coalesce(exam_fees_usd, 0) as exam_fees_usd,
                   coalesce(training_hours, 0) as training_hours,
                   coalesce(apprenticeship, false) as apprenticeship,
                   first_enrolled_on
            from {table} where first_enrolled_on <= ?::date
            """,
            [as_of, as_of, as_of],
        ).df()
        if ep.empty:
            return
        window = wh.window_text(ep["first_enrolled_on"].min().date(), as_of)
        where = f"{table} begun by {as_of.isoformat()}, followed to it"
        times = []
        for (prog, code), g in ep.groupby(["programme_type", "certification_code"]):
            if len(g) >= min_group:
                k = km_summary(g["months"].to_numpy(float), g["certified"].to_numpy(bool))
                times.append(
                    (
                        prog,
                        code,
                        k["median_months"],
                        k["median_ci_low"],
                        k["median_ci_high"],
                        k["certified_within_12m_share"],
                        len(g),
                    )
                )
        wh.apply_time_rows(times, rates, window, f"{where} (Kaplan-Meier as in time_to_certify")
        costs = programme_costs(ep, prices, min_group)
        use = costs[
            ~costs["suppressed"].astype(bool)
            & (costs["certification_code"] != "all")
            & (costs["participants"] > 0)
        ]
        wh.apply_cost_rows(
            [
                (r.programme_type, r.certification_code, r.total_cost_usd / r.participants, n)
                for r, n in zip(use.itertuples(), use["participants"], strict=True)
            ],
            rates,
            window,
            f"{where}, priced as in programme_costs",
        )

    return measure


def _quarter_months(quarters: list[str]) -> list[date]:
    return [wh.quarter_end(q).replace(day=1) for q in quarters]


def actuals(con, run: PlanRun, quarters: list[str]) -> dict[str, np.ndarray]:
    """What happened in `quarters` for the plan's roles, per measure (see the module text)."""
    roles = [r.name for r in run.demand.roles]
    tracks = {r.name: r.track for r in run.demand.roles}
    ends = [wh.quarter_end(q) for q in quarters]
    months = _quarter_months(quarters)
    out = {m: np.zeros(len(quarters)) for m in MEASURES}
    head = dict(
        con.execute(
            """
            select month_end, sum(headcount) from restricted.level_mix
            where month_end in (select unnest(?::date[]))
              and role_family in (select unnest(?::varchar[])) and skill_level between 1 and 5
            group by all
            """,
            [ends, roles],
        ).fetchall()
    )
    held = con.execute(
        """
        select month, role_family, coalesce(active_certification_codes, [])
        from intermediate.int_engineer_months
        where month in (select unnest(?::date[])) and active_at_month_end
          and skill_level between 1 and 5 and role_family in (select unnest(?::varchar[]))
        """,
        [months, roles],
    ).fetchall()
    exits = dict(
        con.execute(
            """
            select period_start, sum(separations + transfers_out) from restricted.attrition
            where period_type = 'quarter' and segment_type = 'role_family'
              and segment_value in (select unnest(?::varchar[]))
            group by all
            """,
            [roles],
        ).fetchall()
    )
    spend = dict(
        con.execute(
            "select quarter, sum(spend_usd) from restricted.training_spend group by all"
        ).fetchall()
    )
    for t, q in enumerate(quarters):
        start = wh.quarter_start(q)
        out["headcount"][t] = float(head.get(ends[t], 0) or 0)
        out["certified_engineers"][t] = sum(
            held_in_track(codes, tracks[role]) == len(tracks[role])
            for month, role, codes in held
            if month == months[t]
        )
        out["exits"][t] = float(exits.get(start, 0) or 0)
        out["training_spend_usd"][t] = float(spend.get(start, 0) or 0)
    return out


def forecasts(run: PlanRun) -> dict[str, np.ndarray]:
    """The plan's expected counts per quarter, summed over its roles and levels."""
    p = run.plan.expected
    return {
        "headcount": p.head[0].sum((0, 1)),
        "certified_engineers": p.compliant[0].sum((0, 1)),
        "exits": p.exits[0].sum((0, 1)),
        "training_spend_usd": p.training_cost[0].sum((0, 1)),
    }


def backtest_rows(
    run: PlanRun, back: int, actual: dict[str, np.ndarray], min_group: int
) -> list[dict]:
    """The mart's rows of one backtest: each quarter and measure, forecast against actual."""
    from pipelines.lib.plan.build import added_cost

    quarters = run.plan.problem.quarter_labels
    fc = forecasts(run)
    cost = float(added_cost(run).sum())
    everything = run.rates.all()
    rows = []
    for t, q in enumerate(quarters):
        hidden = 0 < actual["headcount"][t] < min_group
        for m in MEASURES:
            # the errors of the figures as published, so that the columns agree with each other
            f, a = round(float(fc[m][t]), 2), round(float(actual[m][t]), 2)
            rows.append(
                {
                    "quarters_back": back,
                    "origin_quarter": wh.quarter_of(run.as_of),
                    "as_of_date": run.as_of,
                    "quarter": q,
                    "quarters_ahead": t + 1,
                    "measure": m,
                    "forecast": None if hidden else f,
                    "actual": None if hidden else a,
                    "forecast_error": None if hidden else round(f - a, 2),
                    "absolute_error": None if hidden else round(abs(f - a), 2),
                    "relative_error": None if hidden or a == 0 else round((f - a) / a, 4),
                    "plan_cost_usd": round(cost, 2),
                    "measured_rates": sum(r.measured for r in everything),
                    "rates_total": len(everything),
                    "suppressed": bool(hidden),
                }
            )
    return rows


def run_backtest(
    con, back: int, assumptions: dict | None, prices: dict, min_group: int = 5, **problem_kw
) -> tuple[PlanRun, dict[str, np.ndarray]] | None:
    """The planner as of `back` quarters before the data's last complete quarter, and what
    happened after; None when the data do not reach that far back."""
    last = wh.last_month(con)
    last_q = wh.quarter_of(wh.month_end(last))
    if wh.quarter_end(last_q) != wh.month_end(last):
        last_q = _back(last_q, 1)
    origin = _back(last_q, back)
    first = con.execute("select min(month) from intermediate.int_engineer_months").fetchone()[0]
    origin_month = wh.quarter_end(origin).replace(day=1)
    if first is None or origin_month < first:
        return None
    quarters = wh.next_quarters(origin, back)
    fleet = fleet_history(con, quarters)
    if not fleet:
        return None
    run = plan_from_warehouse(
        con,
        fleet,
        back,
        assumptions,
        min_group,
        closest=True,
        month=origin_month,
        programme_rates=programme_rates_as_of(wh.quarter_end(origin), prices, min_group),
        **problem_kw,
    )
    return run, actuals(con, run, quarters)


def _back(label: str, n: int) -> str:
    year, q = (int(p) for p in label.split("-Q"))
    index = year * 4 + q - 1 - n
    return f"{index // 4}-Q{index % 4 + 1}"


def backtest_frame(
    con, assumptions: dict | None, prices: dict, min_group: int = 5, **problem_kw
) -> tuple[pd.DataFrame, list[str]]:
    """`marts.workforce_plan_backtest`, and a note for each backtest the data cannot give."""
    rows, notes = [], []
    from pipelines.lib.plan.optimise import PlanInfeasible

    for back in ORIGINS:
        try:
            got = run_backtest(con, back, assumptions, prices, min_group, **problem_kw)
        except PlanInfeasible as exc:
            # what the company knew then could not give a plan: the backtest says so, and the
            # night goes on (the plan of today is its own asset)
            notes.append(
                f"no backtest {back} quarters back: the planner found no plan then ({exc})"
            )
            continue
        if got is None:
            notes.append(
                f"no backtest {back} quarters back: the HR data or the fleet's history do not "
                "reach that far"
            )
            continue
        run, actual = got
        rows += backtest_rows(run, back, actual, min_group)
    if not rows:
        return empty_backtest(), notes
    return pd.DataFrame(rows, columns=list(BACKTEST_COLUMNS)), notes


def empty_backtest() -> pd.DataFrame:
    """The mart's columns, typed, and no row (too little history for either backtest)."""
    text = {"origin_quarter", "quarter", "measure"}
    whole = {"quarters_back", "quarters_ahead", "measured_rates", "rates_total"}

    def dtype(c: str) -> str:
        if c == "as_of_date":
            return "datetime64[ns]"
        if c == "suppressed":
            return "boolean"
        return "string" if c in text else "int64" if c in whole else "float64"

    return pd.DataFrame({c: pd.Series(dtype=dtype(c)) for c in BACKTEST_COLUMNS})
