"""One value per labelled figure and one status per effect, read back from rendered reports.

The reports of several generated companies (the session's planted one, a company where
certification changes nothing, and a small young one where most effects cannot be estimated)
are read as a reader reads them, and the checks fail when:

- a tagged figure (`data-figure`) prints two values, or a name of a population or count
  ("engineers at quarter end", "incidents in the incident model", or a bare "engineers") is
  written with two different numbers anywhere in the text;
- an effect carries two statuses (`data-effect` / `data-status`), a status tag's words do not
  match its status, or a status is stated in words outside a tag ("the data support its less
  downtime"), where no test could tie it to its effect;
- an acronym is not in the report's list, or is not spelled out where the printed report first
  uses it;
- a cell reads `<5` (fewer than the minimum group size) in a row whose group the marts count at
  five or more (a cell hidden only to protect another must read `hidden`).

The checker is tested first on reports with an inconsistency planted into them.
"""

from __future__ import annotations

import html as htmllib
import re
import sys
from pathlib import Path

import pandas as pd
import pytest

from pipelines.lib.report.data import load_marts
from pipelines.lib.report.glossary import ACRONYMS, NAMES, TOKEN
from pipelines.lib.report.labels import LABELS, SINGULAR
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.render import (
    build_context,
    latest_complete_quarter,
    load_inputs,
    render_html,
)
from pipelines.lib.report.sections.careers import level_names
from pipelines.lib.report.sections.effects import ENGINEERS, EVENTS, EVIDENCE_WORDS, STATUS_WORDS
from pipelines.lib.report.sections.incidents import status_label

sys.path.insert(0, str(Path(__file__).parent))
from conftest import GENERATED, generated_warehouse  # noqa: E402
from test_report import build_published_fixture, html_of  # noqa: E402

# every name a count is printed with, longest first so "certified engineers at quarter end"
# wins over "engineers"; bare nouns are names too, so that a count printed without its
# population ("353 engineers") cannot take two values unnoticed
NAMED = sorted(
    {*LABELS.values(), *SINGULAR.values(), *ENGINEERS.values(), *EVENTS.values()},
    key=len,
    reverse=True,
)
BARE = ("certified engineers", "engineers", "engineer", "responders", "incidents",
        "voluntary exits", "exits", "leavers", "certifications", "renewals", "hires")  # fmt: skip
STATUS_TEXT = {
    s: {STATUS_WORDS[s], EVIDENCE_WORDS[s]} for s in ("shown", "not_shown", "not_estimable")
}
# ways of stating an effect's status in words; outside a status tag they are not allowed
STATUS_PHRASES = re.compile(
    r"\b(not shown|shows? an effect|no effect shown|do(es)? not show|data support|supported by "
    r"this company|is a finding|not a finding|measured here: (incidents|time to restore))",
    re.I,
)


def _printed_text(html: str, sep: str = " | ") -> str:
    """The words of the page a reader reads (not styles, scripts, charts' drawing, the screen
    contents list, the glossary that defines the words); cells and tags become separators."""
    body = html.split('<section id="glossary"')[0]
    body = re.sub(r"<(style|script|title|nav)\b.*?</\1>", " ", body, flags=re.S)
    body = re.sub(r"<svg\b.*?</svg>", " ", body, flags=re.S)
    body = re.sub(r"</?(td|th|tr|li|p|caption|div|dd|dt|figcaption|h\d)\b[^>]*>", sep, body)
    return htmllib.unescape(re.sub(r"<[^>]+>", "", body))


def labelled_figures(html: str) -> dict[str, set[str]]:
    """Label -> the values printed under it: each tagged figure by its key, and each number
    in the text followed by a name of a population or count."""
    out: dict[str, set[str]] = {}
    for key, value in re.findall(r'data-figure="([^"]+)">([^<]*)<', html):
        out.setdefault(f"figure {key}", set()).add(value)
    text = " ".join(_printed_text(html).split())
    # "fewer than 5 engineers" names the minimum group size, not a figure of the company
    text = re.sub(r"\b(fewer than|at least) \d+ ", "", text)
    for m in re.finditer(r"(?<![\w.,$−+-])(\d[\d,]*(?:\.\d+)?) ([a-z][a-z0-9' -]*)", text):
        words = m.group(2)
        name = next((n for n in NAMED if words.startswith(n)), None)
        if name is None:
            name = next((b for b in BARE if re.match(rf"{b}\b", words)), None)
        if name is not None:
            out.setdefault(f"text {name}", set()).add(m.group(1))
    return out


