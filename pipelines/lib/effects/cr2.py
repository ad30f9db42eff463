"""Bias-reduced cluster-robust covariance (CR2, Bell and McCaffrey 2002) with Satterthwaite
degrees of freedom, for least squares with one absorbed factor.

CR1 scales the clustered covariance by G/(G-1)(N-1)/(N-K); with few or unequal clusters it
still understates the variance, and Student-t with G-1 degrees of freedom does not make up
for it. CR2 instead adjusts each cluster's residuals by (I - H_gg)^(-1/2), H_gg the block
of the hat matrix for the cluster, which makes the covariance unbiased when errors are
independent and of equal variance; the degrees of freedom of a coefficient's t-statistic
come from matching the first two moments of its variance estimate under that working model
(Bell-McCaffrey; Imbens and Kolesar 2016; Pustejovsky and Tipton 2018, who show how to use
the pseudo-inverse when fixed effects nested in the clusters make I - H_gg singular).

The hat matrix of the full model (absorbed factor D plus the columns X) is P_D + Xd B Xd',
with Xd the columns of X demeaned within D and B = (Xd'Xd)^-1, so no dummy for D is built.
With one observation per cluster and only an intercept absorbed, CR2 is HC2
(``tests/test_effects.py`` pins it to statsmodels' HC2 and the degrees of freedom to the
closed form for a binary regressor).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

# cost guards: a cluster of more rows than this would need an n x n block (and perhaps an
# eigendecomposition) of its own; at this total of n_g^2 the hat blocks alone take about half
# a minute
MAX_CLUSTER_ROWS = 2_000
MAX_WORK = 1e9


def feasible(groups) -> bool:
    """Whether every cluster has at most ``MAX_CLUSTER_ROWS`` rows and sum n_g^2 stays
    within ``MAX_WORK`` (the hat blocks' work is n_g^2 x columns; most clusters then take the
    series, whose work also grows with n_g^2)."""
    sizes = np.bincount(pd.factorize(groups)[0]).astype(float)
    if not len(sizes):
        return True
    return float(sizes.max()) <= MAX_CLUSTER_ROWS and float((sizes**2).sum()) <= MAX_WORK


# rows per batch of equal-sized clusters (bounds the stacked cluster blocks' memory)
BATCH_ROWS = 20_000


def _inv_sqrt(m: np.ndarray) -> np.ndarray:
    """Symmetric pseudo-inverse square roots of a stack of matrices (eigenvalues near 0 of
    each matrix are left out)."""
    vals, vecs = np.linalg.eigh((m + np.swapaxes(m, -1, -2)) / 2)
    top = np.maximum(vals.max(axis=-1, keepdims=True), 1e-300)
    keep = vals > 1e-10 * top
    scale = np.where(keep, 1.0 / np.sqrt(np.where(keep, vals, 1.0)), 0.0)
    return (vecs * scale[..., None, :]) @ np.swapaxes(vecs, -1, -2)


def _batches(codes: np.ndarray):
    """Row positions of the clusters, stacked by cluster size: (cluster ids, rows[c, i])."""
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.r_[0, np.cumsum(sizes)[:-1]]
    for size in np.unique(sizes[sizes > 0]):
        ids = np.flatnonzero(sizes == size)
        step = max(1, BATCH_ROWS // int(size))
        for i in range(0, len(ids), step):
            chunk = ids[i : i + step]
            yield chunk, order[starts[chunk][:, None] + np.arange(size)[None, :]]


def cr2(
    xd, resid, bread, groups, absorbed, n_slopes: int, dof_for=None
) -> tuple[np.ndarray, np.ndarray]:
    """CR2 covariance of the first ``n_slopes`` coefficients and their Satterthwaite degrees
    of freedom.

    ``xd``: columns demeaned within the ``absorbed`` factor codes, as an array or as the fit's
    ``fit.Within`` (which gives each batch's rows without a dense copy of the whole design);
    ``bread`` = (xd'xd)^-1;
    ``resid``: residuals of the full model; ``groups``: cluster of each row. Clusters of the
    same size are adjusted together. ``dof_for``: the slopes (positions) whose degrees of
    freedom are wanted, all by default; the others are NaN (each costs a pass over the rows and
    a G x K product, and a fit's controls never get an interval).

    Where the absorbed factor is nested in the clusters (engineer effects, engineer clusters),
    I - H_gg is the projection P_g off the cluster's engineer means minus the hat block H_gg,
    and (I - H_gg)^(-1/2) (pseudo-inverse) = P_g + sum_m c_m H_gg^m, c_m = C(2m, m) / 4^m,
    the binomial series of (1 - h)^(-1/2). A cluster whose trace(H_gg) (a bound of its largest
    eigenvalue) is at most ``SERIES_LEVERAGE`` takes the series, as products with the few
    vectors it is applied to and enough terms for a relative error below 1e-15; the others take
    an eigendecomposition. Many clusters make every cluster's leverage small: at 200,000
    employees the eigendecompositions were half the time of the resolve-time ratios."""
    codes = pd.factorize(groups)[0]
    n_level = np.bincount(absorbed).astype(float)
    k = xd.shape[1]
    wanted = list(range(n_slopes)) if dof_for is None else sorted(set(dof_for))
    meat = np.zeros((k, k))
    # per row: p = A_g Xd_g B e_j for each wanted slope j (the clusters' weight vectors of the
    # df); per cluster: q_g = Xd_g' p_g
    p = np.zeros((len(codes), len(wanted)))
    q = np.zeros((int(codes.max()) + 1 if len(codes) else 0, k, len(wanted)))
    b_wanted = bread[:, wanted]
    series = nested(absorbed, codes)
    for ids, rows in _batches(codes):
        x_g = xd[rows] if isinstance(xd, np.ndarray) else xd.demeaned(rows)  # clusters x size x K
        hat = x_g @ bread @ np.swapaxes(x_g, 1, 2)
        # the vectors A_g is applied to: the residuals, then Xd_g B e_j for each wanted j
        v = np.concatenate([resid[rows][:, :, None], x_g @ b_wanted], axis=2)
        av = np.empty_like(v)
        trace = np.trace(hat, axis1=1, axis2=2)  # bounds each block's largest eigenvalue
        small = trace <= SERIES_LEVERAGE if series else np.zeros(len(ids), dtype=bool)
        if small.any():
            av[small] = _series(hat[small], v[small], float(trace[small].max()))
        if not small.all():
            big = ~small
            lev = absorbed[rows[big]]
            fe = (lev[:, :, None] == lev[:, None, :]) / n_level[lev][:, :, None]
            a_g = _inv_sqrt(np.eye(rows.shape[1]) - fe - hat[big])
            av[big] = a_g @ v[big]
        u = np.einsum("csk,cs->ck", x_g, av[:, :, 0])
        meat += u.T @ u
        p_g = av[:, :, 1:]
        p[rows.ravel()] = p_g.reshape(rows.size, len(wanted))
        q[ids] = np.swapaxes(x_g, 1, 2) @ p_g
    cov = bread @ meat @ bread
    dofs = np.full(n_slopes, np.nan)
    for i, j in enumerate(wanted):
        dofs[j] = _satterthwaite(bread, codes, p[:, i], q[:, :, i], absorbed, n_level)
    return cov[:n_slopes, :n_slopes], dofs


# clusters whose hat block has at most this trace take the series (``cr2``): with 0.25 it
# needs at most 25 terms
SERIES_LEVERAGE = 0.25


def nested(factor: np.ndarray, clusters: np.ndarray) -> bool:
    """Whether every level of ``factor`` (integer codes) lies in one cluster (``clusters``:
    codes 0..G-1)."""
    if not len(factor):
        return True
    pairs = np.unique(np.asarray(factor, dtype=np.int64) * (int(clusters.max()) + 1) + clusters)
    return len(pairs) == len(np.unique(factor))


def _series(hat: np.ndarray, v: np.ndarray, rho: float) -> np.ndarray:
    """(P - H)^(-1/2) v for stacked clusters, P the projection off the absorbed levels' means
    and H = ``hat`` inside its range, for v in P's range (the residuals and the demeaned
    columns sum to zero over each level, so P v = v): v + sum_m c_m H^m v, the terms added
    until the bound of the rest, rho^(m+1) / (1 - rho), is below 1e-15; ``rho`` (below 1)
    bounds every block's largest eigenvalue (their largest trace)."""
    out = v
    term = v
    c = 1.0
    m = 0
    while rho > 0 and rho ** (m + 1) / (1 - rho) > 1e-15:
        m += 1
        c *= (2 * m - 1) / (2 * m)  # C(2m, m) / 4^m from its predecessor
        term = hat @ term
        out = out + c * term
    return out


def _satterthwaite(bread, codes, p, q, absorbed, n_level) -> float:
    """tr(W)^2 / tr(W^2), W = P'(I - H)P the covariance of the clusters' score terms of
    one coefficient under independent errors of equal variance.

    W = D - Q'BQ - S'NS (G x G) with D = diag(p_g'p_g), Q (K x G) the columns q_g = Xd_g'p_g,
    S (levels x G) the absorbed factor's level sums of each cluster's p and N = diag(1/n_level).
    Both traces are taken through K x K and levels x levels products, never forming the G x G
    matrix: at 9,000 engineers that matrix alone was 650 MB and its products took minutes."""
    from scipy import sparse

    g = len(q)
    d = np.bincount(codes, weights=p * p, minlength=g)
    qb = bread @ q.T  # K x G: B q_g
    r_diag = np.einsum("gk,kg->g", q, qb)  # q_g' B q_g
    bqq = bread @ (q.T @ q)
    # absorbed-factor part; zero when the factor is nested in the clusters (each level's sum of
    # p vanishes there), exactly the case of engineer effects with engineer clusters
    s = sparse.csr_matrix((p, (absorbed, codes)), shape=(len(n_level), g))
    ns = sparse.diags(1.0 / n_level) @ s  # N S
    t_diag = np.asarray(s.multiply(ns).sum(axis=0)).ravel()  # (S'NS)_gg
    nk = ns @ s.T  # N S S' (levels x levels, sparse)
    qs = (s @ q).T  # K x levels: Q S'
    trace = d.sum() - r_diag.sum() - t_diag.sum()
    rr = float(np.sum(bqq * bqq.T))  # ||Q'BQ||^2 = tr(B QQ' B QQ')
    tt = float(nk.multiply(nk.T).sum())  # ||S'NS||^2 = tr(N SS' N SS')
    rt = float(np.sum((bread @ qs) * (qs.T / n_level[:, None]).T))  # tr(B QS' N SQ')
    sq = (d * d).sum() + rr + tt - 2 * (d * r_diag).sum() - 2 * (d * t_diag).sum() + 2 * rt
    return float(trace**2 / sq)
