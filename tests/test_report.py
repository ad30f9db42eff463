"""The quarterly report rendered from a small published warehouse built here.

The fixture plants known figures (a team of three, compliance 41 % → 48 %, a bootcamp with two
participants) so the tests can check that the words and the suppression follow from the data.
The browser tests open the HTML in Debian's Chromium through Playwright and convert the PDF with
poppler; they skip only when Chromium is absent outside CI.
"""

from __future__ import annotations

import base64
import hashlib
import html as htmllib
import math
import os
import re
import shutil
import subprocess
from datetime import date
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from pipelines.lib.report import latest_complete_quarter, render_report
from pipelines.lib.report.data import REPORT_TABLES, load_marts
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.render import build_context, load_inputs, render_html

QUARTER = "2026-Q3"
# team -> (cluster GPUs, fleet size class, headcount, expiring next 90 days)
TEAMS = {
    "dgx-east": (1600, "large", 24, 4),
    "dgx-west": (640, "medium", 11, 2),
    "hpc-lab": (300, "medium", 8, 1),
    "edge-pilot": (64, "small", 3, 1),  # the team of three: every figure must read <5
}
MONTHS = [date(2025 + (i // 12), i % 12 + 1, 1) for i in range(21)]  # Jan 2025 .. Sep 2026


def _month_end(m: date) -> date:
    """The snapshot date of the month that starts on `m` (the marts' month_end)."""
    return (pd.Timestamp(m) + pd.offsets.MonthEnd(0)).date()


SECTION_CHARTS = {  # section id -> charts the fixture must produce there
    "summary": 1,  # page 1: the return by strength of evidence
    "coverage": 2,  # trend, teams (with their sizes)
    "gaps": 0,  # the table says it all
    "expiring": 0,  # the lead names the teams; every team is in the full table
    "attrition": 1,  # trend; the groups' rates and intervals are in the table
    "incidents": 0,  # the rates are in the table; the month-by-month chart is in the method
    "roi": 2,  # statistical uncertainty, and the assumptions: two charts, never mixed
    "composition": 1,  # teams against template; the level mix is a table
    "method": 1,  # incident rate by month relative to certification
}


def _compliance(m: date) -> float:
    """0.41 at the end of 2026-Q2 and 0.48 at the end of 2026-Q3 (the planted headline)."""
    planted = {date(2026, 6, 1): 0.41, date(2026, 9, 1): 0.48}
    return planted.get(m, 0.20 + 0.012 * MONTHS.index(m))


def _coverage(teams: dict = TEAMS) -> pd.DataFrame:
    rows = []
    total = sum(t[2] for t in teams.values())
    for m in MONTHS:
        comp = _compliance(m)
        rows.append(
            dict(
                month_end=_month_end(m),
                segment_type="all",
                segment_value="all",
                headcount=total,
                any_cert_headcount=round(total * min(comp + 0.2, 1)),
                required_cert_compliant_headcount=round(total * comp),
                any_cert_share=min(comp + 0.2, 1),
                required_cert_compliance_share=comp,
                expiring_next_90d=sum(t[3] for t in teams.values()),
                median_months_to_first_cert=9.0,
                exam_attempts=6,
                exam_passes=4,
                exam_pass_rate=4 / 6,
            )
        )
        for i, (team, (_, _, hc, exp)) in enumerate(teams.items()):
            share = max(0.0, min(1.0, comp + 0.05 * (i % 7 - 1)))
            rows.append(
                dict(
                    month_end=_month_end(m),
                    segment_type="team",
                    segment_value=team,
                    headcount=hc,
                    any_cert_headcount=round(hc * min(share + 0.2, 1)),
                    required_cert_compliant_headcount=round(hc * share),
                    any_cert_share=min(share + 0.2, 1),
                    required_cert_compliance_share=share,
                    expiring_next_90d=exp,
                    median_months_to_first_cert=9.0,
                    exam_attempts=1,
                    exam_passes=1,
                    exam_pass_rate=1.0,
                )
            )
    return pd.DataFrame(rows)


def _attrition() -> pd.DataFrame:
    rows = []
    quarters = sorted({Quarter.containing(m) for m in MONTHS})
    for k, q in enumerate(quarters):
        for seg_type, seg, avg, seps in (
            ("all", "all", 46.0, 3 + k % 2),
            ("certification_status", "certified", 22.0, 1),
            ("certification_status", "not_certified", 24.0, 2 + k % 2),
        ):
            rows.append(
                dict(
                    period_type="quarter",
                    period_start=q.start,
                    segment_type=seg_type,
                    segment_value=seg,
                    headcount_start=avg,
                    hires=seps,
                    separations=seps,
                    voluntary_separations=seps - 1 if seps > 1 else seps,
                    involuntary_separations=1 if seps > 1 else 0,
                    other_separations=0,
                    regrettable_separations=1,
                    headcount_end=avg,
                    average_headcount=avg,
                    turnover_rate=seps / avg,
                    voluntary_turnover_rate=None,
                    annualized_turnover_rate=4 * seps / avg,
                    rolling_12m_retention=None,
                    group_size_ok=True,
                )
            )
    for m in MONTHS:
        rows.append(
            dict(
                period_type="month",
                period_start=m,
                segment_type="all",
                segment_value="all",
                headcount_start=46,
                hires=1,
                separations=1,
                voluntary_separations=1,
                involuntary_separations=0,
                other_separations=0,
                regrettable_separations=0,
                headcount_end=46,
                average_headcount=46.0,
                turnover_rate=1 / 46,
                voluntary_turnover_rate=1 / 46,
                annualized_turnover_rate=12 / 46,
                rolling_12m_retention=0.88,
                group_size_ok=True,
            )
        )
    return pd.DataFrame(rows)


def _incident_rates() -> pd.DataFrame:
    rows = []

    def add(breakdown, quarter, status, rel, engineers, em, incidents):
        rows.append(
            dict(
                row_key=f"{breakdown}|{quarter}|{status}|{rel}",
                breakdown=breakdown,
                quarter=quarter,
                certification_status=status,
                relative_month=rel,
                engineers=engineers,
                engineer_months=em,
                incidents=incidents,
                incidents_per_100_engineer_months=100 * incidents / em,
                mttr_median_minutes=80.0 if status == "certified" else 100.0,
                mttr_mean_minutes=110.0 if status == "certified" else 140.0,
                resolved_incidents=incidents,
            )
        )

    for status, eng, em, inc in (
        ("certified", 22, 400, 40),
        ("not_yet_certified", 14, 300, 42),
        ("never_certified", 10, 250, 38),
        ("all", 46, 950, 120),
    ):
        add("status", None, status, None, eng, em, inc)
    for q in sorted({Quarter.containing(m) for m in MONTHS}):
        for status, eng, inc in (
            ("certified", 22, 6),
            ("not_yet_certified", 14, 6),
            ("never_certified", 10, 5),
            ("all", 46, 17),
        ):
            add("quarter_by_status", q.start, status, None, eng, eng * 3, inc)
    for rel in range(-12, 13):
        add("event_time", None, "certified", rel, 20, 20, 3 if rel < 0 else 2)
    return pd.DataFrame(rows)


def _effects() -> tuple[pd.DataFrame, pd.DataFrame]:
    eff = pd.DataFrame(
        [
            dict(
                metric="incident_rate_ratio",
                estimate=0.72,
                ci_low=0.58,
                ci_high=0.89,
                naive_estimate=0.95,
                naive_method="before vs after",
                n_engineers=36,
                n_events=120,
                method="Poisson GLM, engineer-month offset",
                comparison="not yet certified",
                caveats="Engineers may certify after a bad quarter.",
            ),
            dict(
                metric="mttr_ratio",
                estimate=0.83,
                ci_low=0.71,
                ci_high=0.97,
                naive_estimate=0.78,
                naive_method="certified vs not",
                n_engineers=36,
                n_events=110,
                method="log-linear on resolve minutes",
                comparison="not yet certified",
                caveats="",
            ),
            dict(
                metric="attrition_hazard_ratio",
                estimate=0.64,
                ci_low=0.35,
                ci_high=1.15,
                naive_estimate=0.40,
                naive_method="ever vs never",
                n_engineers=46,
                n_events=14,
                method="Cox, time-varying certification",
                comparison="not yet certified",
                caveats="Few leavers: wide interval.",
            ),
        ]
    )
    es = pd.DataFrame(
        [
            dict(
                metric="incident_rate_ratio",
                relative_month=r,
                estimate=1.0 if r < 0 else 0.75,
                ci_low=0.8 if r < 0 else 0.55,
                ci_high=1.25 if r < 0 else 0.98,
                engineers=4 if r == -12 else 20,
                engineer_months=20,
            )
            for r in range(-12, 13)
        ]
    )
    return eff, es


def _training_spend() -> pd.DataFrame:
    rows = []
    for q in sorted({Quarter.containing(m) for m in MONTHS}):
        for cat, participants, spend in (
            ("online", 18, 9000.0),
            ("bootcamp", 2, 38000.0),
            ("vendor_partnership", 6, 21000.0),
            ("internal", 12, 4000.0),
            ("certification_exam", 9, 3600.0),
        ):
            rows.append(
                dict(
                    quarter=q.start,
                    spend_category=cat,
                    participants=participants,
                    enrolments=participants,
                    completions=participants - 1,
                    spend_usd=spend,
                    list_price_usd=spend * 1.2,
                    discount_usd=spend * 0.2,
                    training_hours=participants * 20.0,
                )
            )
    return pd.DataFrame(rows)


def _composition(teams: dict = TEAMS) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    comp, mix, fleet = [], [], []
    roles = ("infrastructure_lead", "operations_engineer", "network_specialist", "senior_engineer")
    for m in MONTHS:
        for team, (gpus, size, hc, _) in teams.items():
            split = [1, hc - 2 - (hc > 5) * 1, 1, (hc > 5) * 1] if hc > 3 else [1, 1, 1, 0]
            for role, n in zip(roles, split, strict=True):
                comp.append(
                    dict(
                        month_end=_month_end(m),
                        team=team,
                        role_family=role,
                        fleet_size_class=size,
                        gpu_count=gpus,
                        headcount=n,
                        template_headcount=max(1, n - 1),
                        headcount_gap=n - max(1, n - 1),
                        level_min=2,
                        level_max=4,
                        headcount_in_level_band=n,
                        required_certification_codes="NCA-AIIO, RHCE"
                        if role == "operations_engineer"
                        else "NCP-AII",
                        required_cert_compliant_headcount=0,
                    )
                )
            fleet.append(
                dict(
                    month_end=_month_end(m),
                    cluster=team,
                    site="eu",
                    gpu_count=gpus,
                    fleet_size_class=size,
                )
            )
        for level, n in ((1, 3), (2, 16), (3, 15), (4, 10), (5, 2)):
            mix.append(
                dict(
                    month_end=_month_end(m),
                    role_family="operations_engineer",
                    skill_level=level,
                    headcount=n,
                )
            )
    return _comply(pd.DataFrame(comp), teams), pd.DataFrame(mix), pd.DataFrame(fleet)


def _comply(comp: pd.DataFrame, teams: dict) -> pd.DataFrame:
    """Spread each month's compliant engineers over the rows so that they add up to the
    coverage mart's figure for all engineers (the two marts agree in the warehouse)."""
    total = sum(t[2] for t in teams.values())
    for month_end, rows in comp.groupby("month_end"):
        want = round(total * _compliance(month_end.replace(day=1)))
        for i in rows.sort_values("headcount", ascending=False).index:
            take = min(int(comp.at[i, "headcount"]), want)
            comp.at[i, "required_cert_compliant_headcount"] = take
            want -= take
    return comp


# certified engineers' incidents lose 4,000 GPU-hours a quarter; contractor hours stay flat
DOWNTIME_GPU_HOURS = 4000.0


def _roi_inputs() -> dict[str, pd.DataFrame]:
    quarters = sorted({Quarter.containing(m) for m in MONTHS})
    return {
        "incident_downtime": pd.DataFrame(
            [
                dict(quarter=q.start, certification_status=s, incidents=10, responders=8,
                     downtime_minutes=600.0, gpu_hours_lost=h)
                for q in quarters
                for s, h in (("certified", DOWNTIME_GPU_HOURS), ("not_certified", 9000.0))
            ]
        ),
        "contractor_costs": pd.DataFrame(
            [dict(period_start=m, hours=100.0, cost_usd=30000.0, average_rate_usd=300.0,
                  engagements=2) for m in MONTHS]
        ),
    }  # fmt: skip


def roi_tables(tables: dict[str, pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """The ROI tables the ROI assets would write for the fixture's marts (the model itself,
    with the project's assumptions); `roi_by_period` in full, as the build file holds it."""
    import polars as pl

    from pipelines.lib.roi import DEFAULT_ASSUMPTIONS_PATH, build_roi_tables, load_assumptions
    from pipelines.lib.roi.warehouse import INPUT_MARTS

    lazy = {name: pl.from_pandas(tables[name]).lazy() for name in INPUT_MARTS if name in tables}
    out = build_roi_tables(lazy, load_assumptions(DEFAULT_ASSUMPTIONS_PATH))
    return {name: df.to_pandas() for name, df in out.items()}


def build_published_fixture(
    path: Path,
    *,
    with_roi: bool = True,
    teams: dict = TEAMS,
    effects: pd.DataFrame | None = None,
) -> Path:
    """A warehouse file with the report's marts in schema `marts` (the ROI's quarterly drivers
    too, as the build file's restricted copy has them)."""
    eff, es = _effects()
    eff = eff if effects is None else effects
    comp, mix, fleet = _composition(teams)
    tables = {
        "certification_coverage": _coverage(teams),
        "attrition": _attrition(),
        "incident_rates": _incident_rates(),
        "certification_effect": eff,
        "certification_event_study": es,
        "training_spend": _training_spend(),
        "team_composition": comp,
        "level_mix": mix,
        "fleet_size": fleet,
        **_roi_inputs(),
    }
    if with_roi:
        tables.update(roi_tables(tables))
    with duckdb.connect(str(path)) as con:
        con.execute("create schema marts")
        for name, df in tables.items():
            con.register("frame", df)
            con.execute(f"create table marts.{name} as select * from frame")
            con.unregister("frame")
    return path


@pytest.fixture(scope="module")
def published(tmp_path_factory) -> Path:
    return build_published_fixture(tmp_path_factory.mktemp("warehouse") / "talent.duckdb")


def html_of(db: Path, inputs=None, quarter: str = QUARTER, thr: int = 5) -> str:
    """The report's HTML (no PDF): what the content tests read, fast enough for every run."""
    return render_html(
        build_context(load_marts(db), Quarter.parse(quarter), thr, inputs or load_inputs())
    )


@pytest.fixture(scope="module")
def report(published) -> dict:
    context = build_context(load_marts(published), Quarter.parse(QUARTER), 5, load_inputs())
    return {"text": render_html(context), "context": context}


@pytest.fixture(scope="module")
def rendered(published, tmp_path_factory) -> dict:
    """The full render (HTML + PDF through WeasyPrint), for the slow file and browser tests."""
    result = render_report(published, QUARTER, tmp_path_factory.mktemp("reports"), min_group_size=5)
    result["text"] = Path(result["html"]).read_text(encoding="utf-8")
    return result


def _table_rows(html: str, key: str) -> dict[str, list[str]]:
    """Row header -> cell texts of the table with data-table=key."""
    block = re.search(rf'<table data-table="{key}"[^>]*>(.*?)</table>', html, re.S)
    assert block, f"table {key} missing"
    rows = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", block.group(1), re.S):
        cells = [
            htmllib.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", tr, re.S)
        ]
        rows[cells[0]] = cells[1:]
    return rows


@pytest.mark.slow
def test_report_files_land_in_the_quarter_folder(rendered):
    assert Path(rendered["html"]).name == "talent-report.html"
    assert Path(rendered["html"]).parent.name == QUARTER
    assert Path(rendered["pdf"]).read_bytes()[:5] == b"%PDF-"
    # the fixture holds none of the programme, career, operations and plan marts: those sections
    # say they are not available and the rest of the report is unaffected
    # (tests/test_report_programmes.py, tests/test_report_operations.py and
    # tests/test_report_plan.py render them from their marts)
    missing = {k for k, v in rendered["sections"].items() if not v}
    assert missing == {"programmes", "careers", "operations", "plan"}, rendered["sections"]
    # the HTML on disk is the one the content tests read, plus the PDF beside it
    assert "(48.0 %) met every certification their role requires" in _plain(rendered["text"])


def _tile(html: str, label: str) -> str:
    block = re.search(
        rf'<div class="tile-label">{re.escape(label)}</div>(.*?)</div>\s*</div>', html, re.S
    )
    assert block, f"tile {label} missing"
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", block.group(1))).strip()


def test_page_one_tile_states_the_planted_coverage_change_and_no_default_target(report):
    # compliance planted at 0.41 (2026-Q2) and 0.48 (2026-Q3); 2025-Q3 is 0.20 + 0.012 x 8;
    # the project's assumptions file sets no target, so none is presented as a goal
    tile = _tile(report["text"], "Meet required certifications")
    assert tile.startswith("48.0 %")
    assert "vs 2026-Q2: +7.0 pts" in tile and "vs 2025-Q3: +18.4 pts" in tile
    assert "no target set · better than a year ago" in tile
    assert "target 80" not in _plain(report["text"]) and "80 % target" not in report["text"]


def test_a_target_with_an_owner_is_shown_as_that_owners_goal(published, tmp_path):
    from pipelines.lib.roi import DEFAULT_ASSUMPTIONS_PATH

    text = DEFAULT_ASSUMPTIONS_PATH.read_text(encoding="utf-8")
    own = tmp_path / "assumptions.yaml"
    own.write_text(
        text[: text.index("targets:")]
        + "targets:\n  required_cert_compliance: {value: 0.8, owner: VP Infrastructure}\n",
        encoding="utf-8",
    )
    html = html_of(published, load_inputs(assumptions_path=own))
    tile = _tile(html, "Meet required certifications")
    assert "off target (at least 80.0 %, VP Infrastructure)" in tile
    assert "target at least 80 %, set by VP Infrastructure" in _plain(html)
    assert "target (VP Infrastructure) 80 %" in html  # the line on the trend chart


# The fixture's ROI, by hand from its marts and the project's assumptions (assumptions.yaml):
# a quarter charges 75,600 of fees (list 90,720 less 15,120 discounts), 9 exam attempts x 300
# of materials, 30 course enrolments x 1,000 of lab access and 940 training hours x 70.
INVESTED_12M = 4 * (75_600 + 9 * 300 + 30 * 1_000 + 940 * 70)  # 696,400
# incidents 0.72 (0.58-0.89) and time to restore 0.83 (0.71-0.97) are shown (intervals exclude
# 1): certified engineers' 4,000 GPU-hours a quarter x (1 / (0.72 x 0.83) - 1) x 50 USD
COUNTED_12M = 4 * DOWNTIME_GPU_HOURS * (1 / (0.72 * 0.83) - 1) * 50
COUNTED_LOW = 4 * DOWNTIME_GPU_HOURS * (1 / (0.89 * 0.97) - 1) * 50
# attrition 0.64 (0.35-1.15) is not shown: 1 certified voluntary exit a quarter x
# (1 / 0.64 - 1) x 150,000 is listed, never counted
NOT_SHOWN_12M = 4 * 1 * (1 / 0.64 - 1) * 150_000


def _usd(v: float) -> str:
    return f"${v:,.0f}"


def test_page_one_answers_with_the_measured_return_its_range_and_payback(report):
    verdict = _plain(report["context"]["verdict"])
    net = math.floor((COUNTED_12M - INVESTED_12M) / INVESTED_12M * 100)
    low = math.floor((COUNTED_LOW - INVESTED_12M) / INVESTED_12M * 100)
    assert (
        f"Last 12 months (Oct 2025 – Sep 2026): {_usd(COUNTED_12M)} returned on "
        f"{_usd(INVESTED_12M)} invested, a net return of {net} %".replace("-", "−")
        in verdict
    )
    # what the counted return multiplies: the measured effect by its assumed price
    assert "measured effect × assumed price of $50 per GPU-hour of downtime" in verdict
    assert f"(−{abs(low)} % to " in verdict
    assert f"it pays back in {INVESTED_12M / (COUNTED_12M / 12):.1f} months" in verdict
    # returns below the measured kind are named and left out
    assert f"{_usd(NOT_SHOWN_12M)} on effects not distinguishable from none" in verdict
    assert "resting on assumptions, never drawn, efficiency improvements" in verdict
    assert verdict.startswith("Is training paying off? No: the returns measured here")


def test_page_one_actions_carry_their_costs(report):
    rows = _table_rows(report["text"], "actions")
    renew = next(v for k, v in rows.items() if k.startswith("Book the 8 renewals"))
    # renewals priced at the year's exam spend per attempt: 4 x 3,600 / (4 x 9) = 400 USD
    assert renew[1] == "$3,200" and renew[2] == "–"
    certify = next(v for k, v in rows.items() if k.startswith("Certify first"))
    assert certify[0].startswith("the large cluster (1,000+")  # dgx-east, the largest fleet
    assert "dgx-east" in certify[0]
    # the method words stay out of page 1
    cover = _plain(report["text"].split('<nav class="toc"')[0])
    for word in ("pre-trend", "Pre-trend", "naive", "immortal"):
        assert word not in cover


def test_effects_read_as_shown_only_when_the_interval_excludes_one(report):
    text = _plain(report["text"])
    # incident_rate_ratio 0.72 (0.58-0.89) planted: shown, with its plain comparison 0.95
    assert (
        "Incidents (shown): 28 % fewer incidents per engineer-month while certified than in the "
        "same engineers' months before certifying: ratio 0.72 (95 % interval 0.58–0.89)" in text
    )
    assert "a plain comparison would say 0.95" in text
    # the attrition hazard interval (0.35-1.15) includes 1: not shown, and not counted
    assert "Voluntary attrition (not shown): ratio 0.64" in text
    summary = _table_rows(report["text"], "effects-summary")
    assert summary["Voluntary attrition"][1:] == ["not shown", "not counted"]


def assert_figures_agree(html: str) -> set[str]:
    """Each figure tagged in a sentence or tile prints the same wherever its key appears, and
    every key quoted outside a table is also printed in a table. Returns the keys quoted."""
    found = re.findall(r'data-figure="([^"]+)">([^<]*)<', html)
    texts: dict[str, set[str]] = {}
    for key, text in found:
        texts.setdefault(key, set()).add(text)
    assert {k: v for k, v in texts.items() if len(v) > 1} == {}
    in_tables = set()
    for block in re.findall(r"<table.*?</table>", html, re.S):
        in_tables |= set(re.findall(r'data-figure="([^"]+)"', block))
    outside = set(
        re.findall(r'data-figure="([^"]+)"', re.sub(r"<table.*?</table>", "", html, flags=re.S))
    )
    assert outside <= in_tables, outside - in_tables
    return outside


def test_every_figure_quoted_in_text_equals_its_table(report):
    quoted = assert_figures_agree(report["text"])
    for key in ("compliance", "attrition-12m", "incident-rate", "mttr-median", "spend",
                "roi-counted", "roi-investment", "roi-net", "headcount"):  # fmt: skip
        assert key in quoted
    assert len(quoted) > 15


def _plain(text: object) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", str(text)))


def test_person_level_tables_are_never_read(tmp_path):
    db = build_published_fixture(tmp_path / "talent.duckdb")
    with duckdb.connect(str(db)) as con:
        con.execute("create table marts.dim_employee as select 'p_0123456789abcdef' as person_key")
    marts = load_marts(db)
    assert "dim_employee" not in marts.tables
    assert set(marts.tables) <= set(REPORT_TABLES)


def test_team_of_three_is_hidden_with_its_complement(report):
    rows = _table_rows(report["text"], "coverage-teams-all")
    assert rows["edge-pilot"] == ["<5"] * 4
    # hpc-lab (8 people) is the next-smallest team: hidden so edge-pilot cannot be recovered,
    # and said to be hidden, not to be fewer than 5
    assert rows["hpc-lab"] == ["hidden"] * 4
    assert rows["dgx-east"][0] == "24" and rows["dgx-west"][0] == "11"
    assert rows["All teams"][0] == "46"  # total shown; 46 - 24 - 11 = 11 = 3 + 8 stays ambiguous
    composition = _table_rows(report["text"], "composition-teams-all")
    assert composition["edge-pilot"][3] == "<5" and composition["hpc-lab"][3] == "hidden"
    expiring = _table_rows(report["text"], "expiring-teams-all")
    assert expiring["edge-pilot"] == ["<5", "<5"] and expiring["hpc-lab"] == ["hidden"] * 2
    assert expiring["All teams"] == ["", "8"]
    # and the chart of teams shows the hidden ones as hidden, with no size beside them
    chart = re.search(r'<svg[^>]*data-chart="coverage-by-team".*?</svg>', report["text"], re.S)
    assert "&lt;5 (hidden)" in chart.group(0) and "of 3)" not in chart.group(0)


def test_small_training_programme_is_hidden_with_its_complement(report):
    spend = _table_rows(report["text"], "spend-all")
    assert spend["Bootcamp"][2] == "<5"  # two participants
    assert spend["Vendor partnership"][2] == "<5"  # next smallest (six)
    assert spend["Online"][2] == "$9,000"


def test_roi_table_counts_only_returns_on_shown_effects(report):
    roi = _table_rows(report["text"], "roi-evidence")
    downtime = roi["Less downtime"]
    assert downtime[0].startswith("incidents measured here, time to restore measured here")
    assert downtime[1] == _usd(COUNTED_12M)
    assert roi["Attrition cost avoided"][:2] == [
        "voluntary attrition estimated, not distinguishable from no effect; price assumed",
        _usd(NOT_SHOWN_12M),
    ]
    # the fixture has no operations exports: efficiency keeps its stated value and names the
    # export that would measure it
    assert roi["Efficiency improvements"][0].startswith(
        "assumed: a stated share of the fleet's cost per certified GPU-year; fewer lost "
        "GPU-hours not measured (no row in marts.operations_effect); the gpu_usage export"
    )
    assert roi["Efficiency improvements"][0].endswith("; price assumed")
    assert roi["Investment"][1] == _usd(INVESTED_12M)
    assert roi["Return counted: measured here"][1].startswith(_usd(COUNTED_12M))


def test_investment_reconciles_with_the_training_spend(report):
    inv = _table_rows(report["text"], "roi-investment")
    # the fees the ROI charges are the training_spend mart's 12-month spend, to the dollar
    assert inv["Training and exam fees charged (list price − discounts)"][0] == _usd(4 * 75_600)
    tile = _tile(report["text"], "Training spend, quarter")
    assert "$302,400 over 12 months" in tile


def test_every_roi_input_names_its_source(report):
    rows = _table_rows(report["text"], "roi-inputs")
    cells = {k: v[-1] for k, v in rows.items() if k != "Input"}
    # each source is preceded by the evidence of the input: measured (this company's data) or
    # assumed (the assumptions file)
    evidence = {k: v.split(": ", 1)[0] for k, v in cells.items()}
    sources = {k: v.split(": ", 1)[1] for k, v in cells.items()}
    assert evidence["Replacement cost per voluntary exit"] == "assumed"
    assert evidence["Downtime in certified engineers' incidents"] == "measured"
    assert evidence["Effect of certification: incidents (ratio)"] == "measured"
    assert sources["Replacement cost per voluntary exit"].startswith(
        "published studies: Gallup (2019); Boushey and Glynn (2012); they support 21 %"
    )
    assert re.search(r"assumptions\.yaml, line \d+$", sources["Lab access per enrolment"])
    assert sources["Downtime in certified engineers' incidents"].startswith(
        "this company's data: incident_downtime"
    )
    assert sources["Effect of certification: incidents (ratio)"].startswith(
        "this company's data: certification_effect"
    )
    for name, source in sources.items():
        assert source.startswith(("this company's data", "domain document", "published studies",
                                  "estimate", "fleet cost per GPU-year")), (name, source)  # fmt: skip
        assert evidence[name] == ("measured" if source.startswith("this company") else "assumed")


def test_event_study_leaves_out_months_with_few_engineers(report):
    assert (
        "1 relative months with fewer engineers than the minimum group size (5) are left out"
        in report["text"]
    )


def test_plain_figure_and_caveat_sit_beside_the_estimate(report):
    effects = _table_rows(report["text"], "effects")
    assert effects["Incidents"][:3] == ["0.72 (0.58–0.89)", "shown", "0.95"]
    assert effects["Voluntary attrition"][:3] == ["0.64 (0.35–1.15)", "not shown", "0.40"]
    assert effects["Voluntary attrition"][4] == "14 voluntary exits in the attrition model"
    assert "not proof of cause" in report["text"]


def test_report_is_self_contained(report):
    html = report["text"]
    assert not re.search(r'(src|href)="(https?:)?//', html)
    assert "@import" not in html and "<link" not in html
    # one inline script (table sorting), allowed by its hash in the page's CSP, no source
    scripts = re.findall(r"<script([^>]*)>(.*?)</script>", html, re.S)
    assert len(scripts) == 1 and scripts[0][0] == ""
    digest = base64.b64encode(hashlib.sha256(scripts[0][1].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in html


def test_latest_complete_quarter_comes_from_the_last_month(published):
    assert latest_complete_quarter(published) == "2026-Q3"


def test_an_incomplete_quarter_is_refused_with_advice(published, tmp_path):
    with pytest.raises(
        ValueError, match=r"cover 2025-01 to 2026-09.*Latest complete quarter: 2026-Q3"
    ):
        render_report(published, "2026-Q4", tmp_path)


def test_a_quarter_before_the_data_is_refused_with_the_range(published, tmp_path):
    with pytest.raises(ValueError, match=r"complete quarters are 2025-Q1 to 2026-Q3"):
        render_report(published, "2019-Q2", tmp_path)
    assert not any(tmp_path.iterdir())


def test_missing_roi_tables_read_as_not_available(tmp_path):
    db = build_published_fixture(tmp_path / "talent.duckdb", with_roi=False)
    html = html_of(db)
    assert "not available (the drivers of roi_by_period are not at hand" in html
    assert '<table data-table="roi-evidence"' not in html
    assert "The return cannot be priced" in _plain(html)


def test_missing_warehouse_is_explained(tmp_path):
    with pytest.raises(FileNotFoundError, match="talent run"):
        render_report(tmp_path / "nope.duckdb", QUARTER, tmp_path)


# --- real browser and PDF rasterisation -------------------------------------------------
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
needs_chromium = pytest.mark.skipif(
    not CHROMIUM.exists() and not os.environ.get("CI"),
    reason="Debian chromium is not installed (apt-get install chromium); required in CI",
)


@pytest.mark.slow
@needs_chromium
def test_report_in_a_real_browser(rendered, tmp_path):
    from playwright.sync_api import sync_playwright

    html_path = Path(rendered["html"]).resolve()
    errors, outside = [], []
    with sync_playwright() as p:
        # Playwright gives the browser a fresh temporary profile itself.
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1000, "height": 1400})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))

            def guard(route):
                url = route.request.url
                if url.startswith(("file:", "data:")):
                    route.continue_()
                else:
                    outside.append(url)
                    route.abort()

            page.route("**/*", guard)
            page.goto(html_path.as_uri(), wait_until="load")
            counts = {sid: page.locator(f"#{sid} svg.chart").count() for sid in SECTION_CHARTS}
            page.screenshot(path=str(html_path.parent / "screenshot.png"), full_page=True)
            shot = page.screenshot(full_page=False)
        finally:
            browser.close()
    assert counts == SECTION_CHARTS
    assert errors == [], errors
    assert outside == [], outside
    assert _not_blank_png(shot)


def _not_blank_png(data: bytes) -> bool:
    """Decode with matplotlib (already a dependency) and demand real pixel variance."""
    import io

    import matplotlib.image as mpimg

    img = mpimg.imread(io.BytesIO(data), format="png")
    return float(img[..., :3].std()) > 0.05


@pytest.mark.slow
@pytest.mark.skipif(
    not shutil.which("pdftoppm") and not os.environ.get("CI"),
    reason="poppler-utils is not installed (apt-get install poppler-utils)",
)
def test_pdf_pages_are_numbered_and_not_blank(rendered, tmp_path):
    pdf = Path(rendered["pdf"])
    text = subprocess.run(
        ["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
    ).stdout
    pages = text.count("\f") or 1
    assert pages >= 5
    assert f"Talent report {QUARTER}" in text
    for n in (1, pages):
        assert f"page {n} of {pages}" in text
    subprocess.run(["pdftoppm", "-r", "40", "-png", str(pdf), str(tmp_path / "page")], check=True)
    pngs = sorted(tmp_path.glob("page*.png"))
    assert len(pngs) == pages
    for png in pngs:
        assert _not_blank_png(png.read_bytes()), f"{png.name} is blank"


@pytest.mark.slow
@pytest.mark.skipif(
    not shutil.which("pdftotext") and not os.environ.get("CI"),
    reason="poppler-utils is not installed (apt-get install poppler-utils)",
)
def test_the_pdf_is_printed_without_only_the_tables_print_hides(rendered, tmp_path):
    """The PDF comes from `print_version` (the full per-team tables left out, which the print
    style hides); printed from the whole page, it reads the same, page for page."""
    import weasyprint

    from pipelines.lib.report.render import print_version

    html = rendered["text"]
    printed = print_version(html)
    keys = set(re.findall(r'data-table="([^"]+)"', html))
    hidden = re.findall(r'<details class="full-table">.*?</details>', html, re.S)
    full = {k for block in hidden for k in re.findall(r'data-table="([^"]+)"', block)}
    assert len(full) == len(hidden) >= 3  # one table each: teams' coverage, expiry, composition
    assert set(re.findall(r'data-table="([^"]+)"', printed)) == keys - full
    assert "details.full-table, nav.toc { display: none; }" in html  # the print style
    whole = tmp_path / "whole.pdf"
    weasyprint.HTML(string=html).write_pdf(str(whole))

    def text(pdf: Path) -> str:
        out = subprocess.run(
            ["pdftotext", "-layout", str(pdf), "-"], check=True, capture_output=True, text=True
        ).stdout
        return re.sub(r"Generated .*?\(UTC\)\.", "", out)  # the minute it was printed

    assert text(whole) == text(Path(rendered["pdf"]))


# --- command line ---------------------------------------------------------------------
def test_cli_explains_a_missing_warehouse(tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    res = CliRunner().invoke(
        app, ["report", "--warehouse-dir", str(tmp_path), "--out", str(tmp_path)]
    )
    assert res.exit_code == 1
    assert "does not exist" in res.output and "talent run" in res.output


@pytest.mark.slow
def test_cli_renders_the_latest_complete_quarter(published, tmp_path):
    from typer.testing import CliRunner

    from pipelines.cli import app

    out = tmp_path / "reports"
    res = CliRunner().invoke(
        app, ["report", "--warehouse-dir", str(published.parent), "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    assert (out / QUARTER / "talent-report.html").is_file()
    assert (out / QUARTER / "talent-report.pdf").is_file()


def test_missing_values_of_every_kind_print_as_a_dash():
    """A company without a fleet export has NA GPU counts; an empty segment has no headcount."""
    import math

    import pandas as pd

    from pipelines.lib.report.fmt import DASH, num
    from pipelines.lib.report.intervals import wilson_interval

    assert num(pd.NA) == num(None) == num(math.nan) == DASH
    assert num(1234.0) == "1,234"
    assert all(math.isnan(x) for x in wilson_interval(1, math.nan))
    assert wilson_interval(1, 3.6)[0] == pytest.approx(0.25)  # headcount 3.6 rounds to 4
