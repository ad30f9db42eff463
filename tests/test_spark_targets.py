"""The dbt project on Spark (dbt-spark's session method: a local SparkSession on Java 17, standing
in for Databricks), compared with DuckDB row for row.

One generated company (a seed no other test uses) is ingested once; dbt builds it on DuckDB and
on Spark from the same raw file, and every staging, intermediate, restricted and mart table must
agree (doubles to 1e-9). Minutes of Spark overhead: `make test-spark` / `make test-targets`.
"""

from __future__ import annotations

import shutil
from datetime import date

import duckdb
import pytest

from pipelines.lib import targets
from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.settings import Settings
from tests.conftest import TEST_PSEUDONYM_KEY
from tools.compare_targets import build_on, compare_tables, dbt_build, ingest

pytestmark = [pytest.mark.spark, pytest.mark.targets, pytest.mark.slow]

EMPLOYEES, YEARS, SEED = 300, 2, 4713  # a seed no other test and no bundled sample uses


@pytest.fixture(scope="module")
def builds(tmp_path_factory):
    """(DuckDB settings, Spark settings), both built from one raw file."""
    from tools.generate import generate_company

    if shutil.which("java") is None:
        pytest.fail("no java on PATH: `apt-get install -y openjdk-17-jre-headless` (.ci/run does)")
    root = tmp_path_factory.mktemp("spark")
    generate_company(root / "sources", EMPLOYEES, YEARS, date(2026, 9, 30), SEED, progress=False)
    common = {"sources_dir": root / "sources", "pseudonym_key": TEST_PSEUDONYM_KEY}
    duck = Settings(warehouse_dir=root / "duckdb", **common)
    ingest(duck)
    dbt_build(duck, root / "duckdb-dbt-target")
    spark = Settings(warehouse_dir=root / "spark", build_target="spark", **common)
    spark.warehouse_dir.mkdir()
    shutil.copy2(duck.raw_db, spark.raw_db)
    build_on(spark)
    return duck, spark


def test_dbt_on_spark_builds_what_dbt_on_duckdb_builds(builds):
    duck, spark = builds
    assert compare_tables(duck.build_db, spark.build_db, targets.BUILT_SCHEMAS) == []
    counts = "select schema_name, count(*) from duckdb_tables() group by 1 order by 1"
    with duckdb.connect(str(duck.build_db), read_only=True) as con:
        expected = con.execute(counts).fetchall()
    with duckdb.connect(str(spark.build_db), read_only=True) as con:
        # everything dbt builds (models and seeds) came back from Spark, people included
        assert con.execute(counts).fetchall() == expected
        assert len(expected) == 4
        assert con.execute("select count(*) from marts.dim_employee").fetchone()[0] > 20


def test_the_pseudonym_key_is_in_no_file_the_spark_build_left(builds):
    _duck, spark = builds
    key = TEST_PSEUDONYM_KEY.encode()
    folders = [spark.warehouse_dir, DBT_PROJECT_DIR / "target"]
    leaked = [
        p for folder in folders for p in folder.rglob("*") if p.is_file() and key in p.read_bytes()
    ]
    assert leaked == []
