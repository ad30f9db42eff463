"""Programme and career statistics: which training programme turns money into certified
engineers fastest, adjusted for who was sent, and whether certifying is followed by promotion.

* ``programme_statistics``: ``time_to_certify`` (Kaplan-Meier per programme, track and cohort)
  and ``programme_comparison`` (each programme against online courses: Weibull time ratio,
  first-attempt odds ratio, voluntary exit hazard ratio, and the within-engineer incident and
  MTTR ratios of ``pipelines.lib.effects`` for the engineers the programme certified first),
  ``programmes.py``.
* ``programme_costs``: fees, exam fees and time priced with the assumptions file, per
  programme and track, and per certification earned (``costs.py``).
* ``career_statistics``: ``time_in_level`` (Kaplan-Meier of months at a level until
  promotion, against the ladder's bands) and ``promotion_effect`` (Cox, certification as a
  time-varying covariate on the tenure scale), ``careers.py``.

Every published count of 1..min_group_size-1 people is suppressed (``result.suppress``); a
figure the data cannot support is published as not estimable with the reason and the data it
would need (``pipelines.lib.effects.result.Effect``). Pure functions of pandas (or Polars)
frames shaped like the warehouse tables; the Dagster wiring is ``pipelines/defs/careers.py``,
the method ``docs/statistics.md`` ("Programmes and careers").
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from pipelines.lib.careers import careers as _careers
from pipelines.lib.careers import costs as _costs
from pipelines.lib.careers import programmes as _programmes
from pipelines.lib.careers.next_level import time_to_next_level
from pipelines.lib.careers.result import (
    COMPARISON_COLUMNS,
    COMPARISON_METRICS,
    EPISODES,
    EPISODES_TO_DATE,
    MART_DESCRIPTIONS,
    comparison_frame,
    episode_columns,
    prepare_episodes,
)
from pipelines.lib.effects.fit import single_threaded_blas
from pipelines.lib.effects.prepare import (
    encode_people,
    prepare_engineer_months,
    prepare_incidents,
)

__all__ = [
    "COMPARISON_COLUMNS",
    "COMPARISON_METRICS",
    "EPISODES",
    "EPISODES_TO_DATE",
    "episode_columns",
    "MART_DESCRIPTIONS",
    "MARTS",
    "Inputs",
    "career_statistics",
    "prepare",
    "prepare_episodes",
    "programme_and_career_statistics",
    "programme_and_career_statistics_prepared",
    "programme_costs",
    "programme_statistics",
]

MARTS = (
    "time_to_certify",
    "programme_next_level",
    "programme_comparison",
    "programme_costs",
    "time_in_level",
    "promotion_effect",
)


def programme_statistics(
    episodes, engineer_months, incident_responses, min_group_size: int = 5
) -> dict[str, pd.DataFrame]:
    """``{"time_to_certify": ..., "programme_comparison": ...}`` from the raw episodes, the
    complete months panel and the incident responses (as read from the warehouse)."""
    return _programme_frames(
        *prepare(episodes, engineer_months, incident_responses), min_group_size
    )


def programme_and_career_statistics(
    episodes, engineer_months, incident_responses, min_group_size: int = 5
) -> dict[str, pd.DataFrame]:
    """`programme_statistics` and `career_statistics` together, from one preparation of the
    panel (at 1,000,000 employees, 4.5 million engineer-months prepared once instead of twice)."""
    return programme_and_career_statistics_prepared(
        prepare(episodes, engineer_months, incident_responses), min_group_size
    )


class Inputs(NamedTuple):
    """The episodes and the two panels as the estimators use them (`prepare`)."""

    episodes: pd.DataFrame
    months: pd.DataFrame
    incidents: pd.DataFrame
    left_out: int  # incident rows left out (unresolved, no responder, no engineer-month)


def prepare(episodes, engineer_months, incident_responses) -> Inputs:
    """The three frames prepared, with the engineers numbered alike in all three
    (`encode_people`). They are new frames: a caller that drops the frames it read before
    estimating (`programme_and_career_statistics_prepared`) holds only these while the models
    are fitted (at 1,000,000 employees the frames as read are about 1.2 GB)."""
    ep = prepare_episodes(episodes)
    m = prepare_engineer_months(engineer_months)
    inc, left_out = prepare_incidents(incident_responses, m)
    encode_people(ep, m, inc)
    return Inputs(ep, m, inc, left_out)


def programme_and_career_statistics_prepared(
    inputs: Inputs, min_group_size: int = 5
) -> dict[str, pd.DataFrame]:
    """`programme_and_career_statistics` of inputs already prepared (`prepare`)."""
    ep, m, inc, left_out = inputs
    return {
        **_programme_frames(ep, m, inc, left_out, min_group_size),
        **_career_frames(m, min_group_size),
    }


def _programme_frames(ep, m, inc, left_out: int, min_group_size: int) -> dict[str, pd.DataFrame]:
    with single_threaded_blas():
        ttc = _programmes.time_to_certify(ep, min_group_size)
        rows = _programmes.programme_comparison(ep, m, inc, left_out, min_group_size)
        next_level = time_to_next_level(ep, m, min_group_size)
    return {
        "time_to_certify": ttc,
        "programme_next_level": next_level,
        "programme_comparison": comparison_frame(rows, min_group_size),
    }


def programme_costs(episodes, prices: dict[str, float], min_group_size: int = 5) -> pd.DataFrame:
    """The ``programme_costs`` mart; ``prices``: the base values of the assumptions
    employee_rate_usd_per_hour, senior_rate_usd_per_hour,
    apprenticeship_senior_productivity_loss, apprenticeship_months and hours_per_month."""
    return _costs.programme_costs(
        prepare_episodes(episodes, EPISODES_TO_DATE), prices, min_group_size
    )


def career_statistics(engineer_months, min_group_size: int = 5) -> dict[str, pd.DataFrame]:
    """``{"time_in_level": ..., "promotion_effect": ...}`` from the complete months panel."""
    m = prepare_engineer_months(engineer_months)
    encode_people(m)
    return _career_frames(m, min_group_size)


def _career_frames(m, min_group_size: int) -> dict[str, pd.DataFrame]:
    with single_threaded_blas():
        levels, unseen = _careers.time_in_level(m, min_group_size)
        effect = _careers.promotion_effect(m, min_group_size)
    if unseen:
        effect.caveats.append(
            f"{unseen} level spells whose start is not in the data (under way in an engineer's "
            "first month of the data, or after a gap, without a hire) are left out of "
            "time_in_level; the promotion model uses their months on the tenure scale."
        )
    return {
        "time_in_level": levels,
        "promotion_effect": _careers.promotion_frame(effect, min_group_size),
    }
