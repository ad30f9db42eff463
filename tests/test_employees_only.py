"""Only the employees export delivered: every mart the data support is built, and what is
missing is named (marts.source_deliveries, the report's first page).

The employees file is written here; the expected figures are counted from it by hand.
"""

from __future__ import annotations

import duckdb
import pytest

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.deliveries import delivery_table, write_source_deliveries
from pipelines.lib.ingest import ingest_all
from pipelines.lib.ingest.check import MISSING_CONSEQUENCE
from pipelines.lib.report.data import Marts
from pipelines.lib.report.sections.deliveries import data_gaps
from tests.conftest import dbt_env, run_dbt

# Ten people hired in 2023; two leave in March 2024 (one voluntarily), one joins in May 2024.
# Delivered as the January 2024 snapshot: the warehouse history starts there.
EMPLOYEES = """employee_id,first_name,last_name,work_email,hire_date,termination_date,termination_type
1,A,One,a1@example.com,2023-01-09,,
2,B,Two,b2@example.com,2023-01-09,,
3,C,Three,c3@example.com,2023-02-06,,
4,D,Four,d4@example.com,2023-02-06,,
5,E,Five,e5@example.com,2023-03-06,2024-03-15,voluntary
6,F,Six,f6@example.com,2023-03-06,2024-03-29,involuntary
7,G,Seven,g7@example.com,2023-04-03,,
8,H,Eight,h8@example.com,2023-04-03,,
9,I,Nine,i9@example.com,2023-05-08,,
10,J,Ten,j10@example.com,2023-05-08,,
11,K,Eleven,k11@example.com,2024-05-13,,
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    from pipelines.lib.settings import Settings

    root = tmp_path_factory.mktemp("employees_only")
    for folder in ("hris", "lms", "incidents", "fleet"):
        (root / "sources" / folder).mkdir(parents=True)
    (root / "sources" / "hris" / "employees_2024-01.csv").write_text(EMPLOYEES)
    settings = Settings(sources_dir=root / "sources", warehouse_dir=root / "wh", settle_seconds=0)
    results = ingest_all(settings)
    assert results["employees"].rows_loaded == 11
    run_dbt(
        [
            "build",
            "--select",
            "+restricted_attrition +restricted_certification_coverage +dim_employee",
            "--vars",
            '{"as_of_date": "2024-06-30"}',
        ],
        dbt_env(settings.warehouse_dir),
    )
    with duckdb.connect(str(settings.build_db)) as con:
        missing = write_source_deliveries(con, settings.raw_db)
    con = duckdb.connect(str(settings.build_db), read_only=True)
    yield settings, con, missing
    con.close()


def test_without_job_history_every_employee_is_in_scope(built):
    _, con, _ = built
    month_end = con.execute(
        "SELECT headcount FROM restricted.certification_coverage "
        "WHERE segment_type = 'all' AND month_end = DATE '2024-06-30'"
    ).fetchone()
    assert month_end == (9,)  # 10 hired in 2023, 2 left in March, 1 joined in May
    team = con.execute(
        "SELECT DISTINCT segment_value FROM restricted.certification_coverage "
        "WHERE segment_type = 'team'"
    ).fetchall()
    assert team == [("unknown",)]


def test_attrition_counts_the_leavers_without_job_history(built):
    _, con, _ = built
    march = con.execute(
        "SELECT headcount_start, separations, voluntary_separations, headcount_end "
        "FROM restricted.attrition WHERE period_type = 'month' AND segment_type = 'all' "
        "AND period_start = DATE '2024-03-01'"
    ).fetchone()
    assert march == (10, 2, 1, 8)


def test_role_requirements_are_unknown_not_met_when_roles_are_unknown(built):
    _, con, _ = built
    share = con.execute(
        "SELECT required_cert_compliance_share FROM restricted.certification_coverage "
        "WHERE segment_type = 'all' AND month_end = DATE '2024-06-30'"
    ).fetchone()
    assert share == (None,)  # not 100 %: nobody's role is known, so nothing can be required


def test_source_deliveries_names_every_missing_export_and_its_cost(built):
    settings, con, missing = built
    assert missing == [name for name in EXPORTS if name != "employees"]
    rows = con.execute(
        "SELECT export, delivered, active_files, rows_loaded, first_period, if_missing "
        "FROM marts.source_deliveries ORDER BY export"
    ).fetchall()
    assert len(rows) == len(EXPORTS)
    by_export = {r[0]: r[1:] for r in rows}
    assert by_export["employees"] == (True, 1, 11, "2024-01", None)
    assert by_export["gpu_fleet"] == (False, 0, 0, None, MISSING_CONSEQUENCE["gpu_fleet"])
    # the tool each export came from: our own format, one file
    systems = dict(
        con.execute("SELECT export, source_systems FROM marts.source_deliveries").fetchall()
    )
    assert systems["employees"] == "talent-metrics (1)" and systems["gpu_fleet"] is None
    comment = con.execute(
        "SELECT comment FROM duckdb_tables() WHERE table_name = 'source_deliveries'"
    ).fetchone()[0]
    assert "grain: one row per export" in comment
    assert delivery_table(settings.raw_db).num_rows == len(EXPORTS)


def test_report_first_page_lists_what_was_not_delivered(built):
    settings, con, _ = built
    marts = Marts(
        {"source_deliveries": con.execute("SELECT * FROM marts.source_deliveries").df()},
        settings.build_db,
    )
    gaps = data_gaps(marts)
    assert len(gaps) == len(EXPORTS) - 1
    assert "gpu_fleet: no fleet export: team templates by fleet size not shown." in gaps
