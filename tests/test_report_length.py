"""Bounded length at any company size: a synthetic warehouse of 240 teams (about the team count
of a 50,000-employee company, without the programme and career marts) prints within 10 pages,
two fewer than the 12 a report may have, which the programme and career sections take (their
marts are rendered with 240 teams in tests/test_report_programmes.py); every chart draws ten
teams, every team is in the HTML and in the appendix files, which open as numbers."""

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
# pages a report may have, and those the sections before the programmes and careers may use:
# 12 with the programmes and careers, 14 with the operations section and the plan's section
# (a generated company of 800 employees prints 13 pages with the operations section,
# tests/test_report_operations.py leaves a page of the 14 for the plan)
PAGE_LIMIT = 14
PAGE_BUDGET = 10


@pytest.fixture(scope="module")
def big(tmp_path_factory) -> dict:
    db = build_published_fixture(tmp_path_factory.mktemp("big") / "talent.duckdb", teams=MANY)
    result = render_report(db, QUARTER, tmp_path_factory.mktemp("out"))
    result["text"] = Path(result["html"]).read_text(encoding="utf-8")
    return result


@pytest.mark.slow
def test_many_teams_print_within_the_page_budget(big):
    assert big["pages"] <= PAGE_BUDGET
    pdf = Path(big["pdf"]).read_bytes()
    assert pdf[:5] == b"%PDF-"


@pytest.mark.slow
def test_the_html_holds_every_team_collapsed(big):
    full = _table_rows(big["text"], "coverage-teams-all")
    assert len([k for k in full if k.startswith("cluster-")]) == N_TEAMS
    # the full table is collapsed on screen and left out of print
    assert re.search(r'<details class="full-table">\s*<summary>[^<]*240 rows', big["text"])


def _csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


@pytest.mark.slow
def test_appendix_files_hold_every_team_as_numbers_with_the_same_suppression(big):
    files = {p.name: p for p in big["appendix"]}
    assert {"coverage-teams.csv", "composition-teams.csv", "expiring-teams.csv", "spend.csv",
            "roi-inputs.csv"} <= set(files)  # fmt: skip
    header, rows = _csv(files["coverage-teams.csv"])
    assert header[1] == "Engineers at quarter end (count)"
    assert header[4] == "Share meeting role requirements (%)"
    teams = {r[0]: r[1:] for r in rows if r[0].startswith("cluster-")}
    assert len(teams) == N_TEAMS
    full = _table_rows(big["text"], "coverage-teams-all")
    for team, cells in teams.items():
        if cells[-1] == "true":  # hidden: empty figures where the report prints <5 or hidden
            assert cells[:4] == ["", "", "", ""] and full[team][0] in ("<5", "hidden")
        else:  # the same figures as the report, as plain numbers
            assert full[team][0] == f"{int(cells[0]):,}"
            assert full[team][3] == f"{float(cells[3]):.0f} %"
    small = [t for t, (_, _, hc, _) in MANY.items() if hc < 5]
    assert small and all(teams[t][-1] == "true" for t in small)


@pytest.mark.slow
def test_every_appendix_cell_opens_as_a_number_or_a_word(big):
    """Numbers as numbers: no thousands separators, percent signs, currency signs or Unicode
    minus in a number column; units are in the headers."""
    for path in big["appendix"]:
        header, rows = _csv(path)
        for col, name in enumerate(header):
            cells = [r[col] for r in rows if r[col] != ""]
            if re.search(r"\((count|%|USD|hours|value)\)$", name):
                for c in cells:
                    float(c)  # raises on "1,234", "19 %", "−3", "$5"
            # a cell that is a number must be a plain one ("7434", not "7,434", "19 %", "−3")
            disguised = [
                c for c in cells
                if re.fullmatch(r"[−$\d,.% +-]+", c) and not re.fullmatch(r"-?\d+(\.\d+)?", c)
            ]  # fmt: skip
            assert disguised == [], (path.name, name, disguised[:3])


@pytest.mark.slow
def test_team_charts_show_ten_labelled_teams_with_their_sizes(big):
    chart = re.search(r'<svg[^>]*data-chart="coverage-by-team".*?</svg>', big["text"], re.S)
    assert chart
    named = set(re.findall(r"cluster-\d{3}", chart.group(0)))
    assert len(named) == 10
    assert "share of the team" in chart.group(0)  # the axis says what it measures
    # each share carries the team's size: one engineer moves a small team's share by 10 points
    assert len(re.findall(r"\d+ % \(\d+ of \d+\)", chart.group(0))) >= 8
