"""Run-time settings: one frozen value, built once at the edge and passed down.

The edges are the `talent` command line (flags, then the environment), the Dagster code location
(`pipelines/definitions.py`, from the environment) and the tests (explicit values). Nothing below
an edge reads the environment: a function that needs a folder, the pseudonym key or the minimum
group size takes a `Settings` (or the plain value) as a parameter.

Where the product's own files live (the dbt project, the report templates, the default
assumptions) is in `pipelines.lib.project_files`.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from pipelines.lib import project_files

# A fixed key so that demos are reproducible. Anyone who knows it can re-identify people from
# employee ids, so a real deployment must set TALENT_PSEUDONYM_KEY (kept outside the warehouse).
DEMO_PSEUDONYM_KEY = "talent-metrics-demo-key-not-secret"


def _spark_installed() -> bool:
    from importlib.util import find_spec

    return find_spec("pyspark") is not None and find_spec("dbt.adapters.spark") is not None


class SettingsError(ValueError):
    """A setting has a value the product cannot use; the message says which and what to set."""


@dataclass(frozen=True)
class Settings:
    """Everything a run needs to know that is not in the export files themselves."""

    sources_dir: Path
    warehouse_dir: Path
    # Where the quarterly reports go; None means `<warehouse_dir>/reports`, so that two
    # companies' warehouses never write into each other's reports.
    reports_dir_override: Path | None = None
    min_group_size: int = 5
    scope_division: str = "AI Infrastructure"
    # repr=False: the key must never appear in a log line or a Dagster config view.
    pseudonym_key: str = field(default=DEMO_PSEUDONYM_KEY, repr=False)
    assumptions_file: Path = field(default_factory=project_files.default_assumptions_file)
    # Automation (the Dagster code location only).
    nightly_cron: str = "0 2 * * *"
    quarterly_cron: str = "0 6 1 1,4,7,10 *"
    timezone: str = "UTC"
    # A file must be unchanged this long before it is loaded (half-copied exports are not read).
    settle_seconds: float = 30.0
    # Targets (docs/architecture.md, "Targets"). Publish the marts into this PostgreSQL database
    # as well as the DuckDB file; a DSN without a password (libpq reads PGPASSWORD).
    publish_dsn: str | None = None
    # The group role of the analysts' logins (`talent analysts add`): it may read schema `marts`
    # of that database and keep views in `analyst_views`, nothing else.
    publish_reader_role: str = "talent_analysts"
    # Where dbt builds: duckdb (the build file), postgres (the database of build_dsn, raw tables
    # copied there first) or spark (a local Spark session). The Python steps read the result
    # from the build file in every case (pipelines/lib/targets.py copies it back).
    build_target: str = "duckdb"
    build_dsn: str | None = None
    # The archive's files are encrypted with this Fernet key (`pipelines/lib/privacy/crypto.py`);
    # the old key only while `talent archive rotate-key` moves the archive to a new one.
    archive_key: str | None = field(default=None, repr=False)
    archive_old_key: str | None = field(default=None, repr=False)
    # Retention (`pipelines/lib/privacy/retention.py`): years after an employee leaves until
    # their names, e-mails and ids are replaced by pseudonyms, and until their salaries are
    # removed. None: kept until erased (the employer sets the period; docs say why).
    retention_years: float | None = None
    salary_retention_years: float | None = None
    retention_file: Path | None = None

    def __post_init__(self) -> None:
        for name in (
            "sources_dir",
            "warehouse_dir",
            "reports_dir_override",
            "assumptions_file",
            "retention_file",
        ):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, Path(value).expanduser().resolve())
        for problem in self._target_problems() + self._privacy_problems():
            raise SettingsError(problem)
        if int(self.min_group_size) < 2:
            raise SettingsError(
                f"min_group_size is {self.min_group_size}; it must be at least 2 (5 is the "
                "common default) or single people could be singled out in reports."
            )

    def _target_problems(self) -> list[str]:
        from pipelines.lib.postgres import dsn_problem

        problems = []
        if self.build_target not in BUILD_TARGETS:
            problems.append(
                f"the build target {self.build_target!r} is not one of "
                f"{', '.join(BUILD_TARGETS)} (TALENT_BUILD_TARGET, --build-target)."
            )
        if self.build_target == "postgres" and not self.build_dsn:
            problems.append(
                "the build target postgres needs the database to build in: set TALENT_BUILD_DSN "
                "(or --build-dsn), e.g. postgresql://talent@127.0.0.1:55432/talent_build."
            )
        if self.build_target == "spark" and not _spark_installed():
            problems.append(
                "the build target spark needs dbt-spark and pyspark, the `spark` extra: "
                "`uv sync --extra spark` (or `pip install 'talent-metrics[spark]'`)."
            )
        for name, var in (("publish_dsn", "TALENT_PUBLISH_DSN"), ("build_dsn", "TALENT_BUILD_DSN")):
            value = getattr(self, name)
            problem = dsn_problem(value) if value else None
            if problem:
                problems.append(f"{var} {problem}.")
        if self.publish_dsn and self.build_dsn and _same_database(self.publish_dsn, self.build_dsn):
            problems.append(
                "TALENT_PUBLISH_DSN and TALENT_BUILD_DSN name the same database: analysts would "
                "reach the raw and restricted tables dbt builds from. Publish into another one."
            )
        return problems

    def _privacy_problems(self) -> list[str]:
        problems = []
        if self.archive_key or self.archive_old_key:  # imports cryptography only then
            from pipelines.lib.privacy.crypto import KEY_VAR, OLD_KEY_VAR, key_problem

            problems += [
                p + "."
                for p in (
                    key_problem(self.archive_key, KEY_VAR),
                    key_problem(self.archive_old_key, OLD_KEY_VAR),
                )
                if p
            ]
        for name, var in (
            ("retention_years", "TALENT_RETENTION_YEARS"),
            ("salary_retention_years", "TALENT_SALARY_RETENTION_YEARS"),
        ):
            value = getattr(self, name)
            if value is not None and float(value) <= 0:
                problems.append(
                    f"{var} is {value}; it must be a number of years above 0 (unset it to keep "
                    "personal data until it is erased)."
                )
        return problems

    # --- construction at the edges -------------------------------------------------------
    @classmethod
    def from_env(cls, environ: Mapping[str, str], **overrides: object) -> Settings:
        """Settings from `environ` (the TALENT_* variables in ENV_VARS), then `overrides`.

        `overrides` are the command line's flags: a flag given wins over the environment; a
        flag left at None keeps the environment's value (or the default).
        """
        values: dict[str, object] = {
            "sources_dir": project_files.SAMPLE_SOURCES,
            "warehouse_dir": Path("warehouse"),
        }
        for name, var in ENV_VARS.items():
            raw = environ.get(var)
            if raw not in (None, ""):
                values[name] = _parse(name, var, raw)
        values.update({k: v for k, v in overrides.items() if v is not None})
        return cls(**values)  # type: ignore[arg-type]

    def replace(self, **changes: object) -> Settings:
        return dataclasses.replace(self, **changes)  # type: ignore[arg-type]

    @property
    def uses_demo_key(self) -> bool:
        return self.pseudonym_key == DEMO_PSEUDONYM_KEY

    # --- files inside the warehouse directory -------------------------------------------
    @property
    def reports_dir(self) -> Path:
        """Quarterly reports: `<warehouse>/reports/<YYYY-Qn>/` unless set explicitly."""
        return self.reports_dir_override or self.warehouse_dir / "reports"

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

    @property
    def runs_dir(self) -> Path:
        """One JSON record per job: what the last run did."""
        return self.warehouse_dir / "runs"

    @property
    def spark_dir(self) -> Path:
        """The local Spark session's tables and the raw tables handed to it (build target
        spark): `<warehouse>/build/spark/`."""
        return self.build_db.parent / "spark"

    def ensure_dirs(self) -> None:
        for d in (self.warehouse_dir, self.archive_dir, self.build_db.parent):
            d.mkdir(parents=True, exist_ok=True)

    def dbt_vars(self) -> dict[str, object]:
        """The dbt project's `--vars`: the privacy and scope knobs its SQL uses, and which
        tool's row wins a key two tools deliver for one period (`source_precedence`)."""
        return {
            "min_group_size": int(self.min_group_size),
            "scope_division": self.scope_division,
            "source_precedence": json.loads(self.source_precedence),
        }

    @property
    def source_precedence(self) -> str:
        """The precedence of tools per export that `sources.yml` sets, as JSON (empty: the
        latest delivery wins; `pipelines/lib/ingest/precedence.py`)."""
        from pipelines.lib.ingest.precedence import precedence_var
        from pipelines.lib.ingest.profiles import load_sources_config

        config = load_sources_config(self.sources_dir)
        return json.dumps(precedence_var(config.precedence), sort_keys=True)

    def dbt_env(self, in_warehouse: bool = False) -> dict[str, str]:
        """What the dbt profile (`profiles.yml`) and its plugin read from the environment.

        dbt runs in a subprocess and renders its profile from environment variables, so these
        are the only settings that travel through the environment, and only into that
        subprocess (see `pipelines.defs.dbt_cli.dbt_environment`).

        `in_warehouse=True` is how the pipeline runs dbt: the database paths are relative to
        the warehouse folder, and `TALENT_DBT_WORKDIR` has `talent-dbt` start dbt there. The
        profile then renders the same for every warehouse, and dbt's partial parsing, which
        reparses everything when the profile's connection differs, can start a fresh
        warehouse from the project's own parse (`pipelines.defs.dbt_cli.seed_parse`). By
        default the paths are absolute, for dbt started anywhere (by hand, by the tests).
        """
        from pipelines.lib.targets import dbt_target_env

        if in_warehouse:
            paths = {
                "TALENT_BUILD_DB": os.path.relpath(self.build_db, self.warehouse_dir),
                "TALENT_RAW_DB": os.path.relpath(self.raw_db, self.warehouse_dir),
                "TALENT_DBT_WORKDIR": str(self.warehouse_dir),
            }
        else:
            paths = {"TALENT_BUILD_DB": str(self.build_db), "TALENT_RAW_DB": str(self.raw_db)}
        return {**paths, "TALENT_PSEUDONYM_KEY": self.pseudonym_key, **dbt_target_env(self)}


