"""Dagster wiring of the suites: blocking checks per export and mart; the rules page is current."""

from __future__ import annotations

import dagster as dg
from test_quality_data import clean_tables, copy_tables, write_raw

from pipelines.defs import quality
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.quality.rules import MART_SUITES, RULES, Severity
from tests.conftest import talent_resources
from tools.quality_docs import DOC_PATH, generated_section, render_section


def test_one_blocking_and_one_warning_check_per_export_and_key_mart():
    specs = [
        *quality.raw_quality_suites.check_specs,
        *quality.mart_quality_suites.check_specs,
    ]
    keys = {s.asset_key.to_user_string() for s in specs}
    assert keys == {f"raw/{e}" for e in EXPORTS} | {s.replace(".", "/") for s in MART_SUITES}
    blocking = {s.name: s.blocking for s in specs}
    assert blocking == {quality.CHECK_NAME: True, quality.WARN_CHECK_NAME: False}
    assert len(specs) == 2 * len(keys)
    assert all(
        "talent" in c.required_resource_keys
        for c in (quality.raw_quality_suites, quality.mart_quality_suites)
    )


def test_rules_page_is_up_to_date():
    text = DOC_PATH.read_text(encoding="utf-8")
    assert generated_section(text) == render_section(), (
        "docs/data-quality.md is stale: run `.venv/bin/python -m tools.quality_docs`"
    )


def test_every_rule_says_why_and_has_a_severity():
    assert all(r.why and r.severity in (Severity.ERROR, Severity.WARN) for r in RULES)
    # defects that would make a published figure wrong block; harmless repeats only warn
    by_label = {r.label: r for r in RULES}
    assert by_label["raw.employees.employee_id_not_null"].severity is Severity.ERROR
    assert by_label["raw.incidents.opened_at_not_after_resolved_at"].severity is Severity.ERROR
    assert by_label["raw.incidents.no_identical_rows"].severity is Severity.WARN
    assert by_label["raw.responders.natural_key_unique"].personal


def _run(tmp_path, tables, export="employees", instance=None):
    """Materialize stand-ins for raw/<export> and one downstream asset, with its two checks;
    returns the check evaluations by check name and the downstream assets that ran."""
    write_raw(tmp_path / "raw.duckdb", tables)
    ran = []

    @dg.asset(key=["raw", export])
    def raw_export() -> None:
        """Stands in for the ingestion asset: the raw file is already written."""

    @dg.asset(key=["staging", "people"], deps=[raw_export])
    def people() -> None:
        ran.append("staging/people")

    result = dg.materialize(
        [raw_export, people, quality.raw_quality_suites],
        resources=talent_resources(warehouse_dir=tmp_path),
        raise_on_error=False,
        instance=instance,
        selection=[raw_export.key, people.key],
    )
    evaluations = {e.check_name: e for e in result.get_asset_check_evaluations()}
    assert set(evaluations) == {quality.CHECK_NAME, quality.WARN_CHECK_NAME}
    return evaluations, ran


def test_error_failure_blocks_downstream(tmp_path):
    tables = copy_tables(clean_tables())
    tables["employees"][1]["termination_date"] = "2019-01-01"  # before the hire
    evaluations, ran = _run(tmp_path, tables)
    evaluation = evaluations[quality.CHECK_NAME]
    assert not evaluation.passed
    assert evaluation.severity is dg.AssetCheckSeverity.ERROR
    assert evaluation.asset_key == dg.AssetKey(["raw", "employees"])
    assert evaluations[quality.WARN_CHECK_NAME].passed
    failing = evaluation.metadata["failing_expectations"].value
    assert [f["expectation"] for f in failing] == ["hire_date_not_after_termination_date"]
    assert failing[0]["unexpected_count"] == 1
    assert ran == []  # the blocking check stopped the downstream asset


def test_warn_failure_lets_downstream_run(tmp_path):
    tables = copy_tables(clean_tables())
    tables["employees"][2]["first_name"] = None  # descriptive only: WARN
    evaluations, ran = _run(tmp_path, tables)
    assert evaluations[quality.CHECK_NAME].passed  # the blocking check does not fail
    warning = evaluations[quality.WARN_CHECK_NAME]
    assert not warning.passed
    assert warning.severity is dg.AssetCheckSeverity.WARN
    assert ran == ["staging/people"]


def test_repeated_rows_are_stored_as_a_warning_not_a_failed_blocking_check(tmp_path):
    """What the UI shows comes from the instance's check records: a row delivered twice in
    one job_history file (the sample has one) is a WARN on the non-blocking check, and the
    blocking check is recorded as passed."""
    tables = copy_tables(clean_tables())
    tables["job_history"].append(dict(tables["job_history"][0]))
    with dg.DagsterInstance.ephemeral() as instance:
        _, ran = _run(tmp_path, tables, export="job_history", instance=instance)
        key = dg.AssetKey(["raw", "job_history"])
        records = {
            name: instance.get_latest_asset_check_evaluation_record(dg.AssetCheckKey(key, name))
            for name in (quality.CHECK_NAME, quality.WARN_CHECK_NAME)
        }
    blocking_spec = next(
        s
        for s in quality.raw_quality_suites.check_specs
        if s.key == dg.AssetCheckKey(key, quality.CHECK_NAME)
    )
    warn_spec = next(
        s
        for s in quality.raw_quality_suites.check_specs
        if s.key == dg.AssetCheckKey(key, quality.WARN_CHECK_NAME)
    )
    blocking, warning = records[quality.CHECK_NAME], records[quality.WARN_CHECK_NAME]
    assert blocking.status.value == "SUCCEEDED" and blocking.evaluation.passed
    assert blocking_spec.blocking
    assert warning.status.value == "FAILED"
    assert warning.evaluation.severity is dg.AssetCheckSeverity.WARN
    assert not warn_spec.blocking
    failing = warning.evaluation.metadata["failing_expectations"].value
    assert [f["expectation"] for f in failing] == ["no_identical_rows"]
    assert ran == ["staging/people"]
