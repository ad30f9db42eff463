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

# cost guard: one eigendecomposition per cluster, sum of n_g^3
MAX_WORK = 4e9


def feasible(groups) -> bool:
    """Whether the per-cluster eigendecompositions stay within ``MAX_WORK``."""
    sizes = np.bincount(pd.factorize(groups)[0]).astype(float)
    return float((sizes**3).sum()) <= MAX_WORK


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


def cr2(xd, resid, bread, groups, absorbed, n_slopes: int) -> tuple[np.ndarray, np.ndarray]:
    """CR2 covariance of the first ``n_slopes`` coefficients and each one's Satterthwaite
    degrees of freedom.

    ``xd``: columns demeaned within the ``absorbed`` factor codes, as an array or as the fit's
    ``fit.Within`` (which gives each batch's rows without a dense copy of the whole design);
    ``bread`` = (xd'xd)^-1;
    ``resid``: residuals of the full model; ``groups``: cluster of each row. Clusters of the
    same size are adjusted together (one stacked eigendecomposition per batch)."""
    codes = pd.factorize(groups)[0]
    n_level = np.bincount(absorbed).astype(float)
    k = xd.shape[1]
    meat = np.zeros((k, k))
    # per row: p = A_g Xd_g B e_j for each slope j (the clusters' weight vectors of the df);
    # per cluster: q_g = Xd_g' p_g
    p = np.zeros((len(codes), n_slopes))
    q = np.zeros((int(codes.max()) + 1 if len(codes) else 0, k, n_slopes))
    b_slopes = bread[:, :n_slopes]
    for ids, rows in _batches(codes):
        x_g = xd[rows] if isinstance(xd, np.ndarray) else xd.demeaned(rows)  # clusters x size x K
        lev = absorbed[rows]
        fe = (lev[:, :, None] == lev[:, None, :]) / n_level[lev][:, :, None]
        hat = x_g @ bread @ np.swapaxes(x_g, 1, 2)
        a_g = _inv_sqrt(np.eye(rows.shape[1]) - fe - hat)
        ar = (a_g @ resid[rows][:, :, None])[:, :, 0]
        u = np.einsum("csk,cs->ck", x_g, ar)
        meat += u.T @ u
        p_g = a_g @ (x_g @ b_slopes)
        p[rows.ravel()] = p_g.reshape(-1, n_slopes)
        q[ids] = np.swapaxes(x_g, 1, 2) @ p_g
    cov = bread @ meat @ bread
    dofs = np.array(
        [
            _satterthwaite(bread, codes, p[:, j], q[:, :, j], absorbed, n_level)
            for j in range(n_slopes)
        ]
    )
    return cov[:n_slopes, :n_slopes], dofs


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
