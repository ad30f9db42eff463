"""The report's Operations section (pipelines/lib/report/sections/operations.py).

On the generated company the end-to-end tests share (600 employees, 2 years, seed 11, the
generator's operations exports run through `talent run`): the section's figures equal the
marts' values read here with plain SQL, and every status it prints is the one
marts.operations_effect holds. A company without the operations exports is told which exports
would measure them, with no chart; a company with some of them, which export is missing. Small
groups are hidden as elsewhere. With the operations marts of a 240-cluster company beside the
programme and career marts, the whole report stays within its page budget.
"""

from __future__ import annotations

import re
import sys
from datetime import date
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
import pytest

from pipelines.lib.report.data import load_marts
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.render import build_context, load_inputs, render_html
from pipelines.lib.report.sections.operations import change_rows, commissioning_rows

sys.path.insert(0, str(Path(__file__).parent))
from test_report import QUARTER, _plain, _table_rows, build_published_fixture  # noqa: E402

THR = 5
STATUS = {(True, True): "shown", (True, False): "not_shown"}


def _section(html: str) -> str:
    block = re.search(r'<section id="operations".*?</section>', html, re.S)
    assert block, "the operations section is missing"
    return block.group(0)


def _figure(html: str, key: str) -> set[str]:
    return set(re.findall(rf'data-figure="{re.escape(key)}">([^<]*)<', html))


# --- a generated company with the operations exports -------------------------------------------


@pytest.fixture(scope="module")
def company(shared_company, shared_report) -> dict:
    """The shared company's report (tests/conftest.py, shared_report: rendered with the minimum
    group size 5, THR) and the files it was rendered from."""
    warehouse = shared_company.warehouse
    published, build = warehouse / "talent.duckdb", warehouse / "build" / "talent.duckdb"
    quarter = Quarter.parse(shared_report["quarter"])
    return {"html": shared_report["text"], "published": published, "build": build, "q": quarter}


def _sql(db: Path, query: str, params: list | None = None):
    with duckdb.connect(str(db), read_only=True) as con:
        return con.execute(query, params or []).fetchall()


@pytest.mark.slow
def test_utilisation_figures_are_the_marts(company):
    q = company["q"]
    busy, lost, available, cluster_months = _sql(
        company["build"],
        "select sum(gpu_hours_busy) / sum(gpu_hours_available), "
        "sum(gpu_hours_lost) / sum(gpu_hours_available), sum(gpu_hours_available), count(*) "
        "from restricted.cluster_utilisation where month between ? and ?",
        [q.start, q.months[-1]],
    )[0]
    section = _section(company["html"])
    assert _figure(section, "gpu-busy-share") == {f"{busy * 100:.1f} %"}
    assert _figure(section, "gpu-lost-share") == {f"{lost * 100:.1f} %"}
    rows = _table_rows(section, "operations-utilisation")
    assert rows["All clusters"] == [
        f"{cluster_months:,}",
        f"{available:,.0f}",
        f"{busy * 100:.1f} %",
        f"{lost * 100:.1f} %",
    ]
    # the bands of the team's certified share add up to all cluster-months
    bands = [v for k, v in rows.items() if k not in ("Team's certified share", "All clusters")]
    assert sum(int(v[0].replace(",", "")) for v in bands) == cluster_months
    assert 'data-chart="operations-utilisation"' in section


@pytest.mark.slow
def test_change_figures_are_the_marts(company):
    q = company["q"]
    changes, failed = _sql(
        company["build"],
        "select sum(changes), sum(failed_changes) from restricted.change_outcomes "
        "where certification_status = 'all' and month between ? and ?",
        [q.start, q.months[-1]],
    )[0]
    section = _section(company["html"])
    rate = f"{failed / changes * 100:.1f} %"
    assert _figure(section, "change-failure-rate") == {rate}
    rows = _table_rows(section, "operations-changes")
    assert rows["All changes"][:3] == [f"{changes:,}", f"{failed:,}", rate]
    by_status = dict(
        _sql(
            company["build"],
            "select certification_status, sum(changes) from restricted.change_outcomes "
            "where certification_status <> 'all' and month between ? and ? group by 1",
            [q.start, q.months[-1]],
        )
    )
    assert rows["Certified implementer"][0] in (f"{by_status['certified']:,}", f"<{THR}")


@pytest.mark.slow
def test_commissioning_figures_are_the_marts(company):
    q = company["q"]
    projects, gpus, median_days = _sql(
        company["build"],
        "select count(*), sum(gpus_added), median(days_per_1000_gpus) "
        "from restricted.capacity_commissioning "
        "where accepted_on <= ? and days_to_production is not null",
        [q.end],
    )[0]
    rows = _table_rows(_section(company["html"]), "operations-commissioning")
    assert rows["All projects"][0] == f"{projects:,}"
    assert rows["All projects"][1] == f"{gpus:,.0f}"
    assert rows["All projects"][3] == f"{median_days:,.0f}"


