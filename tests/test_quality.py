"""The raw-export suites find planted defects, count them right, and pass clean data.

One corrupted raw file carries one defect per export (so a single validation run covers them
all); each test asserts the expectation that must fail, its unexpected count (known from what
was planted), where it points, and its severity.
"""

from __future__ import annotations

import json

import pytest
from test_quality_data import (
    EMAILS,
    NAMES,
    SURNAMES,
    FakeSettings,
    clean_tables,
    copy_tables,
    write_raw,
)

from pipelines.lib.quality import RAW_SUITES, Severity, run_raw_suites

BAD_EMAIL = "cordelia.vasquez(at)corp.example"


def _corrupted() -> tuple[dict, dict]:
    t = copy_tables(clean_tables())
    # a third of the employees without an id (rows at lines 2 and 5)
    t["employees"][0]["employee_id"] = None
    t["employees"][3]["employee_id"] = None
    # terminated before hired (line 3): hired 2021-02-01
    t["employees"][1].update(termination_date="2019-01-01", termination_type="other")
    # a job level outside 1-5 (line 4) and a job record before the first hire (line 7)
    t["job_history"][2]["skill_level"] = 7
    t["job_history"][5]["effective_date"] = "2019-12-31"
    # an enumeration in another case is fine, an unknown one is not
    t["job_history"][4]["employment_type"] = "Employee"
    t["responders"][1]["role"] = "bystander"
    # an incident copied in the same file (lines 4 and 8), another one delivered twice with
    # different downtimes (lines 5 and 9), and a negative downtime (line 6)
    t["incidents"].append(dict(t["incidents"][2]))
    t["incidents"].append(dict(t["incidents"][3], downtime_minutes=60.0))
    t["incidents"][4]["downtime_minutes"] = -5.0
    # an award that expires before it is issued (line 4) and a malformed e-mail (line 6)
    t["certifications"][2]["expires_on"] = "2024-02-01"
    t["certifications"][4]["learner_email"] = BAD_EMAIL
    older = {
        # an earlier period: INC-0 is replaced by the current delivery (its defects do not
        # count), INC-9 exists only here and is current
        "incidents": [
            dict(clean_tables()["incidents"][0], downtime_minutes=-100.0),
            dict(clean_tables()["incidents"][0], downtime_minutes=-100.0),
            dict(clean_tables()["incidents"][1], incident_number="INC-9"),
        ],
    }
    superseded = {
        # replaced by _v2 of the same period: its defect does not count
        "employees": [dict(clean_tables()["employees"][5], termination_date="2000-01-01")],
    }
    return t, {
        "older": older,
        "superseded": superseded,
        "quarantined": {"gpu_fleet": 1},
        "failed": ("contractor_hours",),
        "type_overrides": {("courses", "hours"): "VARCHAR"},
    }


@pytest.fixture(scope="module")
def corrupted(tmp_path_factory):
    settings = FakeSettings(tmp_path_factory.mktemp("corrupted"))
    tables, extra = _corrupted()
    write_raw(settings.raw_db, tables, **extra)
    return settings, {r.suite: r for r in run_raw_suites(settings)}


@pytest.fixture(scope="module")
def clean(tmp_path_factory):
    settings = FakeSettings(tmp_path_factory.mktemp("clean"))
    write_raw(settings.raw_db, clean_tables())
    return {r.suite: r for r in run_raw_suites(settings)}


def test_clean_data_passes_every_raw_suite(clean):
    assert sorted(clean) == sorted(RAW_SUITES)
    failures = {s: [o.message for o in r.failures] for s, r in clean.items() if not r.passed}
    assert failures == {}
    assert all(r.severity is None for r in clean.values())


def test_null_keys_in_a_third_of_the_rows(corrupted):
    _, results = corrupted
    o = results["raw.employees"].outcome("employee_id_not_null")
    assert not o.passed
    assert o.unexpected_count == 2
    assert o.element_count == 6
    assert o.unexpected_percent == pytest.approx(100 * 2 / 6)
    assert o.rule.severity is Severity.ERROR
    assert o.locations == ("employees_2024-06_v2.csv line 2", "employees_2024-06_v2.csv line 5")
    assert "employees_2024-06_v2.csv line 2" in o.message
    assert "new version" in o.message


def test_terminated_before_hired(corrupted):
    _, results = corrupted
    o = results["raw.employees"].outcome("hire_date_not_after_termination_date")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.ERROR)
    # the superseded delivery's own defect does not count: only line 3 of _v2
    assert o.locations == ("employees_2024-06_v2.csv line 3",)
    assert results["raw.employees"].severity is Severity.ERROR


