"""The appendix: how the effects are estimated, written as prose, and a short glossary.

Each effect gets one paragraph composed from the mart's structured columns (the design, who is
compared with whom, the months, the engineers and events, the status and why, the pre-trend
test, the plain comparison and the simpler design), so every figure in it is the one the
effects table prints. The model's technical specification stays in `marts.certification_effect`
(column `method`) and docs/statistics.md; of the mart's caveats, only the sentences that do not
restate a figure printed here are quoted.
"""

from __future__ import annotations

import re

from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.fmt import fig, interval, num, ratio, sentence
from pipelines.lib.report.sections.base import Section
from pipelines.lib.report.sections.effects import (
    DESIGN,
    ENGINEERS,
    EVENTS,
    Effect,
    effect_status,
    estimate_text,
    p_text,
)

CAVEAT = (
    "What these figures can and cannot show: they are associations in observational data, not "
    "proof of cause. Comparing each engineer with their own earlier months removes stable "
    "differences between engineers, but not what changes in their work when they certify; the "
    "months of preparing (from three months before the first enrolment that led to it) count "
    "apart, so a bad spell that prompts "
    "someone to certify does not pose as an effect. Small groups give wide intervals. The plain "
    "comparison (before against after, or ever against never certified) is printed only to show "
    "how much the design changes the answer."
)

PROGRAMMES_METHOD = (
    "Training programmes and careers: a participant is one engineer preparing for one "
    "certification track; the programme is the most intensive one used in its first 90 days. "
    "Times to certify and in a level are Kaplan-Meier estimates (who leaves or is still "
    "preparing counts until then). Programmes are compared with the online path adjusted for "
    "skill level, tenure and track at entry, not for what the human resources data do not "
    "record; promotion compares colleagues of the same tenure and level. Details: "
    "docs/statistics.md."
)

# sentences of the mart's caveats that restate a figure this appendix prints from its columns
_RESTATES = re.compile(r"95 % CI|\bp = |Pre-trend check|Based on \d|With one indicator")


def _caveats(text: str, printed: set[str]) -> str:
    """The caveat sentences that neither restate a printed figure nor repeat one printed
    before (the threats common to several effects are quoted once)."""
    sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z])", " ".join(text.split()))
    kept = []
    for s in sentences:
        s = s.rstrip(".") + "."
        if s != "." and not _RESTATES.search(s) and s not in printed:
            printed.add(s)
            kept.append(s)
    return " ".join(kept)


def effect_paragraph(e: Effect, printed: set[str] | None = None) -> Markup:
    text = sentence(
        "{label} ({status}): {design}{window}.",
        label=e.label,
        status=effect_status(e),
        design=DESIGN.get(e.metric, e.comparison or "see the mart"),
        window=f", {e.window}" if e.window else "",
    )
    if e.n_engineers is not None:
        text += sentence(
            " Based on {n} {who} and {k} {what}.",
            n=fig(f"n-engineers-{e.metric}", num(e.n_engineers)),
            who=ENGINEERS.get(e.metric, "engineers"),
            k=fig(f"n-events-{e.metric}", num(e.n_events)),
            what=EVENTS.get(e.metric, "events"),
        )
    if e.estimable:
        text += sentence(" Estimate {est}: {why}.", est=estimate_text(e, long=True), why=e.why)
    else:
        text += sentence(" Not estimable: {why}.", why=e.why)
    if e.pretrend_p is not None and not (e.pretrend_rejected and e.estimable):  # else in `why`
        text += sentence(
            " Before certifying, the rates {did} (pre-trend test, {p}).",
            did="already differed" if e.pretrend_rejected else "did not differ",
            p=p_text(e.pretrend_p),
        )
    if e.naive_estimate is not None:
        how = e.naive_method.split(":", 1)[-1].split(";")[0].strip() if e.naive_method else ""
        text += sentence(
            " A plain comparison{how} would say {naive}.",
            how=f" ({how})" if how else "",
            naive=fig(f"naive-{e.metric}", ratio(e.naive_estimate)),
        )
    if e.robustness_estimate is not None and e.robustness_ci_low is not None:
        text += sentence(
            " A simpler design ({how}) gives {r} ({ci}).",
            how=(e.robustness_method or "see the mart").split(":")[0].strip(),
            r=ratio(e.robustness_estimate),
            ci=interval(e.robustness_ci_low, e.robustness_ci_high),
        )
    caveats = _caveats(e.caveats, printed if printed is not None else set())
    if caveats:
        text += sentence(" Caveats recorded with the estimate: {c}", c=caveats)
    return text


