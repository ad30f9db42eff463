"""The estimated effect of certification, read once from `certification_effect`, worded once.

Each effect has exactly one status, and every sentence, table cell, chart caption and ROI line
that speaks of the effect prints it through `status_tag`, so the words cannot drift apart:

- **shown**: estimable, no difference before certifying (pre-trend not rejected) and a 95 %
  interval that excludes no effect (the mart's `finding`);
- **not shown**: estimated, but the interval includes no effect, or the rates of engineers who
  later certified already differed before they certified;
- **not estimable**: too little data; no number is printed, not even the naive one, and the
  text says what data would make it estimable.

Older warehouses lack the newer columns; they are derived here: estimable when the estimate and
its interval are finite, the pre-trend result from the caveats text, shown when estimable, not
rejected and the interval excludes 1.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import date

import pandas as pd
from markupsafe import Markup

from pipelines.lib.report.fmt import (
    fig,
    interval,
    missing,
    nice,
    pts,
    ratio,
    sentence,
    window_label,
)

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
    # marts.operations_effect
    "change_failure_ratio": ("Change failure rate", "changes that fail", "fewer", "more"),
    "busy_share_per_10_points": (
        "Busy GPU-hours",
        "busy share of available GPU-hours",
        "lower",
        "higher",
    ),
    "lost_share_per_10_points": (
        "Lost GPU-hours",
        "lost share of available GPU-hours",
        "lower",
        "higher",
    ),
    "commissioning_time_ratio": (
        "Commissioning time",
        "days from delivery to production",
        "fewer",
        "more",
    ),
}
# Effects read as a difference in a share per 10 points of the team's certified share: no
# effect is 0 (the others are ratios: no effect is 1), printed in percentage points.
DIFFERENCES = frozenset({"busy_share_per_10_points", "lost_share_per_10_points"})
# the mart each effect is read from
MART = {
    **dict.fromkeys(
        (
            "change_failure_ratio",
            "busy_share_per_10_points",
            "lost_share_per_10_points",
            "commissioning_time_ratio",
        ),
        "marts.operations_effect",
    )
}
# Who a certified engineer is compared with (docs/statistics.md): incidents and time to restore
# compare each engineer with their own months before certifying; an exit happens once, so
# attrition compares different engineers of the same tenure and level, a weaker design.
COMPARED_WITH = {
    "incident_rate_ratio": "than in the same engineers' months before certifying",
    "mttr_ratio": "than in the same engineers' months before certifying",
    "attrition_hazard_ratio": "than colleagues of the same tenure and level not certified",
    # operations: the whole phrase (no "while certified" before it)
    "change_failure_ratio": "while the implementer is certified than in the same engineers' "
    "changes before certifying",
    "busy_share_per_10_points": "per 10 points more of the team certified, in the same cluster "
    "against the other clusters in the same month",
    "lost_share_per_10_points": "per 10 points more of the team certified, in the same cluster "
    "against the other clusters in the same month",
    "commissioning_time_ratio": "for projects led by certified engineers than by engineers not "
    "certified",
}
DESIGN = {
    "incident_rate_ratio": "each engineer compared with their own months before certifying",
    "mttr_ratio": "each responder compared with their own incidents before certifying",
    "attrition_hazard_ratio": "different engineers of the same tenure and level compared (a "
    "weaker design: differences the HR data do not record can pose as an effect)",
}
# what the model counts: its events, named so that two models' counts never share a label
EVENTS = {
    "incident_rate_ratio": "incidents in the incident model",
    "mttr_ratio": "resolved incidents in the time-to-restore model",
    "attrition_hazard_ratio": "voluntary exits in the attrition model",
}
ENGINEERS = {
    "incident_rate_ratio": "engineers in the incident model",
    "mttr_ratio": "responders in the time-to-restore model",
    "attrition_hazard_ratio": "engineers in the attrition model",
    # the name marts.operations_effect gives them in its reasons
    "change_failure_ratio": "engineers with changes both while certified and while not",
}
# the one word for each status, and the longer phrase the ROI uses for the same status
STATUS_WORDS = {"shown": "shown", "not_shown": "not shown", "not_estimable": "not estimable"}
EVIDENCE_WORDS = {
    "shown": "measured here",
    "not_shown": "estimated, not distinguishable from no effect",
    "not_estimable": "not estimable",
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
    # what the data could have found (certification_effect only; pipelines/lib/effects/power.py)
    mde_ratio: float | None = None
    claimed_ratio: float | None = None
    engineer_months: float | None = None
    more_engineer_months_needed: float | None = None

    @property
    def label(self) -> str:
        return EFFECT_TEXT.get(self.metric, (nice(self.metric),))[0]

    @property
    def window(self) -> str:
        return window_label(self.window_start, self.window_end)

    @property
    def status(self) -> str:
        if not self.estimable:
            return "not_estimable"
        return "shown" if self.finding else "not_shown"

    @property
    def why_short(self) -> str:
        """The reason in a few words, for page 1."""
        if self.status == "not_estimable":
            return self.not_estimable_reason
        if self.status == "shown":
            return "the interval excludes no effect"
        if self.pretrend_rejected:
            return "the rates already differed before certifying"
        if self._excludes_one:
            return "the statistics do not count it as a finding"
        return "the interval includes no difference"

    @property
    def pretrend_words(self) -> str:
        """What the pre-trend test found, in words: its p-value and what it means."""
        p = self.pretrend_p
        if p is None or not math.isfinite(p):
            return "pre-trend test"
        if p < 0.001:
            odds = "less than once in 1,000"
        elif p < 0.01:
            odds = f"about {round(p * 1000)} times in 1,000"
        else:
            odds = f"about {max(1, round(p * 100))} times in 100"
        return (
            f"pre-trend test {p_text(p)}: a difference this large in the months before "
            f"certifying would arise by chance {odds} if the rates had not differed"
        )

    @property
    def no_effect(self) -> float:
        """The value that means no difference: 0 for a difference, 1 for a ratio."""
        return 0.0 if self.metric in DIFFERENCES else 1.0

    @property
    def _excludes_one(self) -> bool:
        lo, hi, null = self.ci_low, self.ci_high, self.no_effect
        return lo is not None and hi is not None and (hi < null or lo > null)

    @property
    def why(self) -> str:
        """Why the status is what it is, in words a leader reads."""
        if self.status == "not_estimable":
            return f"{self.not_estimable_reason}; {self.data_needed}"
        if self.status == "shown":
            return "the 95 % interval excludes no effect"
        if self.pretrend_rejected:
            return (
                "the rates of engineers who later certified already differed before they "
                f"certified ({self.pretrend_words}), so the change cannot be read as an effect"
            )
        if self._excludes_one:
            mart = MART.get(self.metric, "marts.certification_effect")
            return f"the statistics ({mart}) do not count it as a finding"
        return "the 95 % interval includes no difference"


def p_text(p: float) -> str:
    """A p-value as printed: `p = 0.0039`, `p < 0.001`."""
    return "p < 0.001" if p < 0.001 else f"p = {p:.2g}"


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
    null = 0.0 if str(row["metric"]) in DIFFERENCES else 1.0
    excludes_one = finite and (hi < null or lo > null)  # type: ignore[operator]
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
        # no figure beside a row that is not estimable, wherever the row was read from (the
        # restricted copy keeps its naive figure)
        naive_estimate=_float(row, "naive_estimate") if estimable else None,
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
        mde_ratio=_float(row, "mde_ratio"),
        claimed_ratio=_float(row, "claimed_ratio"),
        engineer_months=_float(row, "engineer_months"),
        more_engineer_months_needed=_float(row, "more_engineer_months_needed"),
    )


def read_effects(eff: pd.DataFrame | None) -> dict[str, Effect]:
    """Metric -> Effect, incidents first, then time to restore, attrition, others by name."""
    if eff is None or eff.empty:
        return {}
    found = {str(r["metric"]): read_effect(r) for _, r in eff.iterrows()}
    known = list(EFFECT_TEXT)
    order = sorted(found, key=lambda m: (m not in known, known.index(m) if m in known else 0, m))
    return {m: found[m] for m in order}


def status_tag(metric: str, status: str, words: dict[str, str] = STATUS_WORDS) -> Markup:
    """The status of one effect as printed anywhere: its word, tagged with the effect and the
    status so that a test can check every mention of the effect says the same."""
    return Markup(
        '<span class="status status-{s}" data-effect="{m}" data-status="{s}">{w}</span>'
    ).format(s=status, m=metric, w=words[status])


def effect_status(e: Effect, words: dict[str, str] = STATUS_WORDS) -> Markup:
    return status_tag(e.metric, e.status, words)


def change(e: Effect) -> str:
    """`16 % shorter` (a ratio) or `0.8 points higher` (a difference in a share): the size of
    the change at the estimate, in the outcome's words."""
    _, _, down, up = EFFECT_TEXT.get(e.metric, ("", "", "lower", "higher"))
    est = e.estimate if e.estimate is not None else e.no_effect
    if e.metric in DIFFERENCES:
        return f"{abs(est) * 100:.1f} points {down if est < 0 else up}"
    return f"{abs(est - 1) * 100:.0f} % {down if est < 1 else up}"


