"""The frames the statistics read, built straight from a simulated company.

Running ingestion and dbt per world would take minutes; the validity harness instead runs the
generator's simulation with a writer that keeps nothing and rebuilds
``int_engineer_months``, ``int_incident_responses`` and ``int_programme_episodes`` from the
simulation's own logs, with the same definitions (certified on the last day employed in the
month, first certification month, exposure = days employed / days in month, separations by
type, incidents as primary responder with the certification status at opening; episodes as
described in ``programme_episodes``). The end-to-end test keeps checking the real pipeline.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from tools.generate.model import PlantedModel
from tools.generate.simulate import Simulation, add_months, month_starts

AVERAGE_MONTH_DAYS = 30.4375


class DiscardWriter:
    """An export writer that writes nothing (the harness needs the simulation only)."""

    def __init__(self) -> None:
        self.files: list[str] = []
        self.rows: dict[str, int] = {}
        self.dirt: list[dict] = []

    def emit(self, export: str, d: date, row: dict) -> None:
        pass

    def flush_through(self, d: date) -> None:
        pass

    def close(self) -> None:
        pass


def simulate(
    employees: int, years: int, seed: int, model: PlantedModel, end: date = date(2026, 9, 30)
) -> Simulation:
    """Run one company's simulation with the harness logs switched on."""
    seeds = np.random.SeedSequence(seed).spawn(2)
    sim = Simulation(
        DiscardWriter(), employees, years, end, int(seeds[0].generate_state(1)[0]), model, False
    )
    sim.panel_log, sim.incident_log, sim.exit_log = [], [], []
    sim.episode_log = []
    sim.run()
    return sim


def _certified(awards: list[tuple], day: int) -> bool:
    return any(iss <= day <= exp for _, iss, exp in awards)


def engineer_months(sim: Simulation) -> pd.DataFrame:
    log = pd.DataFrame(
        sim.panel_log, columns=["i", "t", "skill_level", "a", "b", "dim", "incidents", "irr"]
    )
    month_dates = np.array([np.datetime64(m, "D") for m in sim.months])
    first_month_of = {
        i: np.datetime64(date.fromordinal(min(iss for _, iss, _ in aw)).replace(day=1), "D")
        for i, aw in sim.awards.items()
        if aw
    }
    # the warehouse's first_preparation_month: the month of the first enrolment in a course
    # leading to a certification, among the preparations begun on or before the first award
    first_award = {i: min(iss for _, iss, _ in aw) for i, aw in sim.awards.items() if aw}
    prep_start: dict[int, int] = {}
    for ep in sim.episode_log or ():
        i = int(ep["i"])
        if ep["enrolments"] and i in first_award and ep["start"] <= first_award[i]:
            prep_start[i] = min(prep_start.get(i, ep["start"]), ep["start"])
    prep_month_of = {
        i: np.datetime64(date.fromordinal(day).replace(day=1), "D") for i, day in prep_start.items()
    }
    exits = pd.DataFrame(sim.exit_log, columns=["i", "day", "separation_type"])
    rows_i, rows_b = log["i"].to_numpy(), log["b"].to_numpy()
    is_cert = np.array(
        [_certified(sim.awards.get(i, ()), b) for i, b in zip(rows_i, rows_b, strict=True)]
    )
    nat = np.datetime64("NaT", "D")
    first_month = np.array([first_month_of.get(i, nat) for i in rows_i], dtype="datetime64[D]")
    out = pd.DataFrame(
        {
            "person_key": "E" + log["i"].astype(str),
            "month": month_dates[log["t"].to_numpy()],
            "skill_level": log["skill_level"],
            "tenure_months": np.floor(
                (rows_b - sim.p.orig_hire[rows_i]) / AVERAGE_MONTH_DAYS
            ).astype(int),
            "is_certified": is_cert,
            "first_certified_month": first_month,
            "first_preparation_month": np.array(
                [prep_month_of.get(i, nat) for i in rows_i], dtype="datetime64[D]"
            ),
            "incidents": log["incidents"],
            "exposure_months": (log["b"] - log["a"] + 1) / log["dim"],
            "planted_irr": log["irr"],
        }
    )
    merged = log[["i", "a", "b"]].reset_index().merge(exits, on="i", how="left")
    hit = merged[(merged["day"] >= merged["a"]) & (merged["day"] <= merged["b"])]
    hit = hit.drop_duplicates("index").set_index("index")["separation_type"]
    out["separation_type"] = hit.reindex(range(len(out))).to_numpy()
    out["separated"] = out["separation_type"].notna()
    # several spells in one month (a rehire) would repeat the month: keep one row
    return out.drop_duplicates(["person_key", "month"], keep="last").reset_index(drop=True)


