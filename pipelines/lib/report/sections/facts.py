"""The figures page 1 and the actions reuse, one typed record per section (None when the
section has no data)."""

from __future__ import annotations

from dataclasses import dataclass

from pipelines.lib.report.sections.attrition import AttritionFacts
from pipelines.lib.report.sections.composition import CompositionFacts
from pipelines.lib.report.sections.coverage import CoverageFacts
from pipelines.lib.report.sections.expiring import ExpiringFacts
from pipelines.lib.report.sections.gaps import GapFacts
from pipelines.lib.report.sections.incidents import IncidentFacts
from pipelines.lib.report.sections.roi import RoiFacts


@dataclass(frozen=True)
class Facts:
    coverage: CoverageFacts | None
    gaps: GapFacts | None
    expiring: ExpiringFacts | None
    attrition: AttritionFacts | None
    incidents: IncidentFacts | None
    roi: RoiFacts | None
    composition: CompositionFacts | None
