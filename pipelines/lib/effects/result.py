"""The rows of ``marts.certification_effect``: one per metric, estimable or not, with the
reason, what more data would be needed, and whether the figure is a finding."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

EFFECT_COLUMNS = (
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "estimable",
    "finding",
    "pretrend_p",
    "pretrend_rejected",
    "not_estimable_reason",
    "data_needed",
    "naive_estimate",
    "naive_ci_low",
    "naive_ci_high",
    "naive_method",
    "robustness_estimate",
    "robustness_ci_low",
    "robustness_ci_high",
    "robustness_method",
    "n_engineers",
    "n_events",
    "n_cohorts",
    "method",
    "comparison",
    "caveats",
    "window_start",
    "window_end",
)
METRICS = ("incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio")
PRETREND_ALPHA = 0.05

THREATS = (
    "Comparing each engineer with themselves removes stable differences between engineers "
    "(skill, care, incident-proneness) but not changes that coincide with certifying (a new "
    "team, a bad spell that made them certify); incidents are attributed to the primary "
    "responder only."
)


@dataclass
class Effect:
    """One metric's result; ``row()`` gives the mart row."""

    metric: str
    method: str
    comparison: str
    naive_method: str
    estimate: float = math.nan
    ci_low: float = math.nan
    ci_high: float = math.nan
    not_estimable_reason: str | None = None
    data_needed: str | None = None
    naive: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    robustness: tuple[float, float, float] = (math.nan, math.nan, math.nan)
    robustness_method: str | None = None
    pretrend_p: float = math.nan
    n_engineers: int = 0
    n_events: int = 0
    n_cohorts: int = 0
    window: tuple = (None, None)
    caveats: list[str] = field(default_factory=list)
    threats: str = THREATS

    @property
    def estimable(self) -> bool:
        return self.not_estimable_reason is None and np.isfinite(self.estimate)

    @property
    def pretrend_rejected(self) -> bool:
        return bool(np.isfinite(self.pretrend_p) and self.pretrend_p < PRETREND_ALPHA)

    @property
    def finding(self) -> bool:
        excludes_one = self.ci_high < 1.0 or self.ci_low > 1.0
        return bool(self.estimable and not self.pretrend_rejected and excludes_one)

    def not_estimable(self, reason: str, needed: str | None = None) -> Effect:
        self.not_estimable_reason = reason
        self.data_needed = needed
        self.estimate = self.ci_low = self.ci_high = math.nan
        return self

    def row(self) -> dict:
        est = self.estimable
        return {
            "metric": self.metric,
            "estimate": self.estimate if est else math.nan,
            "ci_low": self.ci_low if est else math.nan,
            "ci_high": self.ci_high if est else math.nan,
            "estimable": est,
            "finding": self.finding,
            "pretrend_p": self.pretrend_p,
            "pretrend_rejected": self.pretrend_rejected,
            "not_estimable_reason": None if est else (self.not_estimable_reason or "no estimate"),
            "data_needed": None if est else self.data_needed,
            "naive_estimate": self.naive[0],
            "naive_ci_low": self.naive[1],
            "naive_ci_high": self.naive[2],
            "naive_method": self.naive_method,
            "robustness_estimate": self.robustness[0] if est else math.nan,
            "robustness_ci_low": self.robustness[1] if est else math.nan,
            "robustness_ci_high": self.robustness[2] if est else math.nan,
            "robustness_method": self.robustness_method,
            "n_engineers": int(self.n_engineers),
            "n_events": int(self.n_events),
            "n_cohorts": int(self.n_cohorts),
            "method": self.method,
            "comparison": self.comparison,
            "caveats": " ".join(c.strip() for c in [*self.caveats, self.threats] if c),
            "window_start": self.window[0],
            "window_end": self.window[1],
        }


def effects_frame(effects: list[Effect]) -> pd.DataFrame:
    df = pd.DataFrame([e.row() for e in effects], columns=list(EFFECT_COLUMNS))
    for c in ("estimate", "ci_low", "ci_high", "pretrend_p", "naive_estimate"):
        df[c] = df[c].astype("float64")
    for c in ("naive_ci_low", "naive_ci_high", "robustness_estimate", "robustness_ci_low"):
        df[c] = df[c].astype("float64")
    for c in ("robustness_ci_high",):
        df[c] = df[c].astype("float64")
    for c in ("estimable", "finding", "pretrend_rejected"):
        df[c] = df[c].astype(bool)
    for c in ("n_engineers", "n_events", "n_cohorts"):
        df[c] = df[c].astype("int64")
    for c in ("metric", "not_estimable_reason", "data_needed", "naive_method", "method"):
        df[c] = df[c].astype("string")  # typed VARCHAR even when every value is NULL
    for c in ("comparison", "caveats", "robustness_method"):
        df[c] = df[c].astype("string")
    for c in ("window_start", "window_end"):
        df[c] = pd.to_datetime(df[c]).dt.date
    return df


