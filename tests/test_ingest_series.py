"""Delivery series: two tools for one export, corrections within a tool, one vendor file
feeding two exports, re-deliveries of several sizes, tools' exports under our file names.

A series is (export, source system, period): a correction replaces only its own tool's
delivery. Fixtures: tests/fixtures/vendors/ (PagerDuty `incidents.csv`, ServiceNow
`more/incident.csv`, BambooHR `Employee Report.csv`, Personio `variants/...`); the expected
counts are read off those files.
"""

from __future__ import annotations

import csv
import io
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.execution import RunOutcome, _add_delivery_issues
from pipelines.lib.deliveries import delivery_table
from pipelines.lib.ingest import ingest_all, ingest_export
from pipelines.lib.ingest.check import (
    check_sources,
    format_report,
    shrunk_redeliveries,
    sources_per_export,
)
from pipelines.lib.settings import Settings

VENDORS = Path(__file__).parent / "fixtures" / "vendors"
PAGERDUTY = VENDORS / "incidents.csv"
SERVICENOW = VENDORS / "more" / "incident.csv"
BAMBOOHR = VENDORS / "Employee Report.csv"
PERSONIO = VENDORS / "variants" / "Mitarbeiter_Export_Personio.csv"
CLUSTERS = "service_clusters:\n  GPU Cluster MUC-1: dgx-muc-1\n  GPU Cluster BER-2: dgx-ber-2\n"