@pytest.mark.slow
def test_every_status_printed_is_the_one_the_mart_holds(company):
    held = {
        metric: "not_estimable" if not estimable else STATUS[(True, bool(finding))]
        for metric, estimable, finding in _sql(
            company["published"], "select metric, estimable, finding from marts.operations_effect"
        )
    }
    assert len(held) == 4
    printed = re.findall(r'data-effect="([a-z_0-9]+)" data-status="([a-z_]+)"', company["html"])
    for metric, status in held.items():
        seen = {s for m, s in printed if m == metric}
        assert seen == {status}, (metric, seen, status)
    # a not-estimable effect prints no number
    for metric, status in held.items():
        if status == "not_estimable":
            assert not _figure(company["html"], f"effect-{metric}")


@pytest.mark.slow
def test_the_report_with_the_operations_section_is_consistent(company):
    """One value per figure, one status per effect, no status worded outside its tag, every
    acronym spelled out at its first use (tests/test_report_consistency.py's checks)."""
    from test_report_consistency import acronym_problems, problems

    from pipelines.lib.report.glossary import ACRONYMS

    assert problems(company["html"]) == []
    # a figure quoted in the lead is the one its table prints
    from test_report import assert_figures_agree

    quoted = assert_figures_agree(company["html"])
    assert {"gpu-busy-share", "gpu-lost-share", "change-failure-rate"} <= quoted
    acronyms = {**ACRONYMS, **load_inputs().acronyms}
    assert acronym_problems(company["html"], acronyms) == []


# --- without the exports -----------------------------------------------------------------------


def test_a_company_without_the_exports_is_told_which_would_measure_it(tmp_path):
    db = build_published_fixture(tmp_path / "talent.duckdb")
    html = render_html(build_context(load_marts(db), Quarter.parse(QUARTER), THR))
    section = _section(html)
    text = _plain(section)
    for export in ("gpu_usage", "capacity_changes", "changes"):
        assert f"{export} (" in text
    assert "No operations export was delivered" in text
    assert "<svg" not in section and "<table" not in section


def _ops_tables(clusters: int, months: list[date], seed: int = 3) -> dict[str, pd.DataFrame]:
    """Operations marts of a company of `clusters` clusters: teams of 3 to 40 engineers, a
    capacity project per cluster and year, changes by status each month, four effects."""
    rng = np.random.default_rng(seed)
    util = []
    for c in range(clusters):
        engineers = 3 + (c * 7) % 38
        for m in months:
            available = 720.0 * (64, 300, 1600)[c % 3]
            certified = int(rng.integers(0, engineers + 1))
            util.append(
                {"month": m, "cluster": f"cluster-{c:03d}", "gpu_hours_available": available,
                 "gpu_hours_busy": available * rng.uniform(0.4, 0.8),
                 "gpu_hours_lost": available * rng.uniform(0.0, 0.08), "engineers": engineers,
                 "certified_engineers": certified, "certified_share": certified / engineers}
            )  # fmt: skip
    projects = [
        {"project_id": f"CAP-{c}-{y}", "cluster": f"cluster-{c:03d}", "gpus_added": 64,
         "accepted_on": date(2025 + y, 3, 1), "days_to_production": 10 + c % 20,
         "days_per_1000_gpus": (10 + c % 20) / 64 * 1000, "leads": 1 + c % 2,
         "certified_share_of_leads": (c % 3) / 2}
        for c in range(clusters) for y in range(2)
    ]  # fmt: skip
    changes = [
        {"month": m, "certification_status": s, "implementers": n, "changes": 10 * n,
         "failed_changes": n, "lead_time_mean_hours": 50.0}
        for m in months
        for s, n in (("certified", 40), ("not_certified", 60), ("unlinked", 0), ("all", 100))
    ]  # fmt: skip
    effects = pd.DataFrame(
        {"metric": ["change_failure_ratio", "busy_share_per_10_points",
                    "lost_share_per_10_points", "commissioning_time_ratio"],
         "estimate": [0.6, 0.02, -0.008, None], "ci_low": [0.4, 0.01, -0.012, None],
         "ci_high": [0.9, 0.03, -0.004, None], "estimable": [True, True, True, False],
         "finding": [True, True, True, False], "n_engineers": [40, 0, 0, 0],
         "n_events": [120, 0, 0, 12],
         "not_estimable_reason": [None, None, None, "too few capacity projects"],
         "data_needed": [None, None, None, "18 more projects"]}
    )  # fmt: skip
    return {
        "cluster_utilisation": pd.DataFrame(util),
        "capacity_commissioning": pd.DataFrame(projects),
        "change_outcomes": pd.DataFrame(changes),
        "operations_effect": effects,
    }