# The figures of an effect row: none is published where the row is not estimable.
FIGURE_COLUMNS = (
    "estimate",
    "ci_low",
    "ci_high",
    "naive_estimate",
    "naive_ci_low",
    "naive_ci_high",
    "robustness_estimate",
    "robustness_ci_low",
    "robustness_ci_high",
)
# Counts of people (and the events they contribute) in an effect row.
COUNT_COLUMNS = ("n_engineers", "n_events")


def restricted_effects(frame: pd.DataFrame, min_group_size: int) -> pd.DataFrame:
    """An effect mart's rows for schema ``restricted`` (never published): every figure, the
    naive one of a row that is not estimable too; counts of 1..min_group_size-1 NULL as in
    the published mart, so that no reader of either prints them."""
    out = frame.copy()
    if "engineer_months" in out.columns:  # certification_effect: its exposure goes with them
        n = pd.to_numeric(out["n_engineers"], errors="coerce")
        few = ((n >= 1) & (n < min_group_size)).fillna(False).to_numpy(dtype=bool)
        for c in ("engineer_months", "more_engineer_months_needed"):
            out[c] = out[c].astype("float64")
            out.loc[few, c] = float("nan")
    for c in COUNT_COLUMNS:
        if c in out.columns:
            n = pd.to_numeric(out[c], errors="coerce").astype("Int64")
            out[c] = n.mask((n >= 1) & (n < min_group_size))
    return out


def published_effects(frame: pd.DataFrame, min_group_size: int) -> pd.DataFrame:
    """An effect mart's rows as published: those of `restricted_effects`, and a row that is
    not estimable shows no figure and no interval, naive, adjusted or robustness (a naive
    figure beside a withheld estimate reads as the answer); its ``not_estimable_reason`` and
    ``data_needed`` say why and what would make it estimable."""
    out = restricted_effects(frame, min_group_size)
    off = ~out["estimable"].astype(bool).to_numpy()
    for c in FIGURE_COLUMNS:
        if c in out.columns:
            out[c] = out[c].astype("float64")
            out.loc[off, c] = float("nan")
    return out


def window_of(months: pd.Series) -> tuple:
    """First and last month (as dates) of an estimation sample."""
    if months.empty:
        return (None, None)
    ts = pd.to_datetime(months)
    return (ts.min().date(), ts.max().date())


def shortfall(have: int, need: int, unit: str, small_group: bool = False) -> str | None:
    """ "about N more <unit>" when ``have`` is short of ``need``. Of a group of fewer people
    than the minimum group size (``small_group``) the gap would give its count away, so the
    text names what is needed instead: "at least <need> <unit>"."""
    if have >= need:
        return None
    return f"at least {need} {unit}" if small_group else f"about {need - have} more {unit}"


def fmt(x: float) -> str:
    return f"{x:.2f}" if np.isfinite(x) else "n/a"


def interval_words(e: Effect, what: str) -> str:
    """One sentence with the estimate, its interval and how to read it."""
    return (
        f"{what} {fmt(e.estimate)} times (95 % CI {fmt(e.ci_low)}-{fmt(e.ci_high)}); the naive "
        f"figure would say {fmt(e.naive[0])} (95 % CI {fmt(e.naive[1])}-{fmt(e.naive[2])})."
    )


