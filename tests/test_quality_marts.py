"""The mart suites: shares in [0, 1], non-negative rates, small groups flagged, effects in CI."""

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
    marts["attrition"] = CLEAN_MARTS["attrition"].replace("120.0, null, false", "120.0, null, true")
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


def test_share_above_one(results):
    _, bad = results
    o = bad["marts.certification_coverage"].outcome("coverage_share_in_range")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.ERROR)
    assert o.observed_value == [1.2]


def test_small_group_not_flagged(results):
    _, bad = results
    o = bad["marts.attrition"].outcome("small_groups_flagged")
    assert (o.passed, o.unexpected_count, o.rule.severity) == (False, 1, Severity.ERROR)
    # only rows below the minimum are considered: 'orion' (the other two are 20 and 8 people)
    assert o.element_count == 1


def test_small_group_threshold_follows_the_setting(tmp_path):
    # with a minimum group size of 2, 'orion' (2-3 people) may be published: the rule holds
    settings = FakeSettings(tmp_path, min_group_size=2)
    write_marts(settings.build_db, _corrupted_marts())
    (result,) = run_mart_suites(settings, ["attrition"])
    assert result.outcome("small_groups_flagged").passed


def test_negative_rate(results):
    _, bad = results
    o = bad["marts.incident_rates"].outcome("incidents_per_100_engineer_months_in_range")
    assert (o.passed, o.unexpected_count) == (False, 1)
    assert o.observed_value == [-20.0]


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
    (result,) = run_mart_suites(settings, ["incident_rates"])
    o = result.outcome("table_exists")
    assert not o.passed and o.rule.severity is Severity.ERROR
    assert "materialize marts/incident_rates" in o.message
