"""Careers on the ladder: how long engineers stay at a level, and whether certifying is
followed by promotion.

A promotion is a month whose next consecutive month of the panel has a higher skill level.
``time_in_level``: spells at one level (consecutive months at that level), Kaplan-Meier of their
length until a promotion. ``promotion_effect``: Cox model of promotion on the tenure scale with
certification as a covariate that changes over time, the design of the attrition hazard ratio
(``pipelines/lib/effects/attrition.py``).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pipelines.lib.careers.result import null_small_count, suppress
from pipelines.lib.effects.attrition import _consecutive_tenure, _person_codes, collapse_runs
from pipelines.lib.effects.cox import hazard_ratio_while_certified
from pipelines.lib.effects.fit import two_group_ratio
from pipelines.lib.effects.result import Effect, interval_words, window_of
from pipelines.lib.project_files import DBT_PROJECT_DIR

SKILL_LEVELS_SEED = DBT_PROJECT_DIR / "seeds" / "skill_levels.csv"
TOP_LEVEL = 5
# a spell that starts in a month in which the engineer's tenure is below this was started by
# the hire (tenure is measured on the last day worked in the month)
HIRE_TENURE_MONTHS = 1.0
MIN_PROMOTIONS_EACH_SIDE = 10  # expected promotions in certified and in not certified time
MIN_LAPSED_PROMOTIONS = 5

TIME_IN_LEVEL_COLUMNS = (
    "skill_level",
    "engineers",
    "spells",
    "promotions",
    "median_months",
    "q1_months",
    "q3_months",
    "promoted_within_band",
    "band_min_months",
    "band_max_months",
    "suppressed",
    "suppression_reason",
)


def level_bands(path=SKILL_LEVELS_SEED) -> pd.DataFrame:
    """skill_level -> experience_min_months, experience_max_months from the dbt seed."""
    seed = pd.read_csv(path)
    return seed.set_index("skill_level")[["experience_min_months", "experience_max_months"]]


def _next_month(m: pd.DataFrame, pid: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(the next row is the same engineer's next calendar month, its skill level)."""
    t = m["t"].to_numpy()
    level = m["skill_level"].to_numpy()
    has_next = np.zeros(len(m), dtype=bool)
    if len(m) > 1:
        has_next[:-1] = (pid[1:] == pid[:-1]) & (t[1:] == t[:-1] + 1)
    next_level = np.r_[level[1:], np.nan] if len(m) else level
    return has_next, next_level


