"""The recruiting export: the requisitions behind the infrastructure teams' hires, as a
Greenhouse openings report writes them, with a planted agency fee and hiring cost.

A separate pass after the simulation, like the operations pass: it reads the exits and the
vacancy hires the simulation recorded (``Simulation.staffing_log``, recorded without drawing
random numbers) and draws only from its own stream, ``SeedSequence(seed, spawn_key=(3,))``, so
every other file stays byte-identical with or without it.

Every exit of an infrastructure employee opens a backfill requisition for the team and role
(voluntary leavers give notice: opened up to 30 days before the last day; other exits up to
7 days after it), unless it is cancelled (``cancel_share``). The simulation's next hire into
that team and role fills the oldest open backfill opened before the hire's first day (first in,
first out); a hire with no such backfill fills a new-headcount requisition opened 30-90 days
before. The time to fill is therefore the simulation's own (a vacancy is filled with
probability 0.35 a month), not drawn here; the offer is accepted 14-42 days before the new hire's first day. A filled requisition
went through an agency with probability ``agency_share`` for ``agency_fee_rate`` of the new
hire's salary; every requisition costs advertising and assessment ~ LogNormal(log
``other_cost_median_usd``, ``other_cost_sigma``). One file, ``recruiting/Openings Report.csv``,
holds every requisition in its state at the end of the data.
"""

from __future__ import annotations

import csv
import io
from dataclasses import asdict, dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from tools.generate import reference as ref

if TYPE_CHECKING:
    from tools.generate.simulate import Simulation

SPAWN_KEY = (3,)
FILE = "recruiting/Openings Report.csv"
HEADER = (
    "Job",
    "Job ID",
    "Requisition ID",
    "Opening ID",
    "Opening Status",
    "Open Date",
    "Target Start Date",
    "Close Date",
    "Close Reason",
    "Backfill For (Employee ID)",
    "Job Level",
    "Hired Employee ID",
    "Agency Fee",
    "Other Hiring Cost",
)


@dataclass(frozen=True)
class RecruitingModel:
    """The planted hiring costs (the time to fill is the simulation's)."""

    agency_share: float = 0.35  # filled requisitions that went through an agency
    agency_fee_rate: float = 0.20  # of the new hire's annual salary
    other_cost_median_usd: float = 3000.0  # advertising and assessment per requisition
    other_cost_sigma: float = 0.5
    cancel_share: float = 0.05  # backfills never filled (the position is not replaced)

    def as_dict(self) -> dict:
        return asdict(self)


def _day(ordinal: int) -> date:
    return date.fromordinal(ordinal)


def _us(d: date | None) -> str:
    return d.strftime("%m/%d/%Y") if d else ""


@dataclass
class _Requisition:
    n: int
    team: int
    role: int
    level: int
    opened: int
    replaces: int | None = None
    exit_day: int | None = None
    separation: str | None = None
    hired: int | None = None
    start: int | None = None
    filled: int | None = None
    agency_fee: float = 0.0
    other_cost: float = 0.0
    cancelled: bool = False


def _requisitions(sim: Simulation, model: RecruitingModel, rng: np.random.Generator) -> list:
    """Every requisition, matched to the simulation's exits and vacancy hires."""
    end = sim.end.toordinal()
    queues: dict[tuple[int, int], list[_Requisition]] = {}
    out: list[_Requisition] = []
    for event in sim.staffing_log:
        kind, day, i, team, role, level, extra = event
        if kind == "exit":
            notice = -int(rng.integers(0, 31)) if extra == "voluntary" else int(rng.integers(0, 8))
            req = _Requisition(len(out) + 1, team, role, level, min(end, day + notice), i, day,
                               str(extra))  # fmt: skip
            req.cancelled = bool(rng.random() < model.cancel_share)
            if not req.cancelled:
                queues.setdefault((team, role), []).append(req)
        else:
            # the oldest backfill opened before the new hire's first day (a requisition
            # opened after that day cannot have brought them)
            queue = queues.get((team, role)) or []
            k = next((k for k, r in enumerate(queue) if r.opened < day), None)
            req = queue.pop(k) if k is not None else None
            if req is None:
                req = _Requisition(len(out) + 1, team, role, level,
                                   day - int(rng.integers(30, 91)))  # fmt: skip
            accepted = max(req.opened, day - int(rng.integers(14, 43)))
            agency = rng.random() < model.agency_share
            if day <= end:  # a hire starting after the data is still an open requisition
                req.hired, req.start, req.filled = i, day, accepted
                req.agency_fee = round(model.agency_fee_rate * float(extra) / 100) * 100 * agency
        if req.n == len(out) + 1:
            out.append(req)
    for req in out:
        cost = rng.lognormal(np.log(model.other_cost_median_usd), model.other_cost_sigma)
        req.other_cost = round(float(cost) / 10) * 10
    return out


