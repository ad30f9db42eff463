"""The names of the populations and counts the report prints, one name per figure.

The same word with two values confuses a reader ("337 engineers" on one page, "332 engineers"
on the next): the engineers at quarter end, on average over the quarter and employed at some
point in the quarter are different populations. Every count in prose is printed through
`count(key, value)`, which writes the figure (tagged with its key) followed by its one name, so
a name has one value throughout the report (tests/test_report_consistency.py reads it back).
"""

from __future__ import annotations

from markupsafe import Markup

from pipelines.lib.report.fmt import fig, num, sentence

LABELS: dict[str, str] = {
    # coverage: the month-end snapshot of the quarter's last month
    "headcount": "engineers at quarter end",
    "certified-headcount": "certified engineers at quarter end",
    "compliant-headcount": "engineers meeting their role requirements at quarter end",
    "uncertified-headcount": "engineers holding no certification at quarter end",
    "gap-people": "engineers missing a required certification",
    "scope-missing": "engineers in the largest clusters missing a required certification",
    "template-seats": "template seats",
    # attrition: average headcount of the quarter (the turnover denominator)
    "average-headcount": "engineers on average over the quarter",
    "leavers": "leavers in the quarter",
    "leavers-12m": "leavers in the 12 months",
    # incidents: everyone with an engineer-month in the quarter
    "employed": "engineers employed during the quarter",
    "incident-rate": "incidents per 100 engineer-months",
    "expiring": "certifications expiring in the next 90 days",
    "hires-needed": "hires the roles lack overall",
    "seats-short": "template seats empty in teams below their template",
    # careers: level_progression (one calendar year) and the promotion model
    "promotions-year": "promotions in the calendar year",
    # careers: level_progression_12m (the 12 months to the quarter's end)
    "promotions-12m": "promotions in the 12 months",
    "promotion-model-engineers": "engineers in the promotion model",
    "promotion-model-events": "promotions in the promotion model",
}


# the name of one, where it differs (1 template seat, not 1 template seats)
SINGULAR: dict[str, str] = {
    "template-seats": "template seat",
    "seats-short": "template seat empty in teams below their template",
    "hires-needed": "hire the roles lack overall",
    "leavers": "leaver in the quarter",
    "leavers-12m": "leaver in the 12 months",
    "expiring": "certification expiring in the next 90 days",
    "promotions-year": "promotion in the calendar year",
    "promotions-12m": "promotion in the 12 months",
    "promotion-model-events": "promotion in the promotion model",
}


def label(key: str, n: float | None = None) -> str:
    """The name of the figure `key`; of one, when `n` is 1."""
    if n is not None and round(float(n), 6) == 1:
        return SINGULAR.get(key, LABELS[key].replace("engineers", "engineer", 1))
    return LABELS[key]


def count(key: str, value: float | None, text: str | None = None) -> Markup:
    """`<figure>337</figure> engineers at quarter end`: the figure and its one name."""
    return sentence(
        "{n} {what}", n=fig(key, text if text is not None else num(value)), what=label(key, value)
    )
