"""Validity harness (`python -m tools validate`): do the published intervals keep their promise?

Generates N companies in a chosen world (planted effects, no effects, or selection the HR data
does not record), runs the estimators of ``pipelines.lib.effects`` on each, and reports per
metric how often the 95 % interval covered the planted value (with a Clopper-Pearson interval
on that share), the bias and spread of the estimates, the interval width, how often a null
effect was published as a finding, and how often the pre-trend test rejected.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd
from scipy import stats as sps

from pipelines.lib import effects as stats
from tools.generate.model import PlantedModel

WORLDS = {
    "planted": "the default planted effects (0.70, 0.80, 0.60), certifying unrelated to "
    "anything the data does not record",
    "null": "all three planted effects 1.0",
    "selection": "planted effects, and engineers with fewer incidents anyway certify more "
    "(start hazard x frailty^-2; frailty is not in the HR data)",
    "shock": "planted effects, and engineers certify after a bad spell (3 months of twice the "
    "incident rate, six times the start hazard): the pre-trend test should reject",
    "heterogeneous": "planted effects, the incident ratio 10 % weaker per level above 2 and "
    "growing to full size over 6 months after certifying (truth: its geometric mean over "
    "certified engineer-months)",
}


def world_model(world: str) -> PlantedModel:
    base = PlantedModel()
    if world == "planted":
        return base
    if world == "null":
        return replace(base, incident_rate_ratio=1.0, mttr_ratio=1.0, attrition_hazard_ratio=1.0)
    if world == "selection":
        return replace(base, proneness_selection=2.0)
    if world == "shock":
        return replace(base, shock_probability=0.03)
    if world == "heterogeneous":
        return replace(base, incident_effect_level_slope=0.1, incident_effect_ramp_months=6)
    raise ValueError(f"unknown world {world!r}; choose one of {', '.join(WORLDS)}")


def run_world(
    world: str, seeds: list[int], employees: int, years: int, min_group_size: int = 5
) -> pd.DataFrame:
    """One row per seed and metric: the published row plus the planted value."""
    from tools.validate.frames import frames, planted_incident_ratio

    model = world_model(world)
    rows = []
    for seed in seeds:
        em, inc = frames(employees, years, seed, model)
        effects = stats.estimate_effects(em, inc, min_group_size=min_group_size)
        effects["seed"] = seed
        truth = {m: getattr(model, m) for m in stats.METRICS}
        truth["incident_rate_ratio"] = planted_incident_ratio(em)
        effects["truth"] = effects["metric"].map(truth)
        rows.append(effects)
    return pd.concat(rows, ignore_index=True)


def clopper_pearson(k: int, n: int, level: float = 0.95) -> tuple[float, float]:
    if n == 0:
        return (math.nan, math.nan)
    a = (1 - level) / 2
    lo = sps.beta.ppf(a, k, n - k + 1) if k > 0 else 0.0
    hi = sps.beta.ppf(1 - a, k + 1, n - k) if k < n else 1.0
    return float(lo), float(hi)


@dataclass(frozen=True)
class Summary:
    metric: str
    worlds: int
    estimable: int
    covered: int
    coverage_ci: tuple[float, float]
    bias_log: float
    sd_log: float
    mean_se_log: float
    median_width: float
    findings: int
    excludes_one: int
    pretrend_rejected: int
    pretrend_tested: int


ROBUSTNESS_SUFFIX = " (robustness)"


def with_robustness(results: pd.DataFrame) -> pd.DataFrame:
    """The published rows plus, where a metric has a robustness figure (``robustness_*``),
    a row "<metric> (robustness)" holding it, so the second design is measured alike."""
    if "robustness_estimate" not in results:
        return results
    r = results[results["robustness_estimate"].notna()].copy()
    for c in ("estimate", "ci_low", "ci_high"):
        r[c] = r[f"robustness_{c}"]
    r["metric"] = r["metric"] + ROBUSTNESS_SUFFIX
    excludes_one = (r["ci_high"] < 1) | (r["ci_low"] > 1)
    r["finding"] = r["estimable"] & ~r["pretrend_rejected"].astype(bool) & excludes_one
    return pd.concat([results, r], ignore_index=True)


def summarise(results: pd.DataFrame) -> list[Summary]:
    out = []
    results = with_robustness(results)
    names = [*stats.METRICS, *(m + ROBUSTNESS_SUFFIX for m in stats.METRICS)]
    for metric in [m for m in names if (results["metric"] == m).any()]:
        r = results[results["metric"] == metric]
        ok = r[r["estimable"]]
        covered = int(((ok["ci_low"] <= ok["truth"]) & (ok["truth"] <= ok["ci_high"])).sum())
        log_est = np.log(ok["estimate"].to_numpy())
        se = (np.log(ok["ci_high"]) - np.log(ok["ci_low"])).to_numpy() / (2 * 1.96)
        out.append(
            Summary(
                metric=metric,
                worlds=len(r),
                estimable=len(ok),
                covered=covered,
                coverage_ci=clopper_pearson(covered, len(ok)),
                bias_log=float(np.mean(log_est - np.log(ok["truth"]))) if len(ok) else math.nan,
                sd_log=float(np.std(log_est, ddof=1)) if len(ok) > 1 else math.nan,
                mean_se_log=float(np.mean(se)) if len(ok) else math.nan,
                median_width=float(np.median(ok["ci_high"] / ok["ci_low"]))
                if len(ok)
                else math.nan,
                findings=int(r["finding"].sum()),
                excludes_one=int(((ok["ci_high"] < 1) | (ok["ci_low"] > 1)).sum()),
                pretrend_rejected=int(r["pretrend_rejected"].sum()),
                pretrend_tested=int(r["pretrend_p"].notna().sum()),
            )
        )
    return out


def _pct(k: int, n: int) -> str:
    return f"{100 * k / n:.0f} %" if n else "n/a"


def format_table(world: str, employees: int, years: int, summaries: list[Summary]) -> str:
    lines = [
        f"world {world} ({WORLDS[world]}); {employees} employees x {years} years, "
        f"{summaries[0].worlds} seeds",
        "",
        "| metric | estimable | covered (95 % CI) | bias (log) | sd of estimates (log) | "
        "mean reported se (log) | median hi/lo | CI excludes 1 | finding | pre-trend rejected |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lo, hi = s.coverage_ci
        cov = (
            f"{s.covered}/{s.estimable} = {_pct(s.covered, s.estimable)} "
            f"({100 * lo:.0f}-{100 * hi:.0f} %)"
            if s.estimable
            else "n/a"
        )
        lines.append(
            f"| {s.metric} | {s.estimable}/{s.worlds} | {cov} | {s.bias_log:+.3f} | "
            f"{s.sd_log:.3f} | {s.mean_se_log:.3f} | {s.median_width:.2f} | "
            f"{_pct(s.excludes_one, s.estimable)} | {_pct(s.findings, s.worlds)} | "
            f"{s.pretrend_rejected}/{s.pretrend_tested} |"
        )
    return "\n".join(lines)