def test_duplicated_incident_in_one_file_is_found_but_older_periods_are_not(corrupted):
    _, results = corrupted
    suite = results["raw.incidents"]
    copy = suite.outcome("no_identical_rows")
    assert (copy.passed, copy.unexpected_count, copy.rule.severity) == (False, 1, Severity.WARN)
    assert copy.locations == ("incidents_2024-06_v2.csv line 8",)  # the copy, not line 4
    conflict = suite.outcome("natural_key_unique")
    assert (conflict.passed, conflict.unexpected_count) == (False, 2)
    # conflicting versions of one incident in one delivery block the marts
    assert conflict.rule.severity is Severity.ERROR
    assert set(conflict.locations) == {
        "incidents_2024-06_v2.csv line 5",
        "incidents_2024-06_v2.csv line 9",
    }
    # unique within each delivery: the file is part of what is compared
    assert (
        conflict.observed_value
        == [{"incident_number": "INC-3", "_file_name": "incidents_2024-06_v2.csv"}] * 2
    )
    # six incidents, the copy, the conflicting INC-3, and INC-9 whose latest delivery is the
    # older file; the exact copy is left out of the key count
    assert suite.outcome("incident_number_not_null").element_count == 9
    assert conflict.element_count == 8


def test_negative_downtime(corrupted):
    _, results = corrupted
    o = results["raw.incidents"].outcome("downtime_minutes_in_range")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.ERROR)
    assert o.observed_value == [-5.0]  # the older period's -100 minutes are replaced
    assert o.locations == ("incidents_2024-06_v2.csv line 6",)


def test_expired_before_issued(corrupted):
    _, results = corrupted
    o = results["raw.certifications"].outcome("issued_on_before_expires_on")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.ERROR)
    assert o.locations == ("certifications_2024-06_v2.csv line 4",)


def test_bad_email_warns_without_showing_the_address(corrupted):
    _, results = corrupted
    suite = results["raw.certifications"]
    o = suite.outcome("learner_email_shape")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.WARN)
    assert o.locations == ("certifications_2024-06_v2.csv line 6",)
    assert BAD_EMAIL not in json.dumps(suite.metadata())
    assert o.observed_value == []


def test_level_out_of_range_and_job_before_hire(corrupted):
    _, results = corrupted
    suite = results["raw.job_history"]
    level = suite.outcome("skill_level_in_range")
    assert (level.passed, level.unexpected_count, level.rule.severity) == (False, 1, Severity.ERROR)
    assert level.observed_value == [7]
    early = suite.outcome("effective_date_not_before_first_hire")
    assert (early.passed, early.unexpected_count, early.rule.severity) == (False, 1, Severity.WARN)
    assert early.locations == ("job_history_2024-06_v2.csv line 7",)
    # "Employee" is the contract value "employee" in another case
    assert suite.outcome("employment_type_in_set").passed


def test_unknown_enumeration_value(corrupted):
    _, results = corrupted
    o = results["raw.responders"].outcome("role_in_set")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.ERROR)
    assert o.observed_value == ["bystander"]


def test_column_with_the_wrong_type(corrupted):
    _, results = corrupted
    o = results["raw.courses"].outcome("contract_types")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.ERROR)
    assert o.locations == ("column hours",)
    assert o.observed_value == [["VARCHAR", "DOUBLE"]]


def test_one_stray_quarantined_row_warns_but_does_not_block(corrupted):
    _, results = corrupted
    suite = results["raw.gpu_fleet"]
    warn = suite.outcome("quarantine_share_below_warn")
    assert (warn.passed, warn.rule.severity) == (False, Severity.WARN)
    assert warn.observed_value == [pytest.approx(0.5)]  # 1 quarantined of 2 delivered rows
    assert "raw.quarantine" in warn.message
    # one row is below QUARANTINE_ERROR_MIN_ROWS: named in the run summary, not blocking
    assert suite.outcome("quarantine_share_below_error").passed
    assert suite.outcome("file_quarantine_share_below_error").passed
    assert suite.severity is Severity.WARN


def test_a_broken_export_blocks(tmp_path):
    """Six of eight rows quarantined: more than 10 % and at least QUARANTINE_ERROR_MIN_ROWS."""
    settings = FakeSettings(tmp_path)
    write_raw(settings.raw_db, clean_tables(), quarantined={"gpu_fleet": 6})
    (suite,) = run_raw_suites(settings, ["gpu_fleet"])
    for name in ("quarantine_share_below_error", "file_quarantine_share_below_error"):
        o = suite.outcome(name)
        assert (o.passed, o.rule.severity) == (False, Severity.ERROR), name
    assert suite.severity is Severity.ERROR


def test_failed_delivery_is_a_warning_only(corrupted):
    _, results = corrupted
    suite = results["raw.contractor_hours"]
    assert [o.rule.name for o in suite.failures] == ["no_failed_deliveries"]
    assert suite.severity is Severity.WARN
    assert suite.outcome("no_failed_deliveries").observed_value == [1]


def test_untouched_exports_pass_in_the_corrupted_file(corrupted):
    _, results = corrupted
    assert results["raw.enrolments"].passed


def test_metadata_lists_every_failure_with_observed_value_and_count(corrupted):
    _, results = corrupted
    meta = results["raw.incidents"].metadata()
    json.dumps(meta)  # JSON-safe for Dagster
    failing = {f["expectation"]: f for f in meta["failing_expectations"]}
    assert set(failing) == {
        "no_identical_rows",
        "natural_key_unique",
        "downtime_minutes_in_range",
    }
    assert failing["downtime_minutes_in_range"]["unexpected_count"] == 1
    assert failing["downtime_minutes_in_range"]["observed_value"] == [-5.0]
    assert failing["downtime_minutes_in_range"]["severity"] == "ERROR"
    assert meta["expectations_failed"] == 3