# Settings field -> environment variable (README: "Settings").
ENV_VARS: dict[str, str] = {
    "sources_dir": "TALENT_SOURCES",
    "warehouse_dir": "TALENT_WAREHOUSE_DIR",
    "reports_dir_override": "TALENT_REPORTS_DIR",
    "min_group_size": "TALENT_MIN_GROUP_SIZE",
    "scope_division": "TALENT_SCOPE_DIVISION",
    "pseudonym_key": "TALENT_PSEUDONYM_KEY",
    "assumptions_file": "TALENT_ASSUMPTIONS",
    "nightly_cron": "TALENT_NIGHTLY_CRON",
    "quarterly_cron": "TALENT_QUARTERLY_CRON",
    "timezone": "TALENT_TIMEZONE",
    "settle_seconds": "TALENT_SETTLE_SECONDS",
    "publish_dsn": "TALENT_PUBLISH_DSN",
    "publish_reader_role": "TALENT_PUBLISH_READER_ROLE",
    "build_target": "TALENT_BUILD_TARGET",
    "build_dsn": "TALENT_BUILD_DSN",
    "archive_key": "TALENT_ARCHIVE_KEY",
    "archive_old_key": "TALENT_ARCHIVE_OLD_KEY",
    "retention_years": "TALENT_RETENTION_YEARS",
    "salary_retention_years": "TALENT_SALARY_RETENTION_YEARS",
    "retention_file": "TALENT_RETENTION_FILE",
}

BUILD_TARGETS = ("duckdb", "postgres", "spark")


def _same_database(a: str, b: str) -> bool:
    import psycopg2.extensions

    pa, pb = psycopg2.extensions.parse_dsn(a), psycopg2.extensions.parse_dsn(b)
    keys = ("host", "port", "dbname")
    return all(pa.get(k, "") == pb.get(k, "") for k in keys)


def _parse(name: str, var: str, raw: str) -> object:
    kind = {f.name: f.type for f in dataclasses.fields(Settings)}[name]
    try:
        if kind == "int":
            return int(raw)
        if kind in ("float", "float | None"):
            return float(raw)
    except ValueError:
        raise SettingsError(
            f"{var}={raw!r} is not a number; set it to a number or unset it."
        ) from None
    if "Path" in kind:
        return Path(raw)
    return raw
