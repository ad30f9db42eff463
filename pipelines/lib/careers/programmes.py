"""Which programme certifies engineers fastest, and what else differs between programmes.

* ``time_to_certify``: Kaplan-Meier of months from the first enrolment of an episode to the
  certification of its track, per programme, track and cohort.
* ``programme_comparison``: each programme against online courses (the reference), adjusted
  for who was sent (skill level and tenure at entry, track): Weibull accelerated failure time
  for time to certify, logistic regression for first-attempt passes, Cox for voluntary exit
  after entry; and the within-engineer incident and MTTR ratios of ``pipelines.lib.effects``
  for the engineers whose first certification came through the programme.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats as sps

from pipelines.lib.careers.result import (
    MIN_DURATION_MONTHS,
    PROGRAMMES,
    REFERENCE,
    UNKNOWN,
    cohort_label,
    suppress,
)
from pipelines.lib.effects.cox import MAX_LOG, CoxFit, fit_counting_process, watched_fit
from pipelines.lib.effects.fit import CONFIDENCE
from pipelines.lib.effects.result import Effect, fmt, interval_words, shortfall
from pipelines.lib.small_groups import is_small, people_phrase

MIN_EVENTS = 10  # certifications / first attempts of each outcome / exits, per side
Z = float(sps.norm.ppf(0.5 + CONFIDENCE / 2))

# cases (episodes; engineers in the exit model) a track or level needs for its own indicator
MIN_TRACK_EPISODES = 20
OTHER_TRACKS = "other tracks"
ADJUSTED_FOR = (
    "skill level at entry (one indicator per level, unknown its own level), tenure at entry "
    "(years) and the certification track (one indicator per track). Each model pools on its "
    f"own sample: a track with fewer than {MIN_TRACK_EPISODES} cases, or on which the outcome "
    "does not vary, goes into one 'other tracks' indicator (which joins the most common "
    "track, the reference, when it is itself that small or uniform); a level that small or "
    "uniform is merged with the next level up (the top one with the level below), unknown "
    "with the largest level group; a programme whose own outcome does not vary is left out "
    "of the model (its figure is not estimable anyway). Without this one rare track or level "
    "separates the model and no programme gets a figure"
)
THREATS = (
    "Programmes are compared between engineers: adjusting for level, tenure and track removes "
    "the differences the HR data records in who was sent where, not those it does not record "
    "(motivation, a manager's judgement of who is ready, prior experience outside the company)."
)


# --------------------------------------------------------------------------------------------
# time to certify (Kaplan-Meier)
# --------------------------------------------------------------------------------------------

TIME_TO_CERTIFY_COLUMNS = (
    "programme_type",
    "certification_code",
    "cohort",
    "participants",
    "certified",
    "median_months",
    "q1_months",
    "q3_months",
    "median_ci_low",
    "median_ci_high",
    "certified_within_6m_share",
    "certified_within_12m_share",
    "suppressed",
    "suppression_reason",
)
TTC_MEASURES = [c for c in TIME_TO_CERTIFY_COLUMNS[4:12]]


def _reached(x) -> float:
    x = float(x)
    return x if np.isfinite(x) else math.nan


def km_summary(months: np.ndarray, event: np.ndarray) -> dict[str, float]:
    """Median, quartiles, the median's 95 % interval and the shares certified by 6 and 12
    months of one group (lifelines Kaplan-Meier; NaN where the curve does not get there)."""
    from lifelines import KaplanMeierFitter
    from lifelines.utils import median_survival_times, qth_survival_times

    kmf = KaplanMeierFitter(alpha=1 - CONFIDENCE)
    kmf.fit(months, event_observed=event)
    ci = median_survival_times(kmf.confidence_interval_)
    # the columns are the lower and upper bands of S(t); the band that lies lower reaches one
    # half first, so it gives the lower end of the median's interval
    ends = sorted(_reached(v) if np.isfinite(v) else math.inf for v in ci.to_numpy().ravel())
    followed = float(np.max(months)) if len(months) else 0.0
    reached_zero = float(kmf.survival_function_.iloc[-1, 0]) == 0.0

    def share(t: float) -> float:
        if followed < t and not reached_zero:
            return math.nan
        return 1.0 - float(kmf.survival_function_at_times(t).iloc[0])

    return {
        "median_months": _reached(kmf.median_survival_time_),
        # the step function's own quantiles: the first time S(t) is at or below 0.75 / 0.25
        "q1_months": _reached(qth_survival_times(0.75, kmf.survival_function_)),
        "q3_months": _reached(qth_survival_times(0.25, kmf.survival_function_)),
        "median_ci_low": ends[0] if np.isfinite(ends[0]) else math.nan,
        "median_ci_high": ends[1] if np.isfinite(ends[1]) else math.nan,
        "certified_within_6m_share": share(6.0),
        "certified_within_12m_share": share(12.0),
    }


def track_suppression(ep: pd.DataFrame, min_group_size: int) -> pd.Series:
    """Which (programme_type, certification_code) groups are hidden in ``programme_costs``
    (small, or complementary to the programme's 'all' row): ``time_to_certify`` hides their
    'all' cohort too, so the two marts never give each other's hidden groups away. Indexed by
    (programme_type, certification_code)."""
    from pipelines.lib.careers.costs import cost_groups

    groups = cost_groups(ep, priced=False)
    hidden = suppress(groups, "participants", min_group_size, lines=[["programme_type"]])
    hidden = hidden[hidden["certification_code"] != "all"]
    return pd.Series(
        hidden["suppressed"].to_numpy(),
        index=pd.MultiIndex.from_frame(hidden[["programme_type", "certification_code"]]),
    )


def time_to_certify(ep: pd.DataFrame, min_group_size: int) -> pd.DataFrame:
    ep = ep.assign(cohort=cohort_label(ep["cohort_quarter"]))
    rows = []
    for (prog, code), g in ep.groupby(["programme_type", "certification_code"], sort=True):
        parts = [("all", g)] + [(c, gc) for c, gc in g.groupby("cohort", sort=True)]
        for cohort, gc in parts:
            row = {
                "programme_type": prog,
                "certification_code": code,
                "cohort": cohort,
                "participants": len(gc),
                "certified": int(gc["certified"].sum()),
            }
            if len(gc) >= min_group_size:
                row |= km_summary(gc["months"].to_numpy(), gc["certified"].to_numpy())
            rows.append(row)
    df = pd.DataFrame(rows, columns=[c for c in TIME_TO_CERTIFY_COLUMNS[:-2]])
    for c in TTC_MEASURES[1:]:
        df[c] = df[c].astype("float64")
    df["participants"] = df["participants"].astype("int64")
    df["certified"] = df["certified"].astype("int64")
    tracks = track_suppression(ep, min_group_size)
    keys = pd.MultiIndex.from_frame(df[["programme_type", "certification_code"]])
    also = pd.Series(tracks.reindex(keys).fillna(False).to_numpy(dtype=bool), index=df.index)
    also &= df["cohort"].eq("all")
    out = suppress(
        df,
        "participants",
        min_group_size,
        lines=[["programme_type", "certification_code"]],
        measures=TTC_MEASURES,
        also_hidden=also,
        also_reason="complementary: hidden in programme_costs, whose programme row would give "
        "it back by subtraction",
    )
    for c in ("programme_type", "certification_code", "cohort"):
        out[c] = out[c].astype("string")
    return out[list(TIME_TO_CERTIFY_COLUMNS)].reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# programme comparison: the design shared by the three between-engineer models
# --------------------------------------------------------------------------------------------


def _enough(cases: pd.DataFrame) -> bool:
    """A group can have an indicator of its own: ``MIN_TRACK_EPISODES`` cases, an event and a
    failure (``cases``: columns event, failure)."""
    return (
        len(cases) >= MIN_TRACK_EPISODES
        and bool(cases["event"].any())
        and bool(cases["failure"].any())
    )


def _cases(values: pd.Series, events, failures) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "value": values.to_numpy(),
            "event": np.asarray(events, dtype=bool),
            "failure": np.ones(len(values), dtype=bool)
            if failures is None
            else np.asarray(failures, dtype=bool),
        }
    )


def pool_tracks(codes: pd.Series, events, failures=None) -> pd.Series:
    """The track each case is adjusted by: its own code when the track has at least
    ``MIN_TRACK_EPISODES`` cases and its outcome varies (at least one event, and when
    ``failures`` is given at least one failure), else ``OTHER_TRACKS``. A track with too few
    cases or a uniform outcome separates the model (its coefficient runs off to infinity, the
    fit does not converge and every programme's figure is lost). When the pooled group is
    itself that small or uniform it joins the most common track (the reference of the track
    indicators). ``codes``, ``events`` and ``failures`` are aligned, one entry per case."""
    cases = _cases(codes.astype(str), events, failures)
    own = {code for code, g in cases.groupby("value", sort=True) if _enough(g)}
    track = cases["value"].where(cases["value"].isin(own), OTHER_TRACKS)
    if own and not _enough(cases[track == OTHER_TRACKS]):
        counts = cases.loc[cases["value"].isin(own), "value"].value_counts()
        reference = sorted(counts.index[counts == counts.max()])[0]
        track = track.where(track != OTHER_TRACKS, reference)
    return pd.Series(track.to_numpy(), index=codes.index)


def pool_levels(levels: pd.Series, events, failures=None) -> pd.Series:
    """The level group each case is adjusted by ('1', '2-3', 'unknown', ...): levels from the
    lowest up are merged with the next one until the group has ``MIN_TRACK_EPISODES`` cases
    with a varying outcome; a last group short of that joins the one below; unknown (0) is
    its own group when it has enough, else it joins the largest group."""
    cases = _cases(levels.astype(float), events, failures)
    known = sorted(v for v in cases["value"].unique() if v > 0)
    groups: list[list[float]] = []
    current: list[float] = []
    for lv in known:
        current.append(lv)
        if _enough(cases[cases["value"].isin(current)]):
            groups.append(current)
            current = []
    if current:
        if groups:
            groups[-1] += current
        else:
            groups.append(current)

    def label(g: list[float]) -> str:
        return f"{int(g[0])}" if len(g) == 1 else f"{int(g[0])}-{int(g[-1])}"

    names = {lv: label(g) for g in groups for lv in g}
    unknown = cases["value"] <= 0
    group = cases["value"].map(names)
    if unknown.any():
        if _enough(cases[unknown]) or not groups:
            group = group.where(~unknown, "unknown")
        else:
            largest = group[~unknown].value_counts()
            group = group.where(~unknown, sorted(largest.index[largest == largest.max()])[0])
    return pd.Series(group.to_numpy(dtype=object), index=levels.index)


def modelled(
    sample: pd.DataFrame, programmes: list[str], events, failures=None
) -> tuple[pd.DataFrame, list[str], str | None]:
    """The cases a between-engineer model is fitted on and how they are adjusted: ``sample``
    without the programmes whose own outcome does not vary (their coefficient would be
    infinite; they are not estimable by the minimum counts anyway), with columns ``track``
    (``pool_tracks``) and ``level_group`` (``pool_levels``); the programmes kept; a caveat
    naming what was pooled (None if nothing). ``events`` / ``failures``: per row of
    ``sample``."""
    events = pd.Series(np.asarray(events, dtype=bool), index=sample.index)
    failures = (
        pd.Series(True, index=sample.index)
        if failures is None
        else pd.Series(np.asarray(failures, dtype=bool), index=sample.index)
    )
    kept = [
        p
        for p in programmes
        if events[sample["programme_type"] == p].any()
        and failures[sample["programme_type"] == p].any()
    ]
    rows = sample["programme_type"].isin([REFERENCE, *kept]).to_numpy()
    sample, events, failures = sample[rows], events[rows], failures[rows]
    sample = sample.assign(
        track=pool_tracks(sample["certification_code"], events, failures),
        level_group=pool_levels(sample["skill_level"], events, failures),
    )
    notes = []
    pooled = sorted(
        set(sample.loc[sample["track"] != sample["certification_code"], "certification_code"])
    )
    if pooled:
        where = (
            f"share one '{OTHER_TRACKS}' indicator"
            if (sample["track"] == OTHER_TRACKS).any()
            else "are adjusted for together with the most common track"
        )
        notes.append(f"the tracks {', '.join(pooled)} {where}")
    merged = sorted({g for g in sample["level_group"] if "-" in g})
    if merged:
        notes.append(f"levels {', '.join(merged)} are adjusted for as one group each")
    note = None
    if notes:
        note = (
            f"In this model {'; '.join(notes)}: on their own they have fewer than "
            f"{MIN_TRACK_EPISODES} cases or an outcome that does not vary, too little for an "
            "indicator each."
        )
    return sample, kept, note


def design(ep: pd.DataFrame, programmes: list[str], adjusted: bool) -> pd.DataFrame:
    """Programme indicators (online = all zero) and, when ``adjusted``, level indicators,
    tenure at entry (years, missing = the median, with an indicator) and track indicators
    (columns ``level_group`` and ``track`` when present: the groups ``modelled`` pooled for
    this model; the lowest level and the most common track the references). Columns that do
    not vary are dropped."""
    cols = {f"programme={p}": (ep["programme_type"] == p).astype(float) for p in programmes}
    if adjusted:
        if "level_group" in ep.columns:
            level = ep["level_group"]
        else:
            level = ep["skill_level"].map(lambda v: f"{int(v)}" if v > 0 else "unknown")
        groups = sorted(level.unique())
        for lv in groups[1:]:
            cols[f"level={lv}"] = (level == lv).astype(float)
        tenure = ep["tenure"]
        if tenure.isna().any():
            cols["tenure_unknown"] = tenure.isna().astype(float)
        cols["tenure_years"] = tenure.fillna(tenure.median() if tenure.notna().any() else 0) / 12
        track = ep["track"] if "track" in ep.columns else ep["certification_code"]
        counts = track.value_counts()
        if len(counts):
            reference = sorted(counts.index[counts == counts.max()])[0]
            for code in sorted(c for c in counts.index if c != reference):
                cols[f"track={code}"] = (track == code).astype(float)
    x = pd.DataFrame(cols, index=ep.index)
    keep = [c for c in x.columns if x[c].nunique() > 1 or c.startswith("programme=")]
    return x[keep]


def _first_line(exc: Exception) -> str:
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    return lines[0] if lines else type(exc).__name__


def safe_exp(x: float) -> float:
    """exp(x), NaN where x is not finite or exp(x) would overflow (or underflow to 0)."""
    x = float(x)
    return math.exp(x) if np.isfinite(x) and abs(x) <= MAX_LOG else math.nan


def _wald(b: float, se: float) -> tuple[float, float, float]:
    """exp(b) and its Wald interval; all three NaN (not estimable) when one end is not a
    number: a coefficient or standard error so large that exp() overflows comes from a model
    the data could not pin down (a handful of episodes), not from a finite ratio."""
    out = (safe_exp(b), safe_exp(b - Z * se), safe_exp(b + Z * se))
    if not all(np.isfinite(v) for v in out):
        return (math.nan, math.nan, math.nan)
    return out


def _usable(e: Effect, b: float, se: float, events: str) -> bool:
    if not (np.isfinite(b) and np.isfinite(se)) or se > 2.0 or not np.isfinite(_wald(b, se)[0]):
        e.not_estimable(
            f"the model gives no usable interval (log ratio {b:.2f}, standard error {se:.2f})",
            f"about {max(e.n_events, MIN_EVENTS)} more {events} (twice as many as now)",
        )
        return False
    return True


def _too_small(
    e: Effect, prog: str, counts: dict[str, tuple[int, int]], what: str, min_group_size: int
) -> bool:
    """Minimums: ``min_group_size`` engineers and ``MIN_EVENTS`` events in the programme and
    in the reference. ``counts``: side -> (engineers, events)."""
    needs = []
    for side, (engineers, events) in counts.items():
        small = is_small(engineers, min_group_size)
        needs += [
            shortfall(engineers, min_group_size, f"engineers in {side}", small),
            shortfall(events, MIN_EVENTS, f"{what} in {side}", small),
        ]
    needs = [n for n in needs if n]
    if needs:
        sides = "; ".join(
            _side_counts(side, n, f"{k} {what}", min_group_size) for side, (n, k) in counts.items()
        )
        e.not_estimable(
            f"too few to compare {prog} with {REFERENCE} ({sides}; each side needs "
            f"{min_group_size} engineers and {MIN_EVENTS} {what})",
            "; ".join(needs),
        )
    return bool(needs)


def _side_counts(side: str, engineers: int, events: str, min_group_size: int) -> str:
    """ "bootcamp: 40 engineers with 12 certifications", or, of fewer engineers than the
    minimum group size, "bootcamp: fewer than 5 engineers" and nothing of their events."""
    who = people_phrase(engineers, min_group_size, "engineers")
    return f"{side}: {who}" + ("" if is_small(engineers, min_group_size) else f" with {events}")


# --------------------------------------------------------------------------------------------
# time to certify ratio (Weibull AFT)
# --------------------------------------------------------------------------------------------

TTC_METHOD = (
    "Weibull accelerated failure time model (lifelines WeibullAFTFitter) of months from the "
    "first enrolment to certification, episodes not certified censored when they leave scope "
    "or at the as-of date; covariates: one indicator per programme (online the reference), "
    f"{ADJUSTED_FOR}. exp(coefficient) of the programme's indicator is the time ratio: the "
    "factor by which the programme stretches (above 1) or shortens (below 1) the time to "
    "certify of a comparable engineer on the same track. Wald 95 % interval. Episodes of "
    "courses not in the catalogue (programme unknown) are left out."
)
TTC_NAIVE = (
    "the same Weibull model with the programme indicators only (who was sent where not taken "
    "into account); exp(coefficient), Wald 95 % interval"
)
TTC_COMPARISON = (
    "episodes of the programme vs online episodes, at equal skill level, tenure at entry and track"
)


def _aft(ep: pd.DataFrame, x: pd.DataFrame):
    from lifelines import WeibullAFTFitter

    df = x.assign(
        duration=np.maximum(ep["months"].to_numpy(), MIN_DURATION_MONTHS),
        event=ep["certified"].astype(int).to_numpy(),
    )
    aft = WeibullAFTFitter(alpha=1 - CONFIDENCE)
    _, notes = watched_fit(aft.fit, df, duration_col="duration", event_col="event")
    return aft, notes


def _aft_ratio(aft, name: str) -> tuple[float, float]:
    key = ("lambda_", name)
    return float(aft.params_[key]), float(aft.standard_errors_[key])


def time_to_certify_ratios(ep: pd.DataFrame, programmes: list[str], k: int) -> dict[str, Effect]:
    out = {
        p: Effect("time_to_certify_ratio", TTC_METHOD, TTC_COMPARISON, TTC_NAIVE)
        for p in out_programmes(programmes)
    }
    sample, kept, pooled = modelled(ep, programmes, ep["certified"])
    ref = ep[ep["programme_type"] == REFERENCE]
    ref_counts = (ref["person_key"].nunique(), int(ref["certified"].sum()))
    fitted = {}
    for adjusted in (False, True):
        try:
            fitted[adjusted] = _aft(sample, design(sample, kept, adjusted))
        except Exception as exc:  # lifelines raises several convergence error types
            fitted[adjusted] = exc
    for p, e in out.items():
        g = ep[ep["programme_type"] == p]
        e.n_engineers = g["person_key"].nunique() + ref_counts[0]
        e.n_events = int(g["certified"].sum()) + ref_counts[1]
        e.threats = THREATS
        if not isinstance(fitted[False], Exception) and p in kept:
            b, se = _aft_ratio(fitted[False][0], f"programme={p}")
            if np.isfinite(se):
                e.naive = _wald(b, se)
        counts = {p: (g["person_key"].nunique(), int(g["certified"].sum())), REFERENCE: ref_counts}
        if _too_small(e, p, counts, "certifications", k):
            continue
        if isinstance(fitted[True], Exception):
            e.not_estimable(f"the Weibull model did not converge ({_first_line(fitted[True])})")
            continue
        aft, notes = fitted[True]
        b, se = _aft_ratio(aft, f"programme={p}") if p in kept else (math.nan, math.nan)
        if not _usable(e, b, se, "certifications"):
            continue
        e.estimate, e.ci_low, e.ci_high = _wald(b, se)
        e.caveats.append(
            interval_words(e, f"Compared with online courses, {p} takes")
            + f" Based on {counts[p][1]} certifications in {p} and {ref_counts[1]} online. "
            "Assumes the programme stretches or shortens the whole distribution of times by "
            "one factor (accelerated failure time) with a Weibull shape."
        )
        e.caveats += [pooled] if pooled else []
        e.caveats += [f"The Weibull fit warned: {n}" for n in notes]
    return out


def out_programmes(programmes: list[str]) -> list[str]:
    """The programmes that get rows: every type in the data but online and unknown, the
    contract's four first."""
    return [p for p in PROGRAMMES if p in programmes] + sorted(
        p for p in programmes if p not in PROGRAMMES
    )


# --------------------------------------------------------------------------------------------
# first-attempt pass odds ratio (logistic regression)
# --------------------------------------------------------------------------------------------

PASS_METHOD = (
    "Logistic regression (statsmodels Logit) of passing the first exam attempt of the track, "
    "among episodes with an attempt; covariates: one indicator per programme (online the "
    f"reference), {ADJUSTED_FOR}. exp(coefficient) of the programme's indicator is the odds "
    "ratio; standard errors clustered by engineer (an engineer can have episodes on several "
    "tracks); 95 % Wald interval."
)
PASS_NAIVE = (
    "unadjusted odds ratio: odds of passing the first attempt in the programme / online "
    "(logistic regression with the programme indicators only, clustered by engineer)"
)
PASS_COMPARISON = (
    "first attempts of the programme's episodes vs online episodes, at equal skill level, "
    "tenure at entry and track"
)


def _logit(d: pd.DataFrame, x: pd.DataFrame):
    import statsmodels.api as sm

    exog = sm.add_constant(x.to_numpy(dtype=float), has_constant="add")
    model = sm.Logit(d["first_pass"].astype(float).to_numpy(), exog)
    groups = pd.factorize(d["person_key"])[0]
    res, notes = watched_fit(
        model.fit, disp=0, maxiter=200, cov_type="cluster", cov_kwds={"groups": groups}
    )
    if not res.mle_retvals.get("converged", True):
        raise ArithmeticError("the logistic regression did not converge")
    names = ["const", *x.columns]
    return dict(zip(names, res.params, strict=True)), dict(zip(names, res.bse, strict=True)), notes


def _too_few_attempts(e: Effect, p: str, sides: dict[str, pd.DataFrame], k: int) -> bool:
    """Minimums of the pass odds: ``k`` engineers with an attempt, ``MIN_EVENTS`` passed and
    failed first attempts on each side; of fewer engineers than ``k`` the text quotes no
    attempts."""
    needs, said = [], []
    for side, s in sides.items():
        engineers = s["person_key"].nunique()
        small = is_small(engineers, k)
        passed, failed = int(s["first_pass"].sum()), int((~s["first_pass"]).sum())
        needs += [
            shortfall(engineers, k, f"engineers with an attempt in {side}", small),
            shortfall(passed, MIN_EVENTS, f"passed first attempts in {side}", small),
            shortfall(failed, MIN_EVENTS, f"failed first attempts in {side}", small),
        ]
        said.append(_side_counts(side, engineers, f"{len(s)} first attempts", k))
    needs = [n for n in needs if n]
    if needs:
        e.not_estimable(
            f"too few first attempts to compare {p} with {REFERENCE} ({'; '.join(said)}; each "
            f"side needs {k} engineers and {MIN_EVENTS} passed and {MIN_EVENTS} failed first "
            "attempts)",
            "; ".join(needs),
        )
    return bool(needs)


def first_pass_odds_ratios(ep: pd.DataFrame, programmes: list[str], k: int) -> dict[str, Effect]:
    d = ep[ep["has_attempt"]]
    out = {
        p: Effect("first_pass_odds_ratio", PASS_METHOD, PASS_COMPARISON, PASS_NAIVE)
        for p in out_programmes(programmes)
    }
    sample, kept, pooled = modelled(d, programmes, d["first_pass"], ~d["first_pass"])
    fitted = {}
    for adjusted in (False, True):
        try:
            fitted[adjusted] = _logit(sample, design(sample, kept, adjusted))
        except Exception as exc:  # perfect separation, singular design, no convergence
            fitted[adjusted] = exc
    ref = d[d["programme_type"] == REFERENCE]
    for p, e in out.items():
        g = d[d["programme_type"] == p]
        e.threats = THREATS
        e.n_engineers = g["person_key"].nunique() + ref["person_key"].nunique()
        e.n_events = len(g) + len(ref)
        name = f"programme={p}"
        if not isinstance(fitted[False], Exception) and name in fitted[False][0]:
            e.naive = _wald(fitted[False][0][name], fitted[False][1][name])
        if _too_few_attempts(e, p, {p: g, REFERENCE: ref}, k):
            continue
        if isinstance(fitted[True], Exception):
            e.not_estimable(
                f"the logistic regression could not be fitted ({_first_line(fitted[True])})"
            )
            continue
        params, bse, notes = fitted[True]
        if not _usable(e, params.get(name, math.nan), bse.get(name, math.nan), "first attempts"):
            continue
        e.estimate, e.ci_low, e.ci_high = _wald(params[name], bse[name])
        e.caveats.append(
            interval_words(
                e,
                f"Compared with online courses, the odds of passing the first "
                f"attempt after {p} are",
            )
            + f" Based on {len(g)} first attempts after {p} and {len(ref)} after online "
            "courses. An odds ratio is not a ratio of pass rates when pass rates are high."
        )
        e.caveats += [pooled] if pooled else []
        e.caveats += [f"The logistic fit warned: {n}" for n in notes]
    return out


# --------------------------------------------------------------------------------------------
# voluntary exit after programme entry (Cox, certified over time)
# --------------------------------------------------------------------------------------------

EXIT_METHOD = (
    "Cox proportional-hazards model (counting-process rows, Efron ties) of voluntary exit, time "
    "measured in months from the engineer's first programme episode (the earliest first "
    "enrolment; its programme, level, tenure and track describe the engineer); covariates: one "
    f"indicator per programme (online the reference), {ADJUSTED_FOR}, and holding a "
    "certification earned in an episode as a covariate that changes at the certification date "
    "(so the programme's figure is its effect on leaving at equal certification status: "
    "faster programmes certify sooner, and certifying changes leaving by itself). Involuntary "
    "and other exits and leaving scope censor; follow-up ends at the as-of date (the latest "
    "date of the episodes)."
)
EXIT_NAIVE = (
    "Cox model of voluntary exit from programme entry with the programme indicators only (no "
    "adjustment, certification not taken into account)"
)
EXIT_COMPARISON = (
    "engineers who entered through the programme vs through online courses, at equal level, "
    "tenure at entry, track and certification status"
)


def exit_panel(ep: pd.DataFrame) -> pd.DataFrame:
    """One engineer per row (their first episode), split at the first certification earned in
    any of their episodes: (id, start, stop, event, certified) plus the first episode's
    columns."""
    as_of = pd.Series(
        np.concatenate(
            [ep["followed_until"].dropna().to_numpy(), ep["exit_on"].dropna().to_numpy()]
        )
    ).max()
    ordered = ep.sort_values(["person_key", "first_enrolled_on", "certification_code"])
    first = ordered.groupby("person_key", sort=True).head(1).reset_index(drop=True)
    cert_on = ep.loc[ep["certified"]].groupby("person_key")["certified_on"].min()
    start = first["first_enrolled_on"]
    exit_on = first["exit_on"]
    # left scope without leaving the company (a transfer out): censored then
    out_of_scope = ~first["certified"] & first["followed_until"].lt(as_of) & first["exit_on"].isna()
    end = exit_on.where(exit_on.notna(), first["followed_until"].where(out_of_scope, as_of))
    stop = ((end - start).dt.days / 30.4375).clip(lower=MIN_DURATION_MONTHS).to_numpy()
    event = (exit_on.notna() & first["exit_type"].eq("voluntary").fillna(False)).to_numpy()
    c = first["person_key"].map(cert_on)
    cert_t = ((c - start).dt.days / 30.4375).to_numpy()
    rows = []
    for i in range(len(first)):
        ct = cert_t[i]
        if np.isfinite(ct) and 0 < ct < stop[i]:
            rows.append((i, 0.0, ct, False, 0.0))
            rows.append((i, ct, stop[i], bool(event[i]), 1.0))
        else:
            certified = float(np.isfinite(ct) and ct <= 0)
            rows.append((i, 0.0, stop[i], bool(event[i]), certified))
    cp = pd.DataFrame(rows, columns=["id", "start", "stop", "event", "certified"])
    cp = cp[cp["stop"] > cp["start"]]
    return cp.join(first.drop(columns=["certified"]), on="id")


def _cox(cp: pd.DataFrame, x: pd.DataFrame) -> CoxFit:
    return fit_counting_process(cp["start"], cp["stop"], cp["event"], x)


def exit_hazard_ratios(ep: pd.DataFrame, programmes: list[str], k: int) -> dict[str, Effect]:
    cp = exit_panel(ep)
    people = cp.groupby("id").agg(
        programme_type=("programme_type", "first"),
        certification_code=("certification_code", "first"),
        skill_level=("skill_level", "first"),
        event=("event", "max"),
    )
    out = {
        p: Effect("voluntary_exit_hazard_ratio", EXIT_METHOD, EXIT_COMPARISON, EXIT_NAIVE)
        for p in out_programmes(programmes)
    }
    # pooled on the engineers (one first episode each), not on the split rows
    sample, kept, pooled = modelled(people, programmes, people["event"])
    fit_cp = cp[cp["id"].isin(sample.index)]
    fit_cp = fit_cp.assign(
        track=fit_cp["id"].map(sample["track"]).to_numpy(),
        level_group=fit_cp["id"].map(sample["level_group"]).to_numpy(),
    )
    fitted = {}
    for adjusted in (False, True):
        x = design(fit_cp, kept, adjusted)
        if adjusted and fit_cp["certified"].nunique() > 1:
            x = x.assign(certified=fit_cp["certified"].to_numpy())
        try:
            fitted[adjusted] = _cox(fit_cp, x)
        except Exception as exc:
            fitted[adjusted] = exc
    ref = people[people["programme_type"] == REFERENCE]
    for p, e in out.items():
        g = people[people["programme_type"] == p]
        e.threats = THREATS
        e.n_engineers, e.n_events = len(g) + len(ref), int(g["event"].sum() + ref["event"].sum())
        name = f"programme={p}"
        if not isinstance(fitted[False], Exception) and name in fitted[False].params:
            naive = fitted[False]
            e.naive = _wald(float(naive.params[name]), float(naive.standard_errors[name]))
        counts = {
            p: (len(g), int(g["event"].sum())),
            REFERENCE: (len(ref), int(ref["event"].sum())),
        }
        if _too_small(e, p, counts, "voluntary exits", k):
            continue
        if isinstance(fitted[True], Exception):
            e.not_estimable(f"the Cox model did not converge ({_first_line(fitted[True])})")
            continue
        fit = fitted[True]
        b, se = (
            (float(fit.params[name]), float(fit.standard_errors[name]))
            if name in fit.params
            else (math.nan, math.nan)
        )
        if not _usable(e, b, se, "voluntary exits"):
            continue
        e.estimate, e.ci_low, e.ci_high = _wald(b, se)
        e.caveats.append(
            interval_words(
                e,
                f"Compared with online courses, engineers who entered through "
                f"{p} leave voluntarily at",
            )
            + f" Based on {counts[p][1]} voluntary exits after {p} and {counts[REFERENCE][1]} "
            "after online courses. Assumes proportional hazards over the months since entry; "
            "the figure is net of certifying, so a programme that keeps people by certifying "
            "them sooner shows that in the time to certify, not here."
        )
        e.caveats += [pooled] if pooled else []
        e.caveats += [f"The Cox fit warned: {n}" for n in fit.notes]
    return out


# --------------------------------------------------------------------------------------------
# incident rate and MTTR ratios of the engineers a programme certified
# --------------------------------------------------------------------------------------------

WITHIN_COMPARISON = (
    "engineers whose first certification came through {p}: the same engineers while certified "
    "vs before they certified, with engineers who never certified as controls for calendar-month "
    "effects (the design of marts.certification_effect on this subset)"
)


def first_programme(ep: pd.DataFrame, months: pd.DataFrame) -> pd.Series:
    """person_key -> the programme of the episode that gave the engineer's first certification
    (the earliest certified_on), where its month is the panel's first certified month (a first
    certification from before any episode is not a programme's)."""
    cert = ep[ep["certified"]].sort_values(["person_key", "certified_on", "certification_code"])
    first = cert.groupby("person_key", sort=True).head(1)
    t = first["certified_on"].dt.year * 12 + first["certified_on"].dt.month - 1
    panel_first = months.groupby("person_key")["first_t"].first()
    match = first["person_key"].map(panel_first).to_numpy() == t.to_numpy()
    return pd.Series(first["programme_type"].to_numpy()[match], index=first["person_key"][match])


def within_effects(
    ep: pd.DataFrame,
    months: pd.DataFrame,
    incidents: pd.DataFrame,
    left_out: int,
    programmes: list[str],
    k: int,
) -> dict[str, dict[str, Effect]]:
    """metric -> programme -> Effect; online's own figure goes into every row's caveats."""
    from pipelines.lib.effects.incidents import MODEL_COLUMNS, incident_rate_ratio, pretrend_test
    from pipelines.lib.effects.mttr import mttr_ratio

    by_person = first_programme(ep, months)
    never = set(months.loc[~months["ever_certified"], "person_key"])
    columns = [c for c in MODEL_COLUMNS if c in months.columns]
    results: dict[str, dict[str, Effect]] = {"incident_rate_ratio": {}, "mttr_ratio": {}}
    for p in [*out_programmes(programmes), REFERENCE]:
        keep = never | set(by_person.index[by_person.to_numpy() == p])
        # one subset at a time, with the columns the incident models read: each is most of the
        # panel (or of the incidents) again
        m = months.loc[months["person_key"].isin(keep).to_numpy(), columns]
        irr = incident_rate_ratio(m, pretrend_test(m, k), k)
        del m
        mttr = mttr_ratio(incidents[incidents["person_key"].isin(keep)], 0, k)
        for e in (irr, mttr):
            e.comparison = WITHIN_COMPARISON.format(p=p)
        results["incident_rate_ratio"][p] = irr
        results["mttr_ratio"][p] = mttr
    for metric, by_programme in results.items():
        online = by_programme.pop(REFERENCE)
        words = (
            f"Engineers whose first certification came through online courses: {fmt(online.estimate)} "
            f"(95 % CI {fmt(online.ci_low)}-{fmt(online.ci_high)})"
            if online.estimable
            else "The same figure for online courses is not estimable"
            f" ({online.not_estimable_reason})"
        )
        for e in by_programme.values():
            e.caveats.append(
                words + "; the two intervals are separate estimates, not a test of the difference."
            )
            if left_out and metric == "mttr_ratio":
                e.caveats.append(
                    f"{left_out} incident rows were left out (unresolved, no matched primary "
                    "responder, or no engineer-month for the responder)."
                )
    return results


def programme_comparison(
    ep: pd.DataFrame,
    months: pd.DataFrame,
    incidents: pd.DataFrame,
    left_out: int,
    min_group_size: int,
) -> list[tuple[str, Effect]]:
    known = ep[ep["programme_type"] != UNKNOWN].reset_index(drop=True)
    programmes = sorted(p for p in known["programme_type"].unique() if p != REFERENCE)
    if not programmes:
        return []
    parts = {
        "time_to_certify_ratio": time_to_certify_ratios(known, programmes, min_group_size),
        "first_pass_odds_ratio": first_pass_odds_ratios(known, programmes, min_group_size),
        "voluntary_exit_hazard_ratio": exit_hazard_ratios(known, programmes, min_group_size),
        **within_effects(known, months, incidents, left_out, programmes, min_group_size),
    }
    rows = []
    for p in out_programmes(programmes):
        rows += [(p, effects[p]) for effects in parts.values()]
    return rows
