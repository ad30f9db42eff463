"""Attrition hazard ratio: Cox model of voluntary exit on the tenure time scale with holding a
certification as a covariate that changes over time (counting-process rows), so time before a
first certification counts as uncertified time and no immortal-time bias arises."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pipelines.lib.effects.cox import hazard_ratio_while_certified
from pipelines.lib.effects.fit import two_group_ratio
from pipelines.lib.effects.result import Effect, interval_words, window_of

METRIC = "attrition_hazard_ratio"
MIN_EXITS_EACH_SIDE = 10  # expected exits in certified, and in not (yet) certified time
MIN_LAPSED_EXITS = 5  # below this, lapsed time leaves the risk set instead of getting a term

METHOD = (
    "Cox proportional-hazards model of voluntary exit on the tenure time scale, with holding an "
    "active certification at the start of the month, a lapsed certification and skill level as "
    "covariates that change over time; each engineer contributes the months employed "
    "(counting-process rows), so time before a first certification counts as uncertified time. "
    "Involuntary and other exits end follow-up without counting as events. Model-based standard "
    "errors: an engineer's rows do not overlap in tenure. A fixed effect per engineer is not "
    "possible for an event that happens once, so unlike the incident and MTTR ratios this "
    "compares engineers with each other at equal tenure and level."
)
COMPARISON = (
    "at equal tenure: engineers while certified vs engineers (the same or others) while not yet "
    "or never certified, at the same skill level; lapsed time is its own group"
)
THREATS = (
    "Engineers are compared with each other at equal tenure and level, so differences the HR "
    "data does not record (ambition, a manager who both pushes training and keeps people) can "
    "still show up as an effect of certifying."
)
NAIVE_METHOD = (
    "ever vs never: voluntary exits per person-month of engineers who ever certified / of "
    "engineers who never did (immortal-time bias: leaving early prevents certifying); interval "
    "clustered by engineer"
)


def _person_codes(person_key: pd.Series) -> np.ndarray:
    return pd.factorize(person_key)[0]


def certified_at_month_start(d: pd.DataFrame, pid: np.ndarray) -> np.ndarray:
    """Certification status at the start of each month: the previous month's (month-end)
    status when that month is in the panel, else this month's unless the first certification
    happened during it. The exit hazard of a month must not depend on an award the engineer
    earned later in that same month."""
    cert = d["is_certified"].to_numpy()
    t = d["t"].to_numpy()
    prev_same = np.zeros(len(d), dtype=bool)
    prev_same[1:] = (pid[1:] == pid[:-1]) & (t[1:] == t[:-1] + 1)
    lagged = np.r_[False, cert[:-1]] if len(d) else cert
    first_month = (d["rel"] == 0).to_numpy()
    return np.where(prev_same, lagged, cert & ~first_month)


def _consecutive_tenure(d: pd.DataFrame, pid: np.ndarray) -> np.ndarray:
    """Tenure (months) at the start of each engineer-month, one more per calendar month.

    The panel measures tenure on the last day worked in the month, so the month of an exit in
    the middle of the month often repeats the previous month's tenure (hired on the 20th, left
    on the 10th), and a month with fewer days can skip one. Read as they are, such rows give
    overlapping (start, stop] intervals: the leaver is twice in the risk set and the exit moves
    a month earlier. Within each run of consecutive months the tenure of the run's first month
    is carried forward instead."""
    tenure = d["tenure_months"].to_numpy(dtype=float)
    t = d["t"].to_numpy(dtype=float)
    new_run = np.ones(len(d), dtype=bool)
    if len(d) > 1:
        new_run[1:] = (pid[1:] != pid[:-1]) | (t[1:] != t[:-1] + 1)
    run = np.cumsum(new_run) - 1
    first = np.flatnonzero(new_run)
    return tenure[first][run] + (t - t[first][run])


def counting_process(m: pd.DataFrame) -> pd.DataFrame:
    """Long format (id, start, stop, event, certified, lapsed, first_t, skill_level), tenure scale.

    One row per run of consecutive months in which certification and level stay the same, so
    the Cox fit sees a few rows per engineer instead of one per month."""
    d = m[m["tenure_months"].notna() & m["skill_level"].notna()]
    pid = _person_codes(d["person_key"])
    start = _consecutive_tenure(d, pid)
    cert = certified_at_month_start(d, pid)
    # lapsed at the start of the month: first certified in an earlier month, not certified now
    lapsed = ~cert & (d["rel"].to_numpy() >= 1)
    return collapse_runs(
        pid,
        start,
        cert,
        lapsed,
        d["skill_level"].to_numpy(),
        d["voluntary_exit"].to_numpy(),
        first_t=d["first_t"].to_numpy(),
    )


def collapse_runs(
    pid: np.ndarray,
    start: np.ndarray,
    cert: np.ndarray,
    lapsed: np.ndarray,
    level: np.ndarray,
    event: np.ndarray,
    **extra: np.ndarray,
) -> pd.DataFrame:
    """Counting-process rows from one row per engineer-month (tenure ``start``, one month
    long): one row per run of consecutive months of one engineer with the same certified,
    lapsed and level, an event ending its run. ``extra`` columns are taken from each run's
    first month."""
    stop = start + 1.0
    new = np.ones(len(pid), dtype=bool)
    if len(pid) > 1:
        new[1:] = (
            (pid[1:] != pid[:-1])
            | (start[1:] != stop[:-1])
            | (cert[1:] != cert[:-1])
            | (lapsed[1:] != lapsed[:-1])
            | (level[1:] != level[:-1])
            | event[:-1]
        )
    block = np.cumsum(new) - 1
    first = np.flatnonzero(new)
    last = np.r_[first[1:] - 1, len(pid) - 1] if len(pid) else np.array([], int)
    return pd.DataFrame(
        {
            "id": pid[first],
            "start": start[first],
            "stop": stop[last],
            "event": np.bincount(block, weights=event.astype(float)).astype(bool)
            if len(pid)
            else np.array([], bool),
            "certified": cert[first].astype(float),
            "lapsed": lapsed[first].astype(float),
            **{name: values[first] for name, values in extra.items()},
            "skill_level": level[first],
        }
    )


def naive_ratio(m: pd.DataFrame) -> tuple[float, float, float]:
    return two_group_ratio(
        m["voluntary_exit"].to_numpy(),
        m["ever_certified"].to_numpy(),
        np.zeros(len(m)),
        m["person_key"].to_numpy(),
    )


def _certified_share(cp: pd.DataFrame) -> float:
    time = cp["stop"] - cp["start"]
    return float(time[cp["certified"] > 0].sum() / max(time.sum(), 1e-9))


def _expected_exits(cp: pd.DataFrame) -> tuple[float, float]:
    """Exits expected while certified and while not, if certifying changed nothing: the rule
    looks at these, not at the observed split, so that whether a figure is published does not
    depend on the effect it would show."""
    total = float(cp["event"].sum())
    share = _certified_share(cp)
    return total * share, total * (1 - share)


def _exits_needed(cp: pd.DataFrame) -> str:
    share = _certified_share(cp)
    if share == 0:
        return "engineers who hold a certification while employed (none did in this window)"
    exp_c, exp_u = _expected_exits(cp)
    more = max(
        math.ceil(max(MIN_EXITS_EACH_SIDE - exp_c, 0) / max(share, 0.01)),
        math.ceil(max(MIN_EXITS_EACH_SIDE - exp_u, 0) / max(1 - share, 0.01)),
        1,
    )
    return f"about {more} more voluntary exits"


def attrition_hazard_ratio(m: pd.DataFrame, min_group_size: int) -> Effect:
    e = Effect(METRIC, METHOD, COMPARISON, NAIVE_METHOD, threats=THREATS)
    e.naive = naive_ratio(m)
    cp = counting_process(m)
    cert = (cp["certified"] > 0).to_numpy()
    ev = cp["event"].to_numpy()
    have_c, have_u = int((ev & cert).sum()), int((ev & ~cert & ~(cp["lapsed"] > 0)).sum())
    e.n_engineers, e.n_events = int(cp["id"].nunique()), int(ev.sum())
    e.n_cohorts = int(cp.loc[cert, "first_t"].nunique())
    e.window = window_of(m.loc[m["tenure_months"].notna(), "month_start"])
    if e.n_engineers < min_group_size:
        return e.not_estimable(f"fewer than {min_group_size} engineers, too few to publish")
    exp_c, exp_u = _expected_exits(cp)
    if min(exp_c, exp_u) < MIN_EXITS_EACH_SIDE:
        return e.not_estimable(
            f"too few voluntary exits to compare: {e.n_events} in all, of which "
            f"{exp_c:.0f} would fall in certified time if certifying changed nothing "
            f"(minimum {MIN_EXITS_EACH_SIDE} on each side)",
            _exits_needed(cp),
        )
    notes = hazard_ratio_while_certified(e, cp, "exits", MIN_LAPSED_EXITS, level="covariate")
    if notes is None:
        return e
    e.caveats.append(
        interval_words(e, "While certified, engineers leave voluntarily at")
        + f" Based on {have_c} exits while certified and {have_u} while not (yet) certified. "
        "Assumes the effect is proportional over tenure."
    )
    e.caveats += notes
    return e
