"""Certification-effect statistics: what holding a certification does to incidents, MTTR and
voluntary exits, with intervals that keep their promise and a plain "not estimable" when the
data cannot answer.

* Incidents (``incidents.py``) and MTTR (``mttr.py``) compare each engineer with themselves:
  engineer and calendar-month fixed effects (absorbed by demeaning, ``fit.py``), so stable
  differences between engineers who certify and those who do not (incident-proneness the HRIS
  does not record) cannot pose as an effect. Lapsed certifications are their own group.
  Incidents: one indicator per cell of certified engineer-months (months since certifying x
  level), averaged with engineer-month weights (extended two-way fixed effects,
  ``staggered.py``), and the preparation months (from 3 before the first enrolment leading to the first certification) out of the reference; the one-indicator
  figure is published beside it. Standard errors are clustered by engineer: CR1 factor and
  Student-t / F with G-1 degrees of freedom for incidents, CR2 with Satterthwaite degrees of
  freedom for MTTR (``cr2.py``).
* A pre-trend test (incident rates in months -12..-7 and -6..-2 vs month -1) guards against
  people certifying after a bad spell; when it rejects, the effect is not a finding.
* Voluntary exit (``attrition.py``) is a Cox model with certification as a time-varying
  covariate on the tenure scale.
* Below a minimum of engineers, events or certification cohorts a metric is published as not
  estimable, with the reason and the data that would be needed (``result.py``).

Everything here is a pure function of two pandas (or Polars) frames shaped like
``intermediate.int_engineer_months`` and ``intermediate.int_incident_responses``; the Dagster
wiring lives in ``pipelines/defs/effects.py``. ``docs/statistics.md`` describes the method and
its measured coverage.
"""

from __future__ import annotations

from typing import NamedTuple

import pandas as pd

from pipelines.lib.effects.attrition import attrition_hazard_ratio, counting_process
from pipelines.lib.effects.fit import (
    CONFIDENCE,
    Fit,
    FitError,
    demean,
    fe_ols,
    fe_poisson,
    single_threaded_blas,
)
from pipelines.lib.effects.incidents import (
    EVENT_STUDY_COLUMNS,
    EVENT_WINDOW,
    REFERENCE_MONTH,
    incident_rate_ratio,
    pretrend_test,
)
from pipelines.lib.effects.incidents import event_study as _event_study
from pipelines.lib.effects.mttr import mttr_ratio
from pipelines.lib.effects.power import CLAIMED_RATIOS, add_power
from pipelines.lib.effects.prepare import (
    ENGINEER_MONTHS,
    INCIDENT_RESPONSES,
    StatsInputError,
    encode_people,
    prepare_engineer_months,
    prepare_incidents,
)
from pipelines.lib.effects.result import (
    EFFECT_COLUMNS,
    METRICS,
    effects_frame,
    suppress_small_months,
)

__all__ = [
    "CONFIDENCE",
    "EFFECT_COLUMNS",
    "ENGINEER_MONTHS",
    "EVENT_STUDY_COLUMNS",
    "EVENT_WINDOW",
    "INCIDENT_RESPONSES",
    "METRICS",
    "REFERENCE_MONTH",
    "Fit",
    "FitError",
    "Panels",
    "StatsInputError",
    "analyse",
    "analyse_prepared",
    "counting_process",
    "demean",
    "estimate_effects",
    "event_study",
    "fe_ols",
    "fe_poisson",
    "prepare",
    "prepare_engineer_months",
    "prepare_incidents",
]


class Panels(NamedTuple):
    """The two panels as the estimators use them (`prepare`)."""

    months: pd.DataFrame
    incidents: pd.DataFrame
    left_out: int  # incident rows left out (unresolved, no responder, no engineer-month)


def prepare(engineer_months, incident_responses) -> Panels:
    """The panels validated, normalised and with the engineers numbered alike in both. They are
    new frames: a caller that drops the frames it read before estimating (`analyse_prepared`)
    holds only these while the models are fitted (at 1,000,000 employees the frames as read
    are about 1.2 GB)."""
    m = prepare_engineer_months(engineer_months)
    inc, left_out = prepare_incidents(incident_responses, m)
    encode_people(m, inc)
    return Panels(m, inc, left_out)


def analyse(
    engineer_months,
    incident_responses,
    min_group_size: int = 5,
    claimed: dict[str, float] | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both marts at once: (``certification_effect``, ``certification_event_study``).
    ``claimed``: metric -> the ratio the power columns say how much more data would detect
    (default `power.CLAIMED_RATIOS`, the business case's)."""
    return analyse_prepared(prepare(engineer_months, incident_responses), min_group_size, claimed)


def analyse_prepared(
    panels: Panels, min_group_size: int = 5, claimed: dict[str, float] | None = None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """`analyse` of panels already prepared (`prepare`)."""
    m, inc, left_out = panels
    with single_threaded_blas():
        study = _event_study(m, min_group_size)
        pretrend = pretrend_test(m, min_group_size)
        effects = [
            incident_rate_ratio(m, pretrend, min_group_size),
            mttr_ratio(inc, left_out, min_group_size),
            attrition_hazard_ratio(m, min_group_size),
        ]
    frame = add_power(
        effects_frame(effects), effects, m, inc, CLAIMED_RATIOS if claimed is None else claimed
    )
    return frame, suppress_small_months(study, min_group_size)


def estimate_effects(engineer_months, incident_responses, min_group_size: int = 5) -> pd.DataFrame:
    """The ``certification_effect`` mart: one row per metric in ``METRICS``."""
    return analyse(engineer_months, incident_responses, min_group_size)[0]


def event_study(engineer_months, incident_responses=None, min_group_size: int = 5) -> pd.DataFrame:
    """The ``certification_event_study`` mart: incident rate ratio by month relative to the
    first certification (-12..+12, ends binned, month -1 = 1); months with fewer than
    ``min_group_size`` engineers keep their counts but no estimate. ``incident_responses`` is
    accepted for a uniform signature and not used."""
    m = prepare_engineer_months(engineer_months)
    encode_people(m)
    with single_threaded_blas():
        return suppress_small_months(_event_study(m, min_group_size), min_group_size)
