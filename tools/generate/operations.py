"""The operations exports: GPU usage, capacity expansions and change requests, with planted effects.

A separate pass after the simulation: it reads what the simulation recorded without drawing
random numbers (each cluster's GPUs and its team's certified share and engineers per month, the
awards) and draws everything from its own stream, ``SeedSequence(seed, spawn_key=(2,))``, so
every other file and random stream stays byte-identical with or without it. The files are
written as the tools write them, one per month:

- ``fleet/sacct_<YYYY-MM>.csv``: Slurm job accounting, ``sacct --allusers --allocations
  --parsable2`` (pipe-separated); jobs that ended FAILED, NODE_FAIL or OUT_OF_MEMORY carry the
  lost GPU-hours;
- ``fleet/dcgm-data_<YYYY-MM>.csv``: a Grafana table of the daily DCGM exporter averages per
  cluster (GPU utilisation in percent, SM activity as a share);
- ``changes/change_request_<YYYY-MM>.csv``: ServiceNow change_request list export (field names,
  every value quoted), the changes planned to start in the month;
- ``changes/Jira Capacity_<YYYY-MM>.csv``: Jira epics of the capacity projects accepted into
  production in the month (those still commissioning at the end in the last month's file).
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import asdict, dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from tools.generate.simulate import Simulation

SPAWN_KEY = (2,)
LOST_STATES = ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY")
SACCT_HEADER = (
    "JobID",
    "Cluster",
    "Partition",
    "AllocTRES",
    "Elapsed",
    "Submit",
    "Start",
    "End",
    "State",
)
DCGM_HEADER = ("Time", "cluster", "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_PROF_SM_ACTIVE")
CHANGE_HEADER = (
    "number",
    "short_description",
    "type",
    "cmdb_ci",
    "assigned_to",
    "opened_at",
    "start_date",
    "end_date",
    "work_start",
    "work_end",
    "close_code",
    "state",
)
JIRA_HEADER = (
    "Summary",
    "Issue key",
    "Issue id",
    "Issue Type",
    "Status",
    "Assignee",
    "Reporter",
    "Created",
    "Resolved",
    "Custom field (Cluster)",
    "Custom field (Capacity change)",
    "Custom field (GPUs added)",
    "Custom field (Hardware delivered)",
    "Custom field (Accepted into production)",
    "Custom field (Led by)",
)
CHANGE_KINDS = (
    ("Standard", 0.5, "Monthly OS patching", 2.0),
    ("Normal", 0.4, "GPU driver and firmware upgrade", 6.0),
    ("Emergency", 0.1, "Replace failed switch", 0.3),
)

NOTES = {
    "gpu_hours": "available = GPUs at month end (gpu_fleet) x 24 x days of the month in the data; "
    "allocated = allocated_share x available; busy share = busy_share_base + cluster effect + "
    "month effect + busy_share_per_10_points x (10 x certified share of the team at month end) + "
    "noise; lost share likewise with lost_share_*; cluster effects ~ N(0, cluster_sd), month "
    "effects ~ N(0, month_sd), noise ~ N(0, noise_sd); lost GPU-hours are the jobs that ended "
    "FAILED, NODE_FAIL or OUT_OF_MEMORY; busy = daily DCGM utilisation (percent, N(0, 2) daily "
    "noise around the month's busy share) x available",
    "changes": "each engineer of a team implements Poisson(changes_per_engineer_month) changes a "
    "month; P(failed) = change_failure_base x incident frailty of the engineer x "
    "change_failure_ratio^certified (certified on the planned day); failed closes Unsuccessful "
    "(70 %) or Backed out, else Successful (92 %) or Successful with issues (not failed)",
    "capacity": "an expansion when a cluster's GPUs grew by expansion_step since the last one, a "
    "new cluster in the month it starts; 1-2 leads from its team; days from delivery to "
    "production ~ commissioning_days_512 x (GPUs added / 512)^0.5 x commissioning_time_ratio^"
    "(certified share of the leads on the delivery day) x LogNormal(0, commissioning_sigma)",
}


@dataclass(frozen=True)
class OperationsModel:
    """The planted operations world; a ratio of 1.0 or a slope of 0.0 plants no effect."""

    change_failure_ratio: float = 0.60  # P(failed | certified) / P(failed | not), same engineer
    change_failure_base: float = 0.15
    changes_per_engineer_month: float = 0.6
    allocated_share: float = 0.82
    busy_share_base: float = 0.50
    busy_share_per_10_points: float = 0.02  # share of available GPU-hours
    lost_share_base: float = 0.08
    lost_share_per_10_points: float = -0.008
    cluster_sd: float = 0.04
    month_sd: float = 0.02
    noise_sd: float = 0.01
    commissioning_time_ratio: float = 0.70  # all leads certified vs none
    commissioning_days_512: float = 40.0
    commissioning_sigma: float = 0.3
    expansion_step: float = 0.15

    def as_dict(self) -> dict:
        return asdict(self)


def _elapsed(hours: float) -> str:
    s = int(round(hours * 3600))
    d, s = divmod(s, 86400)
    text = f"{s // 3600:02d}:{s % 3600 // 60:02d}:{s % 60:02d}"
    return f"{d}-{text}" if d else text


def _iso(t: datetime) -> str:
    return t.strftime("%Y-%m-%dT%H:%M:%S")


def _jira_day(d: date) -> str:
    return d.strftime("%d/%b/%y")


def _jira_time(t: datetime) -> str:
    return t.strftime("%d/%b/%y %I:%M %p").replace(" 0", " ")


class VendorFiles:
    """Collects rows per vendor file and writes each once, as its tool writes it.

    ``log`` (the validity harness, ``tools/validate/operations.py``): a dict of lists that also
    receives what the warehouse would aggregate from these files (cluster-months, completed
    changes, projects in production), drawing no random numbers, so the files stay the same."""

    def __init__(self, out: Path | None, log: dict[str, list] | None = None) -> None:
        self.out = out
        self.rows: dict[str, list[list[str]]] = {}
        self.files: list[str] = []
        self.log = log

    def record(self, kind: str, row: tuple) -> None:
        if self.log is not None:
            self.log.setdefault(kind, []).append(row)

    def add(self, path: str, row: list[str]) -> None:
        self.rows.setdefault(path, []).append(row)

    def write(self, period: str | None = None) -> None:
        """Write the files collected so far, or only those of `period` (`YYYY-MM`), and let go
        of their rows: a month's files are written when the month is done, so a large company
        never holds every month's rows at once. The harness (no folder) keeps the log only."""
        if self.out is None:
            return
        for path in sorted(p for p in self.rows if period is None or p.endswith(f"_{period}.csv")):
            name = path.rsplit("/", 1)[1]
            buf = io.StringIO()
            if name.startswith("sacct"):  # --parsable2: '|' between fields, nothing quoted
                lines = [SACCT_HEADER, *self.rows[path]]
                buf.write("".join("|".join(r) + "\n" for r in lines))
            else:
                header = {"dcgm": DCGM_HEADER, "chan": CHANGE_HEADER}.get(name[:4], JIRA_HEADER)
                quoting = csv.QUOTE_MINIMAL if header is JIRA_HEADER else csv.QUOTE_ALL
                w = csv.writer(buf, lineterminator="\n", quoting=quoting)
                w.writerow(header)
                w.writerows(self.rows[path])
            target = self.out / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(buf.getvalue(), encoding="utf-8")
            self.files.append(path)
            del self.rows[path]


