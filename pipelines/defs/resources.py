"""The one Dagster resource over the run's settings: `talent`.

It is built from a `Settings` value (`TalentResource.from_settings`). A field whose value came
from the environment is an `EnvVar`, so the Dagster UI shows the variable's name, never its value
(the pseudonym key above all), and a run launched from the UI reads the variable when it starts.
Assets and checks ask the resource for the frozen `Settings` and pass it on.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from pathlib import Path

import dagster as dg

from pipelines.lib.locking import warehouse_lock
from pipelines.lib.settings import ENV_VARS, Settings


class TalentResource(dg.ConfigurableResource):
    """Settings of the run: folders, privacy knobs, ROI assumptions (README: "Settings")."""

    sources_dir: str
    warehouse_dir: str
    reports_dir: str
    min_group_size: int
    scope_division: str
    pseudonym_key: str
    assumptions_file: str
    settle_seconds: float
    # Targets (docs/architecture.md, "Targets"): publish to PostgreSQL, build elsewhere.
    publish_dsn: str | None = None
    publish_reader_role: str = "talent_analysts"
    build_target: str = "duckdb"
    build_dsn: str | None = None
    # Personal data over its life (docs/architecture.md): the archive's key and retention.
    archive_key: str | None = None
    archive_old_key: str | None = None
    retention_years: float | None = None
    salary_retention_years: float | None = None
    retention_file: str | None = None

    @classmethod
    def from_settings(
        cls, settings: Settings, environ: Mapping[str, str] | None = None
    ) -> TalentResource:
        """The resource for `settings`; fields whose value `environ` gave become `EnvVar`s."""
        environ = environ or {}
        values = {
            "sources_dir": str(settings.sources_dir),
            "warehouse_dir": str(settings.warehouse_dir),
            "reports_dir": str(settings.reports_dir),
            "min_group_size": settings.min_group_size,
            "scope_division": settings.scope_division,
            "pseudonym_key": settings.pseudonym_key,
            "assumptions_file": str(settings.assumptions_file),
            "settle_seconds": settings.settle_seconds,
            "publish_dsn": settings.publish_dsn,
            "publish_reader_role": settings.publish_reader_role,
            "build_target": settings.build_target,
            "build_dsn": settings.build_dsn,
            "archive_key": settings.archive_key,
            "archive_old_key": settings.archive_old_key,
            "retention_years": settings.retention_years,
            "salary_retention_years": settings.salary_retention_years,
            "retention_file": str(settings.retention_file) if settings.retention_file else None,
        }
        fields = {name: name for name in values} | {"reports_dir": "reports_dir_override"}
        for name, value in values.items():
            var = ENV_VARS[fields[name]]
            if not environ.get(var) or not _same(environ[var], value):
                continue
            if isinstance(value, str):
                values[name] = dg.EnvVar(var)
            elif isinstance(value, int):
                values[name] = dg.EnvVar.int(var)
        return cls(**values)

    @contextlib.contextmanager
    def yield_for_execution(self, context: dg.InitResourceContext) -> Iterator[TalentResource]:
        """A run holds the warehouse's run lock from its first step to its last.

        So a run started by the schedule, the sensor or the UI is refused, naming the holder,
        while `talent run` (or another run) writes the same warehouse; sensor ticks, which only
        read the sources folder, take no lock.
        """
        run = context.run
        if run is None:
            yield self
            return
        holder = f"Dagster run {run.run_id[:8]} of job {run.job_name}"
        with warehouse_lock(Path(self.warehouse_dir), holder):
            yield self

    @property
    def settings(self) -> Settings:
        return Settings(
            sources_dir=Path(self.sources_dir),
            warehouse_dir=Path(self.warehouse_dir),
            reports_dir_override=Path(self.reports_dir),
            min_group_size=self.min_group_size,
            scope_division=self.scope_division,
            pseudonym_key=self.pseudonym_key,
            assumptions_file=Path(self.assumptions_file),
            settle_seconds=self.settle_seconds,
            publish_dsn=self.publish_dsn,
            publish_reader_role=self.publish_reader_role,
            build_target=self.build_target,
            build_dsn=self.build_dsn,
            archive_key=self.archive_key,
            archive_old_key=self.archive_old_key,
            retention_years=self.retention_years,
            salary_retention_years=self.salary_retention_years,
            retention_file=Path(self.retention_file) if self.retention_file else None,
        )


def _same(raw: str, value: object) -> bool:
    """True when the environment's text `raw` is what the settings hold (the flag did not win)."""
    if isinstance(value, str) and value.startswith("/"):
        return str(Path(raw).expanduser().resolve()) == value
    return raw == str(value)
