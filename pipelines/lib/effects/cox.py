"""Cox proportional-hazards fit on counting-process rows, shared by the attrition hazard ratio,
the programmes' voluntary-exit hazard ratios and the promotion hazard ratio.

Each row is one stretch (start, stop] of one subject with constant covariates, ``event`` true
when the stretch ends in the event. The partial likelihood is Efron's for tied event times; the
standard errors are model-based (a subject's rows do not overlap in time, so the rows are
independent contributions).

statsmodels' ``PHReg`` fits it: its ``entry`` counts a row at risk from the entry time
inclusive, while a counting-process row is at risk only after its start, so the entry given
to it is the next float above ``start``. With that the fit equals lifelines'
``CoxTimeVaryingFitter`` (``tests/test_cox.py`` checks both on the same rows, including
event times equal to other rows' starts); lifelines' fitter loops over event times in Python
and took 33 CPU s where ``PHReg`` takes under 2 on the 37,000 exit rows of a 200,000-employee
company.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import numpy as np
import pandas as pd


@dataclass
class CoxFit:
    """Coefficients and standard errors by covariate name; the fit's warnings as text."""

    params: pd.Series
    standard_errors: pd.Series
    notes: list[str] = field(default_factory=list)


# Warnings about the code rather than the data (a library's deprecations, an unclosed file
# finalised while the fit ran, in any thread: the record is process-wide) never become a
# mart's caveat; a numerical warning does.
NOT_ABOUT_THE_FIT = (ResourceWarning, DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def fit_notes(caught) -> list[str]:
    """The first line of each warning about the fit, once each, sorted."""
    return sorted(
        {
            str(w.message).split("\n")[0]
            for w in caught
            if not issubclass(w.category, NOT_ABOUT_THE_FIT)
        }
    )


def watched_fit(fit, *args, **kwargs):
    """``fit(*args, **kwargs)`` with its warnings recorded: (its result, the notes of
    `fit_notes`). A convergence warning is raised as ``ArithmeticError`` with its first line.
    Every model fit of the statistics (Cox, Weibull, logistic) runs through here."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fit(*args, **kwargs)
    bad = [w for w in caught if "onvergence" in type(w.message).__name__]
    if bad:
        raise ArithmeticError(str(bad[0].message).split("\n")[0])
    return result, fit_notes(caught)


def fit_counting_process(start, stop, event, covariates: pd.DataFrame, strata=None) -> CoxFit:
    """Fit the Cox model of ``event`` on ``covariates`` over the rows (start, stop];
    ``strata``: one label per row, each stratum with its own baseline hazard.

    A convergence warning is raised as ``ArithmeticError``; a singular information matrix
    raises numpy's ``LinAlgError``; other warnings come back as ``notes``."""
    from statsmodels.duration.hazard_regression import PHReg

    start = np.asarray(start, dtype=float)
    names = list(covariates.columns)

    def fit():
        return PHReg(
            np.asarray(stop, dtype=float),
            covariates.to_numpy(dtype=float),
            status=np.asarray(event, dtype=int),
            entry=np.nextafter(start, np.inf),
            strata=None if strata is None else np.asarray(strata),
            ties="efron",
        ).fit()

    result, notes = watched_fit(fit)
    return CoxFit(
        pd.Series(np.asarray(result.params), index=names),
        pd.Series(np.asarray(result.bse), index=names),
        notes,
    )


MAX_LOG = 700.0  # exp() of more overflows a float


def hazard_ratio_while_certified(
    e, cp: pd.DataFrame, events: str, min_lapsed: int, level: str
) -> list[str] | None:
    """The common end of the attrition and promotion hazard ratios, on their counting-process
    rows ``cp`` (id, start, stop, event, certified, lapsed, skill_level).

    Lapsed time with fewer than ``min_lapsed`` events leaves the risk set (too few to estimate
    its own rate, and not a control); otherwise it gets its own term. Skill level enters as a
    covariate (``level="covariate"``) or as strata with their own baseline hazard
    (``level="strata"``). A fit that fails, or whose interval is not usable (a standard error
    over 2, or a ratio exp() cannot give), makes the effect not estimable with the reason.
    Sets the estimate and interval of the ``Effect`` ``e`` and returns the fit's warnings, or
    None when ``e`` is not estimable."""
    from scipy import stats as sps

    from pipelines.lib.effects.fit import CONFIDENCE

    ev = cp["event"].to_numpy()
    lapsed = (cp["lapsed"] > 0).to_numpy()
    if lapsed.any() and int((ev & lapsed).sum()) < min_lapsed:
        cp = cp[~lapsed]
        # the events of lapsed time are few by this test: their number is not quoted
        e.caveats.append(
            f"Time after a certification lapsed (fewer than {min_lapsed} {events}) is left "
            "out of the comparison: too little to estimate on its own, and not a control."
        )
    varying = [c for c in ("lapsed", "skill_level") if cp[c].nunique() > 1]
    covariates = ["certified", *(c for c in varying if level == "covariate" or c == "lapsed")]
    strata = cp["skill_level"] if level == "strata" and "skill_level" in varying else None
    try:
        fit = fit_counting_process(cp["start"], cp["stop"], cp["event"], cp[covariates], strata)
    except Exception as exc:  # no convergence, a singular information matrix, ...
        e.not_estimable(f"the Cox model did not converge ({exc})")
        return None
    b, se = float(fit.params["certified"]), float(fit.standard_errors["certified"])
    z = float(sps.norm.ppf(0.5 + CONFIDENCE / 2))
    if not (np.isfinite(b) and np.isfinite(se)) or se > 2.0 or abs(b) + z * se > MAX_LOG:
        e.not_estimable(
            f"the Cox model gives no usable interval (log hazard ratio {b:.2f}, standard error "
            f"{se:.2f})",
            f"about {e.n_events} more {events} (twice as many as now)",
        )
        return None
    e.estimate, e.ci_low, e.ci_high = (float(np.exp(v)) for v in (b, b - z * se, b + z * se))
    return [f"The Cox fit warned: {n}" for n in fit.notes]
