"""Which months the statistics are estimated from: complete months only.

The latest month of the panel is still being delivered: its incidents keep arriving and
resolving, people still join, leave and certify, and each night changes its figures a little. A
month enters the estimates once the data reaches into the next month (the night that brings the
first record of the next month); until then the estimates use every month before it. Two things
follow:

* every figure is estimated from months whose data is complete (a month in progress counts
  every engineer's whole month as exposure while holding only part of its incidents);
* a nightly run that only adds rows to the month in progress leaves the inputs of the
  statistics as they were, so their fingerprint is unchanged and the published estimates are
  kept (`pipelines/defs/effects.py`): the statistics are re-estimated once a month, or when a
  late delivery changes a complete month.

A certification in the month in progress is not yet part of the window: an engineer first
certified after the last complete month counts as not yet certified (``first_certified_month``
is left empty), exactly as an estimate made on the last day of that month would have seen them.

Both forms cut the same rows: `complete_month_queries` in SQL (what the pipeline reads and
fingerprints), `complete_months` on frames (the validity harness, tests).
"""

from __future__ import annotations

from datetime import date

import pandas as pd

from pipelines.lib.effects.prepare import ENGINEER_MONTHS, INCIDENT_RESPONSES, USED_COLUMNS

# the engineer-months column that looks beyond its own month
FIRST_CERTIFIED = "first_certified_month"


def last_complete_month(latest_month: date | None) -> date | None:
    """The month before `latest_month` (the latest month of the panel), as its first day."""
    if latest_month is None:
        return None
    first = date(latest_month.year, latest_month.month, 1)
    return date(first.year - 1, 12, 1) if first.month == 1 else date(first.year, first.month - 1, 1)


def _as_date(value) -> date | None:
    if value is None or (not isinstance(value, str) and pd.isna(value)):
        return None
    return pd.Timestamp(value).date()


def complete_month_queries(con) -> tuple[date | None, dict[str, str]]:
    """(last complete month, {table: select}) for the two inputs of the statistics.

    Each select reads the columns the estimators use (`prepare.USED_COLUMNS`) of the rows of
    complete months. A used column a table lacks is left out here, so `prepare` names it in its
    error. With fewer than two months in the panel no month is complete and both selects are
    empty (the metrics are then published as not estimable).
    """
    ((latest,),) = con.execute(f"select max(month) from {ENGINEER_MONTHS}").fetchall()
    through = last_complete_month(_as_date(latest))
    cut = f"date '{through.isoformat()}'" if through else "null"
    where = {
        ENGINEER_MONTHS: f"month <= {cut}",
        # an incident without a month is kept: `prepare` counts it among those left out
        INCIDENT_RESPONSES: f"(month is null or month <= {cut})",
    }
    queries = {}
    for table, complete in where.items():
        present = {row[0] for row in con.execute(f"describe {table}").fetchall()}
        columns = [
            f"case when {c} <= {cut} then {c} end as {c}" if c == FIRST_CERTIFIED else f'"{c}"'
            for c in USED_COLUMNS[table]
            if c in present
        ]
        select = f"select {', '.join(columns) or '*'} from {table}"
        queries[table] = f"{select} where {complete if through else 'false'}"
    return through, queries


def complete_months(
    engineer_months: pd.DataFrame, incident_responses: pd.DataFrame
) -> tuple[pd.DataFrame, pd.DataFrame, date | None]:
    """The same cut on pandas frames: (engineer-months, incidents, last complete month)."""
    months = pd.to_datetime(engineer_months["month"])
    through = last_complete_month(_as_date(months.max()) if len(months) else None)
    if through is None:
        return engineer_months.iloc[0:0].copy(), incident_responses.iloc[0:0].copy(), None
    cut = pd.Timestamp(through)
    em = engineer_months[(months <= cut).to_numpy()].copy()
    if FIRST_CERTIFIED in em:
        first = pd.to_datetime(em[FIRST_CERTIFIED])
        em[FIRST_CERTIFIED] = em[FIRST_CERTIFIED].where((first <= cut).to_numpy())
    inc_month = pd.to_datetime(incident_responses["month"])
    inc = incident_responses[(inc_month.isna() | (inc_month <= cut)).to_numpy()].copy()
    return em.reset_index(drop=True), inc.reset_index(drop=True), through