def incident_responses(sim: Simulation) -> pd.DataFrame:
    log = pd.DataFrame(sim.incident_log, columns=["i", "day", "certified", "severity", "minutes"])
    end = sim.end.toordinal()
    log = log[log["day"] + log["minutes"] / 1440.0 <= end + 1]  # resolved within the data
    months = [m.toordinal() for m in sim.months]
    t = np.searchsorted(months, log["day"].to_numpy(), side="right") - 1
    month_dates = np.array([np.datetime64(m, "D") for m in sim.months])
    return pd.DataFrame(
        {
            "person_key": "E" + log["i"].astype(str),
            "is_certified": log["certified"].astype(bool),
            "severity": log["severity"],
            "resolve_minutes": log["minutes"],
            "month": month_dates[t],
        }
    )


def planted_incident_ratio(em: pd.DataFrame) -> float:
    """The planted incident rate ratio averaged (geometric mean) over certified engineer-months
    after the month of the first certification: the target of the estimate when the planted
    effect differs by level or time since certifying."""
    after = pd.to_datetime(em["month"]) > pd.to_datetime(em["first_certified_month"])
    rows = em[em["is_certified"] & after.to_numpy()]
    return float(np.exp(np.log(rows["planted_irr"]).mean()))


EPISODE_COLUMNS = (
    "person_key",
    "certification_code",
    "programme_type",
    "first_enrolled_on",
    "cohort_quarter",
    "skill_level_at_entry",
    "role_family_at_entry",
    "tenure_months_at_entry",
    "enrolments",
    "completed",
    "attempts",
    "first_attempt_on",
    "first_attempt_passed",
    "certified",
    "certified_on",
    "followed_until",
    "months_followed",
    "fees_usd",
    "list_price_usd",
    "exam_fees_usd",
    "training_hours",
    "apprenticeship",
    "voluntary_exit_12m",
    "followed_12m",
    "exit_on",
    "exit_type",
)


def programme_episodes(sim: Simulation) -> pd.DataFrame:
    """``int_programme_episodes`` rebuilt from a simulation run by ``simulate`` (which switches
    on ``episode_log`` and ``exit_log``): one row per (engineer, certification track), the
    engineer's first episode of the track, with the contract's definitions. The programme is
    the planted one (the episode's courses are all enrolled on its first day, so the
    warehouse's 90-day priority rule picks it); certified_on is the episode's passing attempt,
    sat before leaving and by the as-of date; followed_until is certified_on, else the first
    leaving day after the start or the as-of date; months = days / 30.4375; enrolments that
    end after the as-of date are neither completed nor count hours (their delivered status is
    'enrolled'). Extra columns give the planted truth of each episode: planted_certify_months
    (T, also when censored), planted_first_attempt_passes, planted_exit_multiplier."""
    if sim.episode_log is None or sim.exit_log is None:
        raise ValueError(
            "programme_episodes needs the simulation's episode_log and exit_log: run it with "
            "tools.validate.frames.simulate, which switches them on"
        )
    end = sim.end.toordinal()
    exits: dict[int, list[tuple[int, str]]] = {}
    for i, day, kind in sim.exit_log:
        exits.setdefault(int(i), []).append((int(day), kind))
    rows, seen = [], set()
    for ep in sim.episode_log:
        i, code, start = ep["i"], ep["certification_code"], ep["start"]
        if (i, code) in seen or not ep["enrolments"]:
            continue
        held = any(c == code and iss <= start <= exp for c, iss, exp in sim.awards.get(i, ()))
        if held:
            continue
        seen.add((i, code))
        rows.append(_episode_row(ep, exits.get(i, ()), end))
    columns = [*EPISODE_COLUMNS, "planted_certify_months", "planted_first_attempt_passes"]
    columns.append("planted_exit_multiplier")
    out = pd.DataFrame(rows, columns=columns)
    for c in ("first_enrolled_on", "cohort_quarter", "first_attempt_on", "certified_on"):
        out[c] = pd.to_datetime(out[c])
    for c in ("followed_until", "exit_on"):
        out[c] = pd.to_datetime(out[c])
    return out


