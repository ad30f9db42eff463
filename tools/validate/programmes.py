"""Validity of the programme and career statistics (`python -m tools validate --world
programmes|programme_selection|programme_null`).

Per company: simulate with the episode log, rebuild the episodes, months and incidents frames
(``tools.validate.frames``), run ``programme_statistics`` and ``career_statistics`` and set
each published row beside the value the generator planted:

* ``time_to_certify_ratio``: programme_time_ratio[p] / programme_time_ratio[online] (the
  generator's times are a Weibull AFT in level at entry and track, so the adjusted model is
  the true one);
* ``first_pass_odds_ratio``: programme_pass_odds_ratio[p] / [online] (logit of the first
  attempt, level at entry);
* ``voluntary_exit_hazard_ratio``: programme_exit_hazard_ratio[p] / [online] (a direct effect
  at equal certified status, the status the statistics adjust for; the generator applies the
  multiplier of the engineer's latest episode, the statistics describe the engineer by the
  first: the two differ for engineers with a second episode in another programme);
* ``incident_rate_ratio`` / ``mttr_ratio`` of a programme's engineers: the planted
  incident_rate_ratio / mttr_ratio, the same for every programme;
* ``promotion_hazard_ratio``: promotion_certified_hazard_ratio (infrastructure employees
  certified on the first of the month).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

import numpy as np
import pandas as pd

from tools.generate.model import PlantedModel
from tools.validate import clopper_pearson

# planted in the programmes worlds; the time ratios and pass odds ratios are the defaults
EXIT_RATIOS = {
    "online": 1.0,
    "bootcamp": 1.0,
    "vendor_partnership": 0.8,
    "apprenticeship": 0.7,
    "internal": 1.0,
}
SELECTION = 1.5

PROGRAMME_WORLDS = {
    "programmes": "default programme time ratios (0.5, 0.7, 1.3, 1.0) and pass odds ratios "
    "(1.8, 1.5, 1.2, 1.0), exit multipliers vendor_partnership 0.8 and apprenticeship 0.7, "
    "promotion hazard x1.5 while certified, programme chosen independently of level",
    "programme_selection": "the same effects, and the programme choice tilted by level "
    f"(programme_level_selection {SELECTION}: juniors to bootcamps and apprenticeships, seniors "
    "to vendor courses), which the naive comparison does not take out",
    "programme_null": "every programme ratio 1 (time, pass odds, exit) and promotion hazard "
    "ratio 1; the certification effects on incidents and MTTR stay planted (0.70, 0.80)",
}

# (metric as published, where its truth lives in the model)
COMPARISON_TRUTH = {
    "time_to_certify_ratio": "programme_time_ratio",
    "first_pass_odds_ratio": "programme_pass_odds_ratio",
    "voluntary_exit_hazard_ratio": "programme_exit_hazard_ratio",
}
PROMOTION = "promotion_hazard_ratio"
FAILED = "statistics raised "  # not_estimable_reason of the rows of a call that raised
ALL = "all"  # programme_type of the promotion row
PROGRAMME_ORDER = ("bootcamp", "vendor_partnership", "apprenticeship", "internal", ALL)
METRIC_ORDER = (*COMPARISON_TRUTH, "incident_rate_ratio", "mttr_ratio", PROMOTION)


def programme_world_model(world: str) -> PlantedModel:
    base = replace(PlantedModel(), programme_exit_hazard_ratio=dict(EXIT_RATIOS))
    if world == "programmes":
        return base
    if world == "programme_selection":
        return replace(base, programme_level_selection=SELECTION)
    if world == "programme_null":
        ones = {p: 1.0 for p in EXIT_RATIOS}
        return replace(
            base,
            programme_time_ratio=dict(ones),
            programme_pass_odds_ratio=dict(ones),
            programme_exit_hazard_ratio=dict(ones),
            promotion_certified_hazard_ratio=1.0,
        )
    raise ValueError(
        f"unknown programme world {world!r}; choose one of {', '.join(PROGRAMME_WORLDS)}"
    )


def truth_of(model: PlantedModel, metric: str, programme: str) -> float:
    """The planted value a published row estimates (see the module docstring)."""
    if metric in COMPARISON_TRUTH:
        ratios = getattr(model, COMPARISON_TRUTH[metric])
        return ratios[programme] / ratios["online"]
    if metric == "incident_rate_ratio":
        return model.incident_rate_ratio
    if metric == "mttr_ratio":
        return model.mttr_ratio
    if metric == PROMOTION:
        return model.promotion_certified_hazard_ratio
    raise ValueError(f"no planted truth for metric {metric!r}")


ROW_COLUMNS = (
    "seed",
    "programme_type",
    "metric",
    "estimate",
    "ci_low",
    "ci_high",
    "estimable",
    "finding",
    "naive_estimate",
    "naive_ci_low",
    "naive_ci_high",
    "not_estimable_reason",
    "truth",
)


def compare(
    model: PlantedModel, comparison: pd.DataFrame, promotion: pd.DataFrame, seed: int
) -> pd.DataFrame:
    """The published programme_comparison and promotion_effect rows of one company with the
    planted value of each."""
    promo = promotion.assign(programme_type=ALL)
    rows = pd.concat([comparison, promo], ignore_index=True).reindex(
        columns=list(ROW_COLUMNS[1:-1])
    )
    rows["truth"] = [
        truth_of(model, m, p) for m, p in zip(rows["metric"], rows["programme_type"], strict=True)
    ]
    rows["seed"] = seed
    rows["estimable"] = rows["estimable"].astype(bool)
    rows["finding"] = rows["finding"].fillna(False).astype(bool)
    return rows[list(ROW_COLUMNS)]


def run_seed(
    model: PlantedModel, seed: int, employees: int, years: int, min_group_size: int = 5
) -> pd.DataFrame:
    from pipelines.lib.careers import career_statistics, programme_statistics
    from tools.validate.frames import (
        engineer_months,
        incident_responses,
        programme_episodes,
        simulate,
    )

    sim = simulate(employees, years, seed, model)
    em, inc, ep = engineer_months(sim), incident_responses(sim), programme_episodes(sim)
    try:
        comparison = programme_statistics(ep, em, inc, min_group_size)["programme_comparison"]
    except Exception as exc:  # a failure is a result: counted, not hidden
        comparison = failed_rows(ep, exc)
    try:
        promotion = career_statistics(em, min_group_size)["promotion_effect"]
    except Exception as exc:
        promotion = failed_rows(None, exc)
    return compare(model, comparison, promotion, seed)


def failed_rows(ep: pd.DataFrame | None, exc: Exception) -> pd.DataFrame:
    """Rows for the figures a call that raised would have published (each programme in the
    episodes but online, or the promotion row), not estimable, with the error as the reason."""
    reason = f"{FAILED}{type(exc).__name__}: {exc}"
    if ep is None:
        keys = [(ALL, PROMOTION)]
    else:
        programmes = sorted(set(ep["programme_type"]) - {"online", "unknown"})
        keys = [(p, m) for p in programmes for m in METRIC_ORDER[:-1]]
    return pd.DataFrame(
        {
            "programme_type": [p for p, _ in keys],
            "metric": [m for _, m in keys],
            "estimable": False,
            "finding": False,
            "not_estimable_reason": reason,
        }
    ).reindex(columns=list(ROW_COLUMNS[1:-1]))


def run_programme_world(
    world: str, seeds: list[int], employees: int, years: int, min_group_size: int = 5
) -> pd.DataFrame:
    model = programme_world_model(world)
    parts = [run_seed(model, s, employees, years, min_group_size) for s in seeds]
    return pd.concat(parts, ignore_index=True)


@dataclass(frozen=True)
class ProgrammeSummary:
    metric: str
    programme: str
    truth: float
    worlds: int
    estimable: int
    covered: int
    coverage_ci: tuple[float, float]
    bias_log: float
    sd_log: float
    findings: int
    failed: int
    naive_estimable: int
    naive_covered: int
    naive_bias_log: float


def _inside(low: pd.Series, truth: pd.Series, high: pd.Series) -> pd.Series:
    return (low <= truth) & (truth <= high)


def summarise_programmes(results: pd.DataFrame) -> list[ProgrammeSummary]:
    """Per (metric, programme), in the order of the rows: how often the interval held the
    planted value (Clopper-Pearson interval on that share), the bias and spread of
    log(estimate), the findings, and how often the naive interval held it."""
    out = []
    keys = results[["metric", "programme_type"]].drop_duplicates()
    order = {p: k for k, p in enumerate(PROGRAMME_ORDER)}
    metrics = {m: k for k, m in enumerate(METRIC_ORDER)}
    keys = sorted(
        keys.itertuples(index=False),
        key=lambda mp: (order.get(mp[1], len(order)), mp[1], metrics.get(mp[0], len(metrics))),
    )
    for metric, programme in keys:
        r = results[(results["metric"] == metric) & (results["programme_type"] == programme)]
        ok = r[r["estimable"]]
        covered = int(_inside(ok["ci_low"], ok["truth"], ok["ci_high"]).sum())
        log_err = np.log(ok["estimate"].to_numpy(float)) - np.log(ok["truth"].to_numpy(float))
        naive = r[r["naive_estimate"].notna() & r["naive_ci_low"].notna()]
        naive_err = np.log(naive["naive_estimate"].to_numpy(float)) - np.log(
            naive["truth"].to_numpy(float)
        )
        truths = r["truth"].unique()
        out.append(
            ProgrammeSummary(
                metric=metric,
                programme=programme,
                truth=float(truths[0]) if len(truths) == 1 else math.nan,
                worlds=len(r),
                estimable=len(ok),
                covered=covered,
                coverage_ci=clopper_pearson(covered, len(ok)),
                bias_log=float(log_err.mean()) if len(ok) else math.nan,
                sd_log=float(np.std(log_err, ddof=1)) if len(ok) > 1 else math.nan,
                findings=int(r["finding"].sum()),
                failed=int(r["not_estimable_reason"].fillna("").str.startswith(FAILED).sum()),
                naive_estimable=len(naive),
                naive_covered=int(
                    _inside(naive["naive_ci_low"], naive["truth"], naive["naive_ci_high"]).sum()
                ),
                naive_bias_log=float(naive_err.mean()) if len(naive) else math.nan,
            )
        )
    return out


def _share(k: int, n: int) -> str:
    return f"{k}/{n} = {100 * k / n:.0f} %" if n else "n/a"


def _num(x: float, sign: bool = False) -> str:
    if not np.isfinite(x):
        return "n/a"
    return f"{x:+.3f}" if sign else f"{x:.3f}"


def format_programme_table(
    world: str, employees: int, years: int, summaries: list[ProgrammeSummary]
) -> str:
    lines = [
        f"world {world} ({PROGRAMME_WORLDS[world]}); {employees} employees x {years} years, "
        f"{summaries[0].worlds if summaries else 0} seeds",
        "",
        "| metric | programme | planted | estimable | covered (95 % CI) | bias (log) | "
        "sd (log) | finding | naive covered | naive bias (log) | statistics raised |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summaries:
        lo, hi = s.coverage_ci
        cov = (
            f"{_share(s.covered, s.estimable)} ({100 * lo:.0f}-{100 * hi:.0f} %)"
            if s.estimable
            else "n/a"
        )
        lines.append(
            f"| {s.metric} | {s.programme} | {s.truth:.2f} | {s.estimable}/{s.worlds} | {cov} | "
            f"{_num(s.bias_log, True)} | {_num(s.sd_log)} | {_share(s.findings, s.worlds)} | "
            f"{_share(s.naive_covered, s.naive_estimable)} | {_num(s.naive_bias_log, True)} | "
            f"{s.failed} |"
        )
    return "\n".join(lines)
