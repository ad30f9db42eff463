"""Export variants the profiles read besides their usual shape, each from a fixture written the
way the tool writes it (tests/fixtures/vendors/variants/README.md), alone and together.

The expected values are read off the fixture files by hand (see each assert).
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.ingest import ingest_all, ingest_export
from pipelines.lib.ingest.check import check_sources
from pipelines.lib.ingest.profiles import ProfileError, load_profiles, parse_profile
from pipelines.lib.ingest.vendor import name_part
from pipelines.lib.settings import Settings

VENDORS = Path(__file__).parent / "fixtures" / "vendors"
VARIANTS = VENDORS / "variants"


def query(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return con.execute(sql).fetchall()


def drop(settings: Settings, source: Path, folder: str, name: str | None = None) -> Path:
    target = settings.sources_dir / folder / (name or source.name)
    shutil.copyfile(source, target)
    return target


# --- one name column ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("full", "first", "last"),
    [
        ("Priya Raman", "Priya", "Raman"),
        ("Chen, Mei", "Mei", "Chen"),  # "Last, First"
        ("Ana Maria dos Santos (21004)", "Ana Maria dos", "Santos"),  # the "(id)" Workday adds
        ("Margaret Hamilton, Jr.", "Margaret Hamilton,", "Jr."),  # a suffix is no "Last, First"
        ("Suharto", "Suharto", "Suharto"),  # one word: both parts
    ],
)
def test_a_full_name_splits_into_parts_that_join_to_the_name(full, first, last):
    assert (name_part(full, "first"), name_part(full, "last")) == (first, last)
    # what the name link joins again (stg_hris__person_names): the full name as written
    if "," not in full and "(" not in full and " " in full:
        assert f"{first} {last}" == full


def test_last_first_order_is_the_profiles_to_say():
    assert name_part("Raman Priya", "last", "last first") == "Raman"
    assert name_part("Raman Priya", "first", "last first") == "Priya"


def test_workday_report_with_the_single_worker_field_loads_both_exports(settings):
    drop(settings, VARIANTS / "Worker_Report.csv", "hris")
    results = ingest_all(settings)
    assert not results["employees"].files_failed and not results["employees"].not_loaded
    assert "workday" in results["employees"].recognised["hris/Worker_Report.csv"]
    names = query(settings, "SELECT employee_id, first_name, last_name FROM employees ORDER BY 1")
    assert names == [
        ("21001", "Priya", "Raman"),
        ("21002", "Tomás", "Ortega"),
        ("21003", "Mei", "Chen"),
        ("21004", "Ana Maria dos", "Santos"),
        ("21005", "Suharto", "Suharto"),
    ]
    assert query(settings, "SELECT count(*), count(DISTINCT team) FROM job_history") == [(5, 2)]
    # one period for the file in both exports: the latest date over both (Ortega left 02/29)
    assert query(settings, "SELECT DISTINCT period, source_system, status FROM manifest") == [
        ("2024-02-29", "Workday", "active")
    ]


# --- completion --------------------------------------------------------------------------------


def test_moodle_yes_no_completion_column(settings):
    drop(settings, VARIANTS / "Course completion_2024-06.csv", "lms")
    result = ingest_export(settings, "enrolments")
    assert (result.files_loaded, result.rows_loaded, result.rows_quarantined) == (1, 3, 0)
    rows = query(
        settings,
        "SELECT enrolment_id, status, enrolled_on, completed_on FROM enrolments ORDER BY 1",
    )
    assert rows == [
        ("GPU-OPS-101:mei.chen@example.com", "in_progress", date(2024, 3, 1), None),
        (
            "GPU-OPS-101:priya.raman@example.com",
            "completed",
            date(2024, 1, 8),
            date(2024, 2, 20),
        ),
        ("IB-101:mei.chen@example.com", "completed", date(2024, 1, 15), date(2024, 1, 31)),
    ]


def test_moodle_completion_from_the_completion_time_alone(settings):
    drop(settings, VARIANTS / "course_completions_2024-07.csv", "lms")
    result = ingest_export(settings, "enrolments")
    assert (result.files_loaded, result.rows_loaded, result.rows_quarantined) == (1, 2, 0)
    rows = query(
        settings, "SELECT learner_email, status, enrolled_on, completed_on FROM enrolments"
    )
    # 1708437780 = 2024-02-20 14:03 UTC; 0 = never completed
    assert sorted(rows) == [
        ("mei.chen@example.com", "in_progress", date(2024, 3, 1), None),
        ("priya.raman@example.com", "completed", date(2024, 1, 8), date(2024, 2, 20)),
    ]


# --- Credly states -----------------------------------------------------------------------------


def test_every_credly_state_is_an_award_with_its_end(settings):
    drop(settings, VARIANTS / "Issued Badges.csv", "lms")
    result = ingest_export(settings, "certifications")
    assert (result.rows_loaded, result.rows_quarantined) == (4, 2)
    got = {
        r[0][-1]: r[1:]
        for r in query(
            settings, "SELECT attempt_id, result, issued_on, expires_on FROM certifications"
        )
    }
    assert got["1"] == ("pass", date(2023, 5, 10), date(2025, 5, 10))  # accepted
    assert got["2"] == ("pass", date(2024, 1, 3), date(2026, 1, 3))  # pending
    assert got["3"] == ("pass", date(2022, 2, 20), date(2025, 2, 20))  # rejected by the earner
    assert got["5"] == ("pass", date(2021, 6, 3), date(2023, 6, 3))  # expired: its expiry date
    # revoked, and this export has no revocation date: it ends on its issue date, an award
    # never held (line 5); line 7 is a state Credly does not have
    (revoked, unknown) = query(
        settings, "SELECT line_number, reason FROM quarantine ORDER BY line_number"
    )
    assert "4" not in got and revoked[0] == 5
    assert revoked[1].startswith("issued_on_before_expires_on: issued_on ")
    assert unknown[0] == 7 and '"suspended" is not one of pass, fail' in unknown[1]


def test_a_revoked_badge_ends_on_its_revocation_date(settings):
    (settings.sources_dir / "lms" / "badges.csv").write_text(
        "Badge ID,Badge Template Name,Recipient Email,Issued At,Expires At,State,Revoked At\n"
        "b1,CKA: Certified Kubernetes Administrator,mei.chen@example.com,"
        "2023-02-01T09:00:00Z,2026-02-01T09:00:00Z,revoked,2024-04-15T12:00:00Z\n"
        "b2,CKA: Certified Kubernetes Administrator,priya.raman@example.com,"
        "2023-02-01T09:00:00Z,2026-02-01T09:00:00Z,accepted,\n"
    )
    ingest_export(settings, "certifications")
    assert query(
        settings, "SELECT attempt_id, result, expires_on FROM certifications ORDER BY 1"
    ) == [("b1", "pass", date(2024, 4, 15)), ("b2", "pass", date(2026, 2, 1))]


def test_when_conditions_are_checked_when_the_profile_is_read():
    base = {"name": "x", "folder": "lms", "recognise": ["A"]}
    columns = {
        "attempt_id": "A",
        "learner_email": "A",
        "certification_code": "A",
        "exam_date": "A",
        "result": {"value": "pass", "when": [{"column": "S", "then": {"value": "fail"}}]},
    }
    with pytest.raises(ProfileError, match=r"result.when\[0\]: give `column`, one of `in`"):
        parse_profile({**base, "outputs": {"certifications": {"columns": columns}}}, "x.yaml")
    columns["result"] = {"full_name": ["Name"]}
    with pytest.raises(ProfileError, match="needs `part: first` or `part: last`"):
        parse_profile({**base, "outputs": {"certifications": {"columns": columns}}}, "x.yaml")


def test_a_condition_on_a_column_the_header_lacks_never_holds(settings):
    """`{column: X, set: false}` holds for an empty X, not for a header without X: a customer's
    Moodle profile that reads an empty completion time as "enrolled" keeps the status column's
    word for a report that has no completion time at all."""
    shipped = Path(__file__).parents[1] / "pipelines/lib/ingest/profiles/moodle.yaml"
    text = shipped.read_text()
    marker = "then: {value: completed}}\n"
    assert marker in text
    (settings.sources_dir / "profiles").mkdir()
    (settings.sources_dir / "profiles" / "moodle.yaml").write_text(
        text.replace(
            marker,
            marker
            + "          - {column: [Time completed], set: false, then: {value: enrolled}}\n",
        )
    )
    lms = settings.sources_dir / "lms"
    (lms / "Course participation_2024-03.csv").write_text(
        "Course short name,Email address,Time enrolled,Course completion status\n"
        'GPU-OPS-101,mei.chen@example.com,"Friday, 1 March 2024, 10:30 AM",Not complete\n'
    )
    (lms / "Course participation_2024-04.csv").write_text(
        "Course short name,Email address,Time enrolled,Course completion status,Time completed\n"
        'IB-101,mei.chen@example.com,"Monday, 1 April 2024, 10:30 AM",Not complete,\n'
    )
    ingest_export(settings, "enrolments")
    assert query(settings, "SELECT course_id, status FROM enrolments ORDER BY 1") == [
        ("GPU-OPS-101", "in_progress"),  # no "Time completed" column: the status column's word
        ("IB-101", "enrolled"),  # an empty "Time completed": the condition holds
    ]


# --- all variants together ------------------------------------------------------------------------


def test_all_variants_together_load_side_by_side(settings):
    drop(settings, VARIANTS / "Worker_Report.csv", "hris")
    drop(settings, VARIANTS / "Course completion_2024-06.csv", "lms")
    drop(settings, VARIANTS / "course_completions_2024-07.csv", "lms")
    drop(settings, VARIANTS / "Issued Badges.csv", "lms")
    drop(settings, VENDORS / "more" / "Mitarbeiter_Export.csv", "hris")
    report = check_sources(settings.sources_dir)
    assert {f.status for f in report.files if f.export} == {"loads"}
    results = ingest_all(settings)
    assert not any(r.files_failed or r.unknown_files for r in results.values())
    rows = query(
        settings,
        "SELECT file_name, export, source_system, status, rows_loaded FROM manifest "
        "ORDER BY file_name, export",
    )
    assert rows == [
        ("Course completion_2024-06.csv", "enrolments", "Moodle", "active", 3),
        ("Issued Badges.csv", "certifications", "Credly", "active", 4),
        ("Mitarbeiter_Export.csv", "employees", "Personio", "active", 3),
        ("Mitarbeiter_Export.csv", "job_history", "Personio", "active", 3),
        ("Worker_Report.csv", "employees", "Workday", "active", 5),
        ("Worker_Report.csv", "job_history", "Workday", "active", 5),
        ("course_completions_2024-07.csv", "enrolments", "Moodle", "active", 2),
    ]


def test_shipped_profiles_list_every_header_their_rules_read():
    """The documentation of each profile (sources/README.md) is rendered from these rules;
    a full-name column and a `when` condition's column count as headers the profile reads."""
    profiles = load_profiles()
    assert "worker" in profiles["workday"].used_headers()
    assert "time completed" in profiles["moodle"].used_headers()
    assert "revoked at" in profiles["credly"].used_headers()
