"""Requisition exports written as the applicant-tracking tools write them: a Greenhouse
openings report, a Lever requisitions export, a Workday Recruiting job requisitions report.

Fixtures in tests/fixtures/vendors/recruiting/. Planted faults: Greenhouse REQ-104-1 opened on
03/35/2024 (no such day: quarantined), Lever REQ-204 an agency fee of -500 (quarantined: a
negative fee would lower the measured replacement cost), Workday R-00314 filled before it was
opened (quarantined).
"""

from __future__ import annotations

import shutil
from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.ingest import ingest_all
from pipelines.lib.settings import Settings

ATS = Path(__file__).parent / "fixtures" / "vendors" / "recruiting"
COLUMNS = (
    "requisition_id, replaces_employee_id, level, opened_on, filled_on, hired_employee_id, "
    "agency_fee_usd, other_hiring_cost_usd, status"
)


def load(settings: Settings, name: str) -> tuple[list[tuple], list[tuple], list[str]]:
    (settings.sources_dir / "recruiting").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ATS / name, settings.sources_dir / "recruiting" / name)
    ingest_all(settings)
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        manifest = con.execute(
            "SELECT export, profile, source_system, rows_total, rows_loaded, rows_quarantined "
            "FROM manifest"
        ).fetchall()
        rows = con.execute(f"SELECT {COLUMNS} FROM requisitions ORDER BY 1").fetchall()
        reasons = [r for (r,) in con.execute("SELECT reason FROM quarantine").fetchall()]
    return manifest, rows, reasons


def test_greenhouse_openings(settings):
    manifest, rows, reasons = load(settings, "Openings Report.csv")
    assert manifest == [("requisitions", "greenhouse-openings", "Greenhouse", 4, 3, 1)]
    assert rows == [
        ("REQ-101-1", "E000123", 3, date(2024, 2, 5), date(2024, 3, 26), "E000456",
         27000.0, 3500.0, "filled"),
        ("REQ-102-1", "E000124", 4, date(2024, 3, 1), None, None, None, 1200.0, "open"),
        # closed for a hiring freeze: cancelled, its close date is no fill date
        ("REQ-103-1", None, 2, date(2024, 1, 10), None, None, None, 800.0, "cancelled"),
    ]  # fmt: skip
    assert len(reasons) == 1 and "Open Date" in reasons[0] and "03/35/2024" in reasons[0]


def test_lever_requisitions(settings):
    manifest, rows, reasons = load(settings, "Lever Requisitions.csv")
    assert manifest == [("requisitions", "lever-requisitions", "Lever", 4, 3, 1)]
    assert rows == [
        ("REQ-201", "E000200", 3, date(2024, 2, 5), date(2024, 4, 2), "E000301", 0.0, 2100.0,
         "filled"),
        ("REQ-202", "E000201", 2, date(2024, 3, 4), None, None, None, None, "open"),
        # closed with nobody hired: cancelled, and its time-to-fill end is no fill date
        ("REQ-203", None, 4, date(2024, 1, 8), None, None, None, 450.0, "cancelled"),
    ]  # fmt: skip
    assert len(reasons) == 1 and "agency_fee_usd" in reasons[0]


def test_workday_job_requisitions(settings):
    manifest, rows, reasons = load(settings, "Job Requisitions.csv")
    assert manifest == [("requisitions", "workday-recruiting", "Workday Recruiting", 4, 3, 1)]
    assert rows == [
        ("R-00311", "E000310", 4, date(2024, 2, 12), date(2024, 3, 29), "E000402", 31500.0,
         2400.0, "filled"),
        ("R-00312", "E000311", 2, date(2024, 3, 4), None, None, None, None, "open"),
        ("R-00313", None, 3, date(2024, 1, 8), None, None, None, 650.0, "cancelled"),
    ]  # fmt: skip
    assert len(reasons) == 1 and "filled_on" in reasons[0]


@pytest.mark.parametrize(
    "name", ["Openings Report.csv", "Lever Requisitions.csv", "Job Requisitions.csv"]
)
def test_a_requisition_export_is_recognised_by_its_profile(settings, name):
    from pipelines.lib.ingest.check import check_sources

    (settings.sources_dir / "recruiting").mkdir(parents=True, exist_ok=True)
    shutil.copyfile(ATS / name, settings.sources_dir / "recruiting" / name)
    report = check_sources(settings.sources_dir)
    (f,) = report.files
    assert f.export == "requisitions" and f.status == "loads" and f.quarantined == 1