def _month_hours(sim: Simulation, t: int) -> tuple[datetime, int]:
    first = sim.months[t]
    nxt = sim.months[t + 1] if t + 1 < len(sim.months) else sim.end + timedelta(days=1)
    return datetime.combine(first, datetime.min.time()), (nxt - first).days


def _jobs(
    rng: np.random.Generator, gpus: int, start: datetime, days: int, target: float, lost: bool
) -> list[tuple[int, float, datetime, str]]:
    """Jobs (GPUs, hours, start, state) whose GPU-hours add up to ``target``."""
    jobs = []
    left = target
    span = days * 24.0
    while left > 0.5:
        g = max(1, min(gpus, 8 * int(round(gpus * rng.choice([1 / 16, 1 / 8, 1 / 4, 1 / 2]) / 8))))
        h = min(left / g, float(rng.uniform(2, min(168, span - 1))))
        h = round(h * 3600) / 3600
        if h <= 0:
            break
        begin = start + timedelta(seconds=int(rng.uniform(0, span - h) * 3600))
        if lost:
            state = str(rng.choice(LOST_STATES, p=[0.6, 0.3, 0.1]))
        else:
            u = rng.random()
            state = "COMPLETED" if u < 0.9 else ("TIMEOUT" if u < 0.95 else "CANCELLED by 1201")
        jobs.append((g, h, begin, state))
        left -= g * h
    return jobs


