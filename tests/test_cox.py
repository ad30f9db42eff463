"""The Cox fit on counting-process rows (``pipelines.lib.effects.cox``) against an independent
implementation of the same likelihood, lifelines' ``CoxTimeVaryingFitter``, on rows where
other subjects' events fall exactly at a row's start (where "at risk after the start" and "at
risk from the start" differ), with ties, strata and a time-varying covariate."""

import numpy as np
import pandas as pd
import pytest
from lifelines import CoxTimeVaryingFitter

from pipelines.lib.effects.cox import fit_counting_process


def _rows(seed: int, n: int = 400) -> pd.DataFrame:
    """Subjects followed on whole months 0..36, certified from a random month on (two rows
    then, the second starting where the first stops), leaving with a hazard that certifying
    lowers; integer times make many events tie with each other and with rows' starts."""
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(n):
        level = int(rng.integers(1, 4))
        cert = int(rng.integers(1, 30)) if rng.random() < 0.6 else None
        t, end, event = 0, 36, False
        for month in range(1, 37):
            rate = 0.03 * (0.6 if cert is not None and month > cert else 1.0) * (1 + 0.2 * level)
            if rng.random() < rate:
                end, event = month, True
                break
        if cert is not None and cert < end:
            rows.append((i, t, cert, False, 0.0, level))
            rows.append((i, cert, end, event, 1.0, level))
        else:
            rows.append((i, t, end, event, 0.0, level))
    return pd.DataFrame(rows, columns=["id", "start", "stop", "event", "certified", "level"])


def _lifelines(cp: pd.DataFrame, covariates: list[str], strata=None):
    ctv = CoxTimeVaryingFitter()
    ctv.fit(
        cp[["id", "start", "stop", "event", *covariates, *(strata or [])]].astype({"event": int}),
        event_col="event",
        start_col="start",
        stop_col="stop",
        id_col="id",
        strata=strata,
    )
    return ctv.params_, ctv.standard_errors_


@pytest.mark.parametrize("seed", [1, 2])
def test_equals_lifelines_time_varying_fit(seed):
    cp = _rows(seed)
    # events at a time where another row starts: the case the entry rule decides
    starts = set(cp.loc[cp["start"] > 0, "start"])
    assert cp.loc[cp["event"], "stop"].isin(starts).sum() > 10
    cp = cp.assign(level=cp["level"].astype(float))
    fit = fit_counting_process(cp["start"], cp["stop"], cp["event"], cp[["certified", "level"]])
    params, se = _lifelines(cp, ["certified", "level"])
    np.testing.assert_allclose(fit.params[params.index], params, atol=1e-6)
    np.testing.assert_allclose(fit.standard_errors[se.index], se, rtol=1e-5)
    assert fit.params["certified"] < 0  # the planted protective effect, at these sizes


def test_equals_lifelines_with_strata():
    cp = _rows(3)
    fit = fit_counting_process(
        cp["start"], cp["stop"], cp["event"], cp[["certified"]], strata=cp["level"]
    )
    params, se = _lifelines(cp, ["certified"], strata=["level"])
    np.testing.assert_allclose(fit.params["certified"], params["certified"], atol=1e-6)
    np.testing.assert_allclose(fit.standard_errors["certified"], se["certified"], rtol=1e-5)


def test_row_at_risk_only_after_its_start():
    """Counting a row at risk at its own start (statsmodels' entry rule without the shift)
    gives a different fit on these rows: the shift is what makes the two agree."""
    from statsmodels.duration.hazard_regression import PHReg

    cp = _rows(1)
    x = cp[["certified"]].to_numpy(dtype=float)
    inclusive = PHReg(
        cp["stop"].to_numpy(float),
        x,
        status=cp["event"].astype(int),
        entry=cp["start"],
        ties="efron",
    ).fit()
    fit = fit_counting_process(cp["start"], cp["stop"], cp["event"], cp[["certified"]])
    assert abs(float(inclusive.params[0]) - float(fit.params["certified"])) > 1e-4


def test_warnings_about_the_code_not_the_data_are_no_note_of_the_fit(monkeypatch):
    """The warning record is process-wide: an unclosed file finalised by another thread, or a
    library's deprecation, would otherwise become a caveat of a published mart."""
    import warnings

    from statsmodels.duration.hazard_regression import PHReg

    fit = PHReg.fit

    def noisy(self, *args, **kwargs):
        warnings.warn(
            "unclosed file <_io.TextIOWrapper name='/proc/1/stat'>", ResourceWarning, stacklevel=1
        )
        warnings.warn("this argument is deprecated", DeprecationWarning, stacklevel=1)
        warnings.warn("this default will change", FutureWarning, stacklevel=1)
        warnings.warn("overflow encountered in exp", RuntimeWarning, stacklevel=1)
        return fit(self, *args, **kwargs)

    monkeypatch.setattr(PHReg, "fit", noisy)
    cp = _rows(1)
    result = fit_counting_process(cp["start"], cp["stop"], cp["event"], cp[["certified"]])
    assert result.notes == ["overflow encountered in exp"]


def test_every_fit_raises_on_a_convergence_warning_and_keeps_other_warnings_as_notes():
    """`watched_fit`, which the Cox, Weibull and logistic fits all run through: statsmodels'
    and lifelines' convergence warnings become ArithmeticError with their first line; the fit's
    result comes back with its other warnings about the fit as notes."""
    import warnings

    from lifelines.exceptions import ConvergenceWarning as LifelinesConvergence
    from statsmodels.tools.sm_exceptions import ConvergenceWarning as StatsmodelsConvergence

    from pipelines.lib.effects.cox import watched_fit

    for category in (StatsmodelsConvergence, LifelinesConvergence):

        def diverging(category=category):
            warnings.warn("no convergence after 50 steps\nmore detail", category, stacklevel=1)
            return "fitted"

        with pytest.raises(ArithmeticError, match=r"^no convergence after 50 steps$"):
            watched_fit(diverging)

    def fine(a, scale=1):
        warnings.warn("divide by zero encountered in log", RuntimeWarning, stacklevel=1)
        warnings.warn("divide by zero encountered in log", RuntimeWarning, stacklevel=1)
        warnings.warn("use the new name", DeprecationWarning, stacklevel=1)
        return a * scale

    assert watched_fit(fine, 2, scale=3) == (6, ["divide by zero encountered in log"])
