"""Heterogeneity-robust incident rate ratio: Wooldridge's extended two-way fixed effects for
Poisson (ETWFE), with the certified engineer-months split into cells, one indicator each.

One "certified" indicator in a two-way fixed-effects model averages the effects of different
engineer-months with regression weights, and lets engineers who certified earlier serve as
controls for those who certify later; when the effect grows with time since certifying or
differs by level, that average is not the plain average over certified engineer-months.
Here every certified engineer-month belongs to a cell (months since the first certification,
binned, x skill level), each cell gets its own indicator, so the engineer and calendar-month effects are estimated from months not
certified (never-certified engineers and the months before certifying of those who do: the
not-yet-treated), and the cell ratios are averaged with weights = certified engineer-months
per cell. The variance of that weighted sum of log ratios is w' V w with the clustered
covariance V of the cell coefficients (delta method; exact, the sum is linear in them).

Cells with fewer than ``MIN_CELL_MONTHS`` engineer-months (a count that does not look at the
outcome) are pooled: first the levels within a months-since bin, then what is left of all
bins. Effects are assumed equal across cohorts (engineers certifying in different calendar
months) with the same months since certifying and level; cohort x months-since cells
(Sun and Abraham) were measured to be noisier at 800 employees without reducing bias
(docs/statistics.md).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

from pipelines.lib.effects.fit import CONFIDENCE, Fit, FitError

# months since the first certification: one bin per month while effects typically build up,
# then wider bins (upper ends inclusive)
REL_BINS = (1, 2, 3, 4, 5, 6, 9, 12, 18, 24, 36, np.inf)
MIN_CELL_MONTHS = 40


@dataclass(frozen=True)
class Aggregate:
    """The weighted average of cell log ratios, its standard error and degrees of freedom."""

    log_ratio: float
    se: float
    dof: int
    cells: int

    def ratio(self) -> tuple[float, float, float]:
        q = sps.t.ppf(0.5 + CONFIDENCE / 2, self.dof)
        b = self.log_ratio
        return float(np.exp(b)), float(np.exp(b - q * self.se)), float(np.exp(b + q * self.se))


def rel_bin(rel: np.ndarray) -> np.ndarray:
    """Index of the months-since bin (0 = month 1)."""
    return np.searchsorted(np.asarray(REL_BINS, dtype=float), rel, side="left")


def _pool(keys: pd.Series, coarser: pd.Series) -> pd.Series:
    """Replace keys of cells smaller than MIN_CELL_MONTHS by their coarser key."""
    size = keys.map(keys.value_counts())
    return keys.where(size >= MIN_CELL_MONTHS, coarser)


def cells(d: pd.DataFrame, treated: np.ndarray) -> pd.Series:
    """Cell label of each certified engineer-month (``treated`` rows), pooled where small."""
    t = d.loc[treated]
    b = pd.Series(rel_bin(t["rel"].to_numpy()), index=t.index).astype(str)
    level = t["skill_level"].astype(int).astype(str)
    key = _pool("m" + b + "|l" + level, "m" + b + "|l*")
    key = _pool(key, pd.Series("m*|l*", index=t.index))
    counts = key.value_counts()
    if (counts < MIN_CELL_MONTHS).any():  # the last pool is small: it joins the largest cell
        key = key.where(key.map(counts) >= MIN_CELL_MONTHS, counts.idxmax())
    return key


def cell_columns(labels: pd.Series, n: int, rows: np.ndarray) -> dict[str, np.ndarray]:
    """One indicator per cell over all ``n`` rows (``rows``: positions of the labelled rows)."""
    out = {}
    for name in sorted(labels.unique()):
        col = np.zeros(n, dtype=bool)
        col[rows[(labels == name).to_numpy()]] = True
        out[f"cell:{name}"] = col
    return out


def aggregate(fit: Fit, weights: dict[str, float]) -> Aggregate:
    """sum_c w_c b_c / sum_c w_c over the cells, with variance w' V w (V: the fit's clustered
    covariance of the cell coefficients)."""
    missing = [c for c in weights if c not in fit.names]
    if missing:
        raise FitError(f"cell {missing[0]} could not be estimated separately")
    idx = [fit.names.index(c) for c in weights]
    w = np.array(list(weights.values()), dtype=float)
    w = w / w.sum()
    b = fit.params[idx]
    v = fit.cov[np.ix_(idx, idx)]
    return Aggregate(float(w @ b), float(np.sqrt(w @ v @ w)), fit.dof, len(idx))