def _usage_month(sim, model, rng, files, effects, t: int, counter: dict) -> None:
    start, days = _month_hours(sim, t)
    period = start.strftime("%Y-%m")
    for ci, cluster in enumerate(sim.clusters):
        if (t, ci) not in sim.fleet_log:
            continue
        gpus = sim.fleet_log[(t, ci)]
        share = sim.team_log.get((t, ci), (0.0, ()))[0]
        available = gpus * 24.0 * days
        ca, cl, ma, ml = (
            effects["cluster_busy"][ci],
            effects["cluster_lost"][ci],
            *effects["month"][t],
        )
        busy = model.busy_share_base + ca + ma + model.busy_share_per_10_points * 10 * share
        busy = min(0.97, max(0.02, busy + float(rng.normal(0, model.noise_sd))))
        lost = model.lost_share_base + cl + ml + model.lost_share_per_10_points * 10 * share
        lost = min(0.5, max(0.002, lost + float(rng.normal(0, model.noise_sd))))
        allocated = max(model.allocated_share, busy + lost)
        lost_hours, utils = 0.0, []
        for lost_job, target in ((False, (allocated - lost) * available), (True, lost * available)):
            for g, h, begin, state in _jobs(rng, gpus, start, days, target, lost_job):
                lost_hours += g * h if lost_job else 0.0
                counter["jobs"] = counter.get("jobs", 0) + 1
                nodes = math.ceil(g / 8)
                files.add(
                    f"fleet/sacct_{period}.csv",
                    [
                        str(1000 + counter["jobs"]),
                        cluster.name,
                        "gpu",
                        f"billing={g * 8},cpu={g * 8},gres/gpu={g},mem={nodes * 1024}G,node={nodes}",
                        _elapsed(h),
                        _iso(begin - timedelta(minutes=int(rng.integers(1, 240)))),
                        _iso(begin),
                        _iso(begin + timedelta(seconds=round(h * 3600))),
                        state,
                    ],
                )
        for d in range(days):
            day = start + timedelta(days=d)
            util = min(100.0, max(0.0, busy * 100 + float(rng.normal(0, 2))))
            utils.append(round(util, 2))
            ms = int(day.replace(tzinfo=UTC).timestamp() * 1000)
            files.add(
                f"fleet/dcgm-data_{period}.csv",
                [str(ms), cluster.name, f"{util:.2f}", f"{util / 100 * 0.78:.3f}"],
            )
        members = sim.team_log.get((t, ci), (0.0, ()))[1]
        # cluster, month, busy share (the month's mean DCGM utilisation), lost share, the team's
        # certified share and engineers at month end
        files.record(
            "usage",
            (ci, t, sum(utils) / len(utils) / 100, lost_hours / available, share, len(members)),
        )


def _changes_month(sim, model, rng, files, t: int, counter: dict) -> None:
    start, days = _month_hours(sim, t)
    period = start.strftime("%Y-%m")
    end_of_data = datetime.combine(sim.end, datetime.max.time())
    p = sim.p
    kinds = [k[0] for k in CHANGE_KINDS]
    weights = [k[1] for k in CHANGE_KINDS]
    for ci, cluster in enumerate(sim.clusters):
        for i in sim.team_log.get((t, ci), (0.0, ()))[1]:
            for _ in range(int(rng.poisson(model.changes_per_engineer_month))):
                k = int(rng.choice(len(kinds), p=weights))
                day = start + timedelta(days=int(rng.integers(days)))
                planned = day.replace(hour=22)
                certified = sim.certified_on(i, day.date().toordinal())
                risk = model.change_failure_base * float(p.frailty[i])
                risk *= model.change_failure_ratio**certified
                failed = rng.random() < min(0.95, risk)
                opened = planned - timedelta(hours=float(rng.exponential(24 * CHANGE_KINDS[k][3])))
                work_start = planned + timedelta(minutes=int(rng.integers(0, 30)))
                work_end = work_start + timedelta(minutes=int(rng.integers(20, 300)))
                u = rng.random()
                if work_end > end_of_data:
                    code, state, ws, we = "", "Implement", _ts(work_start), ""
                    if work_start > end_of_data:
                        state, ws = "Scheduled", ""
                elif failed:
                    code = "Unsuccessful" if u < 0.7 else "Backed out"
                    state, ws, we = "Closed", _ts(work_start), _ts(work_end)
                else:
                    code = "Successful" if u < 0.92 else "Successful with issues"
                    state, ws, we = "Closed", _ts(work_start), _ts(work_end)
                if code:  # completed: engineer, certified, failed, month of the actual end
                    files.record("changes", (i, certified, failed, work_end.date().replace(day=1)))
                counter["changes"] = counter.get("changes", 0) + 1
                files.add(
                    f"changes/change_request_{period}.csv",
                    [
                        f"CHG{30000 + counter['changes']:07d}",
                        CHANGE_KINDS[k][2],
                        kinds[k],
                        cluster.name,
                        f"{p.first[i]} {p.last[i]}",
                        _ts(opened),
                        _ts(planned),
                        _ts(planned + timedelta(hours=4)),
                        ws,
                        we,
                        code,
                        state,
                    ],
                )


def _ts(t: datetime) -> str:
    return t.strftime("%Y-%m-%d %H:%M:%S")


