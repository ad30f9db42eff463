"""Vendor exports dropped in under the tools' own names: recognised, mapped, loaded.

Fixtures in tests/fixtures/vendors/ are written by hand as each tool produces them. Planted
faults: BambooHR line 9 has hire date 13/45/2021 (quarantined), PagerDuty line 5 is dated 2099
(quarantined, out of range). Credly line 5 is a revoked badge without a revocation date: the
profile ends it on its issue date, an award never held, which the row rule
issued_on_before_expires_on quarantines while the rest of the file loads.
"""

from __future__ import annotations

import csv
import shutil
import zipfile
from datetime import UTC, date, datetime
from pathlib import Path
from xml.sax.saxutils import escape

import duckdb
import pytest

from pipelines.lib.ingest import ingest_all, ingest_export, rebuild_raw_from_archive
from pipelines.lib.ingest.check import check_sources, files_not_fully_loaded, missing_exports
from pipelines.lib.ingest.profiles import (
    ProfileError,
    load_profiles,
    parse_profile,
    recognise,
)
from pipelines.lib.settings import Settings

VENDORS = Path(__file__).parent / "fixtures" / "vendors"
PLACEMENT = {
    "Employee Report.csv": "hris",
    "Issued Badges.csv": "lms",
    "Users - Courses.csv": "lms",
    "incidents.csv": "incidents",
}


def drop_company(settings: Settings) -> None:
    for name, folder in PLACEMENT.items():
        shutil.copyfile(VENDORS / name, settings.sources_dir / folder / name)
    shutil.copyfile(VENDORS / "sources.yml", settings.sources_dir / "sources.yml")