def level_spells(m: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Spells at one level with a seen start: (person_key, skill_level, months, promoted,
    first_t), and how many spells were left out because their start is not seen (the spell is
    under way in the engineer's first month of the data, or after a gap, without a hire)."""
    d = m[m["skill_level"] > 0].reset_index(drop=True)
    pid = _person_codes(d["person_key"])
    t = d["t"].to_numpy()
    level = d["skill_level"].to_numpy()
    prev_same = np.zeros(len(d), dtype=bool)
    if len(d) > 1:
        prev_same[1:] = (pid[1:] == pid[:-1]) & (t[1:] == t[:-1] + 1)
    new = ~prev_same.copy()
    new[1:] |= prev_same[1:] & (level[1:] != level[:-1])
    spell = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    has_next, next_level = _next_month(d, pid)
    tenure = d["tenure_months"].to_numpy()
    # seen start: a level change from the previous consecutive month, or a hire
    seen = prev_same[first] | (tenure[first] < HIRE_TENURE_MONTHS)
    last = np.r_[first[1:] - 1, len(d) - 1] if len(d) else np.array([], int)
    promoted = has_next[last] & (next_level[last] > level[last])
    spells = pd.DataFrame(
        {
            "person_key": d["person_key"].to_numpy()[first],
            "skill_level": level[first].astype(int),
            "months": np.bincount(spell).astype(float) if len(d) else np.array([], float),
            "promoted": promoted,
            "first_t": t[first],
        }
    )
    return spells[seen].reset_index(drop=True), int((~seen).sum())


def level_quantiles(
    months: np.ndarray, event: np.ndarray, band: tuple[float, float] = (math.nan, math.nan)
) -> dict[str, float]:
    """Kaplan-Meier quartiles of months in level (NaN where not reached), and the share promoted
    within the level's band: S(band_min) - S(band_max), the estimated share whose promotion
    falls between the band's ends (NaN when the band is open-ended or outlasts follow-up)."""
    from lifelines import KaplanMeierFitter
    from lifelines.utils import qth_survival_times

    kmf = KaplanMeierFitter()
    kmf.fit(months, event_observed=event)

    def reached(x):
        return float(x) if np.isfinite(x) else math.nan

    lo, hi = band
    within = math.nan
    if np.isfinite(hi) and len(months) and hi <= float(np.max(months)):
        s = kmf.survival_function_at_times([0.0 if not np.isfinite(lo) else lo, hi]).to_numpy()
        within = float(s[0] - s[1])
    return {
        "median_months": reached(kmf.median_survival_time_),
        "q1_months": reached(qth_survival_times(0.75, kmf.survival_function_)),
        "q3_months": reached(qth_survival_times(0.25, kmf.survival_function_)),
        "promoted_within_band": within,
    }


def time_in_level(m: pd.DataFrame, min_group_size: int) -> tuple[pd.DataFrame, int]:
    spells, unseen = level_spells(m)
    bands = level_bands()
    rows = []
    for level in sorted(set(spells["skill_level"]) | set(bands.index)):
        s = spells[spells["skill_level"] == level]
        row = {
            "skill_level": int(level),
            "engineers": int(s["person_key"].nunique()),
            "spells": len(s),
            "promotions": int(s["promoted"].sum()),
            "median_months": math.nan,
            "q1_months": math.nan,
            "q3_months": math.nan,
            "promoted_within_band": math.nan,
        }
        band = bands.loc[level] if level in bands.index else None
        row["band_min_months"] = band["experience_min_months"] if band is not None else math.nan
        row["band_max_months"] = band["experience_max_months"] if band is not None else math.nan
        if row["engineers"] >= min_group_size:
            ends = (float(row["band_min_months"]), float(row["band_max_months"]))
            row |= level_quantiles(s["months"].to_numpy(), s["promoted"].to_numpy(), ends)
        rows.append(row)
    df = pd.DataFrame(rows, columns=list(TIME_IN_LEVEL_COLUMNS[:-2]))
    for c in ("median_months", "q1_months", "q3_months", "band_min_months", "band_max_months"):
        df[c] = df[c].astype("float64")
    df["promoted_within_band"] = df["promoted_within_band"].astype("float64")
    for c in ("engineers", "spells", "promotions"):
        df[c] = df[c].astype("int64")
    out = suppress(
        df,
        "engineers",
        min_group_size,
        measures=[
            "spells",
            "promotions",
            "median_months",
            "q1_months",
            "q3_months",
            "promoted_within_band",
        ],
    )
    return out[list(TIME_IN_LEVEL_COLUMNS)].reset_index(drop=True), unseen


# --------------------------------------------------------------------------------------------
# promotion hazard ratio
# --------------------------------------------------------------------------------------------

METRIC = "promotion_hazard_ratio"
METHOD = (
    "Cox proportional-hazards model of promotion (the next consecutive month of the panel at a "
    "higher skill level) on the tenure time scale, with holding an active certification at the "
    "end of the month and a lapsed certification (certified before, not at the end of the "
    "month) as covariates that change over time; a promotion takes effect on the first day of "
    "the next month, so the status on the month's last day is the status when it takes "
    "effect (a certification earned during the month counts for that month's promotion), "
    "stratified by skill level (each level has its own baseline promotion hazard over tenure); "
    "each engineer contributes the months below the top level whose next month is observed "
    "(counting-process rows), so time before a first certification counts as uncertified "
    "time. Exits, the end of the data and months at level 5 leave the risk set. Model-based "
    "standard errors."
)
COMPARISON = (
    "at equal tenure and skill level: engineers while certified vs engineers (the same or "
    "others) while not yet or never certified; lapsed time is its own group"
)
THREATS = (
    "Engineers are compared with each other at equal tenure and level, so what the HR data "
    "does not record (performance ratings, a manager who both sends people to train and "
    "promotes them, an opening at the next level) can show up as an effect of certifying; a "
    "promotion that requires the certification is part of the figure."
)
NAIVE_METHOD = (
    "ever vs never: promotions per engineer-month below the top level of engineers who ever "
    "certified / of engineers who never did (immortal-time bias: staying longer gives more "
    "time to certify); interval clustered by engineer"
)


def promotion_process(m: pd.DataFrame) -> pd.DataFrame:
    """Counting-process rows (id, start, stop, event, certified, lapsed, skill_level,
    first_t), tenure scale, one per run of months with the same status.

    The event of a month is a higher level in the next month: a promotion effective on the
    first day of that month. Its status is the month's ``is_certified`` (measured on the last
    day of the month, so the day before the promotion takes effect); lapsed is the prepared
    ``lapsed`` (a month after the first certified one that ends without an active
    certification), so certified, lapsed and not yet certified split every month."""
    d = m[m["tenure_months"].notna()].reset_index(drop=True)
    pid = _person_codes(d["person_key"])
    has_next, next_level = _next_month(d, pid)
    start = _consecutive_tenure(d, pid)
    cert = d["is_certified"].to_numpy(dtype=bool)
    lapsed = d["lapsed"].to_numpy(dtype=bool) & ~cert
    level = d["skill_level"].to_numpy()
    event = has_next & (next_level > level)
    at_risk = has_next & (level > 0) & (level < TOP_LEVEL)
    d, pid, start, cert, lapsed, level, event = (
        x[at_risk] for x in (d, pid, start, cert, lapsed, level, event)
    )
    return collapse_runs(pid, start, cert, lapsed, level, event, first_t=d["first_t"].to_numpy())


def _expected(cp: pd.DataFrame) -> tuple[float, float, float]:
    """Promotions expected in certified and in not certified time if certifying changed
    nothing (the rule looks at these, not at the observed split), and the certified share."""
    time = cp["stop"] - cp["start"]
    share = float(time[cp["certified"] > 0].sum() / max(time.sum(), 1e-9))
    total = float(cp["event"].sum())
    return total * share, total * (1 - share), share


def _naive(m: pd.DataFrame) -> tuple[float, float, float]:
    d = m[(m["skill_level"] > 0) & (m["skill_level"] < TOP_LEVEL)]
    pid = _person_codes(d["person_key"])
    has_next, next_level = _next_month(d, pid)
    d = d[has_next]
    promoted = next_level[has_next] > d["skill_level"].to_numpy()
    return two_group_ratio(
        promoted, d["ever_certified"].to_numpy(), np.zeros(len(d)), d["person_key"].to_numpy()
    )


def promotion_effect(m: pd.DataFrame, min_group_size: int) -> Effect:
    e = Effect(METRIC, METHOD, COMPARISON, NAIVE_METHOD, threats=THREATS)
    e.naive = _naive(m)
    cp = promotion_process(m)
    cert = (cp["certified"] > 0).to_numpy()
    ev = cp["event"].to_numpy()
    lapsed = (cp["lapsed"] > 0).to_numpy()
    have_c, have_u = int((ev & cert).sum()), int((ev & ~cert & ~lapsed).sum())
    e.n_engineers, e.n_events = int(cp["id"].nunique()), int(ev.sum())
    e.n_cohorts = int(cp.loc[cert, "first_t"].nunique())
    e.window = window_of(m.loc[m["tenure_months"].notna(), "month_start"])
    if e.n_engineers < min_group_size:
        return e.not_estimable(f"fewer than {min_group_size} engineers, too few to publish")
    exp_c, exp_u, share = _expected(cp)
    if min(exp_c, exp_u) < MIN_PROMOTIONS_EACH_SIDE:
        if share == 0:
            needed = "engineers who hold a certification while employed (none did in this window)"
        else:
            more = max(
                math.ceil(max(MIN_PROMOTIONS_EACH_SIDE - exp_c, 0) / max(share, 0.01)),
                math.ceil(max(MIN_PROMOTIONS_EACH_SIDE - exp_u, 0) / max(1 - share, 0.01)),
                1,
            )
            needed = f"about {more} more promotions"
        return e.not_estimable(
            f"too few promotions to compare: {e.n_events} in all, of which {exp_c:.0f} would "
            f"fall in certified time if certifying changed nothing (minimum "
            f"{MIN_PROMOTIONS_EACH_SIDE} on each side)",
            needed,
        )
    notes = hazard_ratio_while_certified(e, cp, "promotions", MIN_LAPSED_PROMOTIONS, "strata")
    if notes is None:
        return e
    e.caveats.append(
        interval_words(e, "While certified, engineers are promoted at")
        + f" Based on {have_c} promotions while certified and {have_u} while not (yet) "
        "certified. Assumes the effect is proportional over tenure and the same at every level."
    )
    e.caveats += notes
    return e


def promotion_frame(e: Effect, min_group_size: int) -> pd.DataFrame:
    from pipelines.lib.careers.result import type_effect_columns
    from pipelines.lib.effects.result import EFFECT_COLUMNS

    row = e.row()
    row["n_engineers"] = null_small_count(row["n_engineers"], min_group_size)
    row["n_events"] = null_small_count(row["n_events"], min_group_size)
    return type_effect_columns(pd.DataFrame([row], columns=list(EFFECT_COLUMNS)))
