"""Run-time settings: where the sources and the warehouse live, and the privacy knobs.

Everything is read from the environment when asked for, never at import, so one process can
run the pipeline over several folders (the tests do).
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from pathlib import Path

import dagster as dg

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DBT_PROJECT_DIR = PROJECT_ROOT / "dbt_project"
DASHBOARDS_DIR = PROJECT_ROOT / "dashboards"

# A fixed key so that demos are reproducible. Anyone who knows it can re-identify people from
# employee ids, so a real deployment must set TALENT_PSEUDONYM_KEY (kept outside the warehouse).
DEMO_PSEUDONYM_KEY = "talent-metrics-demo-key-not-secret"


def _path(var: str, default: Path) -> Path:
    value = os.environ.get(var)
    return Path(value).expanduser().resolve() if value else default.resolve()


@dataclass(frozen=True)
class Settings:
    sources_dir: Path
    warehouse_dir: Path
    reports_dir: Path
    min_group_size: int = 5
    scope_division: str = "AI Infrastructure"

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            sources_dir=_path("TALENT_SOURCES", PROJECT_ROOT / "sources" / "sample"),
            warehouse_dir=_path("TALENT_WAREHOUSE_DIR", PROJECT_ROOT / "warehouse"),
            reports_dir=_path("TALENT_REPORTS_DIR", DASHBOARDS_DIR / "reports"),
            min_group_size=int(os.environ.get("TALENT_MIN_GROUP_SIZE", "5")),
            scope_division=os.environ.get("TALENT_SCOPE_DIVISION", "AI Infrastructure"),
        )

    # --- files inside the warehouse directory -------------------------------------------
    @property
    def raw_db(self) -> Path:
        """Restricted: raw rows with names, e-mails, salaries; manifest; quarantine."""
        return self.warehouse_dir / "raw.duckdb"

    @property
    def archive_dir(self) -> Path:
        """Content-addressed copies of every delivered file: the source of truth."""
        return self.warehouse_dir / "archive"

    @property
    def build_db(self) -> Path:
        """Scratch file the run builds into; never opened by analysts."""
        return self.warehouse_dir / "build" / "talent.duckdb"

    @property
    def published_db(self) -> Path:
        """The analyst-facing file: pseudonymised marts only, replaced atomically."""
        return self.warehouse_dir / "talent.duckdb"

    @property
    def docs_dir(self) -> Path:
        return self.warehouse_dir / "docs"

    @property
    def quality_dir(self) -> Path:
        return self.warehouse_dir / "quality"

    def ensure_dirs(self) -> None:
        for d in (self.warehouse_dir, self.archive_dir, self.build_db.parent, self.reports_dir):
            d.mkdir(parents=True, exist_ok=True)

    def dbt_env(self) -> dict[str, str]:
        """Environment the dbt profile reads (profiles.yml uses env_var on these)."""
        return {
            "TALENT_BUILD_DB": str(self.build_db),
            "TALENT_RAW_DB": str(self.raw_db),
            "TALENT_PSEUDONYM_KEY": pseudonym_key(),
            "TALENT_MIN_GROUP_SIZE": str(self.min_group_size),
            "TALENT_SCOPE_DIVISION": self.scope_division,
        }

    def export_env(self) -> None:
        os.environ.update(self.dbt_env())


def pseudonym_key() -> str:
    key = os.environ.get("TALENT_PSEUDONYM_KEY")
    if key:
        return key
    warnings.warn(
        "TALENT_PSEUDONYM_KEY is not set: person pseudonyms use the public DEMO key and can be "
        "reversed by anyone who has the employee ids. Set TALENT_PSEUDONYM_KEY to a secret kept "
        "outside the warehouse before loading real data.",
        UserWarning,
        stacklevel=2,
    )
    return DEMO_PSEUDONYM_KEY


class TalentSettings(dg.ConfigurableResource):
    """Dagster resource over `Settings`; empty fields fall back to the environment."""

    sources_dir: str = ""
    warehouse_dir: str = ""

    def get(self) -> Settings:
        s = Settings.from_env()
        if self.sources_dir:
            s = Settings(**{**s.__dict__, "sources_dir": Path(self.sources_dir).resolve()})
        if self.warehouse_dir:
            s = Settings(**{**s.__dict__, "warehouse_dir": Path(self.warehouse_dir).resolve()})
        return s