def query(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return con.execute(sql).fetchall()


def write_xlsx(path: Path, rows: list[list[str]]) -> None:
    """A minimal workbook (inline strings), as Excel's Open XML format defines it."""

    def cell(ref: str, v: str) -> str:
        return f'<c r="{ref}" t="inlineStr"><is><t>{escape(v)}</t></is></c>'

    def col(i: int) -> str:
        return chr(ord("A") + i)

    sheet_rows = "".join(
        f'<row r="{r + 1}">'
        + "".join(cell(f"{col(i)}{r + 1}", v) for i, v in enumerate(row) if v)
        + "</row>"
        for r, row in enumerate(rows)
    )
    ns = "http://schemas.openxmlformats.org"
    files = {
        "[Content_Types].xml": (
            f'<Types xmlns="{ns}/package/2006/content-types">'
            '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
            '<Default Extension="xml" ContentType="application/xml"/>'
            '<Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/>'
            '<Override PartName="/xl/worksheets/sheet1.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.worksheet+xml"/>'
            "</Types>"
        ),
        "_rels/.rels": (
            f'<Relationships xmlns="{ns}/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{ns}/officeDocument/2006/relationships/officeDocument" Target="xl/workbook.xml"/>'
            "</Relationships>"
        ),
        "xl/workbook.xml": (
            f'<workbook xmlns="{ns}/spreadsheetml/2006/main" xmlns:r="{ns}/officeDocument/2006/relationships">'
            '<sheets><sheet name="Report" sheetId="1" r:id="rId1"/></sheets></workbook>'
        ),
        "xl/_rels/workbook.xml.rels": (
            f'<Relationships xmlns="{ns}/package/2006/relationships">'
            f'<Relationship Id="rId1" Type="{ns}/officeDocument/2006/relationships/worksheet" Target="worksheets/sheet1.xml"/>'
            "</Relationships>"
        ),
        "xl/worksheets/sheet1.xml": (
            f'<worksheet xmlns="{ns}/spreadsheetml/2006/main"><sheetData>{sheet_rows}</sheetData></worksheet>'
        ),
    }
    with zipfile.ZipFile(path, "w") as z:
        for name, text in files.items():
            z.writestr(name, '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>' + text)


# --- one company across three systems ------------------------------------------------------------


def test_vendor_files_load_under_their_own_names(settings):
    drop_company(settings)
    results = ingest_all(settings)
    assert all(not r.unknown_files and not r.files_failed for r in results.values())
    assert "bamboohr" in results["employees"].recognised["hris/Employee Report.csv"]
    assert "data" in results["employees"].recognised["hris/Employee Report.csv"]
    # every delivered row is loaded or quarantined, per file and export
    rows = query(
        settings,
        "SELECT file_name, export, profile, period, period_source, rows_total, rows_loaded, "
        "rows_quarantined FROM manifest ORDER BY export",
    )
    assert {(r[0], r[1], r[2]) for r in rows} == {
        ("Employee Report.csv", "employees", "bamboohr"),
        ("Employee Report.csv", "job_history", "bamboohr"),
        ("Issued Badges.csv", "certifications", "credly"),
        ("Users - Courses.csv", "enrolments", "docebo"),
        ("incidents.csv", "incidents", "pagerduty"),
        ("incidents.csv", "responders", "pagerduty"),
    }
    for name, export, _, _, _, total, loaded, quarantined in rows:
        assert total == loaded + quarantined, (name, export)
    by = {(r[0], r[1]): r for r in rows}
    # period from the data: the latest hire or termination date (Hamilton hired 10/07/2024)
    assert by[("Employee Report.csv", "employees")][3:5] == ("2024-10-07", "data")
    assert by[("Employee Report.csv", "employees")][5:] == (9, 8, 1)
    assert by[("Issued Badges.csv", "certifications")][5:] == (5, 4, 1)
    assert by[("incidents.csv", "incidents")][5:] == (5, 4, 1)


def test_bamboohr_values_are_read_through_the_profile(settings):
    drop_company(settings)
    ingest_export(settings, "employees")
    got = {
        r[0]: r[1:]
        for r in query(
            settings,
            "SELECT employee_id, hire_date, original_hire_date, termination_date, "
            "termination_type, regrettable, last_name FROM employees",
        )
    }
    assert got["101"][0] == date(2021, 4, 12)  # 04/12/2021 is April 12 (US)
    assert got["102"][2:5] == (date(2024, 6, 28), "voluntary", True)
    assert got["105"][1:5] == (date(2016, 5, 2), date(2024, 3, 29), "involuntary", False)
    assert got["106"][5] == "Hamilton, Jr."  # quoted delimiter inside a value
    assert "107" not in got
    ((line, reason),) = query(settings, "SELECT line_number, reason FROM quarantine")
    assert line == 9 and "'Hire Date'" in reason and "13/45/2021" in reason


def test_one_vendor_file_feeds_two_exports(settings):
    drop_company(settings)
    ingest_all(settings)
    jobs = dict(
        query(settings, "SELECT employee_id, employment_type || '/' || team FROM job_history")
    )
    assert jobs["104"] == "employee/dgx-ber-2"  # Part-Time -> employee
    assert jobs["200"] == "employee/Finance"
    # same bytes, two exports: both active, neither a duplicate of the other
    statuses = query(
        settings, "SELECT DISTINCT status FROM manifest WHERE file_name = 'Employee Report.csv'"
    )
    assert statuses == [("active",)]


def test_credly_and_pagerduty_values(settings):
    drop_company(settings)
    ingest_all(settings)
    certs = {
        r[0]: r[1:]
        for r in query(
            settings,
            "SELECT learner_email, certification_code, result, exam_date, expires_on "
            "FROM certifications",
        )
    }
    assert certs["ada.lovelace@example.com"][:3] == ("NCP-AII", "pass", date(2023, 5, 10))
    # a timestamp with an offset gives the calendar date as written
    assert certs["barbara.liskov@example.com"][2] == date(2024, 6, 3)
    # the revoked badge ends on revocation; this export has no revocation date, so it ends on
    # its issue date: never held, quarantined (line 5) by the rule the blocking check tests
    assert "grace.hopper@example.com" not in certs
    ((line, reason),) = query(
        settings, "SELECT line_number, reason FROM quarantine WHERE export = 'certifications'"
    )
    assert line == 5
    assert reason.startswith("issued_on_before_expires_on: issued_on ")
    assert "is not before expires_on" in reason
    incidents = {
        r[0]: r[1:]
        for r in query(
            settings,
            "SELECT incident_number, severity, cluster, service, opened_at, resolved_at, "
            "downtime_minutes FROM incidents",
        )
    }
    assert incidents["1041"][:3] == ("sev2", "dgx-muc-1", "GPU Cluster MUC-1")
    assert incidents["1043"][0] == "sev4"  # low urgency
    assert incidents["1042"][3] == datetime(2024, 3, 2, 10, 15)  # -08:00 converted to UTC
    acked = dict(query(settings, "SELECT incident_number, acknowledged_at FROM incidents"))
    # created_on + seconds_to_first_ack: 2024-03-02T02:15-08:00 + 900 s; 1045 never acknowledged
    assert acked["1042"] == datetime(2024, 3, 2, 10, 30) and acked["1045"] is None
    assert incidents["1045"][4] is None and incidents["1041"][5] is None
    (reason,) = query(settings, "SELECT reason FROM quarantine WHERE export = 'incidents'")
    assert "2099" in reason[0] and "plausible range" in reason[0]


def test_responders_come_from_the_incident_export_by_name(settings):
    drop_company(settings)
    ingest_all(settings)
    got = query(
        settings,
        "SELECT incident_number, responder_name, role, responder_email FROM responders "
        "ORDER BY incident_number, role",
    )
    # assignee, acknowledged-by and resolved-by, each person once; the first listed is primary
    assert got == [
        ("1041", "Ada Lovelace", "primary", None),
        ("1042", "Alan Turing", "primary", None),
        ("1042", "Katherine Johnson", "secondary", None),
        ("1043", "Katherine Johnson", "primary", None),
        ("1045", "Grace Hopper", "primary", None),
    ]
    # the 2099 incident's responder row is quarantined with it: every row accounted for
    assert query(
        settings,
        "SELECT rows_total, rows_loaded, rows_quarantined FROM manifest WHERE export = 'responders'",
    ) == [(6, 5, 1)]


def test_rebuild_from_archive_replays_vendor_files(settings):
    drop_company(settings)
    ingest_all(settings)
    before = query(settings, "SELECT count(*) FROM employees")[0][0]
    counts = rebuild_raw_from_archive(settings)
    assert counts["employees"] == before == 8 and counts["job_history"] == 8


def test_workbook_is_read_like_csv(settings):
    rows = [
        line.split(",")
        for line in (VENDORS / "Employee Report.csv").read_text().splitlines()
        if "Hamilton" not in line
    ]
    write_xlsx(settings.sources_dir / "hris" / "Employee Report.xlsx", rows)
    result = ingest_export(settings, "employees")
    assert result.files_loaded == 1 and not result.unknown_files
    assert query(settings, "SELECT encoding, rows_total, rows_loaded FROM manifest") == [
        ("xlsx", 8, 7)
    ]


def test_tab_separated_exports_are_read_like_csv(settings):
    """A tool's tab-separated download (.tsv) and a contract file written with tabs load
    the same rows as their comma-separated originals."""
    with (VENDORS / "incidents.csv").open(newline="", encoding="utf-8-sig") as f:
        records = list(csv.reader(f))
    with (settings.sources_dir / "incidents" / "incidents.tsv").open("w", newline="") as f:
        csv.writer(f, delimiter="\t").writerows(records)
    contract = "cluster,as_of_date,site,gpu_model,gpu_count\nc1,2024-03-31,Munich,H100,8\n"
    (settings.sources_dir / "fleet" / "gpu_fleet_2024-03.csv").write_text(
        contract.replace(",", "\t")
    )
    results = ingest_all(settings)
    assert "pagerduty" in results["incidents"].recognised["incidents/incidents.tsv"]
    assert results["gpu_fleet"].rows_loaded == 1
    rows = query(
        settings,
        "SELECT file_name, export, delimiter, rows_total, rows_loaded, rows_quarantined "
        "FROM manifest WHERE export IN ('incidents', 'gpu_fleet') ORDER BY export",
    )
    # the same counts as the comma-separated incidents.csv in test_vendor_files_load_...
    assert rows == [
        ("gpu_fleet_2024-03.csv", "gpu_fleet", "\t", 1, 1, 0),
        ("incidents.tsv", "incidents", "\t", 5, 4, 1),
    ]


# --- recognition ---------------------------------------------------------------------------------


def test_every_shipped_profile_recognises_only_its_own_header():
    profiles = load_profiles()
    for name, profile in profiles.items():
        header = [h.split(" | ")[0] for h in profile.recognise]
        header += sorted({h for o in profile.outputs for r in o.rules.values() for h in r.columns})
        rec = recognise(header, profile.folder, profiles)
        assert rec.profile is not None and rec.profile.name == name, (name, rec.reason)


def test_ambiguous_header_names_candidates_and_sources_yml_settles_it(settings):
    shutil.copyfile(VENDORS / "Employee Report.csv", settings.sources_dir / "hris" / "export.csv")
    custom = (Path(__file__).parents[1] / "pipelines/lib/ingest/profiles/bamboohr.yaml").read_text()
    (settings.sources_dir / "profiles").mkdir()
    (settings.sources_dir / "profiles" / "acme.yaml").write_text(
        custom.replace("name: bamboohr", "name: acme-hr")
    )
    result = ingest_export(settings, "employees")
    assert result.unknown_files == ["hris/export.csv"]
    assert "acme-hr, bamboohr" in result.not_loaded["hris/export.csv"]
    assert "sources.yml" in result.not_loaded["hris/export.csv"]
    (settings.sources_dir / "sources.yml").write_text(
        "files:\n  export.csv: {profile: acme-hr, period: 2024-10}\n"
    )
    result = ingest_export(settings, "employees")
    assert result.files_loaded == 1
    assert query(settings, "SELECT profile, period, period_source FROM manifest") == [
        ("acme-hr", "2024-10", "sources.yml")
    ]


def test_customer_profile_overrides_a_shipped_one(settings):
    """A badge the shipped Credly map does not know is mapped by the customer's own copy."""
    text = (VENDORS / "Issued Badges.csv").read_text()
    text += (
        "0b6b5c8e-1f11-4c59-a2a4-6b1a0c9d0006,t6,Acme GPU Fleet Operator,ada.lovelace@example.com,"
        "Ada,Lovelace,2024-07-01T09:00:00Z,,accepted\n"
    )
    (settings.sources_dir / "lms" / "Issued Badges.csv").write_text(text)
    shipped = Path(__file__).parents[1] / "pipelines/lib/ingest/profiles/credly.yaml"
    (settings.sources_dir / "profiles").mkdir()
    (settings.sources_dir / "profiles" / "credly.yaml").write_text(
        shipped.read_text().replace(
            '"Red Hat Certified Engineer (RHCE)": RHCE',
            '"Red Hat Certified Engineer (RHCE)": RHCE\n          "Acme GPU Fleet Operator": ACME-GFO',
        )
    )
    ingest_export(settings, "certifications")
    codes = {r[0] for r in query(settings, "SELECT certification_code FROM certifications")}
    assert "ACME-GFO" in codes


def test_profile_errors_name_the_file_and_key():
    with pytest.raises(ProfileError, match="x.yaml: outputs.employees: required column"):
        parse_profile(
            {
                "name": "x",
                "folder": "hris",
                "recognise": ["A"],
                "outputs": {"employees": {"columns": {"employee_id": "A"}}},
            },
            "x.yaml",
        )
    with pytest.raises(ProfileError, match="not a column of the incidents contract"):
        parse_profile(
            {
                "name": "x",
                "folder": "incidents",
                "recognise": ["A"],
                "outputs": {"incidents": {"columns": {"gpu": "A"}}},
            },
            "x.yaml",
        )


# --- sources check and the summary ---------------------------------------------------------------


def test_sources_check_lists_every_file_and_writes_nothing(settings):
    drop_company(settings)
    (settings.sources_dir / "incidents" / "on-call notes.csv").write_text("when,who\n1,2\n")
    report = check_sources(settings.sources_dir)
    assert not settings.raw_db.exists()
    by = {(f.path, f.export): f for f in report.files}
    emp = by[("hris/Employee Report.csv", "employees")]
    assert (emp.profile, emp.rows, emp.loadable, emp.quarantined) == ("bamboohr", 9, 8, 1)
    assert (emp.period, emp.period_source, emp.encoding, emp.locale) == (
        "2024-10-07",
        "data",
        "utf-8",
        "en",
    )
    assert "13/45/2021" in emp.reasons[0][0] and emp.reasons[0][2] == 9
    notes = by[("incidents/on-call notes.csv", None)]
    assert notes.status == "unknown" and "closest profile" not in notes.note
    assert "gpu_fleet" in report.missing and "fleet size" in report.missing["gpu_fleet"]


def test_sources_check_names_the_closest_profile_and_its_missing_columns(settings):
    text = (VENDORS / "incidents.csv").read_text().replace("urgency", "severity_level")
    (settings.sources_dir / "incidents" / "incidents.csv").write_text(text)
    report = check_sources(settings.sources_dir)
    (f,) = [f for f in report.files if f.path == "incidents/incidents.csv"]
    assert f.status == "unknown"
    assert "closest profile pagerduty lacks urgency" in f.note


def test_files_not_fully_loaded_names_each_with_its_reason(settings):
    drop_company(settings)
    (settings.sources_dir / "fleet" / "gpu_fleet_2024-03.csv").mkdir()
    results = ingest_all(settings)
    issues = {(i.file, i.export): i for i in files_not_fully_loaded(settings.raw_db, results)}
    assert "13/45/2021" in issues[("Employee Report.csv", "employees")].reason
    # the revoked badge without a revocation date: its row, not the file
    badges = issues[("Issued Badges.csv", "certifications")]
    assert (badges.status, badges.loaded, badges.quarantined) == ("rows quarantined", 4, 1)
    assert "issued_on_before_expires_on" in badges.reason and "(line 5)" in badges.reason
    assert "a folder" in issues[("fleet/gpu_fleet_2024-03.csv", None)].reason
    assert ("Users - Courses.csv", "enrolments") not in issues  # loaded in full
    # the same bytes again under another name: named as a duplicate
    shutil.copyfile(VENDORS / "incidents.csv", settings.sources_dir / "incidents" / "copy.csv")
    later = datetime.now(UTC).replace(tzinfo=None)  # the manifest records UTC
    results = ingest_all(settings)
    issues = files_not_fully_loaded(settings.raw_db, results, since=later)
    names = {(i.file, i.status) for i in issues}
    assert ("copy.csv", "duplicate") in names
    assert not any(i.file == "Employee Report.csv" for i in issues)  # loaded in an earlier run


def test_missing_exports_are_named_with_what_they_cost(settings):
    drop_company(settings)
    ingest_all(settings)
    missing = missing_exports(settings.raw_db)
    assert set(missing) == {
        "contractor_hours",
        "courses",
        "gpu_fleet",
        "gpu_usage",
        "capacity_changes",
        "changes",
        "requisitions",
    }
    assert "replacement cost per exit stays assumed" in missing["requisitions"]
    assert missing["gpu_fleet"] == "no fleet export: team templates by fleet size not shown"


def test_sources_check_command_exit_code_follows_the_findings(settings):
    from typer.testing import CliRunner

    from pipelines.cli import app

    drop_company(settings)
    ok = CliRunner().invoke(app, ["sources", "check", str(settings.sources_dir)])
    assert ok.exit_code == 0, ok.output
    assert "hris/Employee Report.csv  ->  employees (BambooHR, profile bamboohr)" in ok.output
    assert "quarantined x1 (first at line 9)" in ok.output
    (settings.sources_dir / "lms" / "export (1).csv").write_text("a;b\n1;2\n")
    bad = CliRunner().invoke(app, ["sources", "check", str(settings.sources_dir)])
    assert bad.exit_code == 1 and "lms/export (1).csv  ->  MATCHES NOTHING" in bad.output


# --- one fixture per further profile ---------------------------------------------------------------

MORE = VENDORS / "more"
PROFILE_FIXTURES = [
    # file, folder, profile, {export: rows loaded}, (sql, expected)
    (
        "Mitarbeiter_Export.csv",
        "hris",
        "personio-de",
        {"employees": 3, "job_history": 3},
        (
            "SELECT e.termination_date, e.termination_type, j.fte, j.annual_salary_usd, "
            "e.first_name FROM employees e JOIN job_history j USING (employee_id) "
            "WHERE employee_id = '1002'",
            (date(2024, 3, 31), "voluntary", 0.8, 52000.0, "Anna"),
        ),
    ),
    (
        "Workday_Worker_Report.csv",
        "hris",
        "workday",
        {"employees": 3, "job_history": 3},
        (
            "SELECT e.original_hire_date, e.termination_type, e.regrettable, j.employment_type "
            "FROM employees e JOIN job_history j USING (employee_id) WHERE employee_id = '21002'",
            (date(2019, 1, 7), "voluntary", True, "employee"),
        ),
    ),
    (
        "People data report.csv",
        "hris",
        "hibob",
        {"employees": 3, "job_history": 3},
        (
            "SELECT e.hire_date, e.termination_date, e.termination_type, j.employment_type "
            "FROM employees e JOIN job_history j USING (employee_id) WHERE employee_id = 'H-502'",
            (date(2021, 6, 15), date(2024, 4, 30), "voluntary", "employee"),
        ),
    ),
    (
        "Rippling Employee Report.csv",
        "hris",
        "rippling",
        {"employees": 2, "job_history": 2},
        (
            "SELECT e.termination_type, j.employment_type, j.team FROM employees e "
            "JOIN job_history j USING (employee_id) WHERE employee_id = 'R-78'",
            ("involuntary", "employee", "dgx-sfo-1"),
        ),
    ),
    (
        "exam_results.csv",
        "lms",
        "certiverse",
        {"certifications": 3},
        (
            "SELECT result, exam_date, issued_on, score FROM certifications "
            "WHERE attempt_id = 'CV-88002'",
            ("fail", date(2024, 4, 2), None, 61.0),
        ),
    ),
    (
        "Course participation_2024-06.csv",
        "lms",
        "moodle",
        {"enrolments": 2},
        (
            "SELECT enrolment_id, status, enrolled_on, completed_on, _period FROM enrolments "
            "WHERE learner_email = 'priya.raman@example.com'",
            (
                "GPU-OPS-101:priya.raman@example.com",
                "completed",
                date(2024, 1, 8),
                date(2024, 2, 20),
                "2024-06",  # from the file name
            ),
        ),
    ),
    (
        "incidents (1).csv",
        "incidents",
        "opsgenie",
        {"incidents": 2},
        (
            "SELECT severity, opened_at, resolved_at, cluster FROM incidents "
            "WHERE incident_number = '311'",
            ("sev1", datetime(2024, 3, 5, 7, 52), datetime(2024, 3, 5, 10, 15), "dgx-muc-1"),
        ),
    ),
    (
        "Jira Service Management.csv",
        "incidents",
        "jira-service-management",
        {"incidents": 2, "responders": 2},
        (
            "SELECT i.severity, i.opened_at, i.resolved_at, i.cluster, r.responder_name, r.role "
            "FROM incidents i JOIN responders r USING (incident_number) "
            "WHERE incident_number = 'ITSM-1042'",
            (
                "sev1",
                datetime(2024, 3, 5, 8, 0),
                datetime(2024, 3, 5, 10, 15),
                "dgx-muc-1",
                "Mei Chen",
                "primary",
            ),
        ),
    ),
    (
        # two header rows (system keys, field labels): line 2 is skipped, not quarantined
        "Employee Export.csv",
        "hris",
        "successfactors",
        {"employees": 4, "job_history": 4},
        (
            "SELECT e.hire_date, e.last_name, j.manager_id, j.employment_type, j.team "
            "FROM employees e JOIN job_history j USING (employee_id) WHERE employee_id = 'sf1001'",
            (date(2019, 3, 1), "Müller", None, "employee", "dgx-muc-1"),  # NO_MANAGER: none
        ),
    ),
    (
        "Worker Report.csv",
        "hris",
        "adp-workforce-now",
        {"employees": 5, "job_history": 5},
        (
            # rehired 01/08/2024, first hired 05/02/2016, Part Time
            "SELECT e.hire_date, e.original_hire_date, j.effective_date, j.employment_type, "
            "j.site FROM employees e JOIN job_history j USING (employee_id) "
            "WHERE employee_id = 'G3ABCD003'",
            (date(2024, 1, 8), date(2016, 5, 2), date(2024, 1, 8), "employee", "San Jose"),
        ),
    ),
    (
        "Transcript Report.csv",
        "lms",
        "cornerstone",
        {"enrolments": 4},
        (
            "SELECT enrolment_id, status, enrolled_on, completed_on, score, hours_spent "
            "FROM enrolments WHERE learner_email = 'thanh.nguyen@example.com'",
            ("0a1b2c3d-0001:U-1002", "completed", date(2024, 1, 8), date(2024, 2, 20), 92.0, 6.5),
        ),
    ),
    (
        "incidents.csv",
        "incidents",
        "incident-io",
        {"incidents": 3, "responders": 2},  # INC-43 has no incident lead yet
        (
            "SELECT i.severity, i.cluster, i.opened_at, i.acknowledged_at, i.resolved_at, "
            "r.responder_name, r.role FROM incidents i JOIN responders r USING (incident_number) "
            "WHERE incident_number = 'INC-41'",
            (
                "sev1",
                "dgx-muc-1",
                datetime(2024, 3, 5, 7, 52),
                datetime(2024, 3, 5, 7, 58, 30),
                datetime(2024, 3, 5, 10, 15),
                "Jana Müller",
                "commander",
            ),
        ),
    ),
    (
        "incident.csv",
        "incidents",
        "servicenow",
        {"incidents": 2, "responders": 3},
        (
            "SELECT i.severity, i.service, string_agg(r.responder_name || ':' || r.role, ' ' "
            "ORDER BY r.role) FROM incidents i JOIN responders r USING (incident_number) "
            "WHERE incident_number = 'INC0010032' GROUP BY ALL",
            ("sev1", "GPU Cluster BER-2", "Mei Chen:primary Priya Raman:secondary"),
        ),
    ),
]


@pytest.mark.parametrize(
    ("file", "folder", "profile", "loaded", "probe"),
    PROFILE_FIXTURES,
    ids=[f[2] for f in PROFILE_FIXTURES],
)
def test_each_profile_loads_its_vendor_file(settings, file, folder, profile, loaded, probe):
    shutil.copyfile(MORE / file, settings.sources_dir / folder / file)
    shutil.copyfile(VENDORS / "sources.yml", settings.sources_dir / "sources.yml")
    results = ingest_all(settings)
    assert all(not r.unknown_files and not r.files_failed for r in results.values())
    rows = query(
        settings, "SELECT export, profile, rows_total, rows_loaded, rows_quarantined FROM manifest"
    )
    assert {r[0]: r[3] for r in rows} == loaded
    assert {r[1] for r in rows} == {profile}
    assert all(r[2] == r[3] + r[4] for r in rows)
    sql, expected = probe
    assert query(settings, sql) == [expected]


def test_api_field_name_exports_are_recognised_too(settings):
    """BambooHR's API field names and Credly's snake_case badge fields (domain reference)."""
    (settings.sources_dir / "hris" / "employees.csv").write_text(
        "employeeNumber,firstName,lastName,workEmail,hireDate,terminationDate,"
        "terminationTypeId,department,division,jobTitle,location,employmentStatus\n"
        "7,Ada,Lovelace,ada@example.com,2021-04-12,2024-01-31,Voluntary,dgx-1,"
        "AI Infrastructure,Senior Engineer,Munich,Full-Time\n"
    )
    (settings.sources_dir / "lms" / "badges.csv").write_text(
        "recipient_email,badge_template_id,issued_at,issued_to,issued_to_first_name,"
        "issued_to_last_name,expires_at\n"
        "ada@example.com,4f5e6d7c-0001,2023-05-10T09:12:44Z,Ada Lovelace,Ada,Lovelace,"
        "2025-05-10T09:12:44Z\n"
    )
    results = ingest_all(settings)
    assert "bamboohr" in results["employees"].recognised["hris/employees.csv"]
    assert "credly" in results["certifications"].recognised["lms/badges.csv"]
    assert query(settings, "SELECT termination_type FROM employees") == [("voluntary",)]
    assert query(
        settings, "SELECT attempt_id, certification_code, result, issued_on FROM certifications"
    ) == [
        (
            "ada@example.com:4f5e6d7c-0001:2023-05-10T09:12:44Z",
            "4f5e6d7c-0001",
            "pass",
            date(2023, 5, 10),
        )
    ]


def test_report_without_job_columns_loads_employees_and_names_the_gap(settings):
    rows = (VENDORS / "Employee Report.csv").read_text().splitlines()
    keep = [i for i, h in enumerate(rows[0].split(",")) if h not in ("Division", "Department")]
    text = "\n".join(",".join(r.split(",")[i] for i in keep) for r in rows if "Hamilton" not in r)
    (settings.sources_dir / "hris" / "Employee Report.csv").write_text(text + "\n")
    results = ingest_all(settings)
    assert results["employees"].files_loaded == 1
    assert results["job_history"].files_seen == 0
    gap = results["job_history"].not_loaded["hris/Employee Report.csv as job_history"]
    assert "division (from Division" in gap and "team (from Department" in gap


def test_shipped_profiles_read_the_same_with_libyaml_as_with_pure_python_yaml(monkeypatch):
    """The fast loader (libyaml) must give the profiles PyYAML's reference safe loader gives."""
    import yaml

    from pipelines.lib.ingest import profiles

    assert profiles._SAFE_LOADER is yaml.CSafeLoader  # the wheel ships libyaml on our platforms
    fast = profiles.load_profiles()
    monkeypatch.setattr(profiles, "_SAFE_LOADER", yaml.SafeLoader)
    assert profiles.load_profiles() == fast
    assert len(list(profiles.BUILTIN_DIR.glob("*.y*ml"))) > 1