def effect_value(e: Effect, v: float | None) -> str:
    """An estimate or bound as printed: a ratio `0.84`, a difference `+0.8 pts`."""
    return pts(v) if e.metric in DIFFERENCES else ratio(v)


def estimate_text(e: Effect, long: bool = False) -> Markup:
    """`0.84 (0.79–0.89)` (`long`: `0.84 (95 % interval 0.79–0.89)`), tagged; a difference
    `+0.8 pts (−0.1 to +1.7 pts)`."""
    ci = (
        interval(e.ci_low, e.ci_high)
        if e.metric not in DIFFERENCES
        else f"{pts(e.ci_low)} to {pts(e.ci_high)}"
    )
    return sentence(
        "{est} (95 % interval {ci})" if long else "{est} ({ci})",
        est=fig(f"effect-{e.metric}", effect_value(e, e.estimate)),
        ci=fig(f"effect-{e.metric}-ci", ci),
    )


def effect_plain(e: Effect) -> Markup:
    """What the data show, for page 1: the change and its interval, or why there is none."""
    if e.status == "not_estimable":
        return sentence("{why}", why=e.not_estimable_reason)
    weaker = (
        "; compares different engineers (a weaker design)"
        if e.metric == "attrition_hazard_ratio"
        else ""
    )
    kind = "difference" if e.metric in DIFFERENCES else "ratio"
    if e.status == "shown":
        return sentence(
            "{c} while certified; {kind} {est}{w}",
            c=change(e),
            kind=kind,
            est=estimate_text(e),
            w=weaker,
        )
    return sentence("{kind} {est}, but {why}", kind=kind, est=estimate_text(e), why=e.why_short)


