"""The rates the planner uses: the company's own, measured in the marts, each naming its mart and
window; the domain's figure (named as such) only where the company has no data.

A `Rate` carries its interval: a measured share its counts (events of exposure: Monte Carlo
draws are Beta(events + 1/2, exposure - events + 1/2), Jeffreys), any other figure its low and
high (draws uniform between them). `Rates` holds what the projection needs by level, programme
and certification; `warehouse.read_rates` reads them from the build file's unsuppressed marts
(`restricted.*`, the dbt marts' detail, and the statistics marts in `marts.*`), `domain_rates`
is the company with no data at all (`talent plan --case`, and every gap of `read_rates`).
"""

from __future__ import annotations

import csv
import math
from dataclasses import dataclass, field, replace
from datetime import date
from pathlib import Path

import numpy as np

from pipelines.lib.project_files import DBT_PROJECT_DIR

LEVELS = (1, 2, 3, 4, 5)
PROGRAMMES = ("online", "bootcamp", "apprenticeship", "vendor_partnership", "internal")
# seed-facts.md "Certifications": the professional certification requires the associate one
PREREQUISITES = {"NCP-AII": ("NCA-AIIO",)}
SEEDS = DBT_PROJECT_DIR / "seeds"
SEED_FACTS = "domain: seed-facts.md"
WEIBULL_SHAPE = 1.5  # domain times give a median only; the spread is assumed
MEASURED_IN = ("marts.", "restricted.", "intermediate.")  # the build file's schemas
ESTIMATE = "estimate (neither the data nor the domain give it; replace when measured)"


@dataclass(frozen=True)
class Rate:
    name: str
    value: float
    low: float
    high: float
    source: str  # "restricted.attrition ...", or "domain: ..." / "external: ..." / "estimate ..."
    window: str = ""  # first..last day of the data measured; empty for other sources
    events: float | None = None  # a measured share: events of exposure
    exposure: float | None = None

    @property
    def measured(self) -> bool:
        return self.source.startswith(MEASURED_IN)

    def draw(self, rng: np.random.Generator, n: int) -> np.ndarray:
        if self.events is not None and self.exposure:
            a = self.events + 0.5
            return rng.beta(a, max(self.exposure - self.events, 0.0) + 0.5, n)
        return rng.uniform(self.low, self.high, n)


def share_rate(name: str, events: float, exposure: float, source: str, window: str) -> Rate:
    """A measured share with its 95 % Jeffreys interval."""
    from scipy.stats import beta

    a, b = events + 0.5, max(exposure - events, 0.0) + 0.5
    lo, hi = beta.ppf([0.025, 0.975], a, b)
    return Rate(name, events / exposure, float(lo), float(hi), source, window, events, exposure)


def fixed(name: str, value: float, low: float, high: float, source: str) -> Rate:
    return Rate(name, value, low, high, source)


@dataclass
class Rates:
    """Everything the projection reads, as Rates; `point` and `draws` turn them into arrays."""

    exit: dict[tuple[int, bool], Rate]  # (level, holds a certification) -> per quarter
    promote: dict[int, Rate]  # level -> per quarter
    median_months: dict[tuple[str, str], Rate]  # (programme, code) -> months to certify
    cost_per_start: dict[tuple[str, str], Rate]  # (programme, code) -> USD
    salary: dict[int, Rate]  # level -> USD per year
    hiring_cost_share: Rate  # of a year's pay
    time_to_fill_quarters: int = 1
    senior_levels: tuple[int, ...] = (4, 5)
    notes: list[str] = field(default_factory=list)

    def all(self) -> list[Rate]:
        out: list[Rate] = [*self.exit.values(), *self.promote.values()]
        out += [*self.median_months.values(), *self.cost_per_start.values()]
        return [*out, *self.salary.values(), self.hiring_cost_share]

    def programmes_for(self, code: str) -> list[str]:
        return [p for p in PROGRAMMES if (p, code) in self.median_months]


def quarterly(per_year: float) -> float:
    return 1.0 - (1.0 - min(per_year, 0.999)) ** 0.25


def weibull_cdf(months: np.ndarray, median: np.ndarray) -> np.ndarray:
    """Share certified by `months` when half are certified by `median` (shape WEIBULL_SHAPE)."""
    scale = np.asarray(median, float) / math.log(2) ** (1 / WEIBULL_SHAPE)
    return 1.0 - np.exp(-((np.asarray(months, float) / scale) ** WEIBULL_SHAPE))


# --- the domain's figures ---------------------------------------------------------------------


