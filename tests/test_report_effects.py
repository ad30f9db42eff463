"""certification_effect read in both its contracts, and worded without claiming what the data
do not show."""

from __future__ import annotations

import html
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipelines.lib.report.sections.effects import effect_sentence, read_effect

sys.path.insert(0, str(Path(__file__).parent))
from test_report import (  # noqa: E402
    DOWNTIME_GPU_HOURS,
    _effects,
    _table_rows,
    build_published_fixture,
    html_of,
)

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
    assert e.estimable and e.finding and not e.pretrend_rejected and e.status == "shown"
    assert _plain(effect_sentence(e)).startswith("Incidents (shown): 28 % fewer incidents per")


def test_old_contract_pretrend_warning_in_the_caveats_is_no_finding():
    caveats = "Pre-trend check (months -12 to -2): p = 0.003. WARNING: rates differed."
    e = read_effect(pd.Series(dict(OLD, caveats=caveats)))
    assert e.estimable and e.pretrend_rejected and not e.finding and e.status == "not_shown"
    text = _plain(effect_sentence(e))
    assert text.startswith("Incidents (not shown): ratio 0.72")
    assert "already differed before they certified" in text and "fewer" not in text


def test_old_contract_without_a_finite_interval_is_not_estimable():
    e = read_effect(pd.Series(dict(OLD, estimate=float("nan"), ci_high=float("inf"))))
    assert not e.estimable and not e.finding
    assert _plain(effect_sentence(e)) == (
        "Incidents (not estimable): the estimate or its interval is missing; more months of data."
    )


def test_new_contract_flags_are_taken_as_given():
    e = read_effect(pd.Series(dict(NEW, finding=False)))
    assert e.estimable and not e.finding  # the mart's word, though the interval excludes 1
    assert _plain(effect_sentence(e)).startswith("Incidents (not shown): ratio 0.72")
    assert e.window == "Jan 2025 – Sep 2026"
    assert "0.58–0.89), Jan 2025 – Sep 2026, but the statistics" in _plain(effect_sentence(e))


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
        "Voluntary attrition (not estimable): only 12 voluntary exits; about 40 more voluntary "
        "exits."
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
    return html_of(db)


def test_report_quotes_no_number_for_an_effect_not_estimable(not_estimable_report):
    text = _plain(not_estimable_report)
    assert (
        "Incidents (not estimable): too few incidents before certification; about 200 more "
        "incidents." in text
    )
    assert 'data-figure="effect-incident_rate_ratio"' not in not_estimable_report
    assert _table_rows(not_estimable_report, "effects")["Incidents"][:2] == ["–", "not estimable"]
    # the row's naive figure (the fixture keeps it, as the restricted copy does) is not shown
    # beside the withheld estimate either
    assert 'data-figure="naive-incident_rate_ratio"' not in not_estimable_report
    assert _table_rows(not_estimable_report, "effects")["Incidents"][2] == "–"


def test_roi_turns_no_unestimable_effect_into_a_return(not_estimable_report):
    roi = _table_rows(not_estimable_report, "roi-evidence")
    # downtime rests on the incident-rate ratio: not estimable, said so, no amount, not counted;
    # nothing else is measured here (attrition's interval includes 1), so nothing is counted
    # time to restore was estimated: it keeps its own status (stated in the effects section),
    # not the "not estimable" of the return it shares with incidents
    assert roi["Less downtime"] == [
        "incidents not estimable",
        "not estimable",
        "not estimable",
    ]
    assert roi["Return counted: measured here"][1] == "$0"
    assert "Not measurable yet: no effect of certification is measured in this company's" in _plain(
        not_estimable_report
    )


def test_a_return_resting_on_an_effect_not_shown_splits_off_its_part(tmp_path):
    eff, _ = _effects()
    warn = "Pre-trend check (months -12 to -2): p = 0.002. WARNING: rates differed before."
    eff.loc[eff["metric"] == "incident_rate_ratio", "caveats"] = warn
    db = build_published_fixture(tmp_path / "talent.duckdb", effects=eff)
    text = html_of(db)
    roi = _table_rows(text, "roi-evidence")
    # time to restore (0.83) is shown, incidents (0.72) are not: the counted part is the
    # saving with the incident ratio at 1, 4 quarters x 4,000 GPU-hours x (1/0.83 - 1) x 50
    faster = 4 * DOWNTIME_GPU_HOURS * (1 / 0.83 - 1) * 50
    whole = 4 * DOWNTIME_GPU_HOURS * (1 / (0.72 * 0.83) - 1) * 50
    assert roi["Less downtime: faster restore"][:2] == [
        "time to restore measured here; price assumed",
        f"${faster:,.0f}",
    ]
    assert roi["Less downtime: fewer incidents"][:2] == [
        "incidents estimated, not distinguishable from no effect; price assumed",
        f"${whole - faster:,.0f}",
    ]
    # one status for the incident effect, wherever it is named
    statuses = set(re.findall(r'data-effect="incident_rate_ratio" data-status="([a-z_]+)"', text))
    assert statuses == {"not_shown"}


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
        "A simpler design (one indicator for all certified months) gives 0.66 (0.55–0.79)"
        in (with_it.notes[0])
    )
    assert "simpler design" not in without.notes[0]


def test_a_pretrend_that_rejects_is_said_with_its_p_value_and_its_meaning():
    e = read_effect(pd.Series(dict(NEW, finding=False, pretrend_p=0.0039, pretrend_rejected=True)))
    text = _plain(effect_sentence(e))
    assert "pre-trend test p = 0.0039" in text
    assert "would arise by chance about 4 times in 1,000 if the rates had not differed" in text
    # more data would not mend a pre-trend: no power sentence
    assert "4 times in 5" not in text


