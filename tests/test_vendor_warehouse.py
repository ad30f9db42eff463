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
    # Alan.Turing@Example.com links after normalising the case; Hopper's revoked badge has no
    # revocation date, ends on its issue date and is quarantined (never held): four awards
    assert lms == (4, 4)


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
    # Turing hold active badges (Hopper's was revoked; this export gives no revocation date, so
    # it ends on its issue date, 2023-09-01: never held, the row is quarantined).
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


# --- two tools for one export --------------------------------------------------------------------

TWO_TOOLS = {
    "incidents.csv": ("incidents", VENDORS / "incidents.csv"),  # PagerDuty
    "incident.csv": ("incidents", VENDORS / "more" / "incident.csv"),  # ServiceNow
    "Employee Report.csv": ("hris", VENDORS / "Employee Report.csv"),  # BambooHR
    # Personio during the migration: 101, 103 and 104 also in BambooHR, 1004 new
    "Mitarbeiter_Export_Personio.csv": (
        "hris",
        VENDORS / "variants" / "Mitarbeiter_Export_Personio.csv",
    ),
}


@pytest.fixture(scope="module")
def two_tools(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    """Both incident tools and both HRIS of one month, through staging."""
    root = tmp_path_factory.mktemp("two_tools_wh")
    for folder in ("hris", "lms", "incidents", "fleet"):
        (root / "sources" / folder).mkdir(parents=True)
    for name, (folder, path) in TWO_TOOLS.items():
        shutil.copyfile(path, root / "sources" / folder / name)
    (root / "sources" / "sources.yml").write_text(
        "files:\n"
        + "".join(
            f'  "{n}": {{period: {"2024-03" if f == "incidents" else "2024-10"}}}\n'
            for n, (f, _) in TWO_TOOLS.items()
        )
    )
    settings = Settings(sources_dir=root / "sources", warehouse_dir=root / "wh", settle_seconds=0)
    results = ingest_all(settings)
    assert not any(r.files_failed or r.unknown_files for r in results.values())
    run_dbt(
        [
            "build",
            "--select",
            "+stg_incidents__responders +stg_incidents__incidents +stg_hris__employees "
            "+stg_hris__job_history",
            "--exclude",
            "test_type:unit",
        ],
        dbt_env(settings.warehouse_dir),
    )
    con = duckdb.connect(str(settings.build_db), read_only=True)
    yield con
    con.close()


def test_two_incident_tools_both_count(two_tools):
    # PagerDuty 1041-1043 and 1045 (1044 quarantined), ServiceNow INC0010031 and INC0010032
    assert two_tools.execute(
        "SELECT count(*), count(DISTINCT incident_number) FROM staging.stg_incidents__incidents"
    ).fetchone() == (6, 6)
    # PagerDuty 5 responder rows, ServiceNow 3
    assert two_tools.execute(
        "SELECT count(*) FROM staging.stg_incidents__responders"
    ).fetchone() == (8,)


def test_a_person_both_hris_list_is_one_spell(two_tools):
    # BambooHR's 8 loaded spells and Personio's 4, of which 101, 103 and 104 are the same
    # (employee number, hire date): 9 spells, one row each
    rows = two_tools.execute(
        "SELECT count(*), count(DISTINCT (person_key, hire_date)) FROM staging.stg_hris__employees"
    ).fetchone()
    assert rows == (9, 9)
    jobs = two_tools.execute(
        "SELECT count(*), count(DISTINCT (person_key, effective_date)) "
        "FROM staging.stg_hris__job_history"
    ).fetchone()
    assert jobs == (9, 9)
