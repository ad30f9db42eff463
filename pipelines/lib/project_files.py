"""Where the product's own files are: the dbt project, the report templates, the default
assumptions and the bundled sample.

In a checkout (or an editable install) they are the top-level folders of the repository. A wheel
carries the same folders as package data under `pipelines/_project/` (see `pyproject.toml`,
`[tool.hatch.build.targets.wheel.force-include]`), so an installed product finds them without
knowing where it was built.
"""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parents[1]
_PACKAGED = _PACKAGE / "_project"
ROOT = _PACKAGED if (_PACKAGED / "dbt_project").is_dir() else _PACKAGE.parent

DBT_PROJECT_DIR = ROOT / "dbt_project"
TEMPLATES_DIR = ROOT / "dashboards" / "templates"
STATIC_DIR = ROOT / "dashboards" / "static"
SCENARIOS_DIR = ROOT / "sources" / "scenarios"
# The bundled sample company (a checkout only; `make run` reads it).
SAMPLE_SOURCES = ROOT / "sources" / "sample"


def default_assumptions_file() -> Path:
    """The ROI assumptions shipped with the product (override with TALENT_ASSUMPTIONS)."""
    return SCENARIOS_DIR / "assumptions.yaml"
