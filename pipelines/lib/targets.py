"""Where dbt builds: the DuckDB build file (default), a PostgreSQL database, or a Spark session.

Ingestion, quarantine and the archive stay local (they are file work on `raw.duckdb`), and the
statistics, ROI and report steps read DuckDB. So a build on another target is framed by two
steps, both small and both here:

1. `prepare_build` hands the raw tables to the target: PostgreSQL gets them in schema `raw` of
   the build database (one transaction); Spark gets them as Parquet files that the project's
   `on-run-start` hook registers as tables `raw.<export>` in dbt's session.
2. dbt builds there (the profile's target `postgres` or `spark`, chosen by `DBT_TARGET`), with
   the pseudonym key passed out of band (`dbt_target_env`), never in the SQL.
3. `collect_build` copies what dbt built (schemas staging, intermediate, restricted, marts) back
   into the local build file, so the Python steps and the publish read exactly the target's
   tables, as after a DuckDB build.

Pure helpers (`dbt_target_env`, `pgoptions_with_key`) have unit tests; the steps that move data
are exercised against a real server and a real Spark session (tests/test_postgres_*.py,
tests/test_spark_*.py).
"""

from __future__ import annotations

import base64
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pipelines.lib.settings import Settings

# Schemas dbt builds (custom schema names used as-is: macros/generate_schema_name.sql).
BUILT_SCHEMAS = ("staging", "intermediate", "restricted", "marts")
# The profile's output per build target (dbt_project/profiles.yml).
PROFILE_TARGETS = {"duckdb": "dev", "postgres": "postgres", "spark": "spark"}
# The session setting that carries the pseudonym key on PostgreSQL; the `pseudonym(text)`
# function the hook creates reads it (dbt_project/macros/pseudonym.sql).
PG_KEY_SETTING = "talent.pseudonym_key"


def pgoptions_with_key(key: str, existing: str = "") -> str:
    """PGOPTIONS that set the pseudonym key for the session (libpq passes them at connect).

    Backslash-escapes spaces and backslashes, as libpq's option parser expects, so any key
    survives; the key travels in the connection start-up, not in any SQL text.
    """
    escaped = key.replace("\\", "\\\\").replace(" ", "\\ ")
    option = f"-c {PG_KEY_SETTING}={escaped}"
    return f"{existing} {option}".strip()


def dbt_target_env(settings: Settings) -> dict[str, str]:
    """The environment dbt needs for the settings' build target, besides the DuckDB paths.

    DBT_TARGET picks the profile's output; the PostgreSQL connection comes from the DSN (its
    password from PGPASSWORD, which dbt's process inherits); the key goes to PostgreSQL in
    PGOPTIONS and to Spark as the variable its SQL substitutes at parse time (`${env:...}`).
    """
    target = settings.build_target
    env = {"DBT_TARGET": PROFILE_TARGETS[target]}
    if target == "postgres":
        import psycopg2.extensions

        parts = psycopg2.extensions.parse_dsn(settings.build_dsn or "")
        env.update(
            TALENT_BUILD_PG_HOST=parts.get("host", "localhost"),
            TALENT_BUILD_PG_PORT=parts.get("port", "5432"),
            TALENT_BUILD_PG_USER=parts.get("user", ""),
            TALENT_BUILD_PG_DBNAME=parts.get("dbname", ""),
            PGOPTIONS=pgoptions_with_key(settings.pseudonym_key),
        )
    elif target == "spark":
        env.update(
            TALENT_SPARK_WAREHOUSE=str(settings.spark_dir / "warehouse"),
            TALENT_SPARK_RAW=str(settings.spark_dir / "raw"),
            # base64 has no quote that could end the SQL string it is substituted into
            TALENT_PSEUDONYM_KEY_B64=base64.b64encode(settings.pseudonym_key.encode()).decode(),
        )
    return env


def prepare_build(settings: Settings) -> dict[str, int]:
    """Hand the raw tables to the build target (nothing to do for DuckDB); rows per table."""
    if settings.build_target == "postgres":
        from pipelines.lib import postgres

        return postgres.load_raw(settings.raw_db, settings.build_dsn or "")
    if settings.build_target == "spark":
        return export_raw_parquet(settings.raw_db, settings.spark_dir)
    return {}


def collect_build(settings: Settings) -> dict[str, int]:
    """Copy what dbt built on the target back into the local build file; rows per table."""
    if settings.build_target == "postgres":
        from pipelines.lib import postgres

        return postgres.mirror_to_duckdb(settings.build_dsn or "", settings.build_db, BUILT_SCHEMAS)
    if settings.build_target == "spark":
        return mirror_spark_tables(settings.spark_dir / "warehouse", settings.build_db)
    return {}


def export_raw_parquet(raw_db: Path, spark_dir: Path) -> dict[str, int]:
    """Every raw table as `<spark_dir>/raw/<table>.parquet`, and an empty Spark warehouse.

    dbt's Spark session keeps its catalog in memory, so the tables of an earlier build are
    unknown to it while their folders would block the new ones: the warehouse starts empty.
    """
    from pipelines.lib import db

    shutil.rmtree(spark_dir, ignore_errors=True)
    (spark_dir / "raw").mkdir(parents=True)
    (spark_dir / "warehouse").mkdir(parents=True)
    rows: dict[str, int] = {}
    with db.connect(raw_db, read_only=True) as con:
        tables = [
            t
            for (t,) in con.execute(
                "select table_name from duckdb_tables() where schema_name = 'main' "
                "and database_name = current_database() order by 1"
            ).fetchall()
        ]
        for table in tables:
            out = spark_dir / "raw" / f"{table}.parquet"
            # JSON has no Parquet type Spark reads back as text: it travels as VARCHAR
            columns = con.execute(
                "select column_name, data_type from duckdb_columns() where schema_name = 'main' "
                "and database_name = current_database() and table_name = ? order by column_index",
                [table],
            ).fetchall()
            select = ", ".join(
                f'"{c}"::varchar as "{c}"' if t == "JSON" else f'"{c}"' for c, t in columns
            )
            con.execute(f"copy (select {select} from main.\"{table}\") to '{out}' (format parquet)")
            rows[table] = con.execute(f'select count(*) from main."{table}"').fetchone()[0]
    return rows


def mirror_spark_tables(warehouse: Path, build_db: Path) -> dict[str, int]:
    """The Parquet tables of dbt's Spark warehouse (`<schema>.db/<table>/`) into the build file."""
    from pipelines.lib import db

    copied: dict[str, int] = {}
    with db.connect(build_db) as con:
        for schema in BUILT_SCHEMAS:
            folder = warehouse / f"{schema}.db"
            if not folder.exists():
                continue
            con.execute(f'create schema if not exists "{schema}"')
            for table_dir in sorted(p for p in folder.iterdir() if p.is_dir()):
                files = sorted(table_dir.glob("*.parquet"))
                if not files:
                    continue
                name = table_dir.name
                con.execute(
                    f'create or replace table "{schema}"."{name}" as '
                    f"select * from read_parquet('{table_dir}/*.parquet')"
                )
                copied[f"{schema}.{name}"] = con.execute(
                    f'select count(*) from "{schema}"."{name}"'
                ).fetchone()[0]
    return copied
