"""What preparing for a certification costs, by programme and track, and per certification.

Money the data records (course fees, exam fees, training hours) comes from the episodes; time
is priced with the base values of the assumptions file (``pipelines/lib/roi/assumptions.py``):
the engineers' training hours at the employee rate, and an apprenticeship's senior time as
apprenticeship_months x hours_per_month x apprenticeship_senior_productivity_loss hours of a
senior at the senior rate. Every row names the assumptions that priced it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pipelines.lib.careers.result import StatsInputError, suppress

PRICES = (
    "employee_rate_usd_per_hour",
    "senior_rate_usd_per_hour",
    "apprenticeship_senior_productivity_loss",
    "apprenticeship_months",
    "hours_per_month",
)
SENIOR_PRICES = PRICES[1:]
COSTS_COLUMNS = (
    "programme_type",
    "certification_code",
    "participants",
    "certifications_earned",
    "fees_usd",
    "exam_fees_usd",
    "training_hours",
    "engineer_time_usd",
    "senior_time_usd",
    "total_cost_usd",
    "cost_per_certification_usd",
    "priced_with",
    "suppressed",
    "suppression_reason",
)
MEASURES = list(COSTS_COLUMNS[3:12])


def cost_groups(ep: pd.DataFrame, priced: bool = True) -> pd.DataFrame:
    """Sums per (programme_type, certification_code) and per programme over all tracks
    ('all'; participants there are distinct engineers); without ``priced``, the participants
    and certifications only (episodes without the money and time columns)."""
    sums = {"certifications_earned": ("certified", "sum")}
    if priced:
        sums |= {
            "fees_usd": ("fees_usd", "sum"),
            "exam_fees_usd": ("exam_fees_usd", "sum"),
            "training_hours": ("training_hours", "sum"),
            "apprentices": ("apprenticeship", "sum"),
        }
    by_track = ep.groupby(["programme_type", "certification_code"], sort=True).agg(
        participants=("person_key", "nunique"), **sums
    )
    by_programme = ep.groupby("programme_type", sort=True).agg(
        participants=("person_key", "nunique"), **sums
    )
    by_programme["certification_code"] = "all"
    by_programme = by_programme.reset_index().set_index(["programme_type", "certification_code"])
    out = pd.concat([by_track, by_programme]).reset_index()
    out["_all"] = out["certification_code"].eq("all")
    out = out.sort_values(["programme_type", "_all", "certification_code"], kind="stable")
    return out.drop(columns="_all").reset_index(drop=True)


def check_prices(prices: dict[str, float]) -> dict[str, float]:
    missing = [p for p in PRICES if p not in prices]
    if missing:
        raise StatsInputError(
            f"programme costs: the prices lack {', '.join(missing)}; pass the base values of "
            "the assumptions file (pipelines.lib.roi.assumptions.base_params) or add the "
            "entries to the assumptions file"
        )
    bad = [p for p in PRICES if not np.isfinite(float(prices[p])) or float(prices[p]) < 0]
    if bad:
        raise StatsInputError(
            f"programme costs: {', '.join(bad)} must be a non-negative number in the "
            "assumptions file"
        )
    return {p: float(prices[p]) for p in PRICES}


def _priced_with(apprentices: int, prices: dict[str, float]) -> str:
    used = PRICES if apprentices else PRICES[:1]
    return "; ".join(f"{name}={prices[name]:g}" for name in used)


def programme_costs(
    ep: pd.DataFrame, prices: dict[str, float], min_group_size: int
) -> pd.DataFrame:
    p = check_prices(prices)
    g = cost_groups(ep)
    senior_hours = p["apprenticeship_months"] * p["hours_per_month"]
    senior_hours *= p["apprenticeship_senior_productivity_loss"]
    g["engineer_time_usd"] = g["training_hours"] * p["employee_rate_usd_per_hour"]
    g["senior_time_usd"] = g["apprentices"] * senior_hours * p["senior_rate_usd_per_hour"]
    g["total_cost_usd"] = (
        g["fees_usd"] + g["exam_fees_usd"] + g["engineer_time_usd"] + g["senior_time_usd"]
    )
    earned = g["certifications_earned"].astype(float)
    g["cost_per_certification_usd"] = (g["total_cost_usd"] / earned).where(earned > 0)
    g["priced_with"] = [_priced_with(int(a), p) for a in g["apprentices"]]
    for c in MEASURES:
        if c not in ("certifications_earned", "priced_with"):
            g[c] = g[c].astype("float64")
    g["certifications_earned"] = g["certifications_earned"].astype("int64")
    g["participants"] = g["participants"].astype("int64")
    out = suppress(g, "participants", min_group_size, lines=[["programme_type"]], measures=MEASURES)
    for c in ("programme_type", "certification_code", "priced_with"):
        out[c] = out[c].astype("string")
    return out[list(COSTS_COLUMNS)].reset_index(drop=True)