def effect_statuses(html: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for metric, status, words in re.findall(
        r'data-effect="([^"]+)" data-status="([^"]+)">([^<]*)<', html
    ):
        out.setdefault(metric, set()).add(status)
        if words not in STATUS_TEXT.get(status, set()):
            out[metric].add(f"{status} worded as {words!r}")
    return out


def problems(html: str) -> list[str]:
    """Everything the checks above find wrong with one report; empty when it is consistent."""
    found = [
        f"{label} carries {sorted(values)}"
        for label, values in labelled_figures(html).items()
        if len(values) > 1
    ]
    found += [
        f"{metric} is described as {sorted(s)}"
        for metric, s in effect_statuses(html).items()
        if len(s) > 1
    ]
    untagged = re.sub(r'<span class="status[^"]*" data-effect[^>]*>[^<]*</span>', "[status]", html)
    for m in STATUS_PHRASES.finditer(_printed_text(untagged)):
        found.append(f"status stated outside a tag: {m.group(0)!r}")
    return found


def _rows(html: str, key: str) -> dict[str, list[str]]:
    """Row header -> cell texts of the table `data-table=key` (empty when it is not printed)."""
    block = re.search(rf'<table data-table="{key}"[^>]*>(.*?)</table>', html, re.S)
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", block.group(1) if block else "", re.S):
        cells = [
            htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)
        ]
        rows[cells[0]] = cells[1:]
    return rows


def group_sizes(marts, q: Quarter) -> dict[str, dict[str, float]]:
    """Table key -> row header -> the people of the row's group, counted from the marts the
    report reads (the build file's restricted copies: every group, small ones included)."""
    out: dict[str, dict[str, float]] = {}
    cov = marts.get("certification_coverage")
    if cov is not None:
        teams = cov[(pd.to_datetime(cov["month_end"]).dt.date == q.end)
                    & (cov["segment_type"] == "team")]  # fmt: skip
        out["coverage-teams-all"] = dict(
            zip(teams["segment_value"], teams["headcount"], strict=True)
        )
        out["expiring-teams-all"] = out["coverage-teams-all"]
    tc = marts.get("team_composition")
    if tc is not None:
        now = tc[pd.to_datetime(tc["month_end"]).dt.date == q.end]
        out["composition-teams-all"] = now.groupby("team")["headcount"].sum().to_dict()
    ir = marts.get("incident_rates")
    if ir is not None:
        st = ir[(ir["breakdown"] == "quarter_by_status") & (ir["quarter"] == q.start)]
        out["incident-status"] = {
            status_label(r.certification_status): r.engineers for r in st.itertuples()
        }
    lp = marts.get("level_progression_12m")
    if lp is not None:
        cur = lp[pd.to_datetime(lp["window_end"]).dt.date == q.end]
        names = level_names()
        out["careers-ladder"] = {
            f"{int(r.skill_level)} {names.get(int(r.skill_level), '')}".strip(): r.engineers
            for r in cur.itertuples()
        }
    return out


# the cells of a row that describe the row's group (the others describe another group: the
# careers ladder's time in level counts engineers whose spell's start is seen)
COLUMNS = {"careers-ladder": slice(3, 7)}


def false_small_cells(html: str, marts, q: Quarter, thr: int = 5) -> list[str]:
    """Cells printed `<5` (fewer than the minimum) in rows whose group the marts count at the
    minimum or more: such a cell is hidden to protect another and must say `hidden`."""
    found = []
    for key, sizes in group_sizes(marts, q).items():
        for name, cells in _rows(html, key).items():
            n = sizes.get(name)
            cells = cells[COLUMNS.get(key, slice(None))]
            if f"<{thr}" in cells and n is not None and n == n and n >= thr:
                found.append(f"{key}: {name!r} printed <{thr} but holds {n:.0f}")
    return found


def _spelled(word: str, acronyms: dict[str, str]) -> set[str]:
    """The expansion of `word`, as written and with the acronyms inside it spelled out too
    (AWS-SAP: "Amazon Web Services (AWS) Certified Solutions Architect – Professional")."""
    e = acronyms[word]
    inner = TOKEN.sub(lambda n: f"{acronyms[n[0]]} ({n[0]})" if n[0] in acronyms else n[0], e)
    return {e, inner}


def acronym_problems(html: str, acronyms: dict[str, str]) -> list[str]:
    """Acronyms not in the report's list, and acronyms not spelled out at their first printed
    use (the collapsed full tables, which do not print, are left out)."""
    body = re.sub(r"<details\b.*?</details>", " ", html, flags=re.S)
    text = " ".join(_printed_text(body, " ").split())
    out, seen = [], set()
    for m in TOKEN.finditer(text):
        word = m.group(0)
        singular = word[:-1] if word.endswith("s") and word[:-1] in acronyms else word
        if word in NAMES or singular in seen:
            continue
        seen.add(singular)
        if word not in acronyms:
            out.append(f"{word} is not in the report's list of acronyms")
        elif not (
            any(text[: m.start()].endswith(f"{e} (") for e in _spelled(word, acronyms))
            and text[m.end() :].startswith(")")
        ):
            out.append(
                f"{word} is not spelled out at its first use: …{text[m.start() - 40 : m.end() + 5]}"
            )
    return out


