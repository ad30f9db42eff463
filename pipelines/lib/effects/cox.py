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


def fit_counting_process(start, stop, event, covariates: pd.DataFrame, strata=None) -> CoxFit:
    """Fit the Cox model of ``event`` on ``covariates`` over the rows (start, stop];
    ``strata``: one label per row, each stratum with its own baseline hazard.

    A convergence warning is raised as ``ArithmeticError``; a singular information matrix
    raises numpy's ``LinAlgError``; other warnings come back as ``notes``."""
    from statsmodels.duration.hazard_regression import PHReg

    start = np.asarray(start, dtype=float)
    names = list(covariates.columns)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = PHReg(
            np.asarray(stop, dtype=float),
            covariates.to_numpy(dtype=float),
            status=np.asarray(event, dtype=int),
            entry=np.nextafter(start, np.inf),
            strata=None if strata is None else np.asarray(strata),
            ties="efron",
        )
        result = model.fit()
    bad = [w for w in caught if "onvergence" in type(w.message).__name__]
    if bad:
        raise ArithmeticError(str(bad[0].message).split("\n")[0])
    return CoxFit(
        pd.Series(np.asarray(result.params), index=names),
        pd.Series(np.asarray(result.bse), index=names),
        sorted({str(w.message).split("\n")[0] for w in caught}),
    )
