"""The mart suites (Python-written marts: effects in their CI) and the dbt test that keeps small
groups flagged."""

from __future__ import annotations

import pytest
from test_quality_data import CLEAN_MARTS, FakeSettings, write_marts

from pipelines.lib.quality import MART_SUITES, Severity, run_mart_suites


def _corrupted_marts() -> dict[str, str]:
    marts = dict(CLEAN_MARTS)
    # a coverage share above 1 on the 'team' row
    marts["certification_coverage"] = CLEAN_MARTS["certification_coverage"].replace(
        "0.5, 0.5, 0, 6, 5", "1.2, 0.5, 0, 6, 5"
    )
    # the 'orion' team (3 at start, 2 at end, 2.5 on average; minimum 5) published as ok
    marts["attrition"] = CLEAN_MARTS["attrition"].replace("1.2, null, false", "1.2, null, true")
    # a negative incident rate
    marts["incident_rates"] = CLEAN_MARTS["incident_rates"].replace(
        "1, 20.0, 30.0", "1, -20.0, 30.0"
    )
    # mttr estimate above its interval, attrition metric missing
    marts["certification_effect"] = """
        select * from (values
            ('incident_rate_ratio', 0.7, 0.55, 0.9),
            ('mttr_ratio', 1.2, 0.7, 0.95)
        ) t(metric, estimate, ci_low, ci_high)"""
    return marts


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    clean = FakeSettings(tmp_path_factory.mktemp("clean_marts"))
    write_marts(clean.build_db, CLEAN_MARTS)
    bad = FakeSettings(tmp_path_factory.mktemp("bad_marts"))
    write_marts(bad.build_db, _corrupted_marts())
    return (
        {r.suite: r for r in run_mart_suites(clean)},
        {r.suite: r for r in run_mart_suites(bad)},
    )


def test_clean_marts_pass(results):
    clean, _ = results
    assert sorted(clean) == sorted(MART_SUITES)
    assert {s: [o.message for o in r.failures] for s, r in clean.items() if not r.passed} == {}


def test_marts_dbt_builds_are_left_to_their_dbt_tests():
    # dbt tests check the dbt-built marts in the same build; GX checks what Python writes
    assert "marts.attrition" not in MART_SUITES
    assert "marts.certification_coverage" not in MART_SUITES
    assert "marts.certification_effect" in MART_SUITES


@pytest.mark.parametrize(("marts", "unflagged"), [("corrupted", 1), ("clean", 0)])
def test_dbt_small_group_test_catches_an_unflagged_small_team(
    tmp_path, dbt_manifest, marts, unflagged
):
    """The flag test of restricted.attrition (the detail the report reads), as dbt runs it (its
    `where` rendered with the default minimum group size of 5): 'orion' (2-3 people) flagged as
    ok fails it; the clean mart, where orion is flagged, passes."""
    import json

    import duckdb

    manifest = json.loads(dbt_manifest.read_text())
    (test,) = [
        n
        for n in manifest["nodes"].values()
        if n["resource_type"] == "test"
        and n.get("attached_node") == "model.talent_metrics.restricted_attrition"
        and "group_size_ok" in json.dumps(n.get("test_metadata", {}))
    ]
    expression = test["test_metadata"]["kwargs"]["expression"]
    where = test["config"]["where"]
    assert "< 5" in where
    settings = FakeSettings(tmp_path)
    write_marts(settings.build_db, _corrupted_marts() if marts == "corrupted" else CLEAN_MARTS)
    with duckdb.connect(str(settings.build_db), read_only=True) as con:
        failing = con.execute(
            f"select count(*) from marts.attrition where ({where}) and not ({expression})"
        ).fetchone()[0]
    assert failing == unflagged


def test_effect_outside_interval_and_missing_metric(results):
    _, bad = results
    suite = bad["marts.certification_effect"]
    above = suite.outcome("estimate_not_after_ci_high")
    assert (above.passed, above.unexpected_count, above.rule.severity) == (False, 1, Severity.ERROR)
    assert suite.outcome("ci_low_not_after_estimate").passed
    metrics = suite.outcome("three_metrics")
    assert not metrics.passed
    assert metrics.observed_value == {"unexpected": [], "missing": ["attrition_hazard_ratio"]}
    assert "attrition_hazard_ratio" in metrics.message
    assert suite.severity is Severity.ERROR


def test_missing_mart_fails_with_advice(tmp_path):
    settings = FakeSettings(tmp_path)
    write_marts(settings.build_db, {"attrition": CLEAN_MARTS["attrition"]})
    (result,) = run_mart_suites(settings, ["certification_effect"])
    o = result.outcome("table_exists")
    assert not o.passed and o.rule.severity is Severity.ERROR
    assert "materialize marts/certification_effect" in o.message


def test_every_published_count_of_people_has_the_small_group_test(dbt_manifest):
    """Each column of a dbt mart that publishing treats as a count of people
    (publish.GROUP_SIZE_COLUMNS) carries the dbt test `suppressed_below_min_group_size`, so a
    small group fails the build before publishing has to refuse it."""
    import json

    from pipelines.lib.publish import GROUP_SIZE_COLUMNS

    manifest = json.loads(dbt_manifest.read_text())
    counted = {
        (n["name"], c)
        for n in manifest["nodes"].values()
        if n["resource_type"] == "model" and n["schema"] == "marts"
        for c in n["columns"]
        if c in GROUP_SIZE_COLUMNS
    }
    tested = {
        (n["attached_node"].rsplit(".", 1)[1], n["column_name"])
        for n in manifest["nodes"].values()
        if n["resource_type"] == "test"
        and n.get("test_metadata", {}).get("name") == "suppressed_below_min_group_size"
    }
    assert len(counted) >= 10
    assert counted <= tested, sorted(counted - tested)