# --- the checker itself, on reports with a planted inconsistency ------------------------------


@pytest.fixture(scope="module")
def fixture_db(tmp_path_factory) -> Path:
    return build_published_fixture(tmp_path_factory.mktemp("c") / "talent.duckdb")


@pytest.fixture(scope="module")
def fixture_html(fixture_db) -> str:
    return html_of(fixture_db)


def test_a_cell_printed_fewer_than_five_for_a_group_of_five_or_more_is_found(
    fixture_db, fixture_html
):
    marts, q = load_marts(fixture_db), Quarter.parse("2026-Q3")
    assert false_small_cells(fixture_html, marts, q) == []
    # hpc-lab (8 engineers) is hidden only to protect edge-pilot (3): printed "<5", it is false
    rows = _rows(fixture_html, "coverage-teams-all")
    assert rows["edge-pilot"][0] == "<5" and rows["hpc-lab"][0] == "hidden"
    block = re.search(r'<table data-table="coverage-teams-all".*?</table>', fixture_html, re.S)
    row = re.search(r"<tr>\s*<t[hd][^>]*>hpc-lab</t[hd]>.*?</tr>", block.group(0), re.S).group(0)
    planted = fixture_html.replace(row, row.replace(">hidden<", "><5<"), 1)
    assert false_small_cells(planted, marts, q) == [
        "coverage-teams-all: 'hpc-lab' printed <5 but holds 8"
    ]


def test_the_fixture_report_is_consistent(fixture_html):
    assert problems(fixture_html) == []


def test_a_label_printed_with_two_values_is_found(fixture_html):
    # the same population, 46 engineers at quarter end, printed as 45 in one sentence
    planted = fixture_html.replace(
        '<span data-figure="headcount">46</span> engineers at quarter end',
        "45 engineers at quarter end",
        1,
    )
    assert planted != fixture_html
    assert problems(planted) == ["text engineers at quarter end carries ['45', '46']"]


def test_a_population_printed_without_its_name_is_found(fixture_html):
    planted = fixture_html.replace(
        '<p class="lead">', '<p class="lead">Of 46 engineers, 44 engineers certified. ', 1
    )
    assert "text engineers carries ['44', '46']" in problems(planted)


def test_an_effect_with_two_statuses_is_found(fixture_html):
    tag = 'data-effect="incident_rate_ratio" data-status="shown">shown<'
    assert fixture_html.count(tag) > 1
    planted = fixture_html.replace(
        tag, 'data-effect="incident_rate_ratio" data-status="not_shown">not shown<', 1
    )
    assert problems(planted) == ["incident_rate_ratio is described as ['not_shown', 'shown']"]


def test_a_status_stated_in_words_outside_its_tag_is_found(fixture_html):
    planted = fixture_html.replace(
        '<p class="lead">', '<p class="lead">The data support its less downtime. ', 1
    )
    assert problems(planted) == ["status stated outside a tag: 'data support'"]


def test_a_status_tag_worded_against_its_status_is_found(fixture_html):
    planted = fixture_html.replace(
        'data-status="not_shown">not shown<', 'data-status="not_shown">shown<', 1
    )
    assert any("worded as 'shown'" in p for p in problems(planted))


def _acronyms() -> dict[str, str]:
    return {**ACRONYMS, **load_inputs().acronyms}


def test_an_acronym_not_spelled_out_is_found(fixture_html):
    acronyms = _acronyms()
    assert acronym_problems(fixture_html, acronyms) == []
    planted = fixture_html.replace("return on investment (ROI)", "ROI", 1)
    assert any(p.startswith("ROI is not spelled out") for p in acronym_problems(planted, acronyms))
    unknown = fixture_html.replace('<p class="lead">', '<p class="lead">The XYZ team. ', 1)
    assert "XYZ is not in the report's list of acronyms" in acronym_problems(unknown, acronyms)


# --- several generated companies --------------------------------------------------------------

