"""The two frames the statistics read, built straight from a simulated company.

Running ingestion and dbt per world would take minutes; the validity harness instead runs the
generator's simulation with a writer that keeps nothing and rebuilds
``int_engineer_months`` and ``int_incident_responses`` from the simulation's own logs, with the
same definitions (certified on the last day employed in the month, first certification month,
exposure = days employed / days in month, separations by type, incidents as primary responder
with the certification status at opening). The end-to-end test keeps checking the real
pipeline.
"""

from __future__ import annotations

from datetime import date

import numpy as np
import pandas as pd

from tools.generate.model import PlantedModel
from tools.generate.simulate import Simulation, month_starts

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


def frames(
    employees: int, years: int, seed: int, model: PlantedModel
) -> tuple[pd.DataFrame, pd.DataFrame]:
    sim = simulate(employees, years, seed, model)
    return engineer_months(sim), incident_responses(sim)


__all__ = ["frames", "month_starts"]
