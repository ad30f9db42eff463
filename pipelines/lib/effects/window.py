"""Which months the statistics are estimated from: complete months only.

The latest month of the panel is still being delivered: its incidents keep arriving and
resolving, people still join, leave and certify, and each night changes its figures a little. A
month enters the estimates once the data reaches into the next month (the night that brings the
first record of the next month); until then the estimates use every month before it. Two things
follow:

* every figure is estimated from months whose data is complete (a month in progress counts
  every engineer's whole month as exposure while holding only part of its incidents);
* a nightly run that only adds rows to the month in progress leaves the inputs of the
  statistics as they were, so their data version is unchanged and the published estimates are
  kept (`pipelines/defs/versions.py`): the statistics are re-estimated once a month, or when a
  late delivery changes a complete month.

A certification in the month in progress is not yet part of the window: an engineer first
certified after the last complete month counts as not yet certified (``first_certified_month``
is left empty), exactly as an estimate made on the last day of that month would have seen them.

The pipeline makes this cut in dbt (`intermediate.int_engineer_months_complete` and
`int_incident_responses_complete`, which the statistics read); `complete_months` makes the same
cut on frames for the validity harness, and a test holds the two to the same rows.
"""

from __future__ import annotations

from datetime import date

import pandas as pd

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