def test_data_docs_hold_no_names_or_emails(corrupted):
    settings, results = corrupted
    index = settings.quality_dir / "data_docs" / "raw" / "index.html"
    assert index.exists()
    assert results["raw.employees"].data_docs == index
    pages = [p for p in index.parent.rglob("*") if p.suffix in (".html", ".json", ".js")]
    validation_pages = [p for p in pages if "validations" in p.parts]
    assert validation_pages, "the validation results are rendered"
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace") for p in pages)
    assert "2 unexpected values found" in text  # the employee ids that are missing
    for secret in [*NAMES, *SURNAMES, *EMAILS, BAD_EMAIL]:
        assert secret not in text, f"{secret} leaked into the Data Docs"


def test_missing_table_fails_with_advice(tmp_path):
    settings = FakeSettings(tmp_path)
    write_raw(settings.raw_db, clean_tables(), skip=("gpu_fleet",))
    (result,) = run_raw_suites(settings, ["gpu_fleet"])
    o = result.outcome("table_exists")
    assert not o.passed and o.rule.severity is Severity.ERROR
    assert "table gpu_fleet is missing from raw.duckdb" in o.message
    assert "run the ingestion" in o.message
    assert result.severity is Severity.ERROR


def test_missing_raw_file_fails_with_advice(tmp_path):
    (result,) = run_raw_suites(FakeSettings(tmp_path), ["employees"])
    assert not result.passed
    assert "raw.duckdb does not exist" in result.outcome("table_exists").message


def test_first_copy_marks_later_exact_copies_within_a_delivery_only():
    """`_first_copy` against a recount in Python: a row is a later copy when an earlier line
    of the same delivery holds the same values in every column, NULL keys included."""
    import random

    import duckdb

    from pipelines.lib.contracts import EXPORTS
    from pipelines.lib.quality.frames import current_rows_sql

    rng = random.Random(7)
    rows = []
    for file_id in ("f1", "f2"):
        for line in range(2, 400):
            cluster = rng.choice(["c1", "c2", "c3", None])
            day = rng.choice(["2024-01-31", "2024-02-29", None])
            rows.append(
                (
                    file_id,
                    line,
                    cluster,
                    day,
                    rng.choice(["Munich", "Rome"]),
                    "H100",
                    rng.choice([8, 16]),
                )
            )
    rows += [  # keys seen exactly twice: an exact copy (one with a NULL key part), two
        # contents of one key, and the same row in two deliveries (no copy)
        ("f1", 500, "c9", "2023-05-01", "Oslo", "H200", 4),
        ("f1", 501, "c9", "2023-05-01", "Oslo", "H200", 4),
        ("f1", 502, None, "2023-05-02", "Oslo", "H200", 4),
        ("f1", 503, None, "2023-05-02", "Oslo", "H200", 4),
        ("f1", 504, "c9", "2023-05-03", "Oslo", "H200", 4),
        ("f1", 505, "c9", "2023-05-03", "Oslo", "H200", 8),
        ("f1", 506, "c9", "2023-05-04", "Oslo", "H200", 4),
        ("f2", 506, "c9", "2023-05-04", "Oslo", "H200", 4),
    ]
    con = duckdb.connect()
    con.execute(
        "create table manifest (file_id varchar, file_name varchar, export varchar, status varchar)"
    )
    con.execute(
        "insert into manifest values ('f1', 'fleet_1.csv', 'gpu_fleet', 'active'), "
        "('f2', 'fleet_2.csv', 'gpu_fleet', 'active')"
    )
    con.execute(
        "create table gpu_fleet (_file_id varchar, _line bigint, cluster varchar, "
        "as_of_date date, site varchar, gpu_model varchar, gpu_count bigint, "
        "_period varchar, _version int)"
    )
    con.executemany("insert into gpu_fleet values (?, ?, ?, ?, ?, ?, ?, '2024-02', 1)", rows)
    sql = current_rows_sql(EXPORTS["gpu_fleet"], with_employees=False)
    found = {
        (name, line): first
        for name, line, first in con.execute(
            f"select _file_name, _line, _first_copy from ({sql})"
        ).fetchall()
    }
    seen, expected = set(), {}
    for file_id, line, *values in rows:
        key = (file_id, *values)
        expected[(f"fleet_{file_id[1]}.csv", line)] = key not in seen
        seen.add(key)
    assert len(found) == len(rows)
    assert {k: expected[k] for k in found} == found
    assert [found[("fleet_1.csv", line)] for line in range(500, 506)] == [
        True,
        False,
        True,
        False,
        True,
        True,
    ]
    assert found[("fleet_1.csv", 506)] and found[("fleet_2.csv", 506)]
    assert any(cluster is None for _, _, cluster, *_ in rows)