# The companies of tests/conftest.py's GENERATED (a company where certification changes
# nothing, a small young one, a larger, older one) and the session's planted company (600
# employees, shared_company). The small young one and the planted one run with `make test`; the
# other two with the generated companies of `make test-companies` (marker `companies`, which
# .ci/run runs after `make test`), keeping make test's minutes.
IN_MAKE_TEST = ("planted", "small-young")
COMPANIES = [
    name if name in IN_MAKE_TEST else pytest.param(name, marks=pytest.mark.companies)
    for name in ("planted", *GENERATED)
]


@pytest.fixture(scope="module", params=COMPANIES)
def company_report(request, tmp_path_factory) -> tuple:
    """(the report's HTML, the marts it was rendered from, its quarter): the planted company's
    report is the session's (shared_report), the others are rendered here."""
    if request.param == "planted":
        report = request.getfixturevalue("shared_report")
        warehouse = request.getfixturevalue("shared_company").warehouse
    else:
        warehouse = generated_warehouse(tmp_path_factory, request.param)
    published = warehouse / "talent.duckdb"
    marts = load_marts(published, warehouse / "build" / "talent.duckdb")
    q = Quarter.parse(latest_complete_quarter(published))
    if request.param == "planted":
        assert report["quarter"] == q.label
        return report["text"], marts, q
    return render_html(build_context(marts, q, 5, load_inputs())), marts, q


@pytest.fixture(scope="module")
def company_html(company_report) -> str:
    return company_report[0]


@pytest.mark.slow
def test_no_cell_says_fewer_than_five_of_a_group_of_five_or_more(company_report):
    html, marts, q = company_report
    assert false_small_cells(html, marts, q) == []
    # and the check had groups to compare
    assert any(group_sizes(marts, q).values())


@pytest.mark.slow
def test_every_label_has_one_value_and_every_effect_one_status(company_html):
    assert problems(company_html) == []
    # and the checks had something to read
    figures = labelled_figures(company_html)
    assert "text engineers at quarter end" in figures and "figure roi-investment" in figures
    # the certification effects, the promotion effect, and the programme comparisons tagged
    # "<metric>-<programme>" (each its own effect with its own status)
    effects = set(effect_statuses(company_html))
    assert {"incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio"} <= effects
    programme_metrics = (
        "time_to_certify_ratio",
        "first_pass_odds_ratio",
        "voluntary_exit_hazard_ratio",
    )
    # the operations effects (the Operations section; the ROI prices two of them)
    operations = {"change_failure_ratio", "busy_share_per_10_points", "lost_share_per_10_points",
                  "commissioning_time_ratio"}  # fmt: skip
    others = effects - {"incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio"}
    assert all(
        e == "promotion_hazard_ratio" or e in operations or e.split("-")[0] in programme_metrics
        for e in others
    ), others


@pytest.mark.slow
def test_every_acronym_is_spelled_out_where_first_printed(company_html):
    assert acronym_problems(company_html, _acronyms()) == []


def roi_money_problems(html: str) -> list[str]:
    """Money the ROI draws or prints against its evidence: a bar on page 1 for a return that
    rests on assumptions, or a return line that does not say whether its price is measured or
    assumed."""
    out = []
    block = re.search(r'<table data-table="roi-evidence"[^>]*>(.*?)</table>', html, re.S)
    svg = re.search(r'<svg[^>]*data-chart="roi-components".*?</svg>', html, re.S)
    if block is None:
        return out
    for tr in re.findall(r"<tr>(.*?)</tr>", block.group(1), re.S):
        cells = [
            htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)
        ]
        if len(cells) < 3 or cells[0] in ("Return", "Investment") or cells[1] == "the headline":
            continue
        if cells[0].startswith("Net return on investment"):
            continue  # the total row
        label, evidence = cells[0], cells[1]
        if "not estimable" in evidence and "price" not in evidence:
            continue  # no amount: nothing is priced
        if not re.search(r"price (measured|assumed)$", evidence):
            out.append(f"return without its price evidence: {label!r}")
        if evidence.startswith("assumed") and svg and f">{label}<" in svg.group(0):
            out.append(f"a bar for money resting on assumptions: {label!r}")
    return out


def test_the_money_checker_finds_an_assumed_bar_and_a_price_without_evidence():
    table = (
        '<table data-table="roi-evidence"><tr><th>Faster deployment</th><td>assumed: a stated '
        "value</td><td>$1</td></tr></table>"
    )
    svg = '<svg data-chart="roi-components"><text>Faster deployment</text></svg>'
    assert roi_money_problems(table + svg) == [
        "return without its price evidence: 'Faster deployment'",
        "a bar for money resting on assumptions: 'Faster deployment'",
    ]


@pytest.mark.slow
def test_no_bar_for_assumed_money_and_every_return_names_its_price_evidence(company_html):
    assert "roi-evidence" in company_html
    assert roi_money_problems(company_html) == []
