"""Vendor exports through dbt: people linked across HRIS, LMS and incident tool; marts built.

The expected figures are worked out by hand from tests/fixtures/vendors/ (see each assert).
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.ingest import ingest_all
from pipelines.lib.settings import Settings
from tests.conftest import dbt_env, run_dbt

VENDORS = Path(__file__).parent / "fixtures" / "vendors"
PLACEMENT = {
    "Employee Report.csv": "hris",
    "Issued Badges.csv": "lms",
    "Users - Courses.csv": "lms",
    "incidents.csv": "incidents",
}
# a second Katherine Johnson (another division, our own format under a contract name): the
# incident tool's "Katherine Johnson" is now ambiguous and must not be linked to either
NAMESAKE = (
    "employee_id,first_name,last_name,work_email,hire_date\n"
    "300,Katherine,Johnson,k.johnson@example.com,2024-01-08\n"
)


@pytest.fixture(scope="module")
def marts(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    """The build file; the figures are read from the marts' unsuppressed detail (schema
    restricted): this company has six people, so the published marts hide them."""
    root = tmp_path_factory.mktemp("vendor_wh")
    for folder in ("hris", "lms", "incidents", "fleet"):
        (root / "sources" / folder).mkdir(parents=True)
    for name, folder in PLACEMENT.items():
        shutil.copyfile(VENDORS / name, root / "sources" / folder / name)
    shutil.copyfile(VENDORS / "sources.yml", root / "sources" / "sources.yml")
    (root / "sources" / "hris" / "employees_2024-01.csv").write_text(NAMESAKE)
    settings = Settings(sources_dir=root / "sources", warehouse_dir=root / "wh", settle_seconds=0)
    results = ingest_all(settings)
    assert not any(r.files_failed or r.unknown_files for r in results.values())
    run_dbt(
        [
            "build",
            "--select",
            "+attrition +certification_coverage +identity_match +incident_downtime",
            "--vars",
            '{"as_of_date": "2024-10-31"}',
        ],
        dbt_env(settings.warehouse_dir),
    )
    con = duckdb.connect(str(settings.build_db), read_only=True)
    yield con
    con.close()


def test_responders_link_by_unique_name_and_ambiguous_names_stay_unlinked(marts):
    row = marts.execute(
        "SELECT records, matched, matched_by_name, ambiguous_names FROM marts.identity_match "
        "WHERE source = 'incident_responders'"
    ).fetchone()
    # Ada (1041), Alan (1042), Grace (1045) by name; Katherine on 1042 and 1043 is ambiguous
    assert row == (5, 3, 3, 2)
    lms = marts.execute(
        "SELECT records, matched FROM marts.identity_match WHERE source = 'lms_certifications'"
    ).fetchone()
    assert lms == (4, 4)  # Alan.Turing@Example.com links after normalising the case


def test_attrition_reads_bamboohr_termination_types(marts):
    rows = marts.execute(
        "SELECT period_start, separations, voluntary_separations, involuntary_separations, "
        "regrettable_separations FROM restricted.attrition WHERE period_type = 'quarter' "
        "AND segment_type = 'all' AND separations > 0 ORDER BY period_start"
    ).fetchall()
    # Dijkstra 03/29/2024 Termination (Involuntary); Hopper 06/28/2024 Resignation, Regrettable
    assert rows == [(date(2024, 1, 1), 1, 0, 1, 0), (date(2024, 4, 1), 1, 1, 0, 1)]


def test_coverage_from_credly_badges(marts):
    rows = dict(
        (m, (h, c))
        for m, h, c in marts.execute(
            "SELECT month_end, headcount, any_cert_headcount FROM restricted.certification_coverage "
            "WHERE segment_type = 'all' AND month_end IN ('2024-01-31', '2024-06-30')"
        ).fetchall()
    )
    # January: Liskov, Lovelace, Hopper, Turing, Dijkstra, Johnson employed; Lovelace and
    # Turing hold active badges (Hopper's was revoked and quarantined).
    # June: Hopper and Dijkstra gone; Liskov (June 3), Lovelace, Turing, Johnson (CKA) certified.
    assert rows == {date(2024, 1, 31): (6, 2), date(2024, 6, 30): (4, 4)}


def test_downtime_falls_back_to_opened_to_resolved(marts):
    total = marts.execute(
        "SELECT sum(downtime_minutes) FROM restricted.incident_downtime"
    ).fetchone()
    # 1041 14:03:11-15:41:02 = 97.85; 1042 02:15-06:40 (-08:00) = 265; 1043 = 30; 1045 open
    assert total[0] == pytest.approx(97.85 + 265 + 30)


def test_without_a_fleet_export_roles_need_what_they_need_at_every_fleet_size(marts):
    rows = marts.execute(
        "SELECT segment_value, required_cert_compliant_headcount "
        "FROM restricted.certification_coverage "
        "WHERE segment_type = 'role_family' AND month_end = DATE '2024-10-31' ORDER BY 1"
    ).fetchall()
    # No fleet export, so no fleet size: the seed's team templates require NCP-AII of a senior
    # engineer, a storage specialist and an infrastructure lead at every size, NCP-AIN of a
    # network specialist, NCA-AIIO of an operations engineer. Only the senior engineer holds
    # what is required (NCP-AII); the storage specialist holds CKA, the lead NCP-AIO, the
    # network specialist NCA-AIIO, the operations engineer nothing active.
    assert rows == [
        ("infrastructure_lead", 0),
        ("network_specialist", 0),
        ("operations_engineer", 0),
        ("senior_engineer", 1),
        ("storage_specialist", 0),
    ]