def _with(db: Path, tables: dict[str, pd.DataFrame]) -> Path:
    with duckdb.connect(str(db)) as con:
        for name, df in tables.items():
            con.register("f", df)
            con.execute(f"create table marts.{name} as select * from f")
            con.unregister("f")
    return db


def test_a_company_with_some_exports_is_told_which_export_is_missing(tmp_path):
    q = Quarter.parse(QUARTER)
    tables = _ops_tables(4, [m for qq in q.trailing(4) for m in qq.months])
    db = _with(build_published_fixture(tmp_path / "talent.duckdb"),
               {k: v for k, v in tables.items() if k != "capacity_commissioning"})  # fmt: skip
    html = render_html(build_context(load_marts(db), q, THR))
    text = _plain(_section(html))
    assert "Not measured: days from hardware delivery to production; the capacity_changes" in text
    assert "gpu_usage" not in text
    # the effect whose export is missing is not printed
    assert 'data-effect="commissioning_time_ratio"' not in _section(html)
    assert 'data-effect="change_failure_ratio" data-status="shown"' in _section(html)


# --- small groups ------------------------------------------------------------------------------


def test_a_status_with_a_month_of_fewer_than_five_implementers_is_hidden_with_a_complement():
    q = Quarter.parse(QUARTER)
    rows = []
    for i, m in enumerate(q.months):
        for s, n in (("certified", 3 if i == 1 else 8), ("not_certified", 9), ("unlinked", 0)):
            rows.append({"month": m, "certification_status": s, "implementers": n,
                         "changes": 4 * n + 2, "failed_changes": n // 2,
                         "lead_time_mean_hours": 30.0})  # fmt: skip
        rows.append({"month": m, "certification_status": "all", "implementers": 17,
                     "changes": 70, "failed_changes": 8, "lead_time_mean_hours": 30.0})  # fmt: skip
    out, _ = change_rows(pd.DataFrame(rows), q, THR)
    by = {r[0]: r[1:] for r in out}
    assert by["Certified implementer"] == ["<5"] * 4
    # the certified changes would be the total less the others: the next smallest goes too
    hidden = [k for k, v in by.items() if v == ["<5"] * 4]
    assert len(hidden) == 2 and "All changes" not in hidden


def test_a_group_of_fewer_than_five_projects_is_hidden_with_a_complement():
    q = Quarter.parse(QUARTER)
    shares = [0.0] * 9 + [1.0] * 2 + [0.5] * 6
    projects = pd.DataFrame(
        {"accepted_on": [date(2026, 1, 5)] * len(shares), "days_to_production": 12,
         "days_per_1000_gpus": 150.0, "gpus_added": 80, "leads": 2,
         "certified_share_of_leads": shares}
    )  # fmt: skip
    by = {r[0]: r[1:] for r in commissioning_rows(projects, q, THR)}
    assert by["All leads certified"] == ["<5"] * 4
    assert by["Some leads certified"] == ["<5"] * 4  # 6 projects: the complement
    assert by["No lead certified"][0] == "9"
    assert by["All projects"][0] == "17"


# --- the page budget ---------------------------------------------------------------------------


@pytest.mark.slow
def test_the_whole_report_with_operations_prints_within_the_page_limit(tmp_path):
    """The 240-team company of tests/test_report_length.py with the planted programme and
    career marts and operations marts of 240 clusters: a page fewer than PAGE_LIMIT, which
    leaves a page for the plan's section."""
    from test_report_length import MANY, PAGE_LIMIT
    from test_report_programmes import planted_warehouse

    from pipelines.lib.report import render_report

    q = Quarter.parse(QUARTER)
    db = planted_warehouse(tmp_path / "talent.duckdb", teams=MANY)
    _with(db, _ops_tables(len(MANY), [m for qq in q.trailing(8) for m in qq.months]))
    result = render_report(db, QUARTER, tmp_path / "out")
    assert result["sections"]["operations"]
    assert result["pages"] <= PAGE_LIMIT - 1


def test_leads_the_published_mart_withholds_are_not_called_unlinked():
    """Without the build file the report reads the published mart, which hides the leads of a
    project led by fewer than 5 people: those projects are counted as withheld."""
    q = Quarter.parse(QUARTER)
    projects = pd.DataFrame(
        {"accepted_on": [date(2026, 1, 5)] * 11, "days_to_production": 12,
         "days_per_1000_gpus": 150.0, "gpus_added": 80, "leads": [None] * 6 + [0] * 5,
         "certified_share_of_leads": [None] * 11, "suppressed": [True] * 6 + [False] * 5}
    )  # fmt: skip
    by = {r[0]: r[1:] for r in commissioning_rows(projects, q, THR)}
    assert by["Leads withheld by the published mart"][0] == "6"
    assert by["Leads not linked to an engineer"][0] == "5"
    assert by["All projects"][0] == "11"
