"""certification_effect read in both its contracts, and worded without claiming what the data
do not show."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipelines.lib.report.data import load_marts
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.render import build_context, render_html
from pipelines.lib.report.sections.effects import effect_sentence, read_effect

sys.path.insert(0, str(Path(__file__).parent))
from test_report import QUARTER, _effects, _table_rows, build_published_fixture  # noqa: E402

# the older contract: the fixture's incident row (estimate 0.72, 0.58-0.89), no caveats
OLD = dict(_effects()[0].set_index("metric").loc["incident_rate_ratio"], caveats="")
OLD["metric"] = "incident_rate_ratio"
NEW = dict(
    OLD,
    estimable=True,
    finding=True,
    pretrend_p=0.41,
    pretrend_rejected=False,
    not_estimable_reason=None,
    data_needed=None,
    naive_ci_low=0.8,
    naive_ci_high=1.1,
    n_cohorts=12,
    window_start=pd.Timestamp("2025-01-01"),
    window_end=pd.Timestamp("2026-09-30"),
)


def _plain(text: object) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", str(text)))


def test_old_contract_interval_excluding_one_is_a_finding():
    e = read_effect(pd.Series(OLD))
    assert e.estimable and e.finding and not e.pretrend_rejected
    assert _plain(effect_sentence(e)).startswith("Incidents: 28 % fewer incidents per")


def test_old_contract_pretrend_warning_in_the_caveats_is_no_finding():
    caveats = "Pre-trend check (months -12 to -2): p = 0.003. WARNING: rates differed."
    e = read_effect(pd.Series(dict(OLD, caveats=caveats)))
    assert e.estimable and e.pretrend_rejected and not e.finding
    text = _plain(effect_sentence(e))
    assert "already differed before they certified" in text and "fewer" not in text


def test_old_contract_without_a_finite_interval_is_not_estimable():
    e = read_effect(pd.Series(dict(OLD, estimate=float("nan"), ci_high=float("inf"))))
    assert not e.estimable and not e.finding
    assert _plain(effect_sentence(e)) == (
        "Incidents: not estimable: the estimate or its interval is missing; more months of data."
    )


def test_new_contract_flags_are_taken_as_given():
    e = read_effect(pd.Series(dict(NEW, finding=False)))
    assert e.estimable and not e.finding  # the mart's word, though the interval excludes 1
    assert "the data do not show an effect" in _plain(effect_sentence(e))
    assert e.window == "Jan 2025 – Sep 2026"
    assert "Sep 2026)" in _plain(effect_sentence(e))


def test_new_contract_not_estimable_says_why_and_what_data_would_help():
    row = dict(
        NEW,
        metric="attrition_hazard_ratio",
        estimate=None,
        ci_low=None,
        ci_high=None,
        estimable=False,
        finding=False,
        not_estimable_reason="only 12 voluntary exits",
        data_needed="about 40 more voluntary exits",
    )
    assert _plain(effect_sentence(read_effect(pd.Series(row)))) == (
        "Voluntary attrition: not estimable: only 12 voluntary exits; about 40 more voluntary exits."
    )


@pytest.fixture(scope="module")
def not_estimable_report(tmp_path_factory) -> str:
    """The new contract with the incident-rate ratio not estimable."""
    eff, _ = _effects()
    eff = eff.assign(
        estimable=True,
        finding=[True, True, False],
        pretrend_p=0.4,
        pretrend_rejected=False,
        not_estimable_reason=None,
        data_needed=None,
        window_start=pd.Timestamp("2025-01-01"),
        window_end=pd.Timestamp("2026-09-30"),
    )
    i = eff.index[eff["metric"] == "incident_rate_ratio"][0]
    eff.loc[i, ["estimate", "ci_low", "ci_high"]] = None
    eff.loc[i, ["estimable", "finding"]] = False
    eff.loc[i, "not_estimable_reason"] = "too few incidents before certification"
    eff.loc[i, "data_needed"] = "about 200 more incidents"
    db = build_published_fixture(tmp_path_factory.mktemp("ne") / "talent.duckdb", effects=eff)
    return render_html(build_context(load_marts(db), Quarter.parse(QUARTER), 5, 0.8))


def test_report_quotes_no_number_for_an_effect_not_estimable(not_estimable_report):
    text = _plain(not_estimable_report)
    assert (
        "Incidents: not estimable: too few incidents before certification; about 200 more "
        "incidents." in text
    )
    assert 'data-figure="effect-incident_rate_ratio"' not in not_estimable_report
    assert _table_rows(not_estimable_report, "effects")["Incidents"][:2] == [
        "not estimable",
        "too few incidents before certification",
    ]


def test_roi_turns_no_unestimable_effect_into_a_return(not_estimable_report):
    roi = _table_rows(not_estimable_report, "roi-measured")
    # downtime avoided rests on the incident-rate ratio: unavailable, said so, not counted;
    # measured = contractor 200,000 on 145,000 invested -> 55,000 / 145,000 = 0.379 -> 37 %
    assert roi["Downtime avoided"][0] == "unavailable"
    assert "not estimable" in roi["Downtime avoided"][1]
    assert roi["Measured return"][1] == "$200,000"
    assert roi["Net ROI on measured returns"][1] == "37 %"
    assert "Downtime avoided: unavailable" in _plain(not_estimable_report)


def test_a_return_resting_on_an_effect_not_shown_says_so(tmp_path):
    eff, _ = _effects()
    warn = "Pre-trend check (months -12 to -2): p = 0.002. WARNING: rates differed before."
    eff.loc[eff["metric"] == "incident_rate_ratio", "caveats"] = warn
    db = build_published_fixture(tmp_path / "talent.duckdb", effects=eff)
    text = render_html(build_context(load_marts(db), Quarter.parse(QUARTER), 5, 0.8))
    downtime = _table_rows(text, "roi-measured")["Downtime avoided"]
    assert downtime == [
        "measured return; rests on an effect the data do not show (incidents)",
        "$100,000",
    ]
    assert (
        "Of the measured return, downtime avoided ($100,000) rests on an effect the data do not "
        "show (incidents)." in _plain(text)
    )


def test_method_appendix_quotes_the_robustness_figure_beside_the_headline():
    from pipelines.lib.report.sections.method import method_section

    row = dict(
        NEW,
        robustness_estimate=0.66,
        robustness_ci_low=0.55,
        robustness_ci_high=0.79,
        robustness_method="one indicator for all certified months",
    )
    with_it = method_section({"incident_rate_ratio": read_effect(pd.Series(row))}, [], 5)
    without = method_section({"incident_rate_ratio": read_effect(pd.Series(NEW))}, [], 5)
    assert (
        "a simpler design (one indicator for all certified months) gives 0.66 (0.55–0.79)"
        in with_it.notes[0]
    )
    assert "simpler design" not in without.notes[0]
