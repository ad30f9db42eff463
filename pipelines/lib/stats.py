"""Certification-effect statistics: what holding a certification does to incidents, MTTR and exits.

Leadership reads these figures, so each estimator compares like with like and says how:

* Certification is a time-varying, staggered treatment. Certified engineer-months are compared
  with engineer-months of not-yet-certified and never-certified engineers in the *same calendar
  months* (month fixed effects), at the same skill level and tenure band. A plain before/after
  comparison is reported beside it as the "naive" figure, because it is what people compute
  first and it is biased: fleets grow (incidents trend up) and tooling improves (MTTR trends
  down) while engineers certify.
* Incidents are counts with exposure: Poisson regression with a log(exposure) offset and
  standard errors clustered by engineer (which also makes them robust to over-dispersion).
* MTTR is right-skewed: least squares on log(resolve minutes); exp(coefficient) is the ratio of
  geometric means.
* Voluntary exit is time to event: a Cox model with certification as a time-varying covariate
  on the tenure time scale (counting-process rows id, start, stop, event), which avoids the
  immortal-time bias of comparing ever-certified with never-certified engineers.
* An event study (incident rate ratio by month relative to first certification) shows whether
  certified engineers already differed before they certified (pre-trends).

Everything here is a pure function of two pandas (or Polars) frames shaped like
``intermediate.int_engineer_months`` and ``intermediate.int_incident_responses``; Dagster
wiring lives in ``pipelines/defs/stats.py``. Designs never hold person dummies (clusters are
handled in the variance), so 5,000 engineers x 60 months fit in seconds.
"""

from __future__ import annotations

import contextlib
import ctypes
import glob
import os
import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats as sps

EFFECT_COLUMNS = (
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "naive_estimate",
    "naive_method",
    "n_engineers",
    "n_events",
    "method",
    "comparison",
    "caveats",
)
EVENT_STUDY_COLUMNS = (
    "metric",
    "relative_month",
    "estimate",
    "ci_low",
    "ci_high",
    "engineers",
    "engineer_months",
)
METRICS = ("incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio")

ENGINEER_MONTHS = "intermediate.int_engineer_months"
INCIDENT_RESPONSES = "intermediate.int_incident_responses"
ENGINEER_MONTH_COLUMNS = (
    "person_key",
    "month",
    "skill_level",
    "tenure_months",
    "is_certified",
    "first_certified_month",
    "incidents",
    "exposure_months",
    "separated",
    "separation_type",
)
INCIDENT_COLUMNS = ("person_key", "is_certified", "severity", "resolve_minutes", "month")

# Event-study window: months -12..+12 around the first certification; months further out are
# binned into the end points, month -1 (the last month before certifying) is the reference.
EVENT_WINDOW = 12
REFERENCE_MONTH = -1
# Tenure bands (months) used as controls: certification and experience go together.
TENURE_BANDS = (0, 12, 24, 36, 60)
CONFIDENCE = 0.95

THREATS = (
    "Threats the design does not remove: differences between engineers that level, tenure and "
    "calendar month do not capture (motivation, team practices); regression to the mean if "
    "people certify after a bad spell; attribution to the primary responder only, although "
    "others help; small numbers in some months."
)


class StatsInputError(ValueError):
    """The input tables cannot be analysed as delivered; the message says where and why."""


# --------------------------------------------------------------------------------------------
# input preparation
# --------------------------------------------------------------------------------------------


def _to_pandas(frame, table: str) -> pd.DataFrame:
    """Accept pandas or Polars (the warehouse readers use either); never mutate the caller's."""
    if isinstance(frame, pd.DataFrame):
        return frame.copy()
    to_pandas = getattr(frame, "to_pandas", None)
    if to_pandas is None:
        raise StatsInputError(
            f"{table}: expected a pandas or Polars data frame, got {type(frame).__name__}."
        )
    return to_pandas()


