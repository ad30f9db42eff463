"""The plan section and page 1's budget request on a fixture with a planted workforce plan and
backtest: the request's costs and paybacks recomputed from the planted rows, the measured return
per certified engineer from the planted ROI, the backtest's errors from the planted rows."""

from __future__ import annotations

import re
from datetime import date

import duckdb
import pytest
from test_report import (
    COUNTED_12M,
    MONTHS,
    QUARTER,
    _coverage,
    _plain,
    _table_rows,
    build_published_fixture,
    html_of,
)

from pipelines.lib.plan.backtest import BACKTEST_COLUMNS
from pipelines.lib.plan.build import PLAN_COLUMNS

PLAN_QUARTERS = ["2026-Q4", "2027-Q1", "2027-Q2", "2027-Q3", "2027-Q4", "2028-Q1"]
# role -> level -> (hires, bootcamp starts) per quarter; cost, training, added certified per row
ROWS = [
    # quarter, role, level, hires, online, bootcamp, cost, training, added, template, shortfall
    ("2026-Q4", "operations_engineer", 2, 0, 4, 6, 90_000.0, 90_000.0, 3.0, 30, 12.0),
    ("2026-Q4", "network_specialist", 3, 0, 0, 5, 60_000.0, 60_000.0, 1.0, 10, 4.0),
    ("2027-Q1", "operations_engineer", 2, 6, 2, 0, 250_000.0, 30_000.0, 6.0, 30, 5.0),
    ("2027-Q1", "network_specialist", 3, 2, 0, 0, 90_000.0, 0.0, 3.0, 10, 0.0),
    ("2027-Q2", "operations_engineer", 2, 0, 0, 0, 80_000.0, 0.0, 9.0, 32, 0.0),
    ("2027-Q2", "network_specialist", 3, 0, 0, 0, 20_000.0, 0.0, 4.0, 10, 0.0),
]
for q in PLAN_QUARTERS[3:]:
    ROWS += [
        (q, "operations_engineer", 2, 1, 1, 0, 40_000.0, 10_000.0, 10.0, 32, 0.0),
        (q, "network_specialist", 3, 0, 0, 0, 20_000.0, 0.0, 4.0, 10, 0.0),
    ]
# measure -> per quarters_back: (forecast, actual) per quarter ahead
BACKTEST = {
    4: {
        "headcount": [(100, 110), (104, 112), (108, 120), (110, 125)],
        "exits": [(5, 4), (5, 6), (5, 5), (5, 8)],
    }
}


def _plan_rows() -> list[dict]:
    out = []
    for q, role, lvl, hires, online, boot, cost, training, added, tpl, short in ROWS:
        row = dict.fromkeys(PLAN_COLUMNS)
        row |= {
            "as_of_date": date(2026, 9, 30),
            "quarter": q,
            "role_family": role,
            "skill_level": lvl,
            "hires": hires,
            "starts_online": online,
            "starts_bootcamp": boot,
            "starts_apprenticeship": 0,
            "starts_vendor_partnership": 0,
            "starts_internal": 0,
            "expected_headcount": 20.0,
            "expected_compliant": 10.0,
            "expected_certified": 2.0,
            "expected_exits": 1.0,
            "added_certified_engineers": added,
            "cost_usd": cost,
            "training_cost_usd": training,
            "template_headcount": tpl,
            "shortfall": short,
            "probability_met": 0.5,
            "plan_probability": 0.25,
            "suppressed": False,
        }
        out.append(row)
    return out


def _backtest_rows() -> list[dict]:
    out = []
    for back, measures in BACKTEST.items():
        for m, pairs in measures.items():
            for t, (f, a) in enumerate(pairs):
                row = dict.fromkeys(BACKTEST_COLUMNS)
                row |= {
                    "quarters_back": back,
                    "origin_quarter": "2025-Q3",
                    "as_of_date": date(2025, 9, 30),
                    "quarter": ["2025-Q4", "2026-Q1", "2026-Q2", "2026-Q3"][t],
                    "quarters_ahead": t + 1,
                    "measure": m,
                    "forecast": float(f),
                    "actual": float(a),
                    "forecast_error": float(f - a),
                    "absolute_error": float(abs(f - a)),
                    "relative_error": (f - a) / a,
                    "suppressed": False,
                }
                out.append(row)
    return out


# two of three rates measured in the company's data, one the domain's
RATES = [
    {"rate": "exit per quarter, level 2, certified", "value": 0.03, "low": 0.02, "high": 0.04,
     "source": "restricted.attrition", "data_window": "2024-10-01..2026-09-30", "measured": True},
    {"rate": "promotion per quarter, level 2", "value": 0.1, "low": 0.05, "high": 0.15,
     "source": "restricted.level_progression", "data_window": "2025-01-01..2025-12-31",
     "measured": True},
    {"rate": "hiring cost, share of a year's pay", "value": 0.2, "low": 0.15, "high": 0.3,
     "source": "estimate", "data_window": "", "measured": False},
]  # fmt: skip


