"""Dagster wiring of the suites: blocking checks per export and mart; the rules page is current."""

from __future__ import annotations

import dagster as dg
from test_quality_data import clean_tables, copy_tables, write_raw

from pipelines.defs import quality
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.quality.rules import MART_SUITES, RULES, Severity
from tests.conftest import talent_resources
from tools.quality_docs import DOC_PATH, generated_section, render_section


def test_one_blocking_check_per_export_and_key_mart():
    specs = [
        *quality.raw_quality_suites.check_specs,
        *quality.mart_quality_suites.check_specs,
    ]
    keys = {s.asset_key.to_user_string() for s in specs}
    assert keys == {f"raw/{e}" for e in EXPORTS} | {s.replace(".", "/") for s in MART_SUITES}
    assert all(s.blocking for s in specs)
    assert {s.name for s in specs} == {quality.CHECK_NAME}
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


def _run(tmp_path, tables):
    """Materialize stand-ins for raw/employees and one downstream asset, with the checks."""
    write_raw(tmp_path / "raw.duckdb", tables)
    ran = []

    @dg.asset(key=["raw", "employees"])
    def employees() -> None:
        """Stands in for the ingestion asset: the raw file is already written."""

    @dg.asset(key=["staging", "people"], deps=[employees])
    def people() -> None:
        ran.append("staging/people")

    result = dg.materialize(
        [employees, people, quality.raw_quality_suites],
        resources=talent_resources(warehouse_dir=tmp_path),
        raise_on_error=False,
    )
    (evaluation,) = result.get_asset_check_evaluations()
    return evaluation, ran


def test_error_failure_blocks_downstream(tmp_path):
    tables = copy_tables(clean_tables())
    tables["employees"][1]["termination_date"] = "2019-01-01"  # before the hire
    evaluation, ran = _run(tmp_path, tables)
    assert not evaluation.passed
    assert evaluation.severity is dg.AssetCheckSeverity.ERROR
    assert evaluation.asset_key == dg.AssetKey(["raw", "employees"])
    failing = evaluation.metadata["failing_expectations"].value
    assert [f["expectation"] for f in failing] == ["hire_date_not_after_termination_date"]
    assert failing[0]["unexpected_count"] == 1
    assert ran == []  # the blocking check stopped the downstream asset


def test_warn_failure_lets_downstream_run(tmp_path):
    tables = copy_tables(clean_tables())
    tables["employees"][2]["first_name"] = None  # descriptive only: WARN
    evaluation, ran = _run(tmp_path, tables)
    assert not evaluation.passed
    assert evaluation.severity is dg.AssetCheckSeverity.WARN
    assert ran == ["staging/people"]
