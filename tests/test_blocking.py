"""Corrupted exports: the right blocking check fails, nothing downstream is built, and the
published warehouse stays byte-for-byte what it was; a row that breaks a row rule is
quarantined where it is loaded instead, and blocks nothing.

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

import duckdb
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


def corrupt(sources: Path) -> tuple[dict[str, str], dict[str, int]]:
    """Plant the five defects; return {export: file it was delivered in} and {export: line of
    the row that breaks a row rule}."""
    planted, lines = {}, {}
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
    lines["employees"] = rows.index(victim) + 2
    planted["employees"] = redeliver(emp, header, rows).name
    # 3. a duplicated incident with conflicting contents, 4. negative downtime
    inc = largest(sources / "incidents", "incidents")
    header, rows = read_rows(inc)
    twin = dict(rows[0])
    twin["downtime_minutes"] = str(float(twin["downtime_minutes"] or 0) + 60)
    rows.append(twin)
    rows[1]["downtime_minutes"] = "-45"
    lines["incidents"] = 3
    planted["incidents"] = redeliver(inc, header, rows).name
    # 5. a certification that expires before it is issued
    cert = largest(sources / "lms", "certifications")
    header, rows = read_rows(cert)
    award = next(r for r in rows if r["issued_on"] and r["expires_on"])
    award["expires_on"] = (date.fromisoformat(award["issued_on"]) - timedelta(days=1)).isoformat()
    lines["certifications"] = rows.index(award) + 2
    planted["certifications"] = redeliver(cert, header, rows).name
    return planted, lines


@pytest.fixture(scope="module")
def corrupted_run(clean_run, tmp_path_factory):
    sources, warehouse = clean_run
    root = tmp_path_factory.mktemp("corrupted")
    src, wh = root / "sources", root / "warehouse"
    shutil.copytree(sources, src)
    shutil.copytree(warehouse, wh)
    before = sha256(wh / "talent.duckdb")
    planted, lines = corrupt(src)
    proc = talent_run(src, wh, check=False)
    record = json.loads((wh / "runs" / "last_nightly.json").read_text())
    return proc, before, wh, planted, record, lines


@pytest.mark.parametrize(
    ("check", "expectation"),
    [
        ("raw/employees:quality_suite", "file_quarantine_share_below_error"),  # null keys
        ("raw/incidents:quality_suite", "natural_key_unique"),  # conflicting duplicate
    ],
)
def test_the_right_blocking_check_fails_and_is_named(corrupted_run, check, expectation):
    proc, _, _, _, record, _ = corrupted_run
    assert proc.returncode == 1
    failing = {f["name"]: f["message"] for f in record["failures"] if f["kind"] == "check"}
    assert check in failing, f"{check} did not fail; failures: {list(failing)}"
    assert expectation in failing[check]
    assert check in proc.stderr  # the operator sees which check, not only a log file


def test_observed_values_reach_the_output(corrupted_run):
    proc, _, _, planted, record, _ = corrupted_run
    incidents = next(
        f["message"] for f in record["failures"] if f["name"] == "raw/incidents:quality_suite"
    )
    assert "natural_key_unique" in incidents
    assert planted["incidents"] in incidents  # the file and line that carry it


@pytest.mark.parametrize(
    ("export", "rule"),
    [
        ("employees", "hire_date_not_after_termination_date"),  # terminated before hired
        ("incidents", "downtime_minutes_in_range"),  # negative downtime
        ("certifications", "issued_on_before_expires_on"),  # expires before it is issued
    ],
)
def test_a_row_breaking_a_row_rule_is_quarantined_where_it_is_loaded(corrupted_run, export, rule):
    _, _, wh, planted, record, lines = corrupted_run
    with duckdb.connect(str(wh / "raw.duckdb"), read_only=True) as con:
        found = con.execute(
            "select file_name, line_number, reason from quarantine "
            "where export = ? and starts_with(reason, ?)",
            [export, rule],
        ).fetchall()
    assert [(f, n) for f, n, _ in found] == [(planted[export], lines[export])]
    # no blocking check reports it: the row never reached the raw table
    assert not any(rule in f["message"] for f in record["failures"])
    if export == "certifications":  # its only defect: the suite passes
        assert "raw/certifications:quality_suite" not in {f["name"] for f in record["failures"]}


def test_nothing_downstream_is_built(corrupted_run):
    _, _, _, _, record, _ = corrupted_run
    steps = record["step_seconds"]
    assert "raw__employees" in steps  # ingestion ran (and kept the good files)
    assert "warehouse_dbt" not in steps
    assert "warehouse__published" not in steps


def test_published_file_is_byte_for_byte_unchanged(corrupted_run):
    _, before, wh, _, _, _ = corrupted_run
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


# --- a Credly export beside the company's own certifications ---------------------------------

CREDLY_HEADER = (
    "Badge ID,Badge Template ID,Badge Template Name,Recipient Email,Issued To First Name,"
    "Issued To Last Name,Issued At,Expires At,State"
)


def credly_export(sources: Path, revoked_line: int) -> str:
    """Issued badges as Credly's CSV export writes them (ISO timestamps with Z, the earner's
    names, the badge state), for people of the company; the badge on `revoked_line` is revoked
    and the export has no revocation date."""
    _, people = read_rows(largest(sources / "hris", "employees"))
    lines = [CREDLY_HEADER]
    for i, person in enumerate(people[:6]):
        state = "revoked" if i + 2 == revoked_line else "accepted"
        lines.append(
            f"0b6b5c8e-1f11-4c59-a2a4-6b1a0c9d{i:04d},4f5e6d7c-aaaa-4b4b-9c9c-00000000000{i},"
            "CKA: Certified Kubernetes Administrator,"
            f"{person['work_email']},{person['first_name']},{person['last_name']},"
            f"2025-0{i + 1}-10T09:12:44Z,2028-0{i + 1}-10T09:12:44Z,{state}"
        )
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def credly_run(clean_run, tmp_path_factory):
    sources, warehouse = clean_run
    root = tmp_path_factory.mktemp("credly")
    src, wh = root / "sources", root / "warehouse"
    shutil.copytree(sources, src)
    shutil.copytree(warehouse, wh)
    (src / "lms" / "Issued Badges.csv").write_text(credly_export(src, revoked_line=5))
    from pipelines.lib.ingest.check import check_sources

    checked = next(f for f in check_sources(src).files if f.path == "lms/Issued Badges.csv")
    proc = talent_run(src, wh, check=False)
    return proc, wh, checked


def test_a_revoked_credly_badge_is_quarantined_and_the_run_publishes(credly_run):
    proc, wh, checked = credly_run
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    record = json.loads((wh / "runs" / "last_nightly.json").read_text())
    assert record["success"] and "warehouse__published" in record["step_seconds"]
    with duckdb.connect(str(wh / "raw.duckdb"), read_only=True) as con:
        manifest = con.execute(
            "select rows_total, rows_loaded, rows_quarantined from manifest "
            "where file_name = 'Issued Badges.csv'"
        ).fetchall()
        quarantined = con.execute(
            "select line_number, reason from quarantine where file_name = 'Issued Badges.csv'"
        ).fetchall()
    assert manifest == [(6, 5, 1)]
    ((line, reason),) = quarantined
    assert line == 5 and reason.startswith("issued_on_before_expires_on: ")
    # `talent sources check` said beforehand what the run then did
    assert (checked.rows, checked.loadable, checked.quarantined) == (6, 5, 1)
    assert [(r, n) for r, n, _ in checked.reasons] == [(reason, 1)]
    assert "Issued Badges.csv" in proc.stderr  # the run summary names the file
    with duckdb.connect(str(wh / "talent.duckdb"), read_only=True) as con:
        assert con.execute("select count(*) from marts.source_deliveries").fetchone()[0] > 0
