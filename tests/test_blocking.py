"""Corrupted exports: the right blocking check fails, nothing downstream is built, and the
published warehouse stays byte-for-byte what it was.

One small company is run clean once; then a copy of its warehouse receives corrected-looking
re-deliveries (`_v9`) that carry the defects data engineers meet in real exports.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import shutil
from datetime import date, timedelta
from pathlib import Path

import pytest

from tests.conftest import talent_run

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parent.parent


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def read_rows(path: Path) -> tuple[list[str], list[dict]]:
    text = path.read_bytes().decode("utf-8-sig")
    reader = csv.DictReader(io.StringIO(text))
    return list(reader.fieldnames or []), list(reader)


def redeliver(path: Path, header: list[str], rows: list[dict]) -> Path:
    """Write rows as the next version (_v9) of the file's period: it supersedes the original."""
    target = path.with_name(path.stem + "_v9.csv")
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    target.write_text(buf.getvalue(), encoding="utf-8")
    return target


def largest(folder: Path, export: str) -> Path:
    files = [p for p in folder.glob(f"{export}_*.csv") if "_v" not in p.stem]
    return max(files, key=lambda p: p.stat().st_size)


@pytest.fixture(scope="module")
def clean_run(shared_company):
    """The session's company and its clean run (tests/conftest.py); copied before any change."""
    return shared_company.sources, shared_company.warehouse


def corrupt(sources: Path) -> dict[str, str]:
    """Plant the five defects; return {defect: file it was delivered in}."""
    planted = {}
    # 1. null keys in a third of the rows of an employees delivery
    emp = largest(sources / "hris", "employees")
    header, rows = read_rows(emp)
    for i, row in enumerate(rows):
        if i % 3 == 0:
            row["employee_id"] = ""
    # 2. terminated before hired: a spell that no later delivery updates, so this row is current
    later = {
        (r["employee_id"], r["hire_date"])
        for p in (sources / "hris").glob("employees_*.csv")
        if p != emp
        for r in read_rows(p)[1]
    }
    victim = next(
        r for i, r in enumerate(rows) if i % 3 and (r["employee_id"], r["hire_date"]) not in later
    )
    victim["termination_date"] = (
        date.fromisoformat(victim["hire_date"]) - timedelta(days=30)
    ).isoformat()
    victim["termination_type"] = "voluntary"
    planted["employees"] = redeliver(emp, header, rows).name
    # 3. a duplicated incident with conflicting contents, 4. negative downtime
    inc = largest(sources / "incidents", "incidents")
    header, rows = read_rows(inc)
    twin = dict(rows[0])
    twin["downtime_minutes"] = str(float(twin["downtime_minutes"] or 0) + 60)
    rows.append(twin)
    rows[1]["downtime_minutes"] = "-45"
    planted["incidents"] = redeliver(inc, header, rows).name
    # 5. a certification that expires before it is issued
    cert = largest(sources / "lms", "certifications")
    header, rows = read_rows(cert)
    award = next(r for r in rows if r["issued_on"] and r["expires_on"])
    award["expires_on"] = (date.fromisoformat(award["issued_on"]) - timedelta(days=1)).isoformat()
    planted["certifications"] = redeliver(cert, header, rows).name
    return planted


@pytest.fixture(scope="module")
def corrupted_run(clean_run, tmp_path_factory):
    sources, warehouse = clean_run
    root = tmp_path_factory.mktemp("corrupted")
    src, wh = root / "sources", root / "warehouse"
    shutil.copytree(sources, src)
    shutil.copytree(warehouse, wh)
    before = sha256(wh / "talent.duckdb")
    planted = corrupt(src)
    proc = talent_run(src, wh, check=False)
    record = json.loads((wh / "runs" / "last_nightly.json").read_text())
    return proc, before, wh, planted, record


@pytest.mark.parametrize(
    ("check", "expectation"),
    [
        ("raw/employees:quality_suite", "file_quarantine_share_below_error"),  # null keys
        ("raw/employees:quality_suite", "hire_date_not_after_termination_date"),
        ("raw/incidents:quality_suite", "natural_key_unique"),  # conflicting duplicate
        ("raw/incidents:quality_suite", "downtime_minutes_in_range"),  # negative downtime
        ("raw/certifications:quality_suite", "issued_on_before_expires_on"),
    ],
)
def test_the_right_blocking_check_fails_and_is_named(corrupted_run, check, expectation):
    proc, _, _, _, record = corrupted_run
    assert proc.returncode == 1
    failing = {f["name"]: f["message"] for f in record["failures"] if f["kind"] == "check"}
    assert check in failing, f"{check} did not fail; failures: {list(failing)}"
    assert expectation in failing[check]
    assert check in proc.stderr  # the operator sees which check, not only a log file


def test_observed_values_reach_the_output(corrupted_run):
    proc, _, _, planted, record = corrupted_run
    incidents = next(
        f["message"] for f in record["failures"] if f["name"] == "raw/incidents:quality_suite"
    )
    assert "-45" in incidents  # the observed negative downtime
    assert planted["incidents"] in incidents  # the file and line that carry it


def test_nothing_downstream_is_built(corrupted_run):
    _, _, _, _, record = corrupted_run
    steps = record["step_seconds"]
    assert "raw__employees" in steps  # ingestion ran (and kept the good files)
    assert "warehouse_dbt" not in steps
    assert "warehouse__published" not in steps


def test_published_file_is_byte_for_byte_unchanged(corrupted_run):
    _, before, wh, _, _ = corrupted_run
    assert sha256(wh / "talent.duckdb") == before


def test_clean_run_published_and_only_warned_about_harmless_copies(clean_run):
    _, warehouse = clean_run
    record = json.loads((warehouse / "runs" / "last_nightly.json").read_text())
    assert record["success"] and not record["failures"]
    assert "warehouse__published" in record["step_seconds"]
    for w in record["warnings"]:
        harmless = "no_identical_rows" in w["message"] or "freshness" in w["name"]
        # the one unreadable line the company carries in its last responders delivery
        planted = w["name"].startswith("raw/responders") and "quarantine" in w["message"]
        assert harmless or planted, w
