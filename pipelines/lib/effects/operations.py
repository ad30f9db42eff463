"""The rows of ``marts.operations_effect``: what a certified team changes in operations.

- ``change_failure_ratio``: P(a change fails) while the implementer holds an active
  certification / while not, each engineer compared with themselves (Poisson with a log link on
  the failed indicator, engineer and month fixed effects: a risk ratio; clustered by engineer).
- ``busy_share_per_10_points`` and ``lost_share_per_10_points``: the difference in the busy or
  lost share of a cluster's available GPU-hours per 10 points of the team's certified share,
  with cluster and month fixed effects. A company has 3 to 40 clusters, too few for clustered
  standard errors to be trusted: the interval is a wild cluster bootstrap-t (unrestricted
  residuals, Webb's six-point weights, which stay informative with few clusters where
  Rademacher weights give only 2^G distinct draws; `BOOTSTRAP_REPLICATIONS` draws from a fixed
  seed, so the same data give the same interval).
- ``commissioning_time_ratio``: days from delivery to production (per 1,000 GPUs) of projects
  led by certified engineers against those led by none (log-linear in the certified share of
  the leads, clustered by cluster); a company has few projects, so it is mostly not estimable
  and says which data would make it so.

The status rules (estimable, finding, the published row) are those of
``marts.certification_effect`` (``result.py``); a difference is a finding when its interval
excludes 0, a ratio when it excludes 1.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from pipelines.lib.effects.fit import (
    CONFIDENCE,
    FitError,
    factor_codes,
    fe_ols,
    fe_poisson,
    informative_rows,
    two_group_ratio,
)
from pipelines.lib.effects.result import (
    EFFECT_DESCRIPTIONS,
    Effect,
    effects_frame,
    shortfall,
    window_of,
)
from pipelines.lib.small_groups import is_small, people_phrase

METRICS = (
    "change_failure_ratio",
    "busy_share_per_10_points",
    "lost_share_per_10_points",
    "commissioning_time_ratio",
)
MIN_SWITCHERS = 10  # engineers with changes both while certified and while not
MIN_FAILURES_EACH_SIDE = 10
MIN_CLUSTERS = 3
MIN_CLUSTER_MONTHS = 24
MIN_PROJECTS = 30
MIN_PROJECTS_EACH_SIDE = 8
BOOTSTRAP_REPLICATIONS = 999
BOOTSTRAP_SEED = 20240311
# Webb (2014) six-point weights: +-sqrt(1/2), +-1, +-sqrt(3/2), each with probability 1/6
WEBB_WEIGHTS = np.array(
    [-math.sqrt(1.5), -1.0, -math.sqrt(0.5), math.sqrt(0.5), 1.0, math.sqrt(1.5)]
)

CHANGE_THREATS = (
    "Comparing each engineer with themselves removes stable differences between engineers, not "
    "changes that coincide with certifying (harder or easier changes assigned afterwards); a "
    "change counts as failed when it closed unsuccessful or backed out, or the tool links an "
    "incident it caused."
)
SHARE_THREATS = (
    "Cluster and month fixed effects remove stable differences between clusters and what all "
    "clusters share in a month, not what changes in one cluster together with its team's "
    "certified share (new hardware, a new workload); the busy share is the DCGM utilisation, "
    "the lost share the GPU-hours of failed jobs."
)
COMMISSIONING_THREATS = (
    "Projects are compared across clusters and years: larger or harder projects may be given "
    "to certified engineers; the days run from the hardware's delivery to its acceptance."
)


class Difference(Effect):
    """An effect read as a difference: a finding when its interval excludes 0."""

    @property
    def finding(self) -> bool:
        return bool(
            self.estimable and not self.pretrend_rejected and (self.ci_high < 0 or self.ci_low > 0)
        )


def change_failure_ratio(changes: pd.DataFrame, min_group_size: int) -> Effect:
    """``changes``: one row per completed change (intermediate.int_changes)."""
    e = Effect(
        "change_failure_ratio",
        "Poisson regression (log link) of the failed indicator on certified, engineer and "
        "month fixed effects: a risk ratio; standard errors clustered by engineer, CR1, "
        "Student-t with G-1 degrees of freedom",
        "the same engineer's changes while holding an active certification vs while not",
        "failure rate of changes by certified implementers / by implementers not certified "
        "(all engineers, no controls), clustered by engineer",
    )
    e.threats = CHANGE_THREATS
    d = changes[changes["implementer_key"].notna()].copy()
    certified = (d["certification_status"] == "certified").to_numpy()
    y = d["failed"].to_numpy(dtype=float)
    e.naive = two_group_ratio(y, certified, np.zeros(len(d)), d["implementer_key"].to_numpy())
    sides = d.assign(c=certified).groupby("implementer_key")["c"].agg(["min", "max"])
    switchers = set(sides.index[(sides["min"] == 0) & (sides["max"] == 1)])
    sw = d["implementer_key"].isin(switchers).to_numpy()
    e.n_engineers, e.n_events = len(switchers), int(y[sw].sum())
    e.window = window_of(d.loc[sw, "month"])
    before, during = int(y[sw & ~certified].sum()), int(y[sw & certified].sum())
    small = is_small(len(switchers), min_group_size)
    needs = [
        n
        for n in (
            shortfall(
                len(switchers),
                MIN_SWITCHERS,
                "engineers with changes both while certified and while not",
                small,
            ),
            shortfall(
                before,
                MIN_FAILURES_EACH_SIDE,
                "failed changes of these engineers while not certified",
                small,
            ),
            shortfall(
                during,
                MIN_FAILURES_EACH_SIDE,
                "failed changes of these engineers while certified",
                small,
            ),
        )
        if n
    ]
    if needs:
        who = people_phrase(
            len(switchers),
            min_group_size,
            "engineers with changes both while certified and while not",
        )
        return e.not_estimable(
            f"too little data to compare engineers with themselves: {who} (minimum {MIN_SWITCHERS})",
            "; ".join(needs),
        )
    s = d[sw]
    codes = factor_codes(s["implementer_key"], s["month"])
    keep = informative_rows(s["failed"].to_numpy(dtype=float), codes)
    s = s[keep]
    try:
        fit = fe_poisson(
            s["failed"].to_numpy(dtype=float),
            (s["certification_status"] == "certified").to_numpy(dtype=float)[:, None],
            np.zeros(len(s)),
            factor_codes(s["implementer_key"], s["month"]),
            s["implementer_key"].to_numpy(),
            ["certified"],
        )
    except FitError as exc:
        return e.not_estimable(f"the model could not be fitted: {exc}")
    e.estimate, e.ci_low, e.ci_high = fit.ratio("certified")
    e.caveats.append(
        f"While certified, an engineer's changes fail {e.estimate:.2f} times as often (95 % CI "
        f"{e.ci_low:.2f}-{e.ci_high:.2f}); the naive figure would say {e.naive[0]:.2f}. Based "
        f"on {people_phrase(len(switchers), min_group_size, 'engineers')} with changes on both "
        "sides."
    )
    return e


def _annihilator(codes: list[np.ndarray]) -> np.ndarray:
    """Orthonormal basis of the fixed effects' column space (M v = v - Q Q'v)."""
    n = len(codes[0])
    blocks = [np.ones((n, 1))]
    for c in codes:
        dummies = np.zeros((n, int(c.max()) + 1))
        dummies[np.arange(n), c] = 1.0
        blocks.append(dummies[:, 1:])
    q, r = np.linalg.qr(np.hstack(blocks))
    return q[:, np.abs(np.diag(r)) > 1e-9]


def wild_cluster_bootstrap(
    y, x, codes, clusters, replications: int, seed: int
) -> tuple[float, float, float, float]:
    """Slope of ``x`` with fixed effects ``codes``: (estimate, CR1 standard error, CI low, CI
    high), the interval a wild cluster bootstrap-t with Webb weights (unrestricted residuals)."""
    q = _annihilator(codes)
    xt = x - q @ (q.T @ x)
    yt = y - q @ (q.T @ y)
    sxx = float(xt @ xt)
    beta = float(xt @ yt) / sxx
    resid = yt - xt * beta
    g_codes, g_count = pd.factorize(clusters)[0], len(np.unique(clusters))
    n, k = len(y), 1 + q.shape[1]
    factor = g_count / max(g_count - 1, 1) * (n - 1) / max(n - k, 1)

    def se_of(res: np.ndarray) -> np.ndarray:
        sums = np.zeros((g_count,) + res.shape[1:])
        np.add.at(sums, g_codes, xt.reshape((-1,) + (1,) * (res.ndim - 1)) * res)
        return np.sqrt(factor * (sums**2).sum(axis=0)) / sxx

    se = float(se_of(resid))
    rng = np.random.default_rng(seed)
    w = WEBB_WEIGHTS[rng.integers(0, 6, size=(g_count, replications))][g_codes]
    v = resid[:, None] * w
    mv = v - q @ (q.T @ v)
    b_star = beta + (xt @ mv) / sxx
    r_star = mv - xt[:, None] * (b_star - beta)
    t_star = (b_star - beta) / se_of(r_star)
    lo_q, hi_q = np.quantile(t_star, [0.5 + CONFIDENCE / 2, 0.5 - CONFIDENCE / 2])
    return beta, se, beta - lo_q * se, beta - hi_q * se


def share_per_10_points(util: pd.DataFrame, share: str, min_group_size: int) -> Effect:
    """``util``: restricted.cluster_utilisation; ``share`` busy_share or lost_share."""
    kind = share.split("_")[0]
    e = Difference(
        f"{share}_per_10_points",
        f"least squares of the {kind} share of available GPU-hours on 10 x the team's certified "
        "share, cluster and month fixed effects; interval: wild cluster bootstrap-t by cluster "
        f"(Webb six-point weights, unrestricted residuals, {BOOTSTRAP_REPLICATIONS} draws)",
        "the same cluster in months its team was more or less certified, against the other "
        "clusters in the same month",
        f"difference in the {kind} share between cluster-months with at least half the team "
        "certified and the others (no controls), clustered by cluster",
    )
    e.threats = SHARE_THREATS
    d = util[util[share].notna() & util["certified_share"].notna() & (util["engineers"] > 0)]
    # the bootstrap draws one weight per cluster in the order the clusters come: one order,
    # whatever order the warehouse returned the rows in, so a rerun gives the same interval
    d = d.sort_values(["cluster", "month"], kind="stable").reset_index(drop=True)
    e.n_engineers = 0
    e.n_events = 0
    e.window = window_of(d["month"])
    clusters = d["cluster"].to_numpy()
    n_clusters = len(np.unique(clusters))
    if len(d):
        high = d["certified_share"] >= 0.5
        e.naive = _naive_difference(d[share].to_numpy(), high.to_numpy(), clusters)
    needs = [
        n
        for n in (
            shortfall(n_clusters, MIN_CLUSTERS, "clusters with GPU usage and a team"),
            shortfall(len(d), MIN_CLUSTER_MONTHS, "cluster-months with GPU usage and a team"),
        )
        if n
    ]
    if needs or d["certified_share"].std() == 0:
        return e.not_estimable(
            f"too little data: {n_clusters} clusters and {len(d)} cluster-months with GPU usage "
            f"and a team (minimum {MIN_CLUSTERS} and {MIN_CLUSTER_MONTHS})",
            "; ".join(needs) or "months in which teams' certified shares differ",
        )
    y = d[share].to_numpy(dtype=float)
    x = 10 * d["certified_share"].to_numpy(dtype=float)
    beta, se, lo, hi = wild_cluster_bootstrap(
        y,
        x,
        factor_codes(d["cluster"], d["month"]),
        clusters,
        BOOTSTRAP_REPLICATIONS,
        BOOTSTRAP_SEED,
    )
    e.estimate, e.ci_low, e.ci_high = beta, lo, hi
    q = sps.t.ppf(0.5 + CONFIDENCE / 2, max(n_clusters - 1, 1))
    e.robustness = (beta, beta - q * se, beta + q * se)
    e.robustness_method = (
        "the same fit with CR1 standard errors by cluster, Student-t with G-1 degrees of freedom"
    )
    e.caveats.append(
        f"Per 10 points more of the team certified, the {kind} share of available GPU-hours "
        f"changes by {beta:+.4f} (95 % CI {lo:+.4f} to {hi:+.4f}), from {n_clusters} clusters "
        f"and {len(d)} cluster-months."
    )
    return e


def _naive_difference(
    y: np.ndarray, group: np.ndarray, clusters: np.ndarray
) -> tuple[float, float, float]:
    if group.all() or not group.any():
        return (math.nan, math.nan, math.nan)
    fit = fe_ols(y, group[:, None].astype(float), [np.zeros(len(y), dtype=int)], clusters, ["g"])
    b, se = float(fit.params[0]), fit.se("g")
    q = sps.t.ppf(0.5 + CONFIDENCE / 2, fit.dof)
    return (b, b - q * se, b + q * se)


def commissioning_time_ratio(projects: pd.DataFrame, min_group_size: int) -> Effect:
    """``projects``: restricted.capacity_commissioning."""
    e = Effect(
        "commissioning_time_ratio",
        "least squares of log(days from delivery to production) on the certified share of the "
        "leads and log(GPUs added); exp(slope) = all leads certified vs none; clustered by "
        "cluster, Student-t with G-1 degrees of freedom",
        "projects led by certified engineers vs projects led by engineers not certified",
        "mean days per 1,000 GPUs of projects with any certified lead / of the others (ratio "
        "of means, no controls)",
    )
    e.threats = COMMISSIONING_THREATS
    d = projects[
        projects["days_to_production"].notna()
        & (projects["days_to_production"] > 0)
        & (projects["leads"] > 0)
        & (projects["gpus_added"] > 0)
    ]
    e.window = window_of(pd.to_datetime(d["accepted_on"]))
    e.n_events = len(d)
    certified = (d["certified_share_of_leads"] > 0).to_numpy()
    if certified.any() and not certified.all():
        per = d["days_per_1000_gpus"].to_numpy(dtype=float)
        e.naive = (float(per[certified].mean() / per[~certified].mean()), math.nan, math.nan)
    with_cert, without = int(certified.sum()), int((~certified).sum())
    needs = [
        n
        for n in (
            shortfall(
                len(d), MIN_PROJECTS, "capacity projects accepted into production with linked leads"
            ),
            shortfall(
                with_cert, MIN_PROJECTS_EACH_SIDE, "such projects led by certified engineers"
            ),
            shortfall(
                without, MIN_PROJECTS_EACH_SIDE, "such projects led by engineers not certified"
            ),
        )
        if n
    ]
    if needs:
        return e.not_estimable(
            f"too few capacity projects: {len(d)} accepted into production with linked leads, "
            f"{with_cert} with a certified lead (minimum {MIN_PROJECTS}, {MIN_PROJECTS_EACH_SIDE} "
            "on each side)",
            "; ".join(needs) + " (Jira epics or ServiceNow changes naming who led them, over "
            "more years or clusters)",
        )
    x = np.column_stack(
        [
            d["certified_share_of_leads"].to_numpy(dtype=float),
            np.log(d["gpus_added"].to_numpy(dtype=float)),
        ]
    )
    try:
        fit = fe_ols(
            np.log(d["days_to_production"].to_numpy(dtype=float)),
            x,
            [np.zeros(len(d), dtype=int)],
            d["cluster"].to_numpy(),
            ["certified_share", "log_gpus"],
        )
    except (FitError, ValueError) as exc:
        return e.not_estimable(f"the model could not be fitted: {exc}")
    e.estimate, e.ci_low, e.ci_high = fit.ratio("certified_share")
    e.caveats.append(
        f"Projects led by certified engineers take {e.estimate:.2f} times as long from delivery "
        f"to production (95 % CI {e.ci_low:.2f}-{e.ci_high:.2f}), from {len(d)} projects."
    )
    return e


def operations_effects(
    changes: pd.DataFrame,
    utilisation: pd.DataFrame,
    projects: pd.DataFrame,
    min_group_size: int = 5,
) -> pd.DataFrame:
    """One row per metric of ``METRICS`` (the columns of ``marts.certification_effect``). On one
    BLAS thread, as the other estimators: faster on a shared machine, and the same figures to
    the last digit on every run (a multi-threaded reduction may add up in another order)."""
    from pipelines.lib.effects.fit import single_threaded_blas

    # one row order whatever order the warehouse returned: the fits add up in the same order
    changes, utilisation, projects = (
        f.sort_values(list(f.columns), kind="stable").reset_index(drop=True)
        for f in (changes, utilisation, projects)
    )
    with single_threaded_blas():
        effects = [
            change_failure_ratio(changes, min_group_size),
            share_per_10_points(utilisation, "busy_share", min_group_size),
            share_per_10_points(utilisation, "lost_share", min_group_size),
            commissioning_time_ratio(projects, min_group_size),
        ]
    return effects_frame(effects)


OPERATIONS_EFFECT_TABLE = (
    "What a certified team changes in operations, one row per metric (change_failure_ratio, "
    "busy_share_per_10_points, lost_share_per_10_points, commissioning_time_ratio), with the "
    "columns and status rules of marts.certification_effect. Grain: one row per metric. Method: "
    "docs/statistics.md."
)
OPERATIONS_EFFECT_DESCRIPTIONS = {
    **EFFECT_DESCRIPTIONS,
    "metric": "change_failure_ratio, busy_share_per_10_points, lost_share_per_10_points or "
    "commissioning_time_ratio",
    "estimate": "change_failure_ratio and commissioning_time_ratio: ratio certified vs not (below "
    "1 = fewer failed changes, faster commissioning); the shares: difference in the share of "
    "available GPU-hours per 10 points of the team's certified share (0.02 = 2 points more); "
    "NULL when not estimable",
    "finding": "estimable and the interval excludes 1 (ratios) or 0 (share differences)",
    "n_engineers": "engineers with changes both while certified and while not "
    "(change_failure_ratio; 0 elsewhere); NULL when 1 to min_group_size - 1",
    "n_events": "failed changes of those engineers, or capacity projects in production with "
    "linked leads (commissioning_time_ratio); NULL when 1 to min_group_size - 1",
    "n_cohorts": "0: no cohorts in these designs",
}