def method_section(
    effects: dict[str, Effect], event_charts: list[charts.Chart], thr: int
) -> Section:
    printed: set[str] = set()
    notes: list = [effect_paragraph(e, printed) for e in effects.values()]
    notes.append(CAVEAT)
    notes.append(PROGRAMMES_METHOD)
    lead = (
        "How the effect of certification is estimated. Incidents and time to restore of "
        "certified engineers are compared with the same engineers' months before they "
        "certified, net of what changed for everyone in the same calendar months; voluntary "
        "exits with colleagues of the same tenure and level. The charts show each outcome month "
        "by month around certification, with its status. The technical specification of each "
        "model is in marts.certification_effect (column method) and docs/statistics.md."
    )
    return Section("method", "Appendix: method", True, lead, list(event_charts), [], notes)


GLOSSARY = [
    ("Engineers at quarter end", "employed in the analysed division on the quarter's last day "
     "(employees only), each counted once."),
    ("Engineers on average over the quarter", "the mean of the engineers at its start and its "
     "end: the denominator of turnover (the SHRM definition)."),
    ("Certified", "holds at least one certification active on the date; in the attrition "
     "figures, on the last day in the period."),
    ("Meets role requirements", "holds every certification the team template requires for the "
     "role at the cluster's fleet size (small 10–100 GPUs, medium 100–1,000, large 1,000+)."),
    ("Status of an effect", "shown: estimable, no difference before certifying, a 95 % interval "
     "that excludes no effect. Not shown: estimated, but the interval includes no effect or "
     "the rates already differed before certifying. Not estimable: too little data."),
    ("Evidence of a return", "measured here (rests on effects shown; only this counts), "
     "estimated but not distinguishable from no effect (rests on effects not shown), assumed."),
    ("95 % interval, ratio", "the values compatible with the data at the 95 % level; a ratio "
     "is certified ÷ comparison, 1 = no difference, 0.70 = 30 % lower."),
    ("Pre-trend test", "an F-test of whether the rates of engineers who later certified already "
     "changed before they certified: incidents, months −6 to −2 and earlier against month −1 "
     "(2 degrees of freedom); time to restore, months −6 to −1 against earlier months (1). "
     "Below 0.05 the effect is not shown."),
    ("Turnover, incident rate", "leavers ÷ engineers on average over the period (Wilson "
     "intervals); incidents as primary responder ÷ engineer-months × 100 (exact Poisson "
     "intervals, Garwood)."),
    ("Time to restore", "minutes from opening to resolution; tiles and tables print the median "
     "(as Google's Four Keys project does), the effect compares geometric means."),
    ("Net return, payback", "(return counted − investment) ÷ investment, rounded down; "
     "payback: months of counted return that repay the investment."),
    ("Time to certify, time in level", "months from the first enrolment of a track to the "
     "first passed exam, and at a level until promotion; the median is the time by which half "
     "had got there."),
    ("Cost per certification", "course and exam fees, engineers' training hours and "
     "apprentices' senior time, ÷ certifications earned."),
    ("Compa-ratio", "pay ÷ the midpoint of the level's pay band; 1 = at the midpoint."),
    ("<5, hidden", "<5: a group of fewer than 5 engineers; hidden: a group of 5 or more hidden "
     "only so that a smaller one cannot be recovered from a total."),
]  # fmt: skip


def glossary(thr: int) -> list[tuple[str, str]]:
    return [
        (
            term.replace("<5", f"<{thr}"),
            text.replace("fewer than 5", f"fewer than {thr}").replace(
                "5 or more", f"{thr} or more"
            ),
        )
        for term, text in GLOSSARY
    ]
