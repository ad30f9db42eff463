"""The operations effects over many companies: ``python -m tools validate --world operations``.

Each company is simulated as ``tools.validate.frames.simulate`` does (no files, no dbt); the
generator's operations pass then runs with a log instead of files
(``tools.generate.operations.write_operations(None, ..., log=...)``), which hands over what the
warehouse aggregates from the files it would write: the cluster-months (busy share = the
month's mean DCGM utilisation, lost share = GPU-hours of failed jobs / available, the team's
certified share and engineers at month end), the completed changes (engineer, certified on the
day, failed, month of the actual end) and the projects in production (GPUs added, days from
delivery to production, certified share of the leads, leads). The three frames go through
``pipelines.lib.effects.operations.operations_effects``, the code that writes
``marts.operations_effect``; the end-to-end tests keep checking the SQL that builds the frames
(tests/test_operations_marts.py).

Worlds: ``operations`` (the generator's planted operations effects) and ``operations_null``
(ratios 1.0 and slopes 0.0: every finding is a false positive).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from pipelines.lib.effects.operations import METRICS, operations_effects
from tools.generate.model import PlantedModel
from tools.generate.operations import OperationsModel, write_operations

OPERATIONS_WORLDS = {
    "operations": "the generator's planted operations effects (change failure ratio 0.60, busy "
    "share +0.02 and lost share -0.008 per 10 points certified, commissioning time ratio 0.70)",
    "operations_null": "no operations effect (ratios 1.0, slopes 0.0)",
}
DIFFERENCES = frozenset({"busy_share_per_10_points", "lost_share_per_10_points"})


def operations_model(world: str) -> OperationsModel:
    base = OperationsModel()
    if world == "operations":
        return base
    if world == "operations_null":
        return replace(
            base,
            change_failure_ratio=1.0,
            busy_share_per_10_points=0.0,
            lost_share_per_10_points=0.0,
            commissioning_time_ratio=1.0,
        )
    raise ValueError(f"unknown world {world!r}; choose one of {', '.join(OPERATIONS_WORLDS)}")


LINKS = {
    "name": "implementers and leads linked by unique full name, as the generated ServiceNow and "
    "Jira files name them (a name two people share stays unlinked)",
    "email": "every implementer and lead linked, as an export naming them by e-mail or "
    "employee id is",
}


def operations_frames(
    employees: int, years: int, seed: int, model: OperationsModel, link: str = "name"
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(changes, utilisation, projects) of one simulated company, with the columns the
    estimators read from intermediate.int_changes, restricted.cluster_utilisation and
    restricted.capacity_commissioning; `link` one of `LINKS`."""
    if link not in LINKS:
        raise ValueError(f"unknown link {link!r}; choose one of {', '.join(LINKS)}")
    from tools.validate.frames import simulate

    sim = simulate(employees, years, seed, PlantedModel())
    log: dict[str, list] = {}
    write_operations(None, sim, seed, model, log=log)
    months = [pd.Timestamp(m) for m in sim.months]
    # the tools name people by full name only: the warehouse links a name that one person has
    # (stg_changes__changes, stg_changes__capacity_changes) and leaves the others unlinked
    names = pd.Series([f"{f} {ln}" for f, ln in zip(sim.p.first, sim.p.last, strict=True)])
    unique = (~names.duplicated(keep=False)).to_numpy() | (link == "email")
    ch = pd.DataFrame(log.get("changes", []), columns=["i", "certified", "failed", "month"])
    changes = pd.DataFrame(
        {
            "implementer_key": ch["i"].map(lambda i: f"e{i}" if unique[i] else None),
            "certification_status": np.where(ch["certified"], "certified", "not_certified"),
            "failed": ch["failed"].astype(int),
            "month": pd.to_datetime(ch["month"]),
        }
    )
    us = pd.DataFrame(
        log.get("usage", []),
        columns=["ci", "t", "busy_share", "lost_share", "certified_share", "engineers"],
    )
    util = us.assign(cluster=us["ci"].map(lambda c: f"c{c}"), month=us["t"].map(months.__getitem__))
    pr = pd.DataFrame(
        log.get("projects", []), columns=["ci", "gpus_added", "days_to_production", "who", "day"]
    )
    linked = pr["who"].map(lambda who: [i for i in who if unique[i]])
    pr["leads"] = linked.map(len)
    pr["certified_share_of_leads"] = [
        sum(sim.certified_on(i, day) for i in who) / len(who) if who else math.nan
        for who, day in zip(linked, pr["day"], strict=True)
    ]
    projects = pr.drop(columns=["who", "day"]).assign(
        cluster=pr["ci"].map(lambda c: f"c{c}"),
        days_per_1000_gpus=1000 * pr["days_to_production"] / pr["gpus_added"],
        accepted_on=pd.Timestamp(sim.end),
    )
    return changes, util.drop(columns=["ci", "t"]), projects.drop(columns=["ci"])