@pytest.fixture(scope="module")
def with_plan(tmp_path_factory):
    import pandas as pd

    db = build_published_fixture(tmp_path_factory.mktemp("plan") / "talent.duckdb")
    with duckdb.connect(str(db)) as con:
        for name, rows in (
            ("workforce_plan", _plan_rows()),
            ("workforce_plan_backtest", _backtest_rows()),
            ("workforce_plan_rates", RATES),
        ):
            con.register("frame", pd.DataFrame(rows))
            con.execute(f"create table marts.{name} as select * from frame")
            con.unregister("frame")
    return html_of(db)


def per_engineer() -> float:
    """The planted ROI's measured return of the last 12 months over the certified engineers on
    average at its 12 month ends."""
    cov = _coverage()
    year = cov[
        (cov["segment_type"] == "all") & cov["month_end"].map(lambda d: d >= date(2025, 10, 31))
    ]
    assert len(year) == 12 and MONTHS[-1] == date(2026, 9, 1)
    return COUNTED_12M / year["any_cert_headcount"].mean()


def _years(text: str) -> float:
    return float(re.search(r"([0-9.]+) years", text).group(1))


def test_page_one_asks_for_the_plan_quarter_by_quarter_instead_of_one_certification_each(
    with_plan,
):
    rows = _table_rows(with_plan, "actions")
    assert "Budget request by quarter, and the renewals due, 2026-Q3" in with_plan
    assert not any(k.startswith("Certify first") for k in rows)
    assert not any(k.startswith("Fill the") for k in rows)
    first = next(v for k, v in rows.items() if k.startswith("2026-Q4: hire none; start online 4"))
    assert first[1] == "$150,000"  # 90,000 + 60,000
    # training to date 150,000 over 4 certified beyond the team left alone
    assert _years(first[3]) == pytest.approx(150_000 / (4 * per_engineer()), abs=0.051)
    q1 = next(v for k, v in rows.items() if k.startswith("2027-Q1: hire network specialist 2"))
    assert q1[1] == "$340,000" and _years(q1[3]) == pytest.approx(
        180_000 / (9 * per_engineer()), abs=0.051
    )
    # quarters after the fourth in one row: 2027-Q4 and 2028-Q1, 60,000 each
    later = next(v for k, v in rows.items() if k.startswith("2027-Q4–2028-Q1"))
    assert later[1] == "$120,000"
    assert _years(later[3]) == pytest.approx(200_000 / (14 * per_engineer()), abs=0.051)


def test_the_plan_section_names_the_measured_effects_and_the_backtests_error(with_plan):
    text = _plain(with_plan)
    assert "Payback rests on the effects measured in this company's data only" in text
    assert "2 of its 3 rates measured in the company's data up to 30 September 2026" in text
    total = sum(r[6] for r in ROWS)
    assert f"${total:,.0f} over 6 quarters" in text
    assert "in 2026-Q4 the roles still need 16 more engineers" in text
    assert "probability of meeting every template in every quarter is 25 %" in text
    hires = _table_rows(with_plan, "plan-hires")
    assert hires["Operations engineer"] == ["0", "6", "0", "1", "1", "1"]
    bt = _table_rows(with_plan, "plan-backtest")
    head = sum(abs(f - a) / a for f, a in BACKTEST[4]["headcount"]) / 4
    assert bt["Headcount"] == [f"110 / 125; off by {head * 100:.0f} % on average"]
    exits = sum(abs(f - a) / a for f, a in BACKTEST[4]["exits"]) / 4
    assert bt["Exits"] == [f"5 / 8; off by {exits * 100:.0f} % on average"]


def test_without_a_plan_page_one_keeps_the_certification_actions(tmp_path):
    """Without a plan the certification action stays, and the plan section says that a fleet
    plan turns page 1's actions into a budget request."""
    html = html_of(build_published_fixture(tmp_path / "talent.duckdb"))
    assert any(k.startswith("Certify first") for k in _table_rows(html, "actions"))
    assert "turns page 1's actions into a budget request" in _plain(html)
    assert "no workforce plan" in _plain(html)
    assert QUARTER in html


def test_planned_counts_never_read_as_a_small_group(with_plan):
    """Hires of 1 or 2 in a role are planned numbers, not people: the request and the section
    print them after the role, never as "2 engineers"."""
    from pipelines.lib.small_groups import small_group_mentions

    section = re.search(r'<section id="plan".*?</section>', with_plan, re.S).group(0)
    actions = re.search(r'<table data-table="actions".*?</table>', with_plan, re.S).group(0)
    for block in (section, actions):
        assert small_group_mentions(_plain(block), 5) == []
    assert "network specialist 2" in _plain(actions)
