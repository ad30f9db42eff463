"""External benchmarks: published figures printed beside the company's own, never as targets.

They live in versioned reference data (`dashboards/reference/external_benchmarks.yaml`), each
with what it measures, how its source defines it, the source and the year, so the report can
label every one as external and a reader can check it. A missing or unreadable file leaves the
benchmarks out and the report says so; it never fails the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml

from pipelines.lib.project_files import STATIC_DIR

BENCHMARKS_PATH = STATIC_DIR.parent / "reference" / "external_benchmarks.yaml"


@dataclass(frozen=True)
class Band:
    label: str
    text: str
    upper_minutes: float | None


@dataclass(frozen=True)
class Benchmark:
    name: str
    measure: str
    compares_with: str
    source: str | None
    year: int | None
    value: float | None = None
    unit: str = ""
    scope: str = ""
    definition: str = ""
    note: str = ""
    bands: tuple[Band, ...] = ()

    @property
    def cited(self) -> str:
        """`LinkedIn Talent Solutions, "…" (2018)`; empty without a source."""
        if not self.source:
            return ""
        return f"{self.source} ({self.year})" if self.year else self.source

    def band_of(self, minutes: float) -> Band | None:
        """The best band whose upper bound the figure is under (bands are listed best first)."""
        for b in self.bands:
            if b.upper_minutes is not None and minutes < b.upper_minutes:
                return b
        return None


def load_benchmarks(path: Path | None = None) -> dict[str, Benchmark]:
    """Benchmark name -> Benchmark; an entry without a source is kept (it says none was found)."""
    path = Path(path or BENCHMARKS_PATH)
    if not path.is_file():
        return {}
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out = {}
    for name, e in (doc.get("benchmarks") or {}).items():
        bands = tuple(
            Band(str(b["label"]), str(b["text"]), b.get("upper_minutes"))
            for b in e.get("bands") or ()
        )
        out[name] = Benchmark(
            name=name,
            measure=str(e.get("measure", "")),
            compares_with=str(e.get("compares_with", "")),
            source=e.get("source"),
            year=e.get("year"),
            value=e.get("value"),
            unit=str(e.get("unit", "")),
            scope=str(e.get("scope", "")),
            definition=" ".join(str(e.get("definition", "")).split()),
            note=" ".join(str(e.get("note", "")).split()),
            bands=bands,
        )
    return out


def by_company_figure(benchmarks: dict[str, Benchmark], figure: str) -> Benchmark | None:
    return next((b for b in benchmarks.values() if b.compares_with == figure), None)