# What the published marts say about themselves (DuckDB comments; `duckdb_columns().comment`).
EFFECT_TABLE = (
    "Adjusted effect of holding an active certification, one row per metric "
    "(incident_rate_ratio, mttr_ratio, attrition_hazard_ratio), each engineer compared with "
    "themselves; naive and robustness figures beside. Grain: one row per metric. A row that is "
    "not estimable shows no figure, naive or adjusted (restricted.certification_effect keeps "
    "the naive one). Method: docs/statistics.md."
)
EFFECT_DESCRIPTIONS = {
    "metric": "incident_rate_ratio, mttr_ratio or attrition_hazard_ratio",
    "estimate": "ratio while certified vs not (below 1 = fewer incidents, faster restore, fewer "
    "voluntary exits); NULL when not estimable",
    "ci_low": "lower end of the 95 % interval (NULL when not estimable)",
    "ci_high": "upper end of the 95 % interval (NULL when not estimable)",
    "estimable": "false when the data are too few to estimate (see not_estimable_reason)",
    "finding": "estimable, pre-trend test not rejected, and the interval excludes 1",
    "pretrend_p": "p-value of the pre-trend test (NULL where none applies)",
    "pretrend_rejected": "true when rates already differed before certifying (p < 0.05)",
    "not_estimable_reason": "why no estimate is published; a group of fewer than "
    "min_group_size people is named 'fewer than <min_group_size>', without its counts",
    "data_needed": "what more data would make it estimable",
    "naive_estimate": "the plain comparison people compute first (see naive_method); NULL when "
    "not estimable (the restricted copy keeps it)",
    "naive_ci_low": "lower end of the naive figure's 95 % interval (NULL when not estimable)",
    "naive_ci_high": "upper end of the naive figure's 95 % interval (NULL when not estimable)",
    "naive_method": "how the naive figure is computed",
    "robustness_estimate": "the same comparison by a second design (see robustness_method); "
    "NULL where there is none or the metric is not estimable",
    "robustness_ci_low": "lower end of the robustness figure's 95 % interval (NULL when not "
    "estimable)",
    "robustness_ci_high": "upper end of the robustness figure's 95 % interval (NULL when not "
    "estimable)",
    "robustness_method": "the second design and when it differs from the headline estimate",
    "n_engineers": "engineers in the estimate; NULL when 1 to min_group_size - 1",
    "n_events": "incidents, resolved incidents or voluntary exits in the estimate; NULL when 1 "
    "to min_group_size - 1",
    "n_cohorts": "distinct months in which engineers first certified",
    "method": "the model",
    "comparison": "who is compared with whom",
    "caveats": "threats to the estimate and warnings of the fit",
    "window_start": "first month the estimate covers",
    "window_end": "last month the estimate covers",
}
# certification_effect alone: what the data could have detected (pipelines/lib/effects/power.py)
CERTIFICATION_EFFECT_DESCRIPTIONS = {
    **EFFECT_DESCRIPTIONS,
    "mde_ratio": "minimum detectable effect: the smallest reduction (a ratio below 1) a "
    "two-sided 5 % test finds with 80 % power, 1 - 2.80 standard errors on the log scale (the "
    "estimate's own where it has an interval, else Schoenfeld's approximation from the events "
    "and the certified share of engineer-months, a lower bound)",
    "claimed_ratio": "the ratio the project's business case assumes (base value of the metric "
    "in sources/scenarios/assumptions.yaml)",
    "engineer_months": "complete engineer-months in the panel the estimate is drawn from; NULL "
    "when n_engineers is",
    "more_engineer_months_needed": "engineer-months beyond engineer_months, at the same mix, "
    "that would detect claimed_ratio with 80 % power (0: the data already would); NULL when it "
    "cannot be said",
}
EVENT_STUDY_TABLE = (
    "Incident rate ratio by month relative to the first certification (-12..+12), against "
    "month -1. Grain: one row per (metric, relative_month); months with fewer engineers than "
    "the minimum group size are NULL."
)
EVENT_STUDY_DESCRIPTIONS = {
    "metric": "incident_rate_ratio",
    "relative_month": "months since the first certification (-12..+12; -1 is the reference)",
    "estimate": "rate ratio against month -1 (NULL when suppressed or not estimable)",
    "ci_low": "lower end of the 95 % interval",
    "ci_high": "upper end of the 95 % interval",
    "engineers": "engineers observed in that relative month (NULL when 1 to min_group_size - 1)",
    "engineer_months": "exposure in that relative month (NULL with engineers)",
}


def suppress_small_months(study, min_group_size: int):
    """The published event study: a relative month observed for 1..min_group_size-1 engineers
    shows neither its engineers nor its exposure (its estimate is already NULL). The months add
    up to no published total, so no second month needs hiding."""
    small = (study["engineers"] >= 1) & (study["engineers"] < min_group_size)
    out = study.astype({"engineers": "Int64", "engineer_months": "Float64"})
    out.loc[small, ["engineers", "engineer_months"]] = None
    return out
