"""The operations estimators on small synthetic panels whose answer is planted here."""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipelines.lib.effects.fit import factor_codes
from pipelines.lib.effects.operations import (
    change_failure_ratio,
    share_per_10_points,
    wild_cluster_bootstrap,
)


def panel(rng: np.random.Generator, clusters: int, months: int, slope: float) -> pd.DataFrame:
    """Cluster-months: share = cluster effect + month effect + slope x 10 x certified share +
    noise correlated within the cluster (an AR(1) series), the case clustered errors exist for."""
    rows = []
    cluster_fx = rng.normal(0, 0.05, clusters)
    month_fx = rng.normal(0, 0.02, months)
    for c in range(clusters):
        share = np.clip(np.cumsum(rng.normal(0.02, 0.05, months)) + rng.uniform(0, 0.5), 0, 1)
        noise = np.zeros(months)
        for t in range(months):
            noise[t] = 0.6 * (noise[t - 1] if t else 0.0) + rng.normal(0, 0.01)
        for t in range(months):
            rows.append(
                {
                    "cluster": f"c{c}",
                    "month": pd.Timestamp(2024, 1, 1) + pd.DateOffset(months=t),
                    "certified_share": share[t],
                    "engineers": 8,
                    "busy_share": 0.5
                    + cluster_fx[c]
                    + month_fx[t]
                    + slope * 10 * share[t]
                    + noise[t],
                }
            )
    return pd.DataFrame(rows)


def test_the_wild_cluster_bootstrap_holds_the_planted_slope_with_few_clusters():
    """With 6 clusters the bootstrap-t interval holds the planted slope (0.02 per 10 points,
    and 0, no effect) in about 95 % of 60 panels; a binomial(60, 0.95) falls below 51 with
    probability under 1 %."""
    for slope in (0.02, 0.0):
        held = 0
        for seed in range(60):
            d = panel(np.random.default_rng(seed), clusters=6, months=24, slope=slope)
            x = 10 * d["certified_share"].to_numpy()
            codes = factor_codes(d["cluster"], d["month"])
            _, _, lo, hi = wild_cluster_bootstrap(
                d["busy_share"].to_numpy(), x, codes, d["cluster"].to_numpy(), 199, seed
            )
            held += lo <= slope <= hi
        assert held >= 51, (slope, held)


def test_share_effect_names_what_is_missing_with_two_clusters():
    d = panel(np.random.default_rng(1), clusters=2, months=6, slope=0.02)
    e = share_per_10_points(d, "busy_share", 5)
    assert not e.estimable
    assert "1 more clusters" in e.data_needed and "12 more cluster-months" in e.data_needed


def test_change_failure_ratio_within_engineer_recovers_a_planted_risk_ratio():
    """Engineers differ in how often their changes fail (Gamma frailty) and the frail ones
    certify later; within each engineer the risk while certified is 0.6 times the risk before."""
    rng = np.random.default_rng(3)
    rows = []
    for k in range(300):
        frailty = rng.gamma(4, 0.25)
        certify_at = int(rng.integers(3, 30) + 6 * (frailty > 1))
        for t in range(36):
            certified = t >= certify_at
            for _ in range(rng.poisson(1.5)):
                risk = min(0.95, 0.12 * frailty * (0.6 if certified else 1.0))
                rows.append(
                    {
                        "implementer_key": f"p{k}",
                        "month": pd.Timestamp(2024, 1, 1) + pd.DateOffset(months=t),
                        "certification_status": "certified" if certified else "not_certified",
                        "failed": int(rng.random() < risk),
                    }
                )
    e = change_failure_ratio(pd.DataFrame(rows), 5)
    assert e.estimable
    assert e.ci_low <= 0.6 <= e.ci_high and e.ci_high < 1.0, (e.estimate, e.ci_low, e.ci_high)
    assert e.naive[0] < e.estimate  # the frail engineers certify later: naive flatters