def _episode_row(ep: dict, exits, end: int) -> dict:
    """One row of `programme_episodes` for the episode `ep` (the engineer's first of its
    track), given the engineer's (day, kind) exits and the as-of day (ordinals)."""
    i, code, start = ep["i"], ep["certification_code"], ep["start"]
    exit_day, exit_type = next(((d, k) for d, k in sorted(exits) if d >= start), (None, None))
    passed = [d for d, ok, _ in ep["attempts"] if ok]
    certified_on = passed[0] if passed else None
    followed = certified_on or min(exit_day or end, end)
    attempts = [a for a in ep["attempts"] if a[0] <= followed]
    delivered = [e for e in ep["enrolments"] if e["done_on"] <= end]
    start_date = date.fromordinal(start)
    year_later = add_months(start_date, 12).toordinal()
    left_12m = exit_day is not None and exit_day <= year_later
    return {
        "person_key": f"E{i}",
        "certification_code": code,
        "programme_type": ep["programme_type"],
        "first_enrolled_on": start_date,
        "cohort_quarter": date(start_date.year, 3 * ((start_date.month - 1) // 3) + 1, 1),
        "skill_level_at_entry": ep["skill_level"],
        "role_family_at_entry": ep["role_family"],
        "tenure_months_at_entry": ep["tenure_months"],
        "enrolments": len(ep["enrolments"]),
        "completed": any(e["completed"] for e in delivered),
        "attempts": len(attempts),
        "first_attempt_on": date.fromordinal(attempts[0][0]) if attempts else None,
        "first_attempt_passed": attempts[0][1] if attempts else None,
        "certified": certified_on is not None,
        "certified_on": date.fromordinal(certified_on) if certified_on else None,
        "followed_until": date.fromordinal(followed),
        "months_followed": (followed - start) / AVERAGE_MONTH_DAYS,
        "fees_usd": sum(
            e["list_price_usd"] if e["charged_usd"] is None else e["charged_usd"]
            for e in ep["enrolments"]
        ),
        "list_price_usd": sum(e["list_price_usd"] for e in ep["enrolments"]),
        "exam_fees_usd": sum(fee for _, _, fee in attempts),
        "training_hours": sum(e["hours_spent"] for e in delivered),
        "apprenticeship": any(e["programme_type"] == "apprenticeship" for e in ep["enrolments"]),
        "voluntary_exit_12m": left_12m and exit_type == "voluntary",
        "followed_12m": year_later <= end or left_12m,
        "exit_on": date.fromordinal(exit_day) if exit_day else None,
        "exit_type": exit_type,
        "planted_certify_months": ep["certify_months"],
        "planted_first_attempt_passes": ep["first_attempt_passes"],
        "planted_exit_multiplier": ep["exit_multiplier"],
    }


def frames(
    employees: int, years: int, seed: int, model: PlantedModel
) -> tuple[pd.DataFrame, pd.DataFrame]:
    sim = simulate(employees, years, seed, model)
    return engineer_months(sim), incident_responses(sim)


__all__ = ["frames", "month_starts", "programme_episodes"]
