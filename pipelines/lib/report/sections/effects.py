"""The estimated effect of certification, read once from `certification_effect`, worded once.

The mart has one row per metric (incident_rate_ratio, mttr_ratio, attrition_hazard_ratio) with
the adjusted estimate and its interval, whether it is estimable, whether it counts as a finding
(estimable, no difference before certification, interval excluding 1), the plain comparison
beside it and the window of months it covers. Older warehouses lack the newer columns; they are
derived here: estimable when the estimate and its interval are finite, the pre-trend result from
the caveats text, a finding when estimable, not rejected and the interval excludes 1.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date

import pandas as pd
from markupsafe import Markup

from pipelines.lib.report.fmt import fig, interval, missing, nice, ratio, sentence, window_label

# outcome label, what is measured, words for a ratio below / above 1
EFFECT_TEXT = {
    "incident_rate_ratio": ("Incidents", "incidents per engineer-month", "fewer", "more"),
    "mttr_ratio": ("Time to restore", "time to restore", "shorter", "longer"),
    "attrition_hazard_ratio": (
        "Voluntary attrition",
        "monthly rate of leaving voluntarily",
        "lower",
        "higher",
    ),
}
# Who a certified engineer is compared with (docs/statistics.md): incidents and time to restore
# compare each engineer with their own months before certifying; an exit happens once, so
# attrition compares engineers of the same tenure and level.
COMPARED_WITH = {
    "incident_rate_ratio": "than in the same engineers' months before certifying",
    "mttr_ratio": "than in the same engineers' months before certifying",
    "attrition_hazard_ratio": "than colleagues of the same tenure and level not certified",
}
PLAIN_KIND = {
    "incident_rate_ratio": "plain before/after comparison",
    "mttr_ratio": "plain before/after comparison",
    "attrition_hazard_ratio": "plain ever- vs never-certified comparison",
}


@dataclass(frozen=True)
class Effect:
    metric: str
    estimate: float | None
    ci_low: float | None
    ci_high: float | None
    estimable: bool
    finding: bool
    pretrend_p: float | None
    pretrend_rejected: bool
    not_estimable_reason: str
    data_needed: str
    naive_estimate: float | None
    naive_method: str
    n_engineers: float | None
    n_events: float | None
    method: str
    comparison: str
    caveats: str
    window_start: date | None
    window_end: date | None
    # a second estimate by a simpler design, published beside the headline (incidents: one
    # indicator for certified months instead of one per months-since-certifying x level)
    robustness_estimate: float | None = None
    robustness_ci_low: float | None = None
    robustness_ci_high: float | None = None
    robustness_method: str = ""

    @property
    def label(self) -> str:
        return EFFECT_TEXT.get(self.metric, (nice(self.metric),))[0]

    @property
    def window(self) -> str:
        return window_label(self.window_start, self.window_end)


def _val(row: pd.Series, col: str) -> object:
    v = row.get(col)
    return None if missing(v) else v


def _float(row: pd.Series, col: str) -> float | None:
    v = _val(row, col)
    return None if v is None else float(v)  # type: ignore[arg-type]


def _date(row: pd.Series, col: str) -> date | None:
    v = _val(row, col)
    return None if v is None else pd.Timestamp(v).date()  # type: ignore[arg-type]


def _pretrend_from_caveats(caveats: str) -> tuple[float | None, bool]:
    m = re.search(r"Pre-trend check[^:]*:\s*p\s*=\s*([0-9.]+)", caveats)
    if not m:
        return None, False
    return float(m.group(1).rstrip(".")), "WARNING" in caveats


def read_effect(row: pd.Series) -> Effect:
    est, lo, hi = _float(row, "estimate"), _float(row, "ci_low"), _float(row, "ci_high")
    finite = all(v is not None and math.isfinite(v) for v in (est, lo, hi))
    estimable = bool(row["estimable"]) if _val(row, "estimable") is not None else finite
    estimable = estimable and finite
    caveats = str(_val(row, "caveats") or "")
    p, rejected = _pretrend_from_caveats(caveats)
    if "pretrend_p" in row.index:
        p = _float(row, "pretrend_p")
        rejected = bool(_val(row, "pretrend_rejected") or False)
    excludes_one = finite and (hi < 1 or lo > 1)  # type: ignore[operator]
    if _val(row, "finding") is not None:
        finding = bool(row["finding"]) and estimable
    else:
        finding = estimable and not rejected and excludes_one
    return Effect(
        metric=str(row["metric"]),
        estimate=est if estimable else None,
        ci_low=lo if estimable else None,
        ci_high=hi if estimable else None,
        estimable=estimable,
        finding=finding,
        pretrend_p=p,
        pretrend_rejected=rejected,
        not_estimable_reason=str(
            _val(row, "not_estimable_reason") or "the estimate or its interval is missing"
        ),
        data_needed=str(_val(row, "data_needed") or "more months of data"),
        naive_estimate=_float(row, "naive_estimate"),
        naive_method=str(_val(row, "naive_method") or ""),
        n_engineers=_float(row, "n_engineers"),
        n_events=_float(row, "n_events"),
        method=str(_val(row, "method") or ""),
        comparison=str(_val(row, "comparison") or ""),
        caveats=caveats,
        window_start=_date(row, "window_start"),
        window_end=_date(row, "window_end"),
        robustness_estimate=_float(row, "robustness_estimate"),
        robustness_ci_low=_float(row, "robustness_ci_low"),
        robustness_ci_high=_float(row, "robustness_ci_high"),
        robustness_method=str(_val(row, "robustness_method") or ""),
    )


def read_effects(eff: pd.DataFrame | None) -> dict[str, Effect]:
    """Metric -> Effect, incidents first, then time to restore, attrition, others by name."""
    if eff is None or eff.empty:
        return {}
    found = {str(r["metric"]): read_effect(r) for _, r in eff.iterrows()}
    known = list(EFFECT_TEXT)
    order = sorted(found, key=lambda m: (m not in known, known.index(m) if m in known else 0, m))
    return {m: found[m] for m in order}


def _change(est: float, down: str, up: str) -> str:
    return f"{abs(est - 1) * 100:.0f} % {down if est < 1 else up}"


def effect_sentence(e: Effect) -> Markup:
    """One plain sentence; never a number for what cannot be estimated, never a finding for what
    the data do not show."""
    label, what, down, up = EFFECT_TEXT.get(
        e.metric, (nice(e.metric), nice(e.metric).lower(), "lower", "higher")
    )
    if not e.estimable:
        return sentence(
            "{label}: not estimable: {reason}; {needed}.",
            label=label,
            reason=e.not_estimable_reason,
            needed=e.data_needed,
        )
    est = fig(f"effect-{e.metric}", ratio(e.estimate))
    ci = fig(f"effect-{e.metric}-ci", interval(e.ci_low, e.ci_high))
    when = f", {e.window}" if e.window else ""
    if e.finding:
        text = sentence(
            "{label}: {change} {what} while certified {compared} (ratio {est}, 95 % interval "
            "{ci}{when})",
            label=label,
            change=_change(e.estimate, down, up),  # type: ignore[arg-type]
            what=what,
            compared=COMPARED_WITH.get(e.metric, "than while not certified"),
            est=est,
            ci=ci,
            when=when,
        )
    elif e.pretrend_rejected:
        text = sentence(
            "{label}: the rates of engineers who later certified already differed before they "
            "certified, so the data do not show an effect of certification (ratio {est}, "
            "95 % interval {ci}{when})",
            label=label,
            est=est,
            ci=ci,
            when=when,
        )
    else:
        text = sentence(
            "{label}: the data do not show an effect of certification; the interval includes "
            "no difference (ratio {est}, 95 % interval {ci}{when})",
            label=label,
            est=est,
            ci=ci,
            when=when,
        )
    if e.naive_estimate is not None:
        text += sentence(
            "; a {kind} would say {naive}",
            kind=PLAIN_KIND.get(e.metric, "plain comparison"),
            naive=fig(f"naive-{e.metric}", ratio(e.naive_estimate)),
        )
    return text + "."