def _with_power(se: float, claimed: float, months: float, estimate: float = 0.9):
    """An incident row whose interval has standard error `se` on the log scale, and the power
    columns the estimator writes for it (pipelines/lib/effects/power.py)."""
    import math

    from pipelines.lib.effects import power

    lo, hi = (
        math.exp(math.log(estimate) - 1.959964 * se),
        math.exp(math.log(estimate) + 1.959964 * se),
    )
    row = power.power_row((lo, hi), lambda r: math.nan, months, claimed)
    return dict(NEW, estimate=estimate, ci_low=lo, ci_high=hi, finding=False, **row)


def test_an_effect_not_distinguishable_says_what_the_data_could_have_found():
    # se 0.15: the smallest reduction found 4 times in 5 is exp(-2.80 x 0.15) = 0.66, and the
    # assumed 0.80 needs (2.80 x 0.15 / ln 0.8)^2 = 3.55 times the 6,000 engineer-months
    e = read_effect(pd.Series(_with_power(0.15, 0.80, 6000)))
    assert e.status == "not_shown"
    text = _plain(effect_sentence(e))
    assert (
        "smallest change a test finds 4 times in 5 is 34 % fewer incidents per engineer-month"
        in text
    )
    assert "(ratio 0.66, 80 % power" in text
    more = 6000 * (2.8016 * 0.15 / 0.22314) ** 2 - 6000
    said = int(re.search(r"needs about ([\d,]+) more engineer-months", text)[1].replace(",", ""))
    assert said == pytest.approx(more, rel=0.002)
    # a company large enough for the assumed size is told the effect is likely smaller
    big = _plain(effect_sentence(read_effect(pd.Series(_with_power(0.05, 0.80, 60000)))))
    assert "would have been found: the effect is more likely smaller than assumed" in big
    # shown effects carry no such sentence
    shown = read_effect(pd.Series(dict(_with_power(0.05, 0.80, 60000), finding=True)))
    assert "4 times in 5" not in _plain(effect_sentence(shown))


def test_the_year_change_of_the_incident_rate_is_also_put_per_1000_gpus():
    from datetime import date

    from pipelines.lib.report.quarters import Quarter
    from pipelines.lib.report.sections.incidents import (
        QuarterIncidents,
        gpu_months,
        year_change,
        year_table,
    )

    q = Quarter.parse("2026-Q3")
    # the fleet: 4,000 GPUs through 2025-Q3, 8,000 through 2026-Q3 (two clusters, monthly rows)
    fleet = pd.DataFrame(
        [dict(month_end=date(y, m, 30 if m == 9 else 31), cluster=c, gpu_count=n)
         for y, n in ((2025, 2000), (2026, 4000)) for m in (7, 8, 9) for c in ("a", "b")]
    )  # fmt: skip
    assert gpu_months(fleet, q) == 3 * 8000
    assert gpu_months(fleet, q.previous()) is None  # no month of 2026-Q2 in the frame
    # 850 incidents in 820 engineer-months a year ago, 1,560 in 1,000 now
    ago = QuarterIncidents(850 / 820 * 100, 20.0, 290, 850, gpu_months(fleet, q.trailing(5)[0]))
    now = QuarterIncidents(1560 / 1000 * 100, 20.0, 350, 1560, gpu_months(fleet, q))
    said = _plain(year_change(now, ago, q))
    assert "A year earlier (2025-Q3) the rate was 103.7 per 100 engineer-months." in said
    assert "the fleet went from 4,000 to 8,000 GPUs (+100 %)" in said
    assert "from 820 to 1,000 (+22 %)" in said
    # 1,560 / 24,000 GPU-months x 1,000 = 65.0; 850 / 12,000 x 1,000 = 70.8: fewer per GPU
    assert "the monthly rate per 1,000 GPUs was 65.0 against 70.8 a year earlier (−8 %)" in said
    rows = [[_plain(c) for c in r] for r in year_table(now, ago, q).rows]
    assert rows == [["2025-Q3", "850", "820", "103.7", "4,000", "70.8"],
                    ["2026-Q3", "1,560", "1,000", "156.0", "8,000", "65.0"]]  # fmt: skip
    no_fleet = _plain(year_change(now, QuarterIncidents(103.7, 20.0, 290, 850), q))
    assert "cannot be put per GPU" in no_fleet


def test_the_power_table_holds_every_figure_the_power_sentence_quotes():
    from pipelines.lib.report.sections.incidents import power_table

    e = read_effect(pd.Series(_with_power(0.15, 0.80, 6000)))
    t = power_table({e.metric: e}, 5)
    cells = [_plain(c) for c in t.rows[0]]
    more = 6000 * (2.8016 * 0.15 / 0.22314) ** 2 - 6000
    assert cells[:3] == ["Incidents", "0.66", "0.80"]
    assert int(cells[3].replace(",", "")) == pytest.approx(more, rel=0.002)
    # every tagged figure of the sentence is in the table
    said = set(re.findall(r'data-figure="([^"]+)"', str(effect_sentence(e))))
    held = set(re.findall(r'data-figure="([^"]+)"', " ".join(map(str, t.rows[0]))))
    assert (
        said
        - {
            "effect-incident_rate_ratio",
            "effect-incident_rate_ratio-ci",
            "naive-incident_rate_ratio",
        }
        <= held
    )  # those three: the effects table
