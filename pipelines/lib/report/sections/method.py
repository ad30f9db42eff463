"""The appendix: how the figures are estimated, in plain language, and the definitions.

The statistical method, the caveats and the event-study charts live here, after the findings,
so that the sections speak in outcomes and the method stays one page away for those who check.
"""

from __future__ import annotations

from pipelines.lib.report.fmt import interval, ratio
from pipelines.lib.report.sections.base import Section
from pipelines.lib.report.sections.effects import Effect

CAVEAT = (
    "What these figures can and cannot show: incidents and time to restore compare each "
    "engineer's months while certified with their own months before certifying, net of what "
    "changed for everyone in the same calendar month; the three months of preparation just "
    "before certifying count separately, so a bad spell that prompts someone to certify does "
    "not pose as an effect. Attrition compares engineers of the same tenure and level. They are "
    "associations from observational data, not proof of cause: what changes in a person's work "
    "at the time they certify is not removed, and small groups give wide intervals. The plain "
    "comparison (before vs after, or ever vs never certified) is shown only to make the size of "
    "these biases visible."
)

GLOSSARY = [
    (
        "Engineer",
        "A person employed in the analysed division on the date (employees only; "
        "contractors and interns excluded), counted once in their primary position.",
    ),
    (
        "Certified",
        "Holds at least one certification that is active on the date: issued on or "
        "before it and not yet expired (or with no expiry).",
    ),
    (
        "Holds ≥1 active certification",
        "Engineers holding at least one active certification ÷ engineers, at month end.",
    ),
    (
        "Coverage of required certifications (meets role requirements)",
        "Engineers holding every certification the team template requires for their role at "
        "their cluster's current fleet size (small 10–100 GPUs, medium 100–1,000, large "
        "1,000+) ÷ engineers, at month end. The headline coverage figure.",
    ),
    (
        "Gap",
        "An engineer missing at least one certification their role requires.",
    ),
    (
        "Target",
        "The share of engineers meeting their role requirements that leadership aims "
        "for; a report setting (default 80 %).",
    ),
    ("Expiring", "Active certifications whose expiry falls in the 90 days after the quarter ends."),
    (
        "Turnover rate",
        "Separations ÷ average headcount of the period (SHRM). The 12-month rate "
        "uses the separations of the last four quarters over their mean average headcount. "
        "Certified / not certified: status at the start of each quarter. Intervals: Wilson "
        "score, 95 %.",
    ),
    (
        "Incident rate",
        "Incidents where the engineer was primary responder ÷ engineer-months "
        "employed × 100. Intervals: exact Poisson (Garwood), 95 %.",
    ),
    (
        "Time to restore",
        "Minutes from opening to resolution of resolved incidents. The tile and the status table "
        "show the quarter's median (Four Keys); the effect estimate compares typical "
        "(geometric mean) times of comparable incidents, the method appendix says how.",
    ),
    (
        "Certification status (incidents)",
        "Per engineer-month: certified (holds an active certification), not yet certified "
        "(certifies later in the data), never certified, lapsed (held one that has expired).",
    ),
    (
        "95 % CI",
        "Confidence interval: the range of values compatible with the data at the 95 % level; "
        "an interval for a ratio that includes 1 means no difference cannot be ruled out.",
    ),
    (
        "Rate ratio / hazard ratio",
        "Outcome of certified engineers ÷ that of comparable engineers "
        "not yet certified; 1 = no difference, 0.70 = 30 % lower.",
    ),
    (
        "Plain comparison",
        "The same ratio without adjustment (before vs after, or ever vs never certified), "
        "over the same months as the estimate; biased, shown for contrast.",
    ),
    (
        "Event study",
        "Rate ratio in each month relative to certification, against month −1, with "
        "its 95 % interval band; flat months before certification support the comparison.",
    ),
    (
        "Before-certification check",
        "Joint Wald test that the event-study ratios for months −12 to −2 all equal 1. A "
        "p-value below 0.05 means incident rates already differed before certification, so "
        "the adjusted estimate may partly reflect who certifies.",
    ),
    ("Training spend", "Amounts charged for courses and exams after discounts, by quarter."),
    (
        "Net ROI on measured returns",
        "(Measured return − investment) ÷ investment over the data window, from the ROI model "
        "(marts.roi_summary), rounded down to the whole percent. Its range moves the "
        "incident-rate and time-to-restore ratios to the ends of their 95 % intervals; the "
        "tornado moves each assumption to its low and high value (marts.roi_sensitivity).",
    ),
    (
        "Stated values",
        "Returns priced from the assumptions file rather than measured: efficiency "
        "improvements (share of fleet cost) and faster deployment (value per GPU-year), both "
        "per GPU-year of the certified share of the fleet. Measured returns: less downtime "
        "(from incident downtime and the estimated effects, priced at the stated cost of a "
        "GPU-hour) and contractor cost avoided. Stated values are never added to the measured "
        "return.",
    ),
    (
        "In template band",
        "Engineers whose skill level lies in the level band the template sets for their role "
        "÷ engineers.",
    ),
    (
        "Template",
        "Reference team composition for a fleet size (seed data): headcount and level "
        "band per role.",
    ),
    (
        "<5 (hidden)",
        "The figures of a group (team, role, level, programme or status) of fewer than 5 "
        "engineers, or of a second group hidden so that the first cannot be recovered from the "
        "totals.",
    ),
]


def method_section(effects: dict[str, Effect], event_charts: list[str], thr: int) -> Section:
    notes: list[str] = []
    for e in effects.values():
        parts = [f"{e.label}: {e.method or 'method not stated'}"]
        if e.comparison:
            parts.append(f"compared with {e.comparison}")
        if e.window:
            parts.append(f"months {e.window}")
        if e.naive_method:
            parts.append(f"plain comparison: {e.naive_method}")
        if e.pretrend_p is not None:
            parts.append(
                f"before certifying the rates {'already differed' if e.pretrend_rejected else 'did not differ'}"
                f" (pre-trend test of the months before certifying, p = {e.pretrend_p:.3g})"
            )
        if e.robustness_estimate is not None and e.robustness_ci_low is not None:
            parts.append(
                f"a simpler design ({e.robustness_method or 'see the mart'}) gives "
                f"{ratio(e.robustness_estimate)} "
                f"({interval(e.robustness_ci_low, e.robustness_ci_high)})"
            )
        if e.caveats:
            parts.append(e.caveats)
        notes.append("; ".join(parts) + ".")
    notes.append(CAVEAT)
    lead = (
        "How the effect of certification is estimated. Incidents and time to restore of "
        "certified engineers are compared with the same engineers' months before they certified, "
        "net of what changed for everyone in the same calendar months; voluntary exits with "
        "colleagues of the same tenure and level. The charts "
        "show each outcome month by month around certification: flat months before it support "
        "the comparison. The last chart shows how far each assumption of the ROI model moves "
        "the net ROI on measured returns."
    )
    return Section("method", "Appendix: method", True, lead, list(event_charts), [], notes)


def glossary(thr: int) -> list[tuple[str, str]]:
    return [
        (term.replace("<5", f"<{thr}"), text.replace("5 engineers", f"{thr} engineers"))
        if term.startswith("<5")
        else (term, text)
        for term, text in GLOSSARY
    ]
