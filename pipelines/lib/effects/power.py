"""What the data could have found: the minimum detectable effect of each certification effect at
80 % power, and how many more engineer-months would detect the size the business case assumes.

For a ratio estimated on the log scale with standard error ``se`` and tested two-sided at 5 %,
the smallest true ratio below 1 found 80 % of the time is ``exp(-(z_0.975 + z_0.80) se)``
(Bloom (1995), "Minimum detectable effects: a simple way to report the statistical power of
experimental designs", Evaluation Review 19(5): the multiplier 1.96 + 0.84 = 2.80).

``se`` is read from the estimate's own 95 % interval where there is one (so it carries the
design: each engineer against themselves, clustering); where the effect is not estimable it is
approximated from the events and the certified share ``p`` of engineer-months: voluntary exits
``se = 1 / sqrt(D p (1 - p))`` (Schoenfeld (1983), "Sample-size formula for the
proportional-hazards regression model", Biometrics 39); incidents the Poisson rate ratio's
``sqrt(1 / (D p r) + 1 / (D (1 - p)))`` at the true ratio ``r`` (solved as a fixed point);
time to restore ``sigma / sqrt(n p (1 - p))`` with ``sigma`` the spread of log minutes. These
ignore what the design spends on fixed effects, so they understate the detectable size.

More data at the same mix shrinks ``se`` by the square root of its amount, so detecting a ratio
``c`` needs ``(2.80 se / |ln c|)^2`` times the engineer-months observed.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
from scipy.stats import norm

ALPHA = 0.05
POWER = 0.80
# z_(1 - alpha / 2) + z_power: 1.96 + 0.84 = 2.80
MULTIPLIER = float(norm.ppf(1 - ALPHA / 2) + norm.ppf(POWER))
Z_CI = float(norm.ppf(0.975))
POWER_COLUMNS = ("mde_ratio", "claimed_ratio", "engineer_months", "more_engineer_months_needed")
# The size the project's business case claims for each effect: the base value of its entry in
# the project's assumptions file (sources/scenarios/assumptions.yaml; a test holds the two
# equal). A constant rather than the settings' file, so that editing an assumption re-prices
# the ROI without re-estimating the effects; claimed_ratio says which size was asked about.
CLAIMED_RATIOS = {"incident_rate_ratio": 0.80, "mttr_ratio": 0.80, "attrition_hazard_ratio": 0.80}


def se_from_interval(lo: float, hi: float) -> float:
    """The standard error of a log ratio from its 95 % interval (Wald, symmetric on the log
    scale); NaN without a usable interval."""
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= lo:
        return math.nan
    return (math.log(hi) - math.log(lo)) / (2 * Z_CI)


def se_from_events(events: float, share: float, spread: float = 1.0) -> float:
    """Schoenfeld's approximation of the standard error of a log rate or hazard ratio from
    ``events`` split at the certified ``share`` of the exposure (``spread``: the standard
    deviation of the outcome per event on the log scale, 1 for counts)."""
    if not events or not 0 < share < 1 or not np.isfinite(spread):
        return math.nan
    return spread / math.sqrt(events * share * (1 - share))


def rate_ratio_se(events: float, share: float) -> Callable[[float], float]:
    """The standard error of a log Poisson rate ratio at a true ratio ``r``: events fall in
    certified exposure at ``r`` times the rate, so ``sqrt(1 / (D p r) + 1 / (D (1 - p)))``
    with ``D`` the events expected at the uncertified rate and ``p`` the certified share."""
    if not events or not 0 < share < 1:
        return lambda r: math.nan
    return lambda r: math.sqrt(1 / (events * share * r) + 1 / (events * (1 - share)))


def minimum_detectable_ratio(se: float | Callable[[float], float]) -> float:
    """The smallest reduction (a ratio below 1) a two-sided 5 % test finds with 80 % power:
    ``exp(-2.80 se)``, with ``se`` taken at that ratio when it depends on it (a fixed point)."""
    at = se if callable(se) else (lambda r: se)
    r = 1.0
    for _ in range(200):
        s = at(r)
        if not np.isfinite(s):
            return math.nan
        nxt = math.exp(-MULTIPLIER * s)
        if abs(nxt - r) < 1e-10:
            break
        r = nxt
    return r


def more_needed(observed: float, se: float | Callable[[float], float], claimed: float) -> float:
    """Engineer-months beyond ``observed`` that would detect a true ratio ``claimed`` at 80 %
    power (0 when the data already do); NaN when it cannot be said."""
    if not (np.isfinite(claimed) and observed) or claimed <= 0 or claimed == 1:
        return math.nan  # a claimed ratio of 1 is no effect: nothing to detect
    s = se(claimed) if callable(se) else se
    if not np.isfinite(s):
        return math.nan
    factor = (MULTIPLIER * s / abs(math.log(claimed))) ** 2
    return float(max(0, math.ceil(observed * factor - observed)))


def power_row(
    ci: tuple[float, float],
    fallback: Callable[[float], float],
    engineer_months: float,
    claimed: float,
) -> dict[str, float]:
    """The power columns of one effect row: the interval's standard error where the effect has
    one, else ``fallback`` (the standard error at a true ratio)."""
    se_ci = se_from_interval(*ci)
    se: float | Callable[[float], float] = se_ci if np.isfinite(se_ci) else fallback
    return {
        "mde_ratio": minimum_detectable_ratio(se),
        "claimed_ratio": claimed,
        "engineer_months": float(engineer_months),
        "more_engineer_months_needed": more_needed(engineer_months, se, claimed),
    }


def fallback_se(metric: str, events: int, m, inc) -> Callable[[float], float]:
    """The standard error of ``metric`` at a true ratio, from the panels (``m``:
    engineer-months, ``inc``: resolved incidents), for an effect without an interval:
    incidents a Poisson rate ratio, time to restore a difference of mean log minutes,
    voluntary exits Schoenfeld's hazard ratio."""
    share = float(m["is_certified"].mean()) if len(m) else math.nan
    if metric == "mttr_ratio":
        if inc is None or len(inc) < 2:
            return lambda r: math.nan
        minutes = inc["minutes"].to_numpy(dtype=float)
        spread = float(np.std(np.log(minutes[minutes > 0]), ddof=1))
        se = se_from_events(events or len(inc), float(inc["is_certified"].mean()), spread)
        return lambda r: se
    if metric == "incident_rate_ratio":
        return rate_ratio_se(events or (len(inc) if inc is not None else 0), share)
    se = se_from_events(events, share)
    return lambda r: se


def add_power(frame, effects, m, inc, claimed: dict[str, float]):
    """``frame`` (one row per effect, in the order of ``effects``) with the power columns."""
    rows = [
        power_row(
            (e.ci_low, e.ci_high) if e.estimable else (math.nan, math.nan),
            fallback_se(e.metric, int(e.n_events), m, inc),
            len(m),
            claimed.get(e.metric, math.nan),
        )
        for e in effects
    ]
    out = frame.copy()
    for c in POWER_COLUMNS:
        out[c] = np.array([r[c] for r in rows], dtype="float64")
    return out