def run_operations_world(
    world: str,
    seeds: list[int],
    employees: int,
    years: int,
    min_group_size: int = 5,
    link: str = "name",
) -> pd.DataFrame:
    """One row per seed and metric: the published row plus the planted value."""
    model = operations_model(world)
    rows = []
    for seed in seeds:
        effects = operations_effects(
            *operations_frames(employees, years, seed, model, link),
            min_group_size=min_group_size,
        )
        effects["seed"] = seed
        effects["truth"] = effects["metric"].map({m: getattr(model, m) for m in METRICS})
        rows.append(effects)
    return pd.concat(rows, ignore_index=True)


@dataclass(frozen=True)
class OperationsSummary:
    metric: str
    worlds: int
    estimable: int
    covered: int
    coverage_ci: tuple[float, float]
    bias: float  # log(estimate / planted) for ratios, estimate - planted for differences
    sd: float
    median_width: float  # ci_high / ci_low for ratios, ci_high - ci_low for differences
    findings: int


def summarise_operations(results: pd.DataFrame) -> list[OperationsSummary]:
    from tools.validate import clopper_pearson

    out = []
    for metric in [m for m in METRICS if (results["metric"] == m).any()]:
        r = results[results["metric"] == metric]
        ok = r[r["estimable"].astype(bool)]
        covered = int(((ok["ci_low"] <= ok["truth"]) & (ok["truth"] <= ok["ci_high"])).sum())
        diff = metric in DIFFERENCES
        err = (ok["estimate"] - ok["truth"]) if diff else np.log(ok["estimate"] / ok["truth"])
        width = (ok["ci_high"] - ok["ci_low"]) if diff else (ok["ci_high"] / ok["ci_low"])
        out.append(
            OperationsSummary(
                metric=metric,
                worlds=len(r),
                estimable=len(ok),
                covered=covered,
                coverage_ci=clopper_pearson(covered, len(ok)),
                bias=float(err.mean()) if len(ok) else math.nan,
                sd=float(err.std(ddof=1)) if len(ok) > 1 else math.nan,
                median_width=float(width.median()) if len(ok) else math.nan,
                findings=int(r["finding"].astype(bool).sum()),
            )
        )
    return out


def format_operations_table(
    world: str, employees: int, years: int, summaries: list[OperationsSummary], link: str = "name"
) -> str:
    lines = [
        f"world {world} ({OPERATIONS_WORLDS[world]}); {employees} employees x {years} years, "
        f"{summaries[0].worlds} seeds; {LINKS[link]}",
        "",
        "| metric | estimable | covered (95 % CI) | bias | sd of estimates | median width | "
        "finding |",
        "|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lo, hi = s.coverage_ci
        cov = (
            f"{s.covered}/{s.estimable} = {100 * s.covered / s.estimable:.0f} % "
            f"({100 * lo:.0f}-{100 * hi:.0f} %)"
            if s.estimable
            else "n/a"
        )
        kind = "diff" if s.metric in DIFFERENCES else "log"
        width = "hi-lo" if s.metric in DIFFERENCES else "hi/lo"
        lines.append(
            f"| {s.metric} | {s.estimable}/{s.worlds} | {cov} | {s.bias:+.4f} ({kind}) | "
            f"{s.sd:.4f} | {s.median_width:.4f} ({width}) | "
            f"{s.findings}/{s.worlds} = {100 * s.findings / s.worlds:.0f} % |"
        )
    return "\n".join(lines)
