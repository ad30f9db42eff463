"""Bounded length at any company size: a synthetic warehouse of 240 teams (about the team count
of a 50,000-employee company) prints within 12 pages, with ten teams per table and chart and
every team in the HTML and the appendix files."""

from __future__ import annotations

import csv
import re
import sys
from pathlib import Path

import pytest

from pipelines.lib.report import render_report

sys.path.insert(0, str(Path(__file__).parent))
from test_report import QUARTER, _table_rows, build_published_fixture  # noqa: E402

N_TEAMS = 240
# team -> (GPUs, fleet size class, headcount, expiring): 3..40 engineers, sizes cycling
MANY = {
    f"cluster-{i:03d}": (
        (64, 300, 1600)[i % 3],
        ("small", "medium", "large")[i % 3],
        3 + (i * 7) % 38,
        i % 5,
    )
    for i in range(N_TEAMS)
}


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> dict:
    db = build_published_fixture(tmp_path_factory.mktemp("big") / "talent.duckdb", teams=MANY)
    result = render_report(db, QUARTER, tmp_path_factory.mktemp("out"))
    result["text"] = Path(result["html"]).read_text(encoding="utf-8")
    return result


@pytest.mark.slow
def test_many_teams_print_within_twelve_pages(big):
    assert big["pages"] <= 12
    pdf = Path(big["pdf"]).read_bytes()
    assert pdf[:5] == b"%PDF-"


@pytest.mark.slow
def test_printed_team_tables_hold_ten_teams_and_the_html_holds_all(big):
    printed = _table_rows(big["text"], "coverage-teams")
    assert len([k for k in printed if k.startswith("cluster-")]) == 10
    full = _table_rows(big["text"], "coverage-teams-all")
    assert len([k for k in full if k.startswith("cluster-")]) == N_TEAMS
    # the full table is collapsed on screen and left out of print
    assert re.search(r'<details class="full-table">\s*<summary>[^<]*240 rows', big["text"])


@pytest.mark.slow
def test_appendix_files_hold_every_team_with_the_same_suppression(big):
    files = {p.name: p for p in big["appendix"]}
    assert {"coverage-teams.csv", "composition-teams.csv", "expiring-teams.csv"} <= set(files)
    with files["coverage-teams.csv"].open(encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    teams = {r[0]: r[1:] for r in rows[1:] if r[0].startswith("cluster-")}
    assert len(teams) == N_TEAMS
    full = _table_rows(big["text"], "coverage-teams-all")
    assert all(full[t] == cells for t, cells in teams.items())
    # teams of three and four engineers read <5 in the file as in the report
    small = [t for t, (_, _, hc, _) in MANY.items() if hc < 5]
    assert small and all(teams[t][0] == "<5" for t in small)


@pytest.mark.slow
def test_team_charts_show_ten_labelled_teams(big):
    chart = re.search(r'<svg[^>]*data-chart="coverage-by-team".*?</svg>', big["text"], re.S)
    assert chart
    named = set(re.findall(r"cluster-\d{3}", chart.group(0)))
    assert len(named) == 10
    assert "share of the team" in chart.group(0)  # the axis says what it measures
