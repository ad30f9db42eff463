"""Intervals for the rates the report prints (95 %, two-sided).

Wilson score intervals for shares such as quarterly turnover (well behaved for small groups and
rates near zero, unlike the Wald interval) and exact Poisson (Garwood) intervals for incident
rates per exposure. Both are textbook formulas; the tests check them against published values.
"""

from __future__ import annotations

import math

from scipy import stats

Z95 = 1.959963984540054


def wilson_interval(events: float, n: float, z: float = Z95) -> tuple[float, float, float]:
    """Share events / n with its Wilson score interval; n is rounded, events clipped to n."""
    n = float(n)
    if math.isnan(n) or round(n) <= 0:  # no people in the window (or no such segment)
        return (math.nan, math.nan, math.nan)
    n = float(round(n))
    k = min(max(float(events), 0.0), n)
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return (p, max(0.0, centre - half), min(1.0, centre + half))


def poisson_rate_interval(
    events: float, exposure: float, per: float = 1.0, alpha: float = 0.05
) -> tuple[float, float, float]:
    """Rate events / exposure × per with the exact (Garwood) Poisson interval."""
    if exposure <= 0:
        return (math.nan, math.nan, math.nan)
    k = float(events)
    lo = 0.0 if k <= 0 else stats.chi2.ppf(alpha / 2, 2 * k) / 2
    hi = stats.chi2.ppf(1 - alpha / 2, 2 * k + 2) / 2
    scale = per / exposure
    return (k * scale, lo * scale, hi * scale)