def query(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return con.execute(sql).fetchall()


def sources_yml(settings: Settings, files: dict[str, str]) -> None:
    """Both tools' files of one month: the period each would have from its name."""
    lines = ["files:"] + [f'  "{name}": {{period: {period}}}' for name, period in files.items()]
    (settings.sources_dir / "sources.yml").write_text("\n".join(lines) + "\n" + CLUSTERS)


def statuses(settings: Settings) -> dict[tuple[str, str], str]:
    return {
        (name, export): status
        for name, export, status in query(
            settings, "SELECT file_name, export, status FROM manifest"
        )
    }


def pagerduty_rows() -> tuple[list[str], list[list[str]]]:
    with PAGERDUTY.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def write_csv(path: Path, header: list[str], rows: list[list[str]]) -> None:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows([header, *rows])
    path.write_text(out.getvalue(), encoding="utf-8")


# --- two tools, one export ----------------------------------------------------------------------


def test_two_incident_tools_of_one_month_both_count(settings):
    shutil.copyfile(PAGERDUTY, settings.sources_dir / "incidents" / "incidents.csv")
    shutil.copyfile(SERVICENOW, settings.sources_dir / "incidents" / "incident.csv")
    sources_yml(settings, {"incidents.csv": "2024-03", "incident.csv": "2024-03"})
    results = ingest_all(settings)
    assert results["incidents"].files_superseded == 0
    rows = query(
        settings,
        "SELECT file_name, export, source_system, period, status, rows_loaded FROM manifest "
        "ORDER BY file_name, export",
    )
    # ServiceNow: 2 incidents, 3 responders (INC0010032: Mei Chen and Priya Raman); PagerDuty:
    # 4 incidents (the 2099 one quarantined) and 5 responders
    assert rows == [
        ("incident.csv", "incidents", "ServiceNow", "2024-03", "active", 2),
        ("incident.csv", "responders", "ServiceNow", "2024-03", "active", 3),
        ("incidents.csv", "incidents", "PagerDuty", "2024-03", "active", 4),
        ("incidents.csv", "responders", "PagerDuty", "2024-03", "active", 5),
    ]
    assert sources_per_export(settings.raw_db) == {
        "incidents": [("PagerDuty", ["incidents.csv"]), ("ServiceNow", ["incident.csv"])],
        "responders": [("PagerDuty", ["incidents.csv"]), ("ServiceNow", ["incident.csv"])],
    }
    text = format_report(check_sources(settings.sources_dir))
    assert "    incidents: PagerDuty, ServiceNow\n" in text  # the dry run says so too
    table = {r["export"]: r for r in delivery_table(settings.raw_db).to_pylist()}
    assert table["incidents"]["source_systems"] == "PagerDuty (1), ServiceNow (1)"
    assert table["incidents"]["rows_loaded"] == 6


def test_a_correction_replaces_its_own_tools_delivery_only(settings):
    incidents = settings.sources_dir / "incidents"
    shutil.copyfile(PAGERDUTY, incidents / "incidents.csv")
    shutil.copyfile(SERVICENOW, incidents / "incident.csv")
    sources_yml(settings, {"incidents.csv": "2024-03", "incident.csv": "2024-03"})
    ingest_all(settings)
    # PagerDuty's corrected download: 1045 is resolved now
    header, rows = pagerduty_rows()
    rows[4][header.index("resolved_on")] = "2024-05-07T01:00:00Z"
    write_csv(incidents / "incidents.csv", header, rows)
    results = ingest_all(settings)
    assert results["incidents"].files_superseded == 1
    assert results["responders"].files_superseded == 1
    rows = query(
        settings,
        "SELECT source_system, status, count(*) FROM manifest GROUP BY ALL ORDER BY ALL",
    )
    # PagerDuty's first file is superseded in both its exports; ServiceNow's stays active
    assert rows == [
        ("PagerDuty", "active", 2),
        ("PagerDuty", "superseded", 2),
        ("ServiceNow", "active", 2),
    ]


def test_an_hris_migration_keeps_both_systems_and_both_exports(settings):
    shutil.copyfile(BAMBOOHR, settings.sources_dir / "hris" / BAMBOOHR.name)
    shutil.copyfile(PERSONIO, settings.sources_dir / "hris" / PERSONIO.name)
    sources_yml(settings, {BAMBOOHR.name: "2024-10", PERSONIO.name: "2024-10"})
    results = ingest_all(settings)
    assert not results["employees"].files_failed and not results["job_history"].files_failed
    assert query(
        settings,
        "SELECT file_name, export, source_system, status, rows_loaded, encoding FROM manifest "
        "ORDER BY file_name, export",
    ) == [
        ("Employee Report.csv", "employees", "BambooHR", "active", 8, "utf-8"),
        ("Employee Report.csv", "job_history", "BambooHR", "active", 8, "utf-8"),
        ("Mitarbeiter_Export_Personio.csv", "employees", "Personio", "active", 4, "cp1252"),
        ("Mitarbeiter_Export_Personio.csv", "job_history", "Personio", "active", 4, "cp1252"),
    ]
    # the three people both systems list carry the same number and hire date: one spell each
    # once staging keeps one row per natural key (tests/test_vendor_warehouse.py)
    assert query(
        settings,
        "SELECT count(*), count(DISTINCT (employee_id, hire_date)) FROM employees",
    ) == [(12, 9)]


# --- one vendor file, several exports -------------------------------------------------------------


def test_a_vendor_files_exports_share_one_period(settings):
    """The period from the data is the latest date over every export the file feeds: a
    correction that only resolves an incident later moves incidents and responders alike."""
    incidents = settings.sources_dir / "incidents"
    shutil.copyfile(PAGERDUTY, incidents / "incidents.csv")
    ingest_all(settings)
    header, rows = pagerduty_rows()
    rows[4][header.index("resolved_on")] = "2024-05-07T01:00:00Z"  # incidents' latest date
    write_csv(incidents / "incidents.csv", header, rows)
    ingest_all(settings)
    got = query(
        settings,
        "SELECT file_id, list(DISTINCT period), list(DISTINCT status) FROM manifest GROUP BY 1",
    )
    # each file has one period and one status over its two exports
    assert sorted((sorted(p), s) for _, p, s in got) == [
        (["2024-05-06"], ["active"]),
        (["2024-05-07"], ["active"]),
    ]


def test_a_re_delivery_shrinking_in_one_export_is_blocked_in_both(settings):
    incidents = settings.sources_dir / "incidents"
    shutil.copyfile(PAGERDUTY, incidents / "incidents.csv")
    sources_yml(settings, {"incidents.csv": "2024-03"})
    ingest_all(settings)
    header, rows = pagerduty_rows()
    people = [
        "assigned_to_user_names",
        "acknowledged_by_user_names",
        "resolved_by_user_name",
    ]
    for row in rows[:3]:  # the same incidents, but who responded is left out of three
        for col in people:
            row[header.index(col)] = ""
    write_csv(incidents / "incidents.csv", header, rows)
    results = ingest_all(settings)
    # responders would keep 1 of 5 rows (20 %): the whole file is blocked, incidents too
    (inc_message,) = [m for _, m in results["incidents"].files_failed]
    assert "responders rows" in inc_message and "allow_shrink" in inc_message
    assert len(results["responders"].files_failed) == 1
    assert query(
        settings, "SELECT export, status, count(*) FROM manifest GROUP BY ALL ORDER BY ALL"
    ) == [
        ("incidents", "active", 1),
        ("incidents", "failed", 1),
        ("responders", "active", 1),
        ("responders", "failed", 1),
    ]
    check = {(f.path, f.export): f.status for f in check_sources(settings.sources_dir).files}
    assert check == {
        ("incidents/incidents.csv", "incidents"): "loads",
        ("incidents/incidents.csv", "responders"): "loads",
    }  # the folder holds only the new file: nothing to compare it with before loading


def test_what_the_new_file_no_longer_gives_goes_with_the_file_it_replaces(settings):
    incidents = settings.sources_dir / "incidents"
    shutil.copyfile(PAGERDUTY, incidents / "incidents.csv")
    sources_yml(settings, {"incidents.csv": "2024-03"})
    ingest_all(settings)
    header, rows = pagerduty_rows()
    keep = [
        i
        for i, h in enumerate(header)
        if h
        not in ("assigned_to_user_names", "acknowledged_by_user_names", "resolved_by_user_name")
    ]
    write_csv(
        incidents / "incidents.csv",
        [header[i] for i in keep],
        [[r[i] for i in keep] for r in rows],
    )
    results = ingest_all(settings)
    assert "incidents/incidents.csv as responders" in results["responders"].not_loaded
    # the first file's responders no longer count once its incidents are replaced
    assert query(
        settings, "SELECT export, status, count(*) FROM manifest GROUP BY ALL ORDER BY ALL"
    ) == [
        ("incidents", "active", 1),
        ("incidents", "superseded", 1),
        ("responders", "superseded", 1),
    ]


# --- re-deliveries of several sizes ----------------------------------------------------------------

EMPLOYEES_HEADER = "employee_id,first_name,last_name,work_email,hire_date\n"


def employees(n: int) -> str:
    return EMPLOYEES_HEADER + "".join(
        f"{i},First{i},Last{i},p{i}@example.com,2026-08-{1 + i % 28:02d}\n" for i in range(n)
    )


@pytest.mark.parametrize(
    ("rows", "outcome"),
    [(16, "silent"), (13, "named"), (10, "named"), (9, "blocked")],
    ids=["84pct", "68pct", "53pct", "47pct"],
)
def test_a_shrinking_re_delivery_is_named_or_blocked_by_its_size(settings, rows, outcome):
    hris = settings.sources_dir / "hris"
    (hris / "employees_2026-08.csv").write_text(employees(19))
    ingest_export(settings, "employees")
    since = datetime.now(UTC).replace(tzinfo=None)
    (hris / "employees_2026-08_v2.csv").write_text(employees(rows))
    result = ingest_export(settings, "employees")
    active = query(settings, "SELECT file_name FROM manifest WHERE status = 'active'")
    named = shrunk_redeliveries(settings.raw_db, since=since)
    if outcome == "blocked":
        assert active == [("employees_2026-08.csv",)] and len(result.files_failed) == 1
        assert not named
        return
    assert active == [("employees_2026-08_v2.csv",)] and not result.files_failed
    if outcome == "silent":
        assert not named and not result.shrunk
        return
    (issue,) = named
    fewer = f"{1 - rows / 19:.0%}"
    assert issue.file == "employees_2026-08_v2.csv" and issue.export == "employees"
    assert "employees_2026-08.csv (19 rows)" in issue.reason
    assert f"with {rows} rows: {fewer} fewer" in issue.reason
    assert result.shrunk and "employees_2026-08.csv" in result.shrunk[0][1]
    assert query(
        settings,
        "SELECT replaced_rows, replaced_files FROM manifest WHERE status = 'active'",
    ) == [(19, "employees_2026-08.csv")]


def test_the_run_summary_names_shrunk_re_deliveries_and_both_tools(settings):
    hris = settings.sources_dir / "hris"
    (hris / "employees_2026-08.csv").write_text(employees(19))
    shutil.copyfile(PAGERDUTY, settings.sources_dir / "incidents" / "incidents.csv")
    shutil.copyfile(SERVICENOW, settings.sources_dir / "incidents" / "incident.csv")
    ingest_all(settings)
    since = datetime.now(UTC).replace(tzinfo=None)
    (hris / "employees_2026-08_v2.csv").write_text(employees(13))
    ingest_all(settings)
    outcome = RunOutcome(success=True, run_id="r1")
    _add_delivery_issues(outcome, settings, since)
    text = outcome.describe()
    assert "Re-delivered with noticeably fewer rows, loaded (1 file(s)):" in text
    assert (
        "employees_2026-08_v2.csv -> employees: replaced employees_2026-08.csv (19 rows) for "
        "employees 2026-08 from talent-metrics with 13 rows: 32% fewer" in text
    )
    assert "incidents: PagerDuty (incidents.csv); ServiceNow (incident.csv)" in text
    assert "responders: PagerDuty (incidents.csv); ServiceNow (incident.csv)" in text


# --- tools' exports under our file names ---------------------------------------------------------


def test_a_vendor_export_under_a_contract_name_is_read_with_its_profile(settings):
    shutil.copyfile(BAMBOOHR, settings.sources_dir / "hris" / "employees_2026-09.csv")
    results = ingest_all(settings)
    assert not results["employees"].files_failed
    assert "BambooHR export" in results["employees"].recognised["hris/employees_2026-09.csv"]
    assert query(
        settings,
        "SELECT export, profile, period, period_source, rows_loaded, rows_quarantined "
        "FROM manifest ORDER BY export",
    ) == [
        ("employees", "bamboohr", "2026-09", "file name", 8, 1),
        ("job_history", "bamboohr", "2026-09", "file name", 8, 1),  # 13/45/2021 in both
    ]


def test_a_contract_named_file_matching_nothing_names_the_closest_profile(settings):
    (settings.sources_dir / "hris" / "employees_2026-09.csv").write_text(
        "Employee #,First Name,Last Name,Hire Date\n101,Ada,Lovelace,04/12/2021\n"
    )
    result = ingest_export(settings, "employees")
    ((name, message),) = result.files_failed
    assert name == "employees_2026-09.csv"
    assert "lacks required column(s)" in message and "work_email" in message
    assert "closest profile bamboohr lacks Work Email | workEmail" in message
    by = {f.path: f for f in check_sources(settings.sources_dir).files}
    assert by["hris/employees_2026-09.csv"].status == "fails"
    assert "closest profile bamboohr" in by["hris/employees_2026-09.csv"].note


# --- a raw layer from before source systems --------------------------------------------------------


def test_a_raw_layer_written_before_source_systems_is_migrated(settings):
    hris = settings.sources_dir / "hris"
    (hris / "employees_2026-08.csv").write_text(employees(19))
    ingest_export(settings, "employees")
    # the raw layer as an earlier release left it: DuckDB 2.0's storage format, no source
    # system columns in the manifest
    old = settings.raw_db.with_name("old.duckdb")
    with duckdb.connect(":memory:") as con:
        con.execute(f"ATTACH '{settings.raw_db}' AS cur (READ_ONLY)")
        con.execute(f"ATTACH '{old}' AS old")
        con.execute("COPY FROM DATABASE cur TO old")
        for col in ("source_system", "replaced_rows", "replaced_files"):
            con.execute(f"ALTER TABLE old.manifest DROP COLUMN {col}")
        tags = con.execute(
            "SELECT tags FROM duckdb_databases() WHERE database_name = 'old'"
        ).fetchone()[0]
    assert tags["storage_version"].startswith("v2.")
    old.replace(settings.raw_db)
    (hris / "employees_2026-08_v2.csv").write_text(employees(18))
    result = ingest_export(settings, "employees")
    assert result.files_superseded == 1  # the same series as before the migration
    assert query(
        settings, "SELECT file_name, source_system, status FROM manifest ORDER BY file_name"
    ) == [
        ("employees_2026-08.csv", "talent-metrics", "superseded"),
        ("employees_2026-08_v2.csv", "talent-metrics", "active"),
    ]
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        tags = con.execute(
            "SELECT tags FROM duckdb_databases() WHERE database_name = current_database()"
        ).fetchone()[0]
    assert tags["storage_version"].startswith("v1.2")
