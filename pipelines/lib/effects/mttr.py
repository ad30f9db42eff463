"""MTTR ratio: least squares on log resolve minutes with responder and calendar-month fixed
effects, so a responder's incidents while certified are compared with their own earlier ones."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipelines.lib.effects.fit import FitError, dummies, factor_codes, fe_ols, sparse_design
from pipelines.lib.effects.result import Effect, interval_words, shortfall, window_of
from pipelines.lib.small_groups import is_small, people_phrase

METRIC = "mttr_ratio"
MIN_SWITCHERS = 15  # responders with resolved incidents both before and while certified
MIN_INCIDENTS_EACH_SIDE = 30
# pre-trend test: incidents of months -6..-1 against the responder's earlier ones (month -1
# alone holds too few resolved incidents to serve as the reference)
PRE_BINS = {"pre_near": (-6, -1)}

METHOD = (
    "Least squares on the logarithm of resolve minutes of resolved incidents where the engineer "
    "was primary responder, with a fixed effect per responder and per calendar month and "
    "indicators for holding an active certification when the incident opened, for a lapsed "
    "certification, for severity and for skill level. exp(coefficient) is the ratio of "
    "geometric mean resolve times, certified / the same responder before certifying. Each "
    "incident has a single primary responder, so clustering by responder also keeps an incident's "
    "rows together; bias-reduced cluster-robust covariance (CR2, Bell-McCaffrey) with "
    "Satterthwaite degrees of freedom for the Student-t interval."
)
COMPARISON = (
    "incidents of the same responders while certified vs before they certified, of the same "
    "severity, net of calendar-month effects estimated from all responders"
)
NAIVE_METHOD = (
    "plain before/after: geometric mean resolve minutes of incidents after the first "
    "certification / before it, among engineers who certified; interval clustered by engineer"
)


def naive_ratio(inc: pd.DataFrame) -> tuple[float, float, float]:
    cert = inc[inc["first_t"].notna()]
    after = ((cert["rel"] > 0) | ((cert["rel"] == 0) & cert["is_certified"])).to_numpy()
    if cert.empty or not after.any() or after.all():
        return (np.nan, np.nan, np.nan)
    fit = fe_ols(
        np.log(cert["minutes"].to_numpy()),
        after[:, None].astype(float),
        [np.zeros(len(cert), dtype=int)],
        cert["person_key"].to_numpy(),
        ["after"],
    )
    return fit.ratio("after")


def _sample(inc: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    d = inc[~((inc["rel"] == 0) & ~inc["is_certified"])]  # month 0 before the award: ambiguous
    counts = d.groupby("person_key")["minutes"].transform("size")
    d = d[(counts > 1).to_numpy()]  # a single incident says nothing about its responder
    before = (d["rel"] < 0).to_numpy()
    during = d["is_certified"].to_numpy()
    switchers = set(d.loc[before, "person_key"]) & set(d.loc[during, "person_key"])
    sw = d["person_key"].isin(switchers).to_numpy()
    return d, {
        "switchers": len(switchers),
        "cohorts": int(d.loc[sw, "first_t"].nunique()),
        "before": int((sw & before).sum()),
        "during": int((sw & during).sum()),
    }


def _fit(d: pd.DataFrame, extra: dict[str, np.ndarray], dof_for=()):
    """Log resolve minutes on ``extra``, severity and level, engineer and month effects
    absorbed, CR2 by engineer; Satterthwaite degrees of freedom for ``dof_for`` only."""
    sev, sev_names = dummies(d["severity"].fillna("unknown").to_numpy(), "severity")
    level, level_names = dummies(d["skill_level"].to_numpy(), "level")
    x = sparse_design(*extra.values(), sev, level)
    return fe_ols(
        np.log(d["minutes"].to_numpy()),
        x,
        factor_codes(d["person_key"], d["t"]),
        d["person_key"].to_numpy(),
        [*extra, *sev_names, *level_names],
        small_sample="cr2",
        dof_for=dof_for,
    )


def _pretrend(d: pd.DataFrame) -> tuple[float, str]:
    rel = d["rel"].to_numpy()
    extra = {k: (rel >= lo) & (rel <= hi) for k, (lo, hi) in PRE_BINS.items()}
    extra = {k: v for k, v in extra.items() if v.sum() >= MIN_INCIDENTS_EACH_SIDE}
    if not extra or (rel < -6).sum() < MIN_INCIDENTS_EACH_SIDE:
        return np.nan, "Pre-trend check: not possible (too few incidents before certifying)."
    extra |= {"certified": d["is_certified"].to_numpy(), "lapsed": d["lapsed"].to_numpy()}
    try:
        fit = _fit(d, extra)
    except FitError as exc:
        return np.nan, f"Pre-trend check: not possible ({exc})."
    tested = [k for k in PRE_BINS if k in fit.names]
    if not tested:
        return np.nan, "Pre-trend check: not possible (no incidents before certifying)."
    p, q = fit.wald_p(tested)
    verdict = (
        "no sign of a difference before certifying"
        if p >= 0.05
        else ("resolve times already differed before certifying; not presented as a finding")
    )
    return p, (
        f"Pre-trend check (F-test that resolve times in months -6..-1 before certifying equal "
        f"the responder's earlier ones, {q} df): p = {p:.3f}: {verdict}."
    )


def _minimums(size: dict, min_group_size: int) -> tuple[str, str]:
    """Why the design's minimums are not met and what is needed ("" when they are). Of fewer
    responders than ``min_group_size`` the text quotes neither their number nor their
    incidents (`people_phrase`)."""
    small = is_small(size["switchers"], min_group_size)
    needs = [
        shortfall(
            size["switchers"],
            MIN_SWITCHERS,
            "responders with resolved incidents both before and after certifying",
            small,
        ),
        shortfall(
            size["before"],
            MIN_INCIDENTS_EACH_SIDE,
            "resolved incidents of these responders before they certify",
            small,
        ),
        shortfall(
            size["during"],
            MIN_INCIDENTS_EACH_SIDE,
            "resolved incidents of these responders while certified",
            small,
        ),
    ]
    needs = [n for n in needs if n]
    if not needs:
        return "", ""
    who = people_phrase(
        size["switchers"], min_group_size, "responders with incidents before and while certified"
    )
    counts = (
        ""
        if small
        else f", {size['before']} and {size['during']} of their incidents (minimum "
        f"{MIN_INCIDENTS_EACH_SIDE} each)"
    )
    return (
        f"too little data to compare responders with themselves: {who} (minimum "
        f"{MIN_SWITCHERS}){counts}",
        "; ".join(needs),
    )


def mttr_ratio(inc: pd.DataFrame, left_out: int, min_group_size: int) -> Effect:
    e = Effect(METRIC, METHOD, COMPARISON, NAIVE_METHOD)
    e.naive = naive_ratio(inc)
    d, size = _sample(inc)
    e.n_engineers, e.n_events = int(d["person_key"].nunique()), int(len(d))
    e.n_cohorts, e.window = size["cohorts"], window_of(d["month_start"])
    if left_out:
        e.caveats.append(
            f"{left_out} incident rows were left out (unresolved, no matched primary responder, "
            "or no engineer-month for the responder)."
        )
    if e.n_engineers < min_group_size:
        return e.not_estimable(f"fewer than {min_group_size} engineers, too few to publish")
    reason, needs = _minimums(size, min_group_size)
    if needs:
        return e.not_estimable(reason, needs)
    try:
        fit = _fit(
            d,
            {"certified": d["is_certified"].to_numpy(), "lapsed": d["lapsed"].to_numpy()},
            dof_for=("certified",),
        )
    except FitError as exc:
        return e.not_estimable(f"the model could not be fitted: {exc}")
    e.estimate, e.ci_low, e.ci_high = fit.ratio("certified")
    e.caveats.extend(fit.notes)
    e.pretrend_p, text = _pretrend(d)
    e.caveats[:0] = [
        interval_words(e, "Incidents of certified responders take")
        + " A ratio of geometric means is not a ratio of medians or means when spreads differ.",
        text,
    ]
    return e