def compared_with(metric: str) -> str:
    """What the effect compares, after the change in words."""
    if metric in MART:
        return COMPARED_WITH[metric]
    return "while certified " + COMPARED_WITH.get(metric, "than while not certified")


def effect_sentence(e: Effect) -> Markup:
    """One sentence for the incidents section; never a number for what cannot be estimated,
    never an effect for what the data do not show."""
    label, what, _, _ = EFFECT_TEXT.get(
        e.metric, (nice(e.metric), nice(e.metric).lower(), "lower", "higher")
    )
    if e.status == "not_estimable":
        return sentence(
            "{label} ({status}): {reason}; {needed}.",
            label=label,
            status=effect_status(e),
            reason=e.not_estimable_reason,
            needed=e.data_needed,
        )
    when = f", {e.window}" if e.window else ""
    kind = "difference" if e.metric in DIFFERENCES else "ratio"
    if e.status == "shown":
        text = sentence(
            "{label} ({status}): {change} {what} {compared}: {kind} {est}{when}",
            label=label,
            status=effect_status(e),
            change=change(e),
            what=what,
            compared=compared_with(e.metric),
            kind=kind,
            est=estimate_text(e, long=True),
            when=when,
        )
    else:
        text = sentence(
            "{label} ({status}): {kind} {est}{when}, but {why}",
            label=label,
            status=effect_status(e),
            kind=kind,
            est=estimate_text(e, long=True),
            when=when,
            why=e.why,
        )
    if e.naive_estimate is not None:
        text += sentence(
            "; a plain comparison would say {naive}",
            naive=fig(f"naive-{e.metric}", effect_value(e, e.naive_estimate)),
        )
    return text + "." + power_sentence(e)


def power_sentence(e: Effect) -> Markup:
    """What the data could have found, where the effect is not estimable or its interval
    includes no effect: the minimum detectable effect at 80 % power, and the engineer-months
    that would detect the size the business case assumes. Nothing where the effect is shown or
    the pre-trend test is what holds it back (more data would not change that)."""
    if e.mde_ratio is None or e.status == "shown" or e.pretrend_rejected:
        return Markup("")
    _, what, down, _ = EFFECT_TEXT.get(e.metric, ("", nice(e.metric).lower(), "lower", ""))
    text = sentence(
        " With these data the smallest change a test finds 4 times in 5 is {pct} % {down} "
        "{what} (ratio {mde}, 80 % power, 5 % two-sided)",
        pct=f"{(1 - e.mde_ratio) * 100:.0f}",
        down=down,
        what=what,
        mde=fig(f"mde-{e.metric}", ratio(e.mde_ratio)),
    )
    claimed, more = e.claimed_ratio, e.more_engineer_months_needed
    if claimed is None or more is None:
        return text + "."
    if more == 0:
        return text + sentence(
            "; the ratio the business case assumes, {c}, would have been found: the effect is "
            "more likely smaller than assumed.",
            c=fig(f"claimed-{e.metric}", ratio(claimed)),
        )
    return text + sentence(
        "; the ratio the business case assumes, {c}, needs about {more} more engineer-months "
        "at the present mix (the data hold {have}).",
        c=fig(f"claimed-{e.metric}", ratio(claimed)),
        more=fig(f"more-engineer-months-{e.metric}", f"{more:,.0f}"),
        have=fig("effect-engineer-months", f"{e.engineer_months or 0:,.0f}"),
    )
