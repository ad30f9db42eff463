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
(``tests/test_stats.py`` pins it to statsmodels' HC2 and the degrees of freedom to the
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


def _inv_sqrt(m: np.ndarray) -> np.ndarray:
    """Symmetric pseudo-inverse square root (eigenvalues near 0 are left out)."""
    vals, vecs = np.linalg.eigh((m + m.T) / 2)
    keep = vals > 1e-10 * max(float(vals.max()), 1e-300)
    return (vecs[:, keep] / np.sqrt(vals[keep])) @ vecs[:, keep].T


def _fe_block(level: np.ndarray, n_level: np.ndarray) -> np.ndarray:
    """Block of the absorbed factor's projection for the rows of one cluster."""
    same = level[:, None] == level[None, :]
    return same / n_level[level][:, None]


def cr2(xd, resid, bread, groups, absorbed, n_slopes: int) -> tuple[np.ndarray, np.ndarray]:
    """CR2 covariance of the first ``n_slopes`` coefficients and each one's Satterthwaite
    degrees of freedom.

    ``xd``: columns demeaned within the ``absorbed`` factor codes; ``bread`` = (xd'xd)^-1;
    ``resid``: residuals of the full model; ``groups``: cluster of each row."""
    codes = pd.factorize(groups)[0]
    order = np.argsort(codes, kind="stable")
    starts = np.flatnonzero(np.r_[True, np.diff(codes[order]) != 0])
    blocks = np.split(order, starts[1:])
    n_level = np.bincount(absorbed).astype(float)
    k = xd.shape[1]
    meat = np.zeros((k, k))
    # p_g = A_g Xd_g B e_j for each slope j: the cluster's weight vectors for the df
    p_blocks = []
    for rows in blocks:
        x_g = xd[rows]
        m_gg = np.eye(len(rows)) - _fe_block(absorbed[rows], n_level) - x_g @ bread @ x_g.T
        a_g = _inv_sqrt(m_gg)
        u = x_g.T @ (a_g @ resid[rows])
        meat += np.outer(u, u)
        p_blocks.append(a_g @ (x_g @ bread[:, :n_slopes]))
    cov = bread @ meat @ bread
    dofs = np.array(
        [_satterthwaite(xd, bread, blocks, p_blocks, absorbed, n_level, j) for j in range(n_slopes)]
    )
    return cov[:n_slopes, :n_slopes], dofs


def _satterthwaite(xd, bread, blocks, p_blocks, absorbed, n_level, j: int) -> float:
    """tr(W)^2 / tr(W^2), W = P'(I - H)P the covariance of the clusters' score terms of
    coefficient j under independent errors of equal variance."""
    g = len(blocks)
    ptp = np.array([float(p[:, j] @ p[:, j]) for p in p_blocks])
    q = np.column_stack([xd[rows].T @ p[:, j] for rows, p in zip(blocks, p_blocks, strict=True)])
    # absorbed-factor part: level sums of each cluster's p (zero when nested in the clusters)
    sums = np.zeros((len(n_level), g))
    for c, (rows, p) in enumerate(zip(blocks, p_blocks, strict=True)):
        np.add.at(sums[:, c], absorbed[rows], p[:, j])
    w = np.diag(ptp) - q.T @ bread @ q - sums.T @ (sums / n_level[:, None])
    return float(np.trace(w) ** 2 / np.sum(w * w))
