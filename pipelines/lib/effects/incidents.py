"""Incident rate ratio, its event study and the pre-trend test: Poisson with engineer and
calendar-month fixed effects, so each engineer is compared with their own months before
certifying (calendar effects come from everyone, including engineers who never certify)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from pipelines.lib.effects.fit import (
    Fit,
    FitError,
    dummies,
    factor_codes,
    fe_poisson,
    informative_rows,
    sparse_design,
    two_group_ratio,
)
from pipelines.lib.effects.result import Effect, fmt, interval_words, shortfall, window_of
from pipelines.lib.effects.staggered import aggregate, cell_columns, cells
from pipelines.lib.small_groups import is_small, people_phrase

METRIC = "incident_rate_ratio"
EVENT_STUDY_COLUMNS = (
    "metric",
    "relative_month",
    "estimate",
    "ci_low",
    "ci_high",
    "engineers",
    "engineer_months",
)
EVENT_WINDOW = 12
REFERENCE_MONTH = -1
# pre-period bins of the pre-trend test (relative months), each compared with month -1 alone
PRE_BINS = {"pre_far": (-np.inf, -7), "pre_near": (-6, -2)}
# months right before the first certification (courses, exam preparation, and the spell that
# may have prompted it) get their own indicator instead of serving as the reference: the 3
# months before it, and where the panel knows when the engineer began preparing
# (first_preparation_month), every month from 3 before that start on (preparing for a
# certification takes months: a bad spell that prompts it lies further back)
PREPARATION_MONTHS = 3
MIN_SWITCHERS = 20  # engineers seen both before and while certified
MIN_COHORTS = 3  # distinct months of first certification among them
MIN_EVENTS_EACH_SIDE = 20  # their incidents before, and while certified

METHOD = (
    "Poisson regression of incidents as primary responder per engineer-month, with the months "
    "of exposure as offset, a fixed effect per engineer and per calendar month, indicators for "
    "a certification that has lapsed, for the months of preparation before the first "
    "certification (from 3 months before the first enrolment in a course leading to it, and at "
    "least the 3 months before it: a bad spell that prompts certifying is not the reference) "
    "and for skill "
    "level, and one indicator per cell of "
    "certified engineer-months (months since the first certification x skill level; small "
    "cells pooled): extended two-way fixed effects (Wooldridge), so engineer and month effects "
    "come from months not certified (never-certified engineers and the months before "
    "preparing) and engineers who certified earlier are never the controls of those who "
    "certify later. The estimate is the average of the cell ratios (in logs) weighted by "
    "certified engineer-months: the average effect over certified engineer-months, also when "
    "it grows with time since certifying or differs by level. Standard errors clustered by "
    "engineer with the small-sample factor G/(G-1)(N-1)/(N-K), the weighted average's variance "
    "w'Vw; intervals from Student-t with G-1 degrees of freedom. The month of the first "
    "certification is left out because the status changes within it."
)
ROBUSTNESS_METHOD = (
    "the same Poisson model with one indicator for all certified engineer-months (two-way "
    "fixed effects) and the preparation months in the reference: narrower, and the same figure when the effect is constant, but a "
    "regression-weighted average that leans on earlier certifiers as controls when the effect "
    "builds up over the months after certifying or differs by level"
)
COMPARISON = (
    "the same engineers while certified vs before they certified, net of calendar-month "
    "effects estimated from all engineers (lapsed months are their own group)"
)
NAIVE_METHOD = (
    "plain before/after: incident rate after the first certification / rate before it, among "
    "engineers who certified (no control for calendar time or level); interval clustered by "
    "engineer"
)


# The engineer-month columns the incident models read (`prep_t` when the panel has it). The
# model frames are copies of a panel of 4.5 million rows at 1,000,000 employees: they carry
# these 12 of its 17 columns, not the ones only attrition and careers read.
MODEL_COLUMNS = (
    "person_key",
    "t",
    "month_start",
    "skill_level",
    "incidents",
    "exposure",
    "is_certified",
    "ever_certified",
    "first_t",
    "prep_t",
    "rel",
    "lapsed",
)


def model_frame(m: pd.DataFrame, without_month_zero: bool = False) -> pd.DataFrame:
    """The engineer-months a Poisson model of incidents can use, with `MODEL_COLUMNS`: exposed,
    with a level, of an engineer and a calendar month that have incidents (`informative_rows`).
    `without_month_zero` also leaves out the month of the first certification."""
    rows = (m["exposure"] > 0) & m["skill_level"].notna()
    if without_month_zero:
        rows &= ~(m["rel"] == 0)
    d = m.loc[rows.to_numpy(), [c for c in MODEL_COLUMNS if c in m.columns]]
    codes = factor_codes(d["person_key"], d["t"])
    return d[informative_rows(d["incidents"].to_numpy(), codes)]


def _fit(d: pd.DataFrame, extra: dict[str, np.ndarray]) -> Fit:
    level, level_names = dummies(d["skill_level"].to_numpy(), "level")
    names = [*extra, *level_names]
    codes = factor_codes(d["person_key"], d["t"])
    # the design is sparse and built in the call, not kept here: the fit frees it once it has
    # its own working copy
    return fe_poisson(
        d["incidents"].to_numpy(),
        sparse_design(*extra.values(), level),
        np.log(d["exposure"].to_numpy()),
        codes,
        d["person_key"].to_numpy(),
        names,
    )


def single_indicator_ratio(d: pd.DataFrame) -> tuple[float, float, float]:
    """One indicator for all certified engineer-months (two-way fixed effects)."""
    fit = _fit(d, {"certified": d["is_certified"].to_numpy(), "lapsed": d["lapsed"].to_numpy()})
    return fit.ratio("certified")


def preparing(d: pd.DataFrame) -> np.ndarray:
    """Months before the first certification that are preparation: the last
    ``PREPARATION_MONTHS``, and from ``PREPARATION_MONTHS`` before the start of preparing on
    (``prep_t``, when known)."""
    rel = d["rel"].to_numpy()
    before = rel < 0
    near = rel >= -PREPARATION_MONTHS
    if "prep_t" in d:
        since_start = d["t"].to_numpy() - d["prep_t"].to_numpy()
        with np.errstate(invalid="ignore"):
            near = near | (since_start >= -PREPARATION_MONTHS)
    return before & near


def cell_ratio(d: pd.DataFrame) -> tuple[tuple[float, float, float], int]:
    """Extended two-way fixed effects (``staggered.py``): one indicator per cell of certified
    engineer-months, averaged with weights = engineer-months per cell, and one for the
    ``PREPARATION_MONTHS`` before the first certification. Returns the ratio with its
    interval and the number of cells."""
    treated = (d["is_certified"] & (d["rel"] > 0)).to_numpy()
    labels = cells(d, treated)
    extra = cell_columns(labels, len(d), np.flatnonzero(treated))
    weights = {k: float(v.sum()) for k, v in extra.items()}
    extra["lapsed"] = d["lapsed"].to_numpy()
    extra["preparing"] = preparing(d)
    agg = aggregate(_fit(d, extra), weights)
    return agg.ratio(), agg.cells


def naive_ratio(m: pd.DataFrame) -> tuple[float, float, float]:
    d = m[m["ever_certified"] & (m["exposure"] > 0)]
    after = (d["rel"] >= 0).to_numpy()
    return two_group_ratio(
        d["incidents"].to_numpy(),
        after,
        np.log(d["exposure"].to_numpy()),
        d["person_key"].to_numpy(),
    )


def _sample_size(d: pd.DataFrame) -> dict:
    before = d["ever_certified"] & (d["rel"] < 0)
    during = d["is_certified"] & (d["rel"] > 0)
    people_before = set(d.loc[before, "person_key"])
    people_during = set(d.loc[during, "person_key"])
    switchers = people_before & people_during
    sw = d["person_key"].isin(switchers)
    return {
        "switchers": len(switchers),
        "cohorts": int(d.loc[sw, "first_t"].nunique()),
        "events_before": int(d.loc[sw & before, "incidents"].sum()),
        "events_during": int(d.loc[sw & during, "incidents"].sum()),
    }


def _check_minimums(e: Effect, size: dict, min_group_size: int) -> bool:
    """The design's minimums; when they are not met, the reason and the data needed. Of fewer
    engineers than ``min_group_size`` the text quotes neither their number nor their months
    or incidents (`people_phrase`)."""
    small = is_small(size["switchers"], min_group_size)
    needs = [
        shortfall(
            size["switchers"],
            MIN_SWITCHERS,
            "engineers who certify while observed before and after",
            small,
        ),
        shortfall(
            size["cohorts"], MIN_COHORTS, "distinct months in which engineers certify", small
        ),
        shortfall(
            size["events_before"],
            MIN_EVENTS_EACH_SIDE,
            "incidents of these engineers before they certify",
            small,
        ),
        shortfall(
            size["events_during"],
            MIN_EVENTS_EACH_SIDE,
            "incidents of these engineers while certified",
            small,
        ),
    ]
    needs = [n for n in needs if n]
    if needs:
        who = people_phrase(
            size["switchers"],
            min_group_size,
            "engineers certified while observed before and after",
        )
        counts = (
            ""
            if small
            else f", in {size['cohorts']} distinct months (minimum {MIN_COHORTS}), with "
            f"{size['events_before']} incidents before and {size['events_during']} while "
            f"certified (minimum {MIN_EVENTS_EACH_SIDE} each)"
        )
        e.not_estimable(
            f"too little data to compare engineers with themselves: {who} (minimum "
            f"{MIN_SWITCHERS}){counts}",
            "; ".join(needs),
        )
    return not needs


def incident_rate_ratio(m: pd.DataFrame, pretrend: PreTrend, min_group_size: int) -> Effect:
    e = Effect(METRIC, METHOD, COMPARISON, NAIVE_METHOD)
    e.naive = naive_ratio(m)
    d = model_frame(m, without_month_zero=True)
    size = _sample_size(d)
    e.n_engineers, e.n_events = int(d["person_key"].nunique()), int(d["incidents"].sum())
    e.n_cohorts, e.window = size["cohorts"], window_of(d["month_start"])
    e.pretrend_p = pretrend.p
    e.caveats.append(pretrend.text)
    if e.n_engineers < min_group_size:
        return e.not_estimable(f"fewer than {min_group_size} engineers, too few to publish")
    if not _check_minimums(e, size, min_group_size):
        return e
    try:
        (e.estimate, e.ci_low, e.ci_high), n_cells = cell_ratio(d)
        e.robustness = single_indicator_ratio(d)
    except FitError as exc:
        return e.not_estimable(f"the model could not be fitted: {exc}")
    e.robustness_method = ROBUSTNESS_METHOD
    e.caveats.insert(
        0,
        interval_words(e, "While certified, engineers have an incident rate of")
        + f" Based on {people_phrase(size['switchers'], min_group_size, 'engineers')} who "
        "certified while observed, in "
        f"{n_cells} cells of months since certifying and level. With one indicator for all "
        f"certified months (constant effect) the figure would be {fmt(e.robustness[0])} "
        f"(95 % CI {fmt(e.robustness[1])}-{fmt(e.robustness[2])}).",
    )
    return e


# --------------------------------------------------------------------------------------------
# pre-trend test and event study
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PreTrend:
    p: float
    text: str


def _rel_bins(rel: np.ndarray) -> np.ndarray:
    return np.clip(rel, -EVENT_WINDOW, EVENT_WINDOW)


def _small_months(d: pd.DataFrame, min_group_size: int) -> set[int]:
    rel = _rel_bins(d["rel"].to_numpy())
    counts = pd.Series(d["person_key"].to_numpy()).groupby(rel).nunique()
    return {int(k) for k, v in counts.items() if v < min_group_size}


def pretrend_test(m: pd.DataFrame, min_group_size: int) -> PreTrend:
    """F-test (G-1 denominator degrees of freedom) that incident rates in the months up to -7
    and in months -6..-2 equal month -1, with engineer and calendar-month effects; months the
    event study suppresses (fewer than ``min_group_size`` engineers) stay out."""
    d = model_frame(m, without_month_zero=True)
    small = _small_months(d, min_group_size)
    if REFERENCE_MONTH in small or not d["ever_certified"].any():
        return PreTrend(np.nan, "Pre-trend check: not possible (too few engineers in month -1).")
    rel = _rel_bins(d["rel"].to_numpy())
    d = d[~np.isin(rel, sorted(small))]
    d = model_frame(d)
    rel = d["rel"].to_numpy()
    extra = {k: (rel >= lo) & (rel <= hi) for k, (lo, hi) in PRE_BINS.items()}
    extra = {k: v for k, v in extra.items() if v.any()}
    if not extra:
        return PreTrend(np.nan, "Pre-trend check: not possible (no months before certifying).")
    extra |= {"certified": d["is_certified"].to_numpy(), "lapsed": d["lapsed"].to_numpy()}
    try:
        fit = _fit(d, extra)
    except FitError as exc:
        return PreTrend(np.nan, f"Pre-trend check: not possible ({exc}).")
    tested = [k for k in PRE_BINS if k in fit.names]
    if not tested:
        return PreTrend(np.nan, "Pre-trend check: not possible (no months before certifying).")
    p, q = fit.wald_p(tested)
    verdict = (
        "no sign that engineers' incident rates were already moving before they certified"
        if p >= 0.05
        else "incident rates already differed before certifying, so the estimate may reflect "
        "why people certify (a bad spell, a new team) rather than what certification does; "
        "it is not presented as a finding"
    )
    return PreTrend(
        p,
        f"Pre-trend check (F-test that months -6..-2 and the months before them equal month "
        f"-1, {q} df): "
        f"p = {p:.3f}: {verdict}.",
    )


def event_study(m: pd.DataFrame, min_group_size: int) -> pd.DataFrame:
    """Incident rate ratio by month relative to first certification (-12..+12, ends binned,
    month -1 = 1); months with fewer than ``min_group_size`` engineers have no estimate."""
    d = model_frame(m)
    rel = _rel_bins(d["rel"].to_numpy())
    ks = list(range(-EVENT_WINDOW, EVENT_WINDOW + 1))
    counts = {k: (int(d.loc[rel == k, "person_key"].nunique()), int((rel == k).sum())) for k in ks}
    fit = None
    extra = {f"rel={k}": rel == k for k in ks if k != REFERENCE_MONTH and counts[k][1]}
    if d["ever_certified"].any() and counts[REFERENCE_MONTH][0] >= min_group_size:
        extra["lapsed"] = d["lapsed"].to_numpy()
        try:
            fit = _fit(d, extra)
        except FitError:
            fit = None
    rows = []
    for k in ks:
        engineers, months = counts[k]
        est = lo = hi = np.nan
        if engineers >= min_group_size and fit is not None:
            if k == REFERENCE_MONTH:
                est = 1.0
            elif f"rel={k}" in fit.names:
                est, lo, hi = fit.ratio(f"rel={k}")
        rows.append((METRIC, k, est, lo, hi, engineers, months))
    return pd.DataFrame(rows, columns=list(EVENT_STUDY_COLUMNS))