def _require_columns(df: pd.DataFrame, required: tuple[str, ...], table: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise StatsInputError(
            f"{table}: missing column(s) {', '.join(missing)}. Rebuild the dbt model so it has "
            f"the columns listed in docs/architecture.md (found: {', '.join(map(str, df.columns))})."
        )


def _first_bad_row(mask: pd.Series) -> int:
    return int(np.flatnonzero(mask.to_numpy())[0]) + 1


def _check_values(df: pd.DataFrame, table: str) -> None:
    """Reject values no analysis can use, naming the first offending row (1-based)."""
    checks = [
        ("person_key", df["person_key"].isna(), "has no person_key; every row needs one"),
        ("month", df["month"].isna(), "has no month"),
    ]
    if "exposure_months" in df:
        exp = pd.to_numeric(df["exposure_months"], errors="coerce")
        checks.append(("exposure_months", exp < 0, "has a negative exposure"))
    if "incidents" in df:
        inc = pd.to_numeric(df["incidents"], errors="coerce")
        checks.append(("incidents", inc < 0, "has a negative incident count"))
    for column, mask, problem in checks:
        mask = mask.fillna(False).astype(bool)
        if mask.any():
            raise StatsInputError(
                f"{table}: row {_first_bad_row(mask)} (of {len(df)}, {int(mask.sum())} such rows) "
                f"{problem} (column {column}). Fix the upstream model before estimating effects."
            )


def _month_index(values: pd.Series) -> pd.Series:
    """Months as integers (year*12 + month-1), so differences are month counts."""
    ts = pd.to_datetime(values)
    return (ts.dt.year * 12 + ts.dt.month - 1).astype("Int64")


def _as_bool(values: pd.Series) -> np.ndarray:
    if values.dtype == object:
        values = values.map(
            lambda v: (
                str(v).strip().lower() in ("true", "1", "t", "yes") if v is not None else False
            )
        )
    return values.fillna(False).astype(bool).to_numpy()


def prepare_engineer_months(engineer_months) -> pd.DataFrame:
    """Validate and normalise ``int_engineer_months`` into the columns the estimators use."""
    df = _to_pandas(engineer_months, ENGINEER_MONTHS)
    _require_columns(df, ENGINEER_MONTH_COLUMNS, ENGINEER_MONTHS)
    _check_values(df, ENGINEER_MONTHS)
    dup = df.duplicated(["person_key", "month"])
    if dup.any():
        raise StatsInputError(
            f"{ENGINEER_MONTHS}: row {_first_bad_row(dup)} repeats a (person_key, month) pair "
            f"({int(dup.sum())} duplicates); the grain is one row per engineer and month."
        )
    out = pd.DataFrame(
        {
            "person_key": df["person_key"].astype(str).to_numpy(),
            "t": _month_index(df["month"]).to_numpy(dtype="float64"),
            "skill_level": pd.to_numeric(df["skill_level"], errors="coerce").to_numpy("float64"),
            "tenure_months": pd.to_numeric(df["tenure_months"], errors="coerce").to_numpy(
                "float64"
            ),
            "is_certified": _as_bool(df["is_certified"]),
            "first_t": _month_index(df["first_certified_month"]).to_numpy(
                dtype="float64", na_value=np.nan
            ),
            "incidents": pd.to_numeric(df["incidents"], errors="coerce")
            .fillna(0)
            .to_numpy("float64"),
            "exposure": pd.to_numeric(df["exposure_months"], errors="coerce").to_numpy("float64"),
            "separated": _as_bool(df["separated"]),
            "separation_type": df["separation_type"].astype("string").str.strip().str.lower(),
        }
    )
    fleet = df["fleet_gpus"] if "fleet_gpus" in df else pd.Series(np.nan, index=df.index)
    out["fleet_gpus"] = pd.to_numeric(fleet, errors="coerce").to_numpy("float64")
    out["voluntary_exit"] = out["separated"] & out["separation_type"].eq("voluntary").fillna(False)
    out["ever_certified"] = ~np.isnan(out["first_t"].to_numpy())
    out["rel"] = out["t"] - out["first_t"]  # NaN for never-certified
    return out.sort_values(["person_key", "t"], kind="stable").reset_index(drop=True)


def prepare_incidents(incident_responses, months: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Resolved incidents with a known primary responder, joined to the responder's month
    (level, tenure, first certification). Returns the frame and how many rows were left out."""
    df = _to_pandas(incident_responses, INCIDENT_RESPONSES)
    _require_columns(df, INCIDENT_COLUMNS, INCIDENT_RESPONSES)
    minutes = pd.to_numeric(df["resolve_minutes"], errors="coerce")
    inc = pd.DataFrame(
        {
            "person_key": df["person_key"].astype("string"),
            "t": _month_index(df["month"]).to_numpy(dtype="float64", na_value=np.nan),
            "is_certified": _as_bool(df["is_certified"]),
            "severity": df["severity"].astype("string").str.strip().str.lower(),
            "minutes": minutes.to_numpy("float64"),
        }
    )
    total = len(inc)
    usable = inc["person_key"].notna() & inc["t"].notna() & (inc["minutes"] > 0)
    inc = inc[usable.to_numpy()].copy()
    inc["person_key"] = inc["person_key"].astype(str)
    joined = inc.merge(
        months[["person_key", "t", "skill_level", "tenure_months", "first_t"]],
        on=["person_key", "t"],
        how="inner",
    )
    joined = joined.dropna(subset=["skill_level", "tenure_months"])
    return joined.reset_index(drop=True), total - len(joined)


# --------------------------------------------------------------------------------------------
# design matrices (dense but narrow: ~60 month dummies + a handful of controls)
# --------------------------------------------------------------------------------------------


def _dummies(values: np.ndarray, prefix: str) -> tuple[np.ndarray, list[str]]:
    """Indicator columns for every level but the first (the intercept carries it)."""
    levels, codes = np.unique(values, return_inverse=True)
    if len(levels) <= 1:
        return np.empty((len(values), 0)), []
    mat = np.zeros((len(values), len(levels) - 1))
    rows = np.flatnonzero(codes > 0)
    mat[rows, codes[rows] - 1] = 1.0
    return mat, [f"{prefix}={lv}" for lv in levels[1:]]


def tenure_band(tenure_months: np.ndarray) -> np.ndarray:
    """Tenure band index (0..len(TENURE_BANDS)-1) for the bands 0-11, 12-23, 24-35, 36-59, 60+."""
    return np.searchsorted(np.asarray(TENURE_BANDS), tenure_months, side="right") - 1


def _controls(df: pd.DataFrame, extra: dict[str, np.ndarray] | None = None):
    """Intercept, calendar-month, skill-level and tenure-band indicators (+ extra categoricals)."""
    blocks = [np.ones((len(df), 1))]
    names = ["const"]
    cats = {
        "month": df["t"].to_numpy(),
        "level": df["skill_level"].to_numpy(),
        "tenure_band": tenure_band(df["tenure_months"].to_numpy()),
    }
    cats.update(extra or {})
    for prefix, values in cats.items():
        mat, cols = _dummies(values, prefix)
        blocks.append(mat)
        names += cols
    return blocks, names


def _drop_empty_cells(df: pd.DataFrame, outcome: str, keys: tuple[str, ...]) -> pd.DataFrame:
    """Drop rows in calendar months / levels without any event: their indicators would run off
    to minus infinity in a Poisson fit, and they carry no information about the ratio."""
    for key in keys:
        col = (
            df[key]
            if key != "tenure_band"
            else pd.Series(tenure_band(df["tenure_months"].to_numpy()))
        )
        totals = df[outcome].groupby(col.to_numpy()).transform("sum")
        df = df[(totals > 0).to_numpy()]
    return df


@contextlib.contextmanager
def single_threaded_blas():
    """Run the linear algebra on one BLAS thread, then restore the previous setting.

    On a 2-core machine shared with dbt and other steps, OpenBLAS's spinning worker threads
    made one 70k x 70 cross-product 40 times slower than on one thread (measured). numpy has
    no switch for this, so the OpenBLAS bundled with numpy is asked directly; if it cannot be
    found, nothing changes."""
    import numpy

    setter = getter = None
    for path in glob.glob(
        os.path.join(os.path.dirname(numpy.__file__), "..", "numpy.libs", "*openblas*")
    ):
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "64_"), ("openblas", "")):
            if hasattr(lib, f"{prefix}_set_num_threads{suffix}"):
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}")
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}")
                break
    if setter is None:
        yield
        return
    before = int(getter())
    setter(1)
    try:
        yield
    finally:
        setter(before)


@dataclass(frozen=True)
class Fit:
    names: list[str]
    params: np.ndarray
    cov: np.ndarray

    def ratio(self, name: str) -> tuple[float, float, float]:
        i = self.names.index(name)
        z = sps.norm.ppf(0.5 + CONFIDENCE / 2)
        b, se = self.params[i], float(np.sqrt(self.cov[i, i]))
        return float(np.exp(b)), float(np.exp(b - z * se)), float(np.exp(b + z * se))

    def wald_p(self, names: list[str]) -> tuple[float, int]:
        idx = [self.names.index(n) for n in names]
        b = self.params[idx]
        v = self.cov[np.ix_(idx, idx)]
        stat = float(b @ np.linalg.pinv(v) @ b)
        df = len(idx)
        return float(sps.chi2.sf(stat, df)), df


def _person_codes(person_key: pd.Series) -> np.ndarray:
    return pd.factorize(person_key)[0]


def _cluster_sums(scores: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """Per-cluster sums of observation scores (rows of ``scores``) without a dummy matrix."""
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    return np.add.reduceat(scores[order], starts, axis=0)


def _sandwich(x: np.ndarray, resid_score: np.ndarray, bread: np.ndarray, groups) -> np.ndarray:
    """Cluster-robust covariance bread @ meat @ bread with the usual small-sample factor
    G/(G-1) * (N-1)/(N-K) (the one statsmodels applies by default)."""
    sums = _cluster_sums(x * resid_score[:, None], groups)
    n, k = x.shape
    n_groups = sums.shape[0]
    factor = n_groups / max(n_groups - 1, 1) * (n - 1) / max(n - k, 1)
    return factor * bread @ (sums.T @ sums) @ bread


def _solve(xtwx: np.ndarray, xtz: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Solve the (small, k x k) normal equations; the pseudo-inverse tolerates collinear
    indicators (a level that only occurs in one month, say) instead of failing."""
    inv = np.linalg.pinv(xtwx, hermitian=True)
    return inv @ xtz, inv


def fit_poisson(y, x, offset, groups, names, max_iter: int = 100, tol: float = 1e-9) -> Fit:
    """Poisson regression by iteratively reweighted least squares on the k x k normal
    equations, with cluster-robust covariance.

    Same estimator as statsmodels' GLM(Poisson, offset).fit(cov_type="cluster") (a test
    checks that), but it never factorises the n x k design, which took minutes at 300k rows."""
    y = np.asarray(y, dtype=float)
    mu = (y + y.mean()) / 2 + 1e-8  # statsmodels' starting values for the Poisson family
    eta = np.log(mu) - offset  # linear predictor without the offset
    dev_old = np.inf
    for _ in range(max_iter):
        z = eta + (y - mu) / mu  # working response (excluding the offset)
        xw = x * mu[:, None]
        beta, _ = _solve(xw.T @ x, xw.T @ z)
        eta = x @ beta
        mu = np.exp(np.clip(eta + offset, -700, 700))
        with np.errstate(divide="ignore", invalid="ignore"):
            dev = 2 * np.sum(np.where(y > 0, y * np.log(y / mu), 0.0) - (y - mu))
        if abs(dev - dev_old) <= tol * (abs(dev) + 1.0):  # relative change in deviance
            break
        dev_old = dev
    xw = x * mu[:, None]
    inv = np.linalg.pinv(xw.T @ x, hermitian=True)
    cov = _sandwich(x, y - mu, inv, groups)
    return Fit(names, beta, cov)


def fit_ols(y, x, groups, names) -> Fit:
    """Least squares on the normal equations with cluster-robust covariance (as statsmodels'
    OLS(...).fit(cov_type="cluster"))."""
    y = np.asarray(y, dtype=float)
    beta, inv = _solve(x.T @ x, x.T @ y)
    cov = _sandwich(x, y - x @ beta, inv, groups)
    return Fit(names, beta, cov)


def _fmt(x: float) -> str:
    return f"{x:.2f}"


def _empty_row(metric: str, reason: str, method: str, comparison: str, **kw) -> dict:
    row = dict.fromkeys(EFFECT_COLUMNS)
    row.update(
        metric=metric,
        estimate=np.nan,
        ci_low=np.nan,
        ci_high=np.nan,
        naive_estimate=np.nan,
        method=method,
        comparison=comparison,
        caveats=f"Not estimated: {reason}",
    )
    row.update(kw)
    return row


# --------------------------------------------------------------------------------------------
# incident rate ratio
# --------------------------------------------------------------------------------------------

IRR_METHOD = (
    "Poisson regression of incidents as primary responder per engineer-month, with the months "
    "of exposure as offset, an indicator for holding an active certification in that month, "
    "and indicators for calendar month, skill level and tenure band (0-11, 12-23, 24-35, 36-59, "
    "60+ months); standard errors clustered by engineer. The estimate is the rate ratio "
    "certified / not certified with its 95 % confidence interval. The month in which an "
    "engineer first certifies is left out, because the status changes within it."
)
IRR_COMPARISON = (
    "certified engineer-months vs engineer-months of not-yet-certified and never-certified "
    "engineers in the same calendar months, at the same skill level and tenure band"
)
IRR_NAIVE = (
    "plain before/after: incident rate after the first certification / rate before it, among "
    "engineers who certified (no control for calendar time, level or tenure)"
)


def naive_incident_ratio(m: pd.DataFrame) -> float:
    """Incidents per engineer-month after first certification / before, certified engineers."""
    cert = m[m["ever_certified"]]
    after = cert["rel"] >= 0
    rate_after = cert.loc[after, "incidents"].sum() / cert.loc[after, "exposure"].sum()
    rate_before = cert.loc[~after, "incidents"].sum() / cert.loc[~after, "exposure"].sum()
    if not rate_before > 0 or not np.isfinite(rate_after):
        return np.nan
    return float(rate_after / rate_before)


def _incident_model_frame(m: pd.DataFrame) -> pd.DataFrame:
    d = m[(m["exposure"] > 0) & m["skill_level"].notna() & m["tenure_months"].notna()]
    return _drop_empty_cells(d, "incidents", ("t", "skill_level", "tenure_band"))


def incident_rate_ratio(m: pd.DataFrame, pretrend: str = "") -> dict:
    """Row of the ``certification_effect`` mart for the incident rate ratio."""
    metric = "incident_rate_ratio"
    d = _incident_model_frame(m[~(m["rel"] == 0)])
    base = dict(
        naive_method=IRR_NAIVE,
        n_engineers=int(d["person_key"].nunique()),
        n_events=int(d["incidents"].sum()),
    )
    treated = d["is_certified"].to_numpy()
    if d.empty or not treated.any() or treated.all():
        reason = (
            "no engineer-month with an active certification"
            if not treated.any()
            else "every engineer-month is certified, so there is no comparison group"
        )
        return _empty_row(metric, reason + ".", IRR_METHOD, IRR_COMPARISON, **base)
    naive = naive_incident_ratio(m)
    blocks, names = _controls(d)
    x = np.column_stack([treated.astype(float), *blocks])
    names = ["certified", *names]
    fit = fit_poisson(
        d["incidents"].to_numpy(),
        x,
        np.log(d["exposure"].to_numpy()),
        _person_codes(d["person_key"]),
        names,
    )
    est, lo, hi = fit.ratio("certified")
    caveats = (
        f"Certified engineers have {_fmt(est)} times the incident rate of comparable "
        f"not-yet/never-certified engineers (95 % CI {_fmt(lo)}-{_fmt(hi)}); the plain "
        f"before/after ratio would say {_fmt(naive)}, because fleets and incident volumes grow "
        f"over the same months in which engineers certify. {pretrend} {THREATS}"
    ).replace("  ", " ")
    return dict(
        metric=metric,
        estimate=est,
        ci_low=lo,
        ci_high=hi,
        naive_estimate=naive,
        method=IRR_METHOD,
        comparison=IRR_COMPARISON,
        caveats=caveats,
        **base,
    )


# --------------------------------------------------------------------------------------------
# event study
# --------------------------------------------------------------------------------------------


def _event_bins(rel: np.ndarray) -> np.ndarray:
    """Months relative to first certification, ends binned at -12 and +12; NaN if never."""
    return np.clip(rel, -EVENT_WINDOW, EVENT_WINDOW)


def _event_names() -> list[str]:
    return [f"rel={k}" for k in range(-EVENT_WINDOW, EVENT_WINDOW + 1) if k != REFERENCE_MONTH]


@dataclass(frozen=True)
class EventStudy:
    table: pd.DataFrame
    pretrend_p: float
    pretrend_df: int


def _event_study(m: pd.DataFrame, min_group_size: int) -> EventStudy:
    metric = "incident_rate_ratio"
    d = _incident_model_frame(m)
    rel = _event_bins(d["rel"].to_numpy())
    ks = list(range(-EVENT_WINDOW, EVENT_WINDOW + 1))
    counts = {k: (int(d.loc[rel == k, "person_key"].nunique()), int((rel == k).sum())) for k in ks}
    names = _event_names()
    fit = None
    if d["ever_certified"].any() and len(d):
        ind = np.column_stack([(rel == int(n.split("=")[1])).astype(float) for n in names])
        keep = ind.sum(axis=0) > 0
        blocks, cnames = _controls(d)
        x = np.column_stack([ind[:, keep], *blocks])
        used = [n for n, k in zip(names, keep, strict=True) if k]
        try:
            fit = fit_poisson(
                d["incidents"].to_numpy(),
                x,
                np.log(d["exposure"].to_numpy()),
                _person_codes(d["person_key"]),
                used + cnames,
            )
        except (np.linalg.LinAlgError, ValueError):
            fit = None
    rows = []
    for k in ks:
        engineers, months = counts[k]
        est = lo = hi = np.nan
        if k == REFERENCE_MONTH and engineers:
            est = 1.0
        elif fit is not None and f"rel={k}" in fit.names and engineers >= min_group_size:
            est, lo, hi = fit.ratio(f"rel={k}")
        rows.append((metric, k, est, lo, hi, engineers, months))
    table = pd.DataFrame(rows, columns=list(EVENT_STUDY_COLUMNS))
    p, dof = np.nan, 0
    if fit is not None:
        pre = [f"rel={k}" for k in range(-EVENT_WINDOW, REFERENCE_MONTH) if f"rel={k}" in fit.names]
        if pre:
            p, dof = fit.wald_p(pre)
    return EventStudy(table, p, dof)


def event_study(engineer_months, incident_responses=None, min_group_size: int = 5) -> pd.DataFrame:
    """The ``certification_event_study`` mart: incident rate ratio by month relative to the
    first certification (-12..+12, ends binned, month -1 = 1), same controls as the rate ratio.

    Months with fewer than ``min_group_size`` engineers keep their counts but no estimate, so
    no figure describes a handful of identifiable people. ``incident_responses`` is accepted for
    a uniform signature and not used (the counts live in the engineer-month panel)."""
    months = prepare_engineer_months(engineer_months)
    with single_threaded_blas():
        return _event_study(months, min_group_size).table


def _pretrend_text(es: EventStudy) -> str:
    if not np.isfinite(es.pretrend_p):
        return "Pre-trend check: not possible (too few months before certification)."
    verdict = (
        "no sign that certified engineers were already on a different path before certifying"
        if es.pretrend_p >= 0.05
        else "WARNING: incident rates already differed before certification, so part of the "
        "estimate may reflect who certifies rather than what certification does"
    )
    return (
        f"Pre-trend check (joint Wald test that the {es.pretrend_df} event-study ratios for "
        f"months -12..-2 all equal 1): p = {es.pretrend_p:.3f}, {verdict}."
    )


# --------------------------------------------------------------------------------------------
# MTTR ratio
# --------------------------------------------------------------------------------------------

MTTR_METHOD = (
    "Least squares on the logarithm of resolve minutes of resolved incidents where the engineer "
    "was primary responder, with an indicator for holding an active certification when the "
    "incident opened and indicators for calendar month, severity, skill level and tenure band; "
    "standard errors clustered by engineer. exp(coefficient) is the ratio of geometric mean "
    "resolve times, certified / not certified, with its 95 % confidence interval."
)
MTTR_COMPARISON = (
    "incidents resolved by certified primary responders vs incidents of the same severity in the "
    "same calendar month resolved by not-yet/never-certified responders of the same level and "
    "tenure band"
)
MTTR_NAIVE = (
    "plain before/after: median resolve minutes of incidents after the first certification / "
    "median before it, among engineers who certified"
)


def naive_mttr_ratio(inc: pd.DataFrame) -> float:
    cert = inc[inc["first_t"].notna()]
    rel = cert["t"] - cert["first_t"]
    after = (rel > 0) | ((rel == 0) & cert["is_certified"])
    if not after.any() or after.all():
        return np.nan
    return float(cert.loc[after, "minutes"].median() / cert.loc[~after, "minutes"].median())


def mttr_ratio(inc: pd.DataFrame, left_out: int) -> dict:
    metric = "mttr_ratio"
    treated = inc["is_certified"].to_numpy()
    base = dict(
        naive_method=MTTR_NAIVE,
        n_engineers=int(inc["person_key"].nunique()),
        n_events=int(len(inc)),
    )
    note = (
        f"{left_out} incident rows were left out (unresolved, no matched primary responder, or "
        "no engineer-month for the responder)."
        if left_out
        else ""
    )
    if inc.empty or not treated.any() or treated.all():
        reason = (
            "no resolved incident with a certified primary responder"
            if not treated.any()
            else "every incident had a certified primary responder, so there is no comparison"
        )
        return _empty_row(metric, f"{reason}. {note}".strip(), MTTR_METHOD, MTTR_COMPARISON, **base)
    naive = naive_mttr_ratio(inc)
    sev, _ = _dummies(inc["severity"].fillna("unknown").to_numpy(), "severity")
    blocks, names = _controls(inc)
    sev_names = [f"severity_{i}" for i in range(sev.shape[1])]
    x = np.column_stack([treated.astype(float), *blocks, sev])
    fit = fit_ols(
        np.log(inc["minutes"].to_numpy()),
        x,
        _person_codes(inc["person_key"]),
        ["certified", *names, *sev_names],
    )
    est, lo, hi = fit.ratio("certified")
    caveats = (
        f"Incidents of certified responders take {_fmt(est)} times as long to resolve (geometric "
        f"mean; 95 % CI {_fmt(lo)}-{_fmt(hi)}) as comparable incidents of not-yet/never-certified "
        f"responders; the plain before/after median ratio would say {_fmt(naive)}, because "
        f"resolve times fall for everyone as tooling improves. A ratio of geometric means is not "
        f"a ratio of medians or means when spreads differ. {note} {THREATS}"
    ).replace("  ", " ")
    return dict(
        metric=metric,
        estimate=est,
        ci_low=lo,
        ci_high=hi,
        naive_estimate=naive,
        method=MTTR_METHOD,
        comparison=MTTR_COMPARISON,
        caveats=caveats,
        **base,
    )


# --------------------------------------------------------------------------------------------
# attrition hazard ratio
# --------------------------------------------------------------------------------------------

HR_METHOD = (
    "Cox proportional-hazards model of voluntary exit on the tenure time scale, with holding an "
    "active certification at the start of the month as a covariate that changes over time and "
    "skill level as a further "
    "covariate; each engineer contributes the months employed (counting-process rows), so time "
    "before a first certification counts as uncertified time. Involuntary and other exits end "
    "follow-up without counting as events. Model-based standard errors: they are valid "
    "because an engineer's rows do not overlap in tenure (only a rehire, whose tenure restarts, "
    "appears twice at the same tenure)."
)
HR_COMPARISON = (
    "at equal tenure: engineers while certified vs engineers (the same or others) while not yet "
    "or never certified, at the same skill level"
)
HR_NAIVE = (
    "ever vs never: voluntary exits per person-month of engineers who ever certified / of "
    "engineers who never did (suffers immortal-time bias: leaving early prevents certifying)"
)


def naive_hazard_ratio(m: pd.DataFrame) -> float:
    ever = m["ever_certified"].to_numpy()
    exits = m["voluntary_exit"].to_numpy()
    if not ever.any() or ever.all():
        return np.nan
    r_ever = exits[ever].sum() / ever.sum()
    r_never = exits[~ever].sum() / (~ever).sum()
    return float(r_ever / r_never) if r_never > 0 else np.nan


def certified_at_month_start(d: pd.DataFrame, pid: np.ndarray) -> np.ndarray:
    """Certification status at the start of each month: the previous month's (month-end)
    status when that month is in the panel, else this month's unless the first certification
    happened during it. The exit hazard of a month must not depend on an award the engineer
    earned later in that same month."""
    cert = d["is_certified"].to_numpy()
    t = d["t"].to_numpy()
    prev_same = np.zeros(len(d), dtype=bool)
    prev_same[1:] = (pid[1:] == pid[:-1]) & (t[1:] == t[:-1] + 1)
    lagged = np.r_[False, cert[:-1]] if len(d) else cert
    first_month = (d["rel"] == 0).to_numpy()
    return np.where(prev_same, lagged, cert & ~first_month)


def _consecutive_tenure(d: pd.DataFrame, pid: np.ndarray) -> np.ndarray:
    """Tenure (months) at the start of each engineer-month, one more per calendar month.

    The panel measures tenure on the last day worked in the month, so the month of an exit in
    the middle of the month often repeats the previous month's tenure (hired on the 20th, left
    on the 10th), and a month with fewer days can skip one. Read as they are, such rows give
    overlapping (start, stop] intervals: the leaver is twice in the risk set and the exit moves
    a month earlier. Within each run of consecutive months the tenure of the run's first month
    is carried forward instead."""
    tenure = d["tenure_months"].to_numpy(dtype=float)
    t = d["t"].to_numpy(dtype=float)
    new_run = np.ones(len(d), dtype=bool)
    if len(d) > 1:
        new_run[1:] = (pid[1:] != pid[:-1]) | (t[1:] != t[:-1] + 1)
    run = np.cumsum(new_run) - 1
    first = np.flatnonzero(new_run)
    return tenure[first][run] + (t - t[first][run])


def counting_process(m: pd.DataFrame) -> pd.DataFrame:
    """Long format (id, start, stop, event, certified, skill_level) on the tenure scale.

    One row per run of consecutive months in which certification and level stay the same, so
    the Cox fit sees a few rows per engineer instead of one per month."""
    d = m[m["tenure_months"].notna() & m["skill_level"].notna()]
    pid = _person_codes(d["person_key"])
    start = _consecutive_tenure(d, pid)
    stop = start + 1.0
    cert = certified_at_month_start(d, pid)
    level = d["skill_level"].to_numpy()
    event = d["voluntary_exit"].to_numpy()
    new = np.ones(len(d), dtype=bool)
    if len(d) > 1:
        new[1:] = (
            (pid[1:] != pid[:-1])
            | (start[1:] != stop[:-1])
            | (cert[1:] != cert[:-1])
            | (level[1:] != level[:-1])
            | event[:-1]
        )
    block = np.cumsum(new) - 1
    last = np.r_[np.flatnonzero(new)[1:] - 1, len(d) - 1] if len(d) else np.array([], int)
    first = np.flatnonzero(new)
    return pd.DataFrame(
        {
            "id": pid[first],
            "start": start[first],
            "stop": stop[last],
            "event": np.bincount(block, weights=event.astype(float)).astype(bool)
            if len(d)
            else np.array([], bool),
            "certified": cert[first].astype(float),
            "skill_level": level[first],
        }
    )


def attrition_hazard_ratio(m: pd.DataFrame) -> dict:
    metric = "attrition_hazard_ratio"
    cp = counting_process(m)
    base = dict(
        naive_method=HR_NAIVE, n_engineers=int(cp["id"].nunique()), n_events=int(cp["event"].sum())
    )
    if cp.empty or not (cp["certified"] > 0).any():
        return _empty_row(
            metric,
            "no engineer-month with an active certification.",
            HR_METHOD,
            HR_COMPARISON,
            **base,
        )
    if not cp["event"].any():
        return _empty_row(
            metric, "no voluntary exits in the data.", HR_METHOD, HR_COMPARISON, **base
        )
    naive = naive_hazard_ratio(m)
    from lifelines import CoxTimeVaryingFitter

    covariates = ["certified"] + (["skill_level"] if cp["skill_level"].nunique() > 1 else [])
    ctv = CoxTimeVaryingFitter(alpha=1 - CONFIDENCE)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ctv.fit(
                cp[["id", "start", "stop", "event", *covariates]],
                event_col="event",
                start_col="start",
                stop_col="stop",
                id_col="id",
            )
    except Exception as exc:  # lifelines raises several convergence error types
        return _empty_row(
            metric,
            f"the Cox model did not converge ({exc}).",
            HR_METHOD,
            HR_COMPARISON,
            naive_estimate=naive,
            **base,
        )
    b = float(ctv.params_["certified"])
    se = float(ctv.standard_errors_["certified"])
    z = sps.norm.ppf(0.5 + CONFIDENCE / 2)
    est, lo, hi = float(np.exp(b)), float(np.exp(b - z * se)), float(np.exp(b + z * se))
    caveats = (
        f"While certified, engineers leave voluntarily at {_fmt(est)} times the rate of engineers "
        f"of the same tenure and level who are not (yet) certified (95 % CI {_fmt(lo)}-{_fmt(hi)}); "
        f"comparing ever- with never-certified engineers would say {_fmt(naive)}, which flatters "
        f"certification because engineers who leave early never get the chance to certify. "
        f"Assumes the effect is proportional over tenure. {THREATS}"
    )
    return dict(
        metric=metric,
        estimate=est,
        ci_low=lo,
        ci_high=hi,
        naive_estimate=naive,
        method=HR_METHOD,
        comparison=HR_COMPARISON,
        caveats=caveats,
        **base,
    )


# --------------------------------------------------------------------------------------------
# public entry points
# --------------------------------------------------------------------------------------------


def _effects_frame(rows: list[dict]) -> pd.DataFrame:
    df = pd.DataFrame(rows, columns=list(EFFECT_COLUMNS))
    for c in ("estimate", "ci_low", "ci_high", "naive_estimate"):
        df[c] = df[c].astype("float64")
    for c in ("n_engineers", "n_events"):
        df[c] = df[c].astype("Int64")
    return df


def analyse(
    engineer_months, incident_responses, min_group_size: int = 5
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Both marts at once: (``certification_effect``, ``certification_event_study``).

    The event study runs once and its pre-trend test is quoted in the rate-ratio caveats."""
    m = prepare_engineer_months(engineer_months)
    inc, left_out = prepare_incidents(incident_responses, m)
    with single_threaded_blas():
        es = _event_study(m, min_group_size)
        rows = [
            incident_rate_ratio(m, pretrend=_pretrend_text(es)),
            mttr_ratio(inc, left_out),
            attrition_hazard_ratio(m),
        ]
    effects = _effects_frame(rows)
    small = effects["n_engineers"].fillna(0) < min_group_size
    if small.any():
        effects.loc[small, ["estimate", "ci_low", "ci_high", "naive_estimate"]] = np.nan
        effects.loc[small, "caveats"] = (
            f"Suppressed: fewer than {min_group_size} engineers, too few to publish. "
            + effects.loc[small, "caveats"].fillna("")
        )
    return effects, es.table


def estimate_effects(engineer_months, incident_responses, min_group_size: int = 5) -> pd.DataFrame:
    """The ``certification_effect`` mart: one row per metric in ``METRICS`` with the adjusted
    estimate, its 95 % CI, the naive figure people would otherwise quote, and plain-words
    method, comparison and caveats. A metric that cannot be estimated (no certified engineers,
    no events) gets a row with NULL estimate and the reason in ``caveats``."""
    return analyse(engineer_months, incident_responses, min_group_size)[0]
