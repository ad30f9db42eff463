"""Each programme's time to the next level: Kaplan-Meier months from an episode's first
enrolment to the first month of the panel at a higher skill level than the level held in the
month of that enrolment; the last month the engineer is seen censors. Episodes that start at
the top level (nothing above it) or in a month the panel does not hold are left out.

This describes who went where, not what the programme did: who is sent to which programme
differs by level and tenure (the programme comparison adjusts for those; this does not).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pipelines.lib.careers.careers import TOP_LEVEL
from pipelines.lib.careers.result import suppress

NEXT_LEVEL_COLUMNS = (
    "programme_type",
    "episodes",
    "engineers",
    "promotions",
    "median_months",
    "q1_months",
    "promoted_within_12m_share",
    "suppressed",
    "suppression_reason",
)


def next_level_spells(ep: pd.DataFrame, m: pd.DataFrame) -> pd.DataFrame:
    """One row per usable episode: programme_type, person_key, months (to the promotion or
    the last month seen) and promoted."""
    months = m[["person_key", "t", "skill_level", "month_start"]]
    start = pd.DataFrame(
        {
            "programme_type": ep["programme_type"].to_numpy(),
            "person_key": ep["person_key"].to_numpy(),
            "month_start": pd.to_datetime(ep["first_enrolled_on"])
            .dt.to_period("M")
            .dt.start_time.to_numpy(),
        }
    ).merge(months, on=["person_key", "month_start"], how="inner")
    start = start[(start["skill_level"] > 0) & (start["skill_level"] < TOP_LEVEL)]
    later = (
        start[["person_key", "t", "skill_level"]]
        .reset_index()
        .merge(months[["person_key", "t", "skill_level"]], on="person_key", suffixes=("", "_then"))
    )
    later = later[later["t_then"] > later["t"]]
    higher = later[later["skill_level_then"] > later["skill_level"]]
    first_higher = higher.groupby("index")["t_then"].min()
    last_seen = later.groupby("index")["t_then"].max()
    out = start[["programme_type", "person_key", "t"]].copy()
    out["promoted"] = out.index.isin(first_higher.index)
    end = first_higher.reindex(out.index).fillna(last_seen.reindex(out.index))
    out["months"] = (end - out["t"]).fillna(0.0).to_numpy(dtype=float)
    return out.reset_index(drop=True)


def _km(months: np.ndarray, promoted: np.ndarray) -> dict[str, float]:
    from lifelines import KaplanMeierFitter
    from lifelines.utils import qth_survival_times

    kmf = KaplanMeierFitter().fit(months, event_observed=promoted)

    def reached(x) -> float:
        return float(x) if np.isfinite(x) else math.nan

    followed = float(np.max(months)) if len(months) else 0.0
    within = (
        1.0 - float(kmf.survival_function_at_times(12.0).iloc[0]) if followed >= 12 else math.nan
    )
    return {
        "median_months": reached(kmf.median_survival_time_),
        "q1_months": reached(qth_survival_times(0.75, kmf.survival_function_)),
        "promoted_within_12m_share": within,
    }


def time_to_next_level(ep: pd.DataFrame, m: pd.DataFrame, min_group_size: int) -> pd.DataFrame:
    """The ``programme_next_level`` mart: one row per programme type."""
    spells = next_level_spells(ep, m)
    rows = []
    for programme, s in spells.groupby("programme_type", sort=True):
        row = {
            "programme_type": str(programme),
            "episodes": len(s),
            "engineers": int(s["person_key"].nunique()),
            "promotions": int(s["promoted"].sum()),
            "median_months": math.nan,
            "q1_months": math.nan,
            "promoted_within_12m_share": math.nan,
        }
        if row["engineers"] >= min_group_size:
            row |= _km(s["months"].to_numpy(), s["promoted"].to_numpy())
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(NEXT_LEVEL_COLUMNS[:-2]))
    for c in ("episodes", "engineers", "promotions"):
        df[c] = df[c].astype("int64")
    for c in ("median_months", "q1_months", "promoted_within_12m_share"):
        df[c] = df[c].astype("float64")
    df["programme_type"] = df["programme_type"].astype("string")
    out = suppress(
        df,
        "engineers",
        min_group_size,
        measures=["episodes", "promotions", "median_months", "q1_months",
                  "promoted_within_12m_share"],
    )  # fmt: skip
    return out[list(NEXT_LEVEL_COLUMNS)].reset_index(drop=True)