def _seed(name: str) -> list[dict[str, str]]:
    with open(SEEDS / f"{name}.csv", newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _domain_times(codes: list[str], assumptions: dict) -> dict[tuple[str, str], Rate]:
    """Median months to certify by programme and code from seed-facts.md."""
    out: dict[tuple[str, str], Rate] = {}
    app = assumptions.get("apprenticeship_months")
    for code in codes:
        foundation = code == "NCA-AIIO"
        months = 3.0 if foundation else 6.0
        path = (
            "foundation path about 3 months" if foundation else "professional path about 6 months"
        )
        if code not in ("NCA-AIIO", "NCP-AII"):
            path += f", taken for {code}, which the domain does not time"
        out[("online", code)] = fixed(
            f"median months to certify {code}, online",
            months,
            months * 0.75,
            months * 1.5,
            f'{SEED_FACTS} "NVIDIA learning path" ({path})',
        )
        out[("bootcamp", code)] = fixed(
            f"median months to certify {code}, bootcamp",
            1.0,
            0.5,
            1.5,
            f'{SEED_FACTS} "Ways to accelerate training" (bootcamp 2-4 weeks for the whole track)',
        )
        lo, base, hi = (app.low, app.base, app.high) if app else (3.0, 4.5, 6.0)
        out[("apprenticeship", code)] = fixed(
            f"median months to certify {code}, apprenticeship",
            base,
            lo,
            hi,
            f'{SEED_FACTS} "Ways to accelerate training" (shadowing for 3-6 months)',
        )
        online = out[("online", code)]
        out[("vendor_partnership", code)] = replace(
            online,
            name=f"median months to certify {code}, vendor partnership",
            source=online.source + "; the domain gives vendor courses no time of their own",
        )
    return out


def _a(assumptions: dict, name: str, default: tuple[float, float, float]) -> tuple:
    a = assumptions.get(name)
    return (a.low, a.base, a.high, a.source) if a else (*default, ESTIMATE)


def _domain_costs(codes: list[str], assumptions: dict) -> dict[tuple[str, str], Rate]:
    """USD per programme start from the assumptions file (each names its seed-facts source)."""
    fees = {c["code"]: float(c["exam_fee_usd"] or 0) for c in _seed("certification_catalogue")}
    course = _a(assumptions, "course_fee_usd_per_participant", (10000, 15000, 20000))
    boot = _a(assumptions, "bootcamp_fee_usd_per_participant", (15000, 25000, 25000))
    disc = _a(assumptions, "vendor_discount_share", (0.5, 0.6, 0.7))
    months = _a(assumptions, "apprenticeship_months", (3, 4.5, 6))
    hours = _a(assumptions, "hours_per_month", (140, 150, 170))[1]
    loss = _a(assumptions, "apprenticeship_senior_productivity_loss", (0.1, 0.2, 0.3))[1]
    senior = _a(assumptions, "senior_rate_usd_per_hour", (97, 118, 139))[1]
    senior_time = [m * hours * loss * senior for m in months[:3]]
    out: dict[tuple[str, str], Rate] = {}
    for code in codes:
        exam = fees.get(code, _a(assumptions, "exam_fee_usd", (125, 400, 500))[1])
        spans = {
            "online": ([course[i] + exam for i in range(3)], course[3]),
            "bootcamp": ([boot[i] + exam for i in range(3)], boot[3]),
            "apprenticeship": (
                [course[i] + exam + senior_time[i] for i in range(3)],
                f"{course[3]}; senior time: {months[3]}",
            ),
            "vendor_partnership": (
                [course[1] * (1 - disc[2 - i]) + exam for i in range(3)],
                f"{course[3]}; discount: {disc[3]}",
            ),
        }
        for prog, ((lo, base, hi), src) in spans.items():
            out[(prog, code)] = fixed(
                f"cost per start, {prog} {code}", base, lo, hi, f"assumptions file: {src}"
            )
    return out


def domain_rates(codes: list[str], assumptions: dict | None = None) -> Rates:
    """The planner's rates for a company without data: the domain's figures, named."""
    assumptions = assumptions or {}
    levels = {int(r["skill_level"]): r for r in _seed("skill_levels")}
    band = 'domain: seed-facts.md "Skill levels"'
    turnover = quarterly(0.132)
    exit_source = (
        "external: LinkedIn 2018 technology turnover 13.2 %/year "
        "(dashboards/reference/external_benchmarks.yaml); the domain gives no rate"
    )
    exits = {
        (lvl, cert): fixed(
            f"exit per quarter, level {lvl}, {'certified' if cert else 'not certified'}",
            turnover,
            turnover * 0.5,
            turnover * 1.5,
            exit_source,
        )
        for lvl in LEVELS
        for cert in (False, True)
    }
    promote = {}
    for lvl in LEVELS:
        top = levels.get(lvl, {}).get("experience_max_months") or ""
        p = 3.0 / float(top) if top and lvl < 5 else 0.0
        promote[lvl] = fixed(
            f"promotion per quarter, level {lvl}",
            p,
            p * 0.5,
            min(p * 1.5, 1.0),
            f"{band} (a quarter in the typical {top or 'open'}-month band)",
        )
    salary = {}
    for lvl in LEVELS:
        r = levels.get(lvl) or levels[max(levels)]
        lo, hi = float(r["salary_min_usd"]), float(r["salary_max_usd"])
        salary[lvl] = fixed(
            f"pay per year, level {lvl}", (lo + hi) / 2, lo, hi, f"{band} (salary band)"
        )
    return Rates(
        exit=exits,
        promote=promote,
        median_months=_domain_times(codes, assumptions),
        cost_per_start=_domain_costs(codes, assumptions),
        salary=salary,
        hiring_cost_share=fixed("hiring cost, share of a year's pay", 0.2, 0.15, 0.3, ESTIMATE),
    )


def window_text(start: date, end: date) -> str:
    return f"{start.isoformat()}..{end.isoformat()}"


def seed_path(name: str) -> Path:
    return SEEDS / f"{name}.csv"
