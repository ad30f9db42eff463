"""Which sections the report has, in the order they are computed and the order they print.

Each builder takes the report's `Build` (marts, quarter, minimum group size, inputs and the facts
of the sections computed before it) and returns its `Section` and its typed facts. Adding a
section is two lines: its builder in `BUILDERS` (after the sections whose facts it reads) and its
id in `PRINTED` where it should print. The page budget: 14 printed pages at any company size
(tests/test_report_length.py measures the sections before the programmes and careers against
10, tests/test_report_programmes.py the whole report without operations against 12,
tests/test_report_operations.py the whole report with operations against 13, a page left for
the plan).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.lib.report.benchmarks import Benchmark
from pipelines.lib.report.data import Marts
from pipelines.lib.report.fmt import usd
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.actions import actions_facts, actions_section
from pipelines.lib.report.sections.attrition import attrition_section
from pipelines.lib.report.sections.base import Section, table
from pipelines.lib.report.sections.careers import careers_section
from pipelines.lib.report.sections.composition import CostBasis, composition_section
from pipelines.lib.report.sections.coverage import coverage_section
from pipelines.lib.report.sections.expiring import expiring_section
from pipelines.lib.report.sections.facts import Facts
from pipelines.lib.report.sections.gaps import gaps_section
from pipelines.lib.report.sections.incidents import incidents_section
from pipelines.lib.report.sections.operations import operations_section
from pipelines.lib.report.sections.programmes import programmes_section
from pipelines.lib.report.sections.roi import (
    PER_CERTIFICATION_DEFINITION,
    PER_CERTIFICATION_LABEL,
    investment_per_certification,
    roi_section,
)
from pipelines.lib.report.sections.summary import benchmark_rows
from pipelines.lib.roi.assumptions import Target


@dataclass(frozen=True)
class Inputs:
    """What the report needs besides the marts: targets with their owners, the seed's salary
    bands (and fees, the fallback price of a certification), the assumptions file, the external
    benchmarks and the acronyms to spell out."""

    targets: Mapping[str, Target] = field(default_factory=dict)
    cost_basis: CostBasis | None = None
    assumptions_path: Path | None = None
    benchmarks: Mapping[str, Benchmark] = field(default_factory=dict)
    acronyms: Mapping[str, str] = field(default_factory=dict)
    validity_months: float = 24.0


@dataclass
class Build:
    marts: Marts
    q: Quarter
    thr: int
    inputs: Inputs
    facts: dict[str, Any] = field(default_factory=dict)


def _coverage(b: Build):
    return coverage_section(b.marts, b.q, b.thr, b.inputs.targets.get("required_cert_compliance"))


def _gaps(b: Build):
    return gaps_section(b.marts, b.q, b.thr, dict(b.inputs.acronyms))


def _expiring(b: Build):
    return expiring_section(b.marts, b.q, b.thr)


def _attrition(b: Build):
    return attrition_section(b.marts, b.q, b.thr)


def _incidents(b: Build):
    return incidents_section(b.marts, b.q, b.thr)


def _operations(b: Build):
    return operations_section(b.marts, b.q, b.thr)


def _programmes(b: Build):
    return programmes_section(b.marts, b.thr)


def _careers(b: Build):
    return careers_section(b.marts, b.q, b.thr)


def _roi(b: Build):
    return roi_section(b.marts, b.q, b.thr, b.facts["incidents"].effects, b.inputs.assumptions_path)


def _composition(b: Build):
    """Certifications are priced at this company's ROI investment per certification earned in
    the last 12 months, the same figure the actions use; the seed's fees only without it."""
    basis, cov, roi = b.inputs.cost_basis, b.facts.get("coverage"), b.facts.get("roi")
    per = investment_per_certification(roi, cov.passes_12m if cov else None)
    if basis is not None and per is not None:
        basis = CostBasis(
            basis.salary,
            per,
            f"{usd(per)}, this company's {PER_CERTIFICATION_LABEL} "
            f"({PER_CERTIFICATION_DEFINITION})",
        )
    return composition_section(b.marts, b.q, b.thr, basis)


def _actions(b: Build):
    f = actions_facts(
        b.marts,
        b.q,
        b.thr,
        b.facts.get("coverage"),
        b.facts.get("expiring"),
        b.facts.get("composition"),
        b.facts["roi"],
        b.inputs.validity_months,
    )
    section = actions_section(f, b.q, b.facts["roi"])
    rows = benchmark_rows(
        Facts(*(b.facts.get(k) for k in ("coverage", "gaps", "expiring", "attrition", "incidents",
                                         "roi", "composition"))),
        b.inputs.benchmarks,
    )  # fmt: skip
    if rows:
        section.tables.append(
            table(
                "Outside benchmarks: external figures for comparison, not targets",
                ["Measure", "This company", "External figure", "Source (year)"],
                rows,
                key="benchmarks",
                scope="external",
            )
        )
    return section, f


# computed in this order: a builder may read the facts of those above it
BUILDERS: dict[str, Callable[[Build], tuple[Section, Any]]] = {
    "coverage": _coverage,
    "gaps": _gaps,
    "expiring": _expiring,
    "attrition": _attrition,
    "incidents": _incidents,
    "operations": _operations,
    "roi": _roi,
    "composition": _composition,
    "actions": _actions,
    "programmes": _programmes,
    "careers": _careers,
}
# printed in this order after page 1
PRINTED = (
    "actions",
    "roi",
    "coverage",
    "gaps",
    "expiring",
    "programmes",
    "composition",
    "careers",
    "attrition",
    "incidents",
    "operations",
)