def _row(sim: Simulation, req: _Requisition) -> list[str]:
    p = sim.p
    role = sim.roles[req.role].replace("_", " ").title()
    status = "Closed" if req.cancelled or req.filled else "Open"
    reason = "Hiring Freeze" if req.cancelled else ""
    if req.filled:
        reason = "Hire - Backfill" if req.replaces is not None else "Hire - New Headcount"
    closed = _day(req.filled) if req.filled else None
    if req.cancelled:
        closed = _day(req.opened) + timedelta(days=30)
    return [
        f"{role} {ref.LEVEL_NAMES[req.level]} ({sim.clusters[req.team].name})",
        str(4_000_000 + req.n),
        f"REQ-{req.n}",
        f"OPN-{req.n:05d}",
        status,
        _us(_day(req.opened)),
        _us(_day(req.opened) + timedelta(days=75)),
        _us(closed if closed and closed <= sim.end else None),
        reason,
        p.eid(req.replaces) if req.replaces is not None else "",
        str(req.level),
        p.eid(req.hired) if req.hired is not None else "",
        f"{req.agency_fee:.2f}" if req.agency_fee else "",
        f"{req.other_cost:.2f}",
    ]


def _mean(values: list[float]) -> float | None:
    return float(np.mean(values)) if values else None


def _truth(sim: Simulation, reqs: list[_Requisition], model: RecruitingModel) -> dict:
    """The realised means over the filled backfills of voluntary exits: what the warehouse's
    marts.replacement_cost should find."""
    done = [r for r in reqs if r.filled and r.separation == "voluntary"]
    mid = {lv: (lo + hi) / 2 for lv, (lo, hi) in ref.SALARY_BANDS.items()}
    vacant = [max(0, (r.start or 0) - (r.exit_day or 0) - 1) for r in done]
    return {
        "model": model.as_dict(),
        "requisitions": len(reqs),
        "filled_voluntary_backfills": len(done),
        "mean_hiring_cost_usd": _mean([r.agency_fee + r.other_cost for r in done]),
        "mean_agency_fee_usd": _mean([r.agency_fee for r in done]),
        "mean_days_vacant": _mean(vacant),
        "mean_vacancy_cost_usd": _mean(
            [d * mid[r.level] / 365 for d, r in zip(vacant, done, strict=True)]
        ),
        "mean_level_pay_usd": _mean([mid[r.level] for r in done]),
        "definition": "filled backfill requisitions of infrastructure employees who left "
        "voluntarily; days vacant = the new hire's first day - the leaver's last day - 1 (at "
        "least 0), priced at the leaver's level's band midpoint (seed skill_levels) / 365",
    }


def write_recruiting(out: Path | None, sim: Simulation, seed: int, model: RecruitingModel) -> dict:
    """Write the requisitions of a finished simulation; return their ground truth."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=SPAWN_KEY))
    reqs = _requisitions(sim, model, rng)
    truth = _truth(sim, reqs, model)
    if out is not None:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(HEADER)
        w.writerows(_row(sim, r) for r in reqs if r.opened <= sim.end.toordinal())
        target = Path(out) / FILE
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(buf.getvalue(), encoding="utf-8")
    return {**truth, "files": [FILE] if out is not None else []}