def _capacity_events(sim, model) -> list[tuple[int, int, str, int]]:
    """(month index, cluster index, expansion | new_cluster, GPUs added), in time order."""
    events = []
    for ci, cluster in enumerate(sim.clusters):
        installed = None
        for t in range(len(sim.months)):
            gpus = sim.fleet_log.get((t, ci))
            if gpus is None:
                continue
            if installed is None:
                if cluster.start_month > 0:
                    events.append((t, ci, "new_cluster", gpus))
                installed = gpus
            elif gpus - installed >= max(16, model.expansion_step * installed):
                events.append((t, ci, "expansion", gpus - installed))
                installed = gpus
    return sorted(events)


def _capacity(sim, model, rng, files) -> int:
    """Write the Jira epics; returns how many capacity projects there are."""
    p = sim.p
    last = sim.months[-1].strftime("%Y-%m")
    n = 0
    for t, ci, kind, added in _capacity_events(sim, model):
        members = sim.team_log.get((t, ci), (0.0, ()))[1]
        if not members:
            continue
        start, days = _month_hours(sim, t)
        delivered = (start + timedelta(days=int(rng.integers(days)))).date()
        leads = [
            int(x)
            for x in rng.choice(
                members, size=min(len(members), 1 + int(rng.integers(2))), replace=False
            )
        ]
        share = sum(sim.certified_on(i, delivered.toordinal()) for i in leads) / len(leads)
        length = model.commissioning_days_512 * (added / 512) ** 0.5
        length *= model.commissioning_time_ratio**share * float(
            rng.lognormal(0, model.commissioning_sigma)
        )
        accepted = delivered + timedelta(days=max(1, round(length)))
        created = datetime.combine(delivered, datetime.min.time()) - timedelta(
            days=int(rng.integers(20, 60)), hours=-9
        )
        done = accepted <= sim.end
        if done:  # cluster, GPUs added, days to production, the leads, the delivery day
            files.record(
                "projects",
                (ci, added, (accepted - delivered).days, tuple(leads), delivered.toordinal()),
            )
        n += 1
        names = [f"{p.first[i]} {p.last[i]}" for i in leads]
        cluster = sim.clusters[ci].name
        files.add(
            f"changes/Jira Capacity_{accepted.strftime('%Y-%m') if done else last}.csv",
            [
                f"{cluster} {'build-out' if kind == 'new_cluster' else 'expansion'}",
                f"CAP-{n}",
                str(10000 + n),
                "Epic",
                "Done" if done else "In Progress",
                names[0],
                "Anna Schmidt",
                _jira_time(created),
                _jira_time(datetime.combine(accepted, datetime.min.time()).replace(hour=17))
                if done
                else "",
                cluster,
                "New cluster" if kind == "new_cluster" else "Expansion",
                f"{added}.0",
                _jira_day(delivered),
                _jira_day(accepted) if done else "",
                ", ".join(names),
            ],
        )
    return n


# the contract exports these files give (written here, not by the contract writer)
OPERATIONS_EXPORTS = ("gpu_usage", "capacity_changes", "changes")


def write_operations(
    out: Path | None,
    sim: Simulation,
    seed: int,
    model: OperationsModel,
    log: dict[str, list] | None = None,
) -> dict:
    """Write the operations exports of a finished simulation; return their ground truth.
    ``out`` None with a ``log``: write nothing, log what the warehouse would aggregate."""
    rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=SPAWN_KEY))
    files = VendorFiles(None if out is None else Path(out), log)
    n_clusters, n_months = len(sim.clusters), len(sim.months)
    effects = {
        "cluster_busy": rng.normal(0, model.cluster_sd, n_clusters).tolist(),
        "cluster_lost": (rng.normal(0, model.cluster_sd, n_clusters) / 4).tolist(),
        "month": list(
            zip(
                rng.normal(0, model.month_sd, n_months).tolist(),
                (rng.normal(0, model.month_sd, n_months) / 4).tolist(),
                strict=True,
            )
        ),
    }
    counter: dict[str, int] = {}
    for t in range(n_months):
        _usage_month(sim, model, rng, files, effects, t, counter)
        _changes_month(sim, model, rng, files, t, counter)
        files.write(sim.months[t].strftime("%Y-%m"))
    counter["capacity_projects"] = _capacity(sim, model, rng, files)
    files.write()
    return {
        "change_failure_ratio": model.change_failure_ratio,
        "busy_share_per_10_points": model.busy_share_per_10_points,
        "lost_share_per_10_points": model.lost_share_per_10_points,
        "commissioning_time_ratio": model.commissioning_time_ratio,
        "model": model.as_dict(),
        "model_notes": NOTES,
        "counts": dict(sorted(counter.items())),
        "files": sorted(files.files),
    }
