"""The report's sections "Which training programmes work" and "Careers", built from marts of a
small planted example.

The example is a list of planted programme episodes (one engineer preparing for one track),
level-years and pay groups, drawn with a fixed seed. The test turns them into mart frames shaped
as the marts' contracts say (programme_outcomes, time_to_certify, programme_costs,
programme_comparison, time_in_level, level_progression, salary_bands, promotion_effect) and
recounts every figure the report should print from the planted rows, independently of the
section code: participants, certified, pass and exit rates summed over tracks and cohorts, the
cost per certification from its components priced with the assumptions file's base values, the
promotion rate of a year, pay shares weighted by the engineers with pay.
"""

from __future__ import annotations

import html as htmllib
import random
import re
import sys
from dataclasses import dataclass
from datetime import date
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from pipelines.lib.report.data import Marts, load_marts
from pipelines.lib.report.fmt import num, pct, ratio, usd
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.render import build_context, load_inputs, render_html
from pipelines.lib.report.sections.careers import careers_section
from pipelines.lib.report.sections.programmes import programmes_section
from pipelines.lib.roi.assumptions import DEFAULT_ASSUMPTIONS_PATH, base_params, load_assumptions

sys.path.insert(0, str(Path(__file__).parent))
from test_report import QUARTER, build_published_fixture  # noqa: E402
from test_report_consistency import acronym_problems, problems  # noqa: E402

THR = 5
Q = Quarter.parse(QUARTER)
PRICES = base_params(load_assumptions(DEFAULT_ASSUMPTIONS_PATH))
TRACKS = ("NCA-AIIO", "NCP-AII")
COHORTS = (date(2025, 1, 1), date(2025, 4, 1), date(2025, 7, 1))


# --- the planted example ----------------------------------------------------------------------


@dataclass(frozen=True)
class Episode:
    programme: str
    track: str
    cohort: date
    level: int
    certified: bool
    months: float  # to certify, or followed
    attempted: bool
    first_passed: bool
    fees: float
    exam_fees: float
    hours: float
    apprentice: bool
    followed_12m: bool
    voluntary_exit_12m: bool


# programme -> (participants, certify probability, months to certify, first-pass probability)
PLAN = {
    "online": (40, 0.6, 7.0, 0.55),
    "bootcamp": (14, 0.85, 2.0, 0.8),
    "vendor_partnership": (11, 0.7, 4.0, 0.7),
    "apprenticeship": (6, 0.5, 5.0, 0.5),
    "internal": (3, 0.67, 6.0, 0.5),  # fewer than 5: hidden everywhere
}
FEES = {"online": 300.0, "bootcamp": 20000.0, "vendor_partnership": 4000.0,
        "apprenticeship": 300.0, "internal": 500.0}  # fmt: skip


def planted_episodes(seed: int = 27) -> list[Episode]:
    rng = random.Random(seed)
    out = []
    for prog, (n, p_cert, months, p_pass) in PLAN.items():
        for i in range(n):
            certified = rng.random() < p_cert
            # apprenticeship: only 4 of 6 sit an exam, so its pass rate is about fewer than 5
            attempted = certified or (prog != "apprenticeship" and rng.random() < 0.5)
            if prog == "apprenticeship":
                attempted = i < 4
                certified = certified and attempted
            out.append(
                Episode(
                    programme=prog,
                    track=TRACKS[i % 2],
                    cohort=COHORTS[i % 3],
                    level=1 + i % 3,
                    certified=certified,
                    months=round(months * (0.5 + rng.random()), 2) if certified
                    else round(6 + 10 * rng.random(), 2),
                    attempted=attempted,
                    first_passed=attempted and rng.random() < p_pass,
                    fees=FEES[prog],
                    exam_fees=(200.0 if attempted else 0.0),
                    hours=round(40 + 80 * rng.random(), 1),
                    apprentice=prog == "apprenticeship",
                    followed_12m=i % 4 != 0,
                    voluntary_exit_12m=i % 4 != 0 and rng.random() < 0.15,
                )
            )  # fmt: skip
    return out


def km_median(times: list[float], events: list[bool]) -> float | None:
    """The Kaplan-Meier median in plain Python: the first time the curve is at or below 0.5."""
    s = 1.0
    for t in sorted(set(times)):
        d = sum(1 for tt, e in zip(times, events, strict=True) if tt == t and e)
        at_risk = sum(1 for tt in times if tt >= t)
        s *= 1 - d / at_risk
        if s <= 0.5:
            return t
    return None


def outcomes_mart(eps: list[Episode]) -> pd.DataFrame:
    """restricted.programme_outcomes: entry_level 'all' rows and per-level rows, unsuppressed,
    with `published_suppressed` as load_marts adds it (the per-level rows of small groups)."""
    rows = []
    keys = sorted({(e.programme, e.track, e.cohort) for e in eps})
    for prog, track, cohort in keys:
        group = [e for e in eps if (e.programme, e.track, e.cohort) == (prog, track, cohort)]
        for level in ["all", *sorted({str(e.level) for e in group})]:
            g = [e for e in group if level == "all" or str(e.level) == level]
            rows.append(
                dict(programme_type=prog, certification_code=track, cohort_quarter=cohort,
                     entry_level=level, participants=len(g),
                     completions=sum(e.certified for e in g),
                     first_attempts=sum(e.attempted for e in g),
                     first_attempt_passes=sum(e.first_passed for e in g),
                     certified=sum(e.certified for e in g),
                     followed_12m=sum(e.followed_12m for e in g),
                     voluntary_exits_12m=sum(e.voluntary_exit_12m for e in g),
                     fees_usd=sum(e.fees for e in g), suppressed=False,
                     published_suppressed=len(g) < THR)
            )  # fmt: skip
    return pd.DataFrame(rows)


def costs_of(g: list[Episode]) -> dict[str, float]:
    """The cost components of a group of episodes, priced with the assumptions' base values."""
    engineer = sum(e.hours for e in g) * PRICES["employee_rate_usd_per_hour"]
    senior = (
        sum(e.apprentice for e in g)
        * PRICES["apprenticeship_months"]
        * PRICES["hours_per_month"]
        * PRICES["apprenticeship_senior_productivity_loss"]
        * PRICES["senior_rate_usd_per_hour"]
    )
    fees, exams = sum(e.fees for e in g), sum(e.exam_fees for e in g)
    return dict(fees_usd=fees, exam_fees_usd=exams, engineer_time_usd=engineer,
                senior_time_usd=senior, total_cost_usd=fees + exams + engineer + senior)  # fmt: skip


def costs_mart(eps: list[Episode]) -> pd.DataFrame:
    rows = []
    for prog in PLAN:
        for code in ["all", *TRACKS]:
            g = [e for e in eps if e.programme == prog and code in ("all", e.track)]
            c, n, k = costs_of(g), len(g), sum(e.certified for e in g)
            small = n < THR
            rows.append(
                dict(programme_type=prog, certification_code=code,
                     participants=None if small else n,
                     certifications_earned=None if small else k,
                     training_hours=None if small else sum(e.hours for e in g),
                     **{k2: None if small else v for k2, v in c.items()},
                     cost_per_certification_usd=None if small or not k
                     else c["total_cost_usd"] / k,
                     priced_with="employee_rate_usd_per_hour, senior_rate_usd_per_hour, "
                     "apprenticeship_months, hours_per_month, "
                     "apprenticeship_senior_productivity_loss",
                     suppressed=small)
            )  # fmt: skip
    return pd.DataFrame(rows)


def time_mart(eps: list[Episode]) -> pd.DataFrame:
    rows = []
    for prog in PLAN:
        for code in TRACKS:
            g = [e for e in eps if e.programme == prog and e.track == code]
            small = len(g) < THR
            m = km_median([e.months for e in g], [e.certified for e in g])
            rows.append(
                dict(programme_type=prog, certification_code=code, cohort="all",
                     participants=None if small else len(g),
                     certified=None if small else sum(e.certified for e in g),
                     median_months=None if small else m,
                     median_ci_low=None if small or m is None else m * 0.8,
                     median_ci_high=None if small or m is None else m * 1.3,
                     suppressed=small)
            )  # fmt: skip
    return pd.DataFrame(rows)


def effect_row(programme, metric, est=None, lo=None, hi=None, finding=False, n=30, **kw):
    estimable = est is not None
    return dict(
        programme_type=programme, metric=metric, estimate=est, ci_low=lo, ci_high=hi,
        estimable=estimable, finding=finding and estimable,
        not_estimable_reason=None if estimable else kw.get("reason"),
        data_needed=None if estimable else kw.get("needed"),
        # the restricted copy keeps a naive figure of a row that is not estimable
        naive_estimate=est * 0.8 if estimable else 0.22, naive_ci_low=0.12, naive_ci_high=0.42,
        n_engineers=n,
        n_events=n // 2, method="planted", comparison="against online", caveats="",
    )  # fmt: skip


# programme -> metric -> planted status of the comparison
STATUSES = {
    ("bootcamp", "time_to_certify_ratio"): "shown",
    ("bootcamp", "first_pass_odds_ratio"): "not_shown",
    ("bootcamp", "voluntary_exit_hazard_ratio"): "not_shown",
    ("vendor_partnership", "time_to_certify_ratio"): "not_shown",
    ("vendor_partnership", "first_pass_odds_ratio"): "not_shown",
    ("vendor_partnership", "voluntary_exit_hazard_ratio"): "not_estimable",
    ("apprenticeship", "time_to_certify_ratio"): "not_estimable",
    ("apprenticeship", "first_pass_odds_ratio"): "not_estimable",
    ("apprenticeship", "voluntary_exit_hazard_ratio"): "not_estimable",
}
NEEDED = "at least 10 certified participants in the programme and in the online path"


def comparison_mart(statuses: dict = STATUSES) -> pd.DataFrame:
    rows = []
    for (prog, metric), status in statuses.items():
        if status == "shown":
            rows.append(effect_row(prog, metric, 0.55, 0.41, 0.74, finding=True))
        elif status == "not_shown":
            rows.append(effect_row(prog, metric, 1.21, 0.83, 1.77))
        else:
            rows.append(effect_row(prog, metric, reason="fewer than 10 certified participants",
                                   needed=NEEDED))  # fmt: skip
    return pd.DataFrame(rows)


# level -> (engineers, promotions) in 2025 and 2026; level 5 has 3 engineers: hidden
LEVEL_YEARS = {
    1: ((20, 9), (18, 7)),
    2: ((25, 8), (24, 6)),
    3: ((30, 6), (31, 5)),
    4: ((12, 2), (13, 1)),
    5: ((3, 0), (3, 0)),
}
BANDS = {1: (0, 6), 2: (6, 12), 3: (12, 24), 4: (24, 48), 5: (48, None)}
TIME_IN_LEVEL = {1: 5.5, 2: 14.0, 3: 20.0, 4: None, 5: None}  # level 2 planted slower than band
# level 4: fewer than half promoted (no median), but a quarter by month 30
Q1_WITHOUT_MEDIAN = {4: 30.0}
WITHIN_BAND = {1: 0.55, 2: 0.3, 3: 0.62, 4: 0.18, 5: None}


def progression_mart() -> pd.DataFrame:
    rows = []
    for lv, years in LEVEL_YEARS.items():
        for year, (n, k) in zip((2025, 2026), years, strict=True):
            rows.append(dict(skill_level=lv, year=year, engineers=n, promotions=k,
                             promotion_rate=k / n, share_outside_band=0.1 * lv,
                             suppressed=False, published_suppressed=n < THR))  # fmt: skip
    return pd.DataFrame(rows)


def time_in_level_mart() -> pd.DataFrame:
    rows = []
    for lv, m in TIME_IN_LEVEL.items():
        n = LEVEL_YEARS[lv][0][0] + 5 if lv < 5 else 4
        small = n < THR
        rows.append(dict(skill_level=lv, engineers=None if small else n, promotions=None,
                         median_months=None if small else m,
                         q1_months=None if small else Q1_WITHOUT_MEDIAN.get(lv) if m is None
                         else m * 0.6,
                         promoted_within_band=None if small else WITHIN_BAND[lv],
                         q3_months=None if small or m is None else m * 1.5,
                         band_min_months=BANDS[lv][0], band_max_months=BANDS[lv][1],
                         suppressed=small))  # fmt: skip
    return pd.DataFrame(rows)


# (level, role family) -> (headcount, with pay, below, above, compa); published: rounded,
# (5, ...) suppressed (3 people), (4, network) withheld (4 with pay)
PAY = {
    (1, "operations"): (12, 12, 0.25, 0.0, 0.97),
    (1, "network"): (8, 8, 0.5, 0.0, 0.93),
    (2, "operations"): (15, 14, 0.2, 0.05, 1.01),
    (2, "network"): (10, 10, 0.1, 0.1, 1.04),
    (3, "operations"): (20, 20, 0.05, 0.1, 1.02),
    (4, "operations"): (9, 9, 0.0, 0.2, 1.08),
    (4, "network"): (6, 4, 0.0, 0.0, 1.0),
    (5, "operations"): (3, 3, 0.0, 0.0, 1.1),
}


def salary_mart(quarter_end: date = Q.end) -> pd.DataFrame:
    rows = []
    for (lv, fam), (n, with_pay, below, above, compa) in PAY.items():
        small, withheld = n < THR, with_pay < THR
        hide = small or withheld
        low, high = {1: (75000, 95000), 2: (95000, 125000), 3: (125000, 175000),
                     4: (175000, 250000), 5: (250000, 400000)}[lv]  # fmt: skip
        rows.append(dict(skill_level=lv, role_family=fam, quarter_end=quarter_end,
                         headcount=None if small else n,
                         headcount_with_pay=None if hide else with_pay,
                         band_low_usd=low, band_high_usd=high,
                         share_below_band=None if hide else below,
                         share_above_band=None if hide else above,
                         compa_ratio_median=None if hide else compa,
                         pay_withheld_reason="fewer than 5 with pay" if withheld else None,
                         suppressed=small))  # fmt: skip
    return pd.DataFrame(rows)


def promotion_mart(status: str = "not_shown") -> pd.DataFrame:
    row = {
        "shown": effect_row(None, "promotion_hazard_ratio", 1.62, 1.21, 2.17, finding=True, n=88),
        "not_shown": effect_row(None, "promotion_hazard_ratio", 1.25, 0.88, 1.79, n=88),
        "not_estimable": effect_row(None, "promotion_hazard_ratio", reason="only 4 promotions "
                                    "of certified engineers", needed="at least 10 promotions of "
                                    "certified engineers", n=88),
    }[status]  # fmt: skip
    row.pop("programme_type")
    return pd.DataFrame([row])


def planted_tables(eps: list[Episode] | None = None, **over) -> dict[str, pd.DataFrame]:
    eps = eps or planted_episodes()
    tables = {
        "programme_outcomes": outcomes_mart(eps),
        "time_to_certify": time_mart(eps),
        "programme_costs": costs_mart(eps),
        "programme_comparison": comparison_mart(),
        "time_in_level": time_in_level_mart(),
        "level_progression": progression_mart(),
        "salary_bands": salary_mart(),
        "promotion_effect": promotion_mart(),
    }
    tables.update(over)
    return {k: v for k, v in tables.items() if v is not None}


def marts(**over) -> Marts:
    return Marts(tables=planted_tables(**over), source=Path("planted.duckdb"))


# --- reading the rendered sections -----------------------------------------------------------


def text(obj) -> str:
    return htmllib.unescape(re.sub(r"<[^>]+>", "", str(obj)))


def rows_of(section, key: str) -> dict[str, list[str]]:
    t = next(t for t in section.tables if t.key == key)
    return {text(r[0]): [text(c) for c in r[1:]] for r in t.rows}


def table_of(section, key: str):
    return next(t for t in section.tables if t.key == key)


def statuses_in(html: str) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for effect, status in re.findall(r'data-effect="([^"]+)" data-status="([^"]+)"', html):
        out.setdefault(effect, set()).add(status)
    return out


def section_html(section) -> str:
    parts = [section.lead]
    for t in section.tables:
        parts += [t.caption, t.note, *(str(c) for r in t.rows for c in r)]
        parts += [str(c) for c in (t.total or [])]
    parts += section.notes
    return " ".join(str(p) for p in parts)


# --- the programmes section -------------------------------------------------------------------


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    return planted_episodes()


@pytest.fixture(scope="module")
def programmes(episodes):
    return programmes_section(marts(), THR)


def test_programme_figures_are_the_planted_episodes_recounted(programmes, episodes):
    section, _ = programmes
    rows = rows_of(section, "programmes")
    for prog in ("online", "bootcamp", "vendor_partnership"):
        g = [e for e in episodes if e.programme == prog]
        name = prog.replace("_", " ").capitalize()
        attempts = [e for e in g if e.attempted]
        followed = [e for e in g if e.followed_12m]
        assert rows[name][0] == num(len(g))
        assert rows[name][1] == num(sum(e.certified for e in g))
        assert rows[name][3] == pct(sum(e.first_passed for e in attempts) / len(attempts))
        assert rows[name][4] == pct(sum(e.voluntary_exit_12m for e in followed) / len(followed))
        # the median of the programme's largest track, named beside it
        track = max(TRACKS, key=lambda t: (sum(e.track == t for e in g), t == TRACKS[0]))
        t = [e for e in g if e.track == track]
        m = km_median([e.months for e in t], [e.certified for e in t])
        assert rows[name][2].startswith(f"{m:.1f} (") and rows[name][2].endswith(f", {track})")


def test_cost_per_certification_is_recomputed_from_its_components(programmes, episodes):
    section, _ = programmes
    rows = rows_of(section, "programme-costs")
    for prog in ("online", "bootcamp", "vendor_partnership", "apprenticeship"):
        g = [e for e in episodes if e.programme == prog]
        c = costs_of(g)
        per = (c["fees_usd"] + c["exam_fees_usd"] + c["engineer_time_usd"]
               + c["senior_time_usd"]) / sum(e.certified for e in g)  # fmt: skip
        name = prog.replace("_", " ").capitalize()
        assert rows[name][:5] == [usd(c["fees_usd"]), usd(c["exam_fees_usd"]),
                                  usd(c["engineer_time_usd"]), usd(c["senior_time_usd"]),
                                  usd(per)]  # fmt: skip
    # senior time only where apprentices are, and the seed's figures beside the company's
    assert rows["Bootcamp"][3] == "$0" and rows["Apprenticeship"][3] != "$0"
    assert rows["Bootcamp"][5].startswith("$15,000–$25,000 per participant; 2–4 weeks")
    assert "about 20 % productivity loss of the senior" in rows["Apprenticeship"][5]
    assert "discount 50–70 % for groups of 10 or more" in rows["Vendor partnership"][5]
    note = text(table_of(section, "programme-costs").note)
    assert "senior_rate_usd_per_hour" in note and "training_programme_types.csv" in note


def test_small_programmes_and_rates_about_few_people_are_suppressed(programmes, episodes):
    section, _ = programmes
    rows = rows_of(section, "programmes")
    assert rows["Internal"] == ["<5"] * 5  # three participants
    assert rows_of(section, "programme-costs")["Internal"][:5] == ["<5"] * 5
    # apprenticeship: 6 participants shown, but only 4 sat an exam: the pass rate is hidden
    assert rows["Apprenticeship"][0] == "6" and rows["Apprenticeship"][3] == "<5"
    assert "internal: fewer than 5 participants" in text(section.lead)
    # the appendix file holds no figure of the hidden programme
    data = table_of(section, "programme-costs").data
    hidden = next(r for r in data.rows if r[0] == "Internal")
    assert hidden[1:-1] == [None] * 6 and hidden[-1] is True


def test_every_comparison_reads_through_its_planted_status(programmes):
    section, _ = programmes
    html = section_html(section)
    found = statuses_in(html)
    for (prog, metric), status in STATUSES.items():
        assert found[f"{metric}-{prog}"] == {status}, (prog, metric)
    rows = rows_of(section, "programme-comparison")
    assert rows["Bootcamp"][0] == "0.55 (0.41–0.74), shown"
    assert rows["Vendor partnership"][0] == "1.21 (0.83–1.77), not shown"
    # not estimable: no number, and the data needed is said
    assert rows["Apprenticeship"] == ["not estimable"] * 3
    assert 'data-figure="effect-time_to_certify_ratio-apprenticeship' not in html
    note = text(table_of(section, "programme-comparison").note)
    assert (
        "Too few to tell, so no figure is shown, and what would make each estimable: vendor "
        f"partnership: voluntary exits ({NEEDED}); apprenticeship: time to certify and "
        f"first-attempt pass odds and voluntary exits ({NEEDED}). The reasons in full are in "
        "marts.programme_comparison (not_estimable_reason)."
    ) in note
    # the naive figure beside a withheld comparison (planted 0.22 [0.12, 0.42]) is not shown
    assert "0.22" not in html and "0.42" not in html


def test_the_budget_paragraph_counts_only_shown_differences(programmes, episodes):
    section, _ = programmes
    budget = text(section.notes[-1])
    assert budget.startswith("What it means for next year's training budget")
    per = {}
    for prog in ("online", "bootcamp", "vendor_partnership", "apprenticeship"):
        g = [e for e in episodes if e.programme == prog]
        per[prog] = costs_of(g)["total_cost_usd"] / sum(e.certified for e in g)
    cheap, dear = min(per, key=per.get), max(per, key=per.get)
    assert f"{usd(per[cheap])}" in budget and f"{usd(per[dear])}" in budget
    assert f"about {per[dear] / per[cheap]:.1f} through" in budget
    # the shown one is a reason, the one that is not shown is not
    assert (
        "bootcamp took 45 % less time to certify than the online path (time ratio 0.55, shown) "
        f"at {usd(per['bootcamp'])} per certification against online's {usd(per['online'])}"
    ) in budget
    assert "vendor partnership took" not in budget
    assert (
        "The adjusted time to certify of vendor partnership (not shown) and apprenticeship "
        "(not estimable) against online gives no reason to move money"
    ) in budget


def test_an_effect_that_is_not_shown_is_never_a_reason(episodes):
    """The same marts with the bootcamp's time ratio planted as not shown: no speed claim."""
    flipped = dict(STATUSES)
    flipped[("bootcamp", "time_to_certify_ratio")] = "not_shown"
    section, _ = programmes_section(marts(programme_comparison=comparison_mart(flipped)), THR)
    budget = text(section.notes[-1])
    assert "less time" not in budget and "more time" not in budget
    assert "worth paying for" not in budget
    assert "of bootcamp (not shown), vendor partnership (not shown) and apprenticeship" in budget
    assert statuses_in(section_html(section))["time_to_certify_ratio-bootcamp"] == {"not_shown"}


def test_missing_programme_marts_read_as_not_available():
    section, facts = programmes_section(Marts(tables={}, source=Path("x")), THR)
    assert not section.available and facts is None
    assert "Not available" in text(section.lead)
    # one mart gone: its columns say so, the rest still print
    section, _ = programmes_section(marts(time_to_certify=None), THR)
    assert section.available
    assert rows_of(section, "programmes")["Online"][2] == "not available"
    assert "time_to_certify" in text(section.notes[0])


# --- the careers section ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def careers():
    return careers_section(marts(), Q, THR)


def test_ladder_figures_are_the_planted_levels(careers):
    section, facts = careers
    # 2026-Q3: the last complete calendar year is 2025
    assert facts.year == 2025 and not facts.year_to_date
    rows = rows_of(section, "careers-ladder")
    for lv, ((n, k), _) in LEVEL_YEARS.items():
        row = next(v for name, v in rows.items() if name.startswith(f"{lv} "))
        band = BANDS[lv]
        assert row[0] == (f"{band[0]}–{band[1]}" if band[1] else f"{band[0]}+")
        if lv == 5:  # 3 engineers: fewer than the minimum
            assert row[3:6] == ["<5", "<5", "<5"]
        elif lv == 4:  # 12 engineers, hidden only as the complement of level 5: not "<5"
            assert row[3:6] == ["hidden", "hidden", "hidden"]
        else:
            assert row[3:6] == [num(n), num(k), pct(k / n)]
        if lv < 5:
            assert row[2] == pct(WITHIN_BAND[lv])
    assert rows["2 Operational"][1].startswith("14.0 (8.4–21.0)")
    # no median, but the first quartile is reached: it is printed
    assert rows["4 Expert"][1] == "not reached (a quarter by 30.0)"
    assert rows["5 Architect"][1:3] == ["<5", "<5"]  # 4 engineers in the time-in-level model
    # the total is over every level (hidden ones included, two of them, so neither recovers)
    total = [text(c) for c in table_of(section, "careers-ladder").total]
    n_all = sum(y[0][0] for y in LEVEL_YEARS.values())
    k_all = sum(y[0][1] for y in LEVEL_YEARS.values())
    assert total[4:7] == [num(n_all), num(k_all), pct(k_all / n_all)]
    assert f"{k_all} promotions in the calendar year (2025)" in text(section.lead)
    # level 2 is planted slower than its band (14 months against 6-12)
    assert "longer than the ladder's band at level 2 (median 14.0 months" in text(section.lead)


def test_pay_prints_aggregates_of_the_published_mart_only(careers):
    section, _ = careers
    rows = rows_of(section, "careers-pay")
    # level 1: both role families, weighted by engineers with pay
    n = 12 + 8
    assert rows["1 Foundation"][1:5] == [
        num(n),
        pct((0.25 * 12 + 0.5 * 8) / n),
        pct(0.0),
        f"{ratio(0.93)}–{ratio(0.97)}",
    ]
    # level 4: the network group is withheld (4 with pay): the level covers operations only
    assert rows["4 Expert"][1:6] == ["9", pct(0.0), pct(0.2), ratio(1.08), "1 of 2"]
    assert rows["5 Architect"][1:5] == ["withheld"] * 4
    full = rows_of(section, "careers-pay-all")
    assert full["5 Architect"][1:3] == ["<5", "<5"]
    # no individual pay: no dollar figure other than the band's ends
    html = section_html(section)
    dollars = set(re.findall(r"\$[\d,]+k?", text(html)))
    bands = {f"${v // 1000}k" for pair in ((75000, 95000), (95000, 125000), (125000, 175000),
                                            (175000, 250000), (250000, 400000)) for v in pair}  # fmt: skip
    assert dollars <= bands


def test_pay_below_the_band_by_role_family_of_the_published_levels(careers):
    section, _ = careers
    rows = rows_of(section, "careers-pay-family")
    # recomputed from the planted groups: a level hidden (3 people) or withheld (4 with pay)
    # is left out of its family's share
    expected = {}
    for fam in ("operations", "network"):
        seen = [(w, b) for (lv, f), (n, w, b, _, _) in PAY.items()
                if f == fam and n >= THR and w >= THR]  # fmt: skip
        k = sum(w for w, _ in seen)
        levels = sum(1 for (_, f) in PAY if f == fam)
        expected[fam.capitalize()] = [num(k), pct(sum(w * b for w, b in seen) / k),
                                      f"{levels - len(seen)} of {levels}"]  # fmt: skip
    assert rows == expected
    # the largest share below the band first
    assert list(rows) == ["Network", "Operations"]


@pytest.mark.parametrize("status", ["shown", "not_shown", "not_estimable"])
def test_the_promotion_effect_follows_its_status(status):
    section, _ = careers_section(marts(promotion_effect=promotion_mart(status)), Q, THR)
    html = section_html(section)
    assert statuses_in(html) == {"promotion_hazard_ratio": {status}}
    note = text(table_of(section, "careers-promotion").note)
    if status == "shown":
        assert "promoted 62 % more often" in note and "1.62 (95 % interval 1.21–2.17)" in note
    elif status == "not_shown":
        assert "more often" not in note and "1.25 (95 % interval 0.88–1.79)" in note
        assert "includes no difference" in note
    else:
        assert "hazard ratio" not in note
        assert "needed: at least 10 promotions of certified engineers" in note
    assert "88 engineers in the promotion model" in note or status == "not_estimable"


def test_a_year_the_data_hold_only_in_part_is_labelled_to_date():
    lp = progression_mart()
    section, facts = careers_section(marts(level_progression=lp[lp["year"] == 2026]), Q, THR)
    assert facts.year == 2026 and facts.year_to_date
    assert "Promotions, 2026 to date" in table_of(section, "careers-ladder").columns


# the 12 months to the report's quarter end (2025-10-01 .. 2026-09-30) and to the quarter
# before: level -> (engineers, promotions)
TRAILING = {Q.end: {1: (30, 9), 2: (25, 6), 3: (40, 8), 4: (35, 3), 5: (15, 0)},
            date(2026, 6, 30): {1: (28, 2), 2: (24, 2), 3: (41, 2), 4: (33, 2), 5: (14, 0)}}  # fmt: skip


def trailing_mart() -> pd.DataFrame:
    return pd.DataFrame(
        [dict(skill_level=lv, window_end=end, engineers=n, promotions=k,
              promotion_rate=k / n, share_outside_band=0.05 * lv, suppressed=False,
              published_suppressed=False)
         for end, levels in TRAILING.items() for lv, (n, k) in levels.items()]
    )  # fmt: skip


def test_the_ladder_reads_the_12_months_to_the_quarter_end_rather_than_a_calendar_year():
    section, facts = careers_section(marts(level_progression_12m=trailing_mart()), Q, THR)
    assert facts.trailing
    ladder = table_of(section, "careers-ladder")
    assert "Promotions, 12 months to Sep 2026" in ladder.columns
    rows = rows_of(section, "careers-ladder")
    for lv, (n, k) in TRAILING[Q.end].items():
        row = next(v for name, v in rows.items() if name.startswith(f"{lv} "))
        assert row[3:6] == [num(n), num(k), pct(k / n)]
    k_all = sum(k for _, k in TRAILING[Q.end].values())
    assert f"{k_all} promotions in the 12 months to Sep 2026 across the 5 levels" in text(
        section.lead
    )
    # a level nobody held in the window reads as none, not as a hidden group
    no_one = trailing_mart()
    no_one = no_one[(no_one["skill_level"] != 1) | (no_one["window_end"] != Q.end)]
    section, _ = careers_section(marts(level_progression_12m=no_one), Q, THR)
    assert rows_of(section, "careers-ladder")["1 Foundation"][3:6] == ["0", "0", "–"]
    # a quarter the trailing mart does not reach falls back to the calendar year
    earlier = trailing_mart()
    earlier = earlier[earlier["window_end"] != Q.end]
    _, old = careers_section(marts(level_progression_12m=earlier), Q, THR)
    assert not old.trailing and old.year == 2025


def test_missing_career_marts_read_as_not_available():
    section, facts = careers_section(Marts(tables={}, source=Path("x")), Q, THR)
    assert not section.available and facts is None
    section, _ = careers_section(marts(salary_bands=None, level_progression=None), Q, THR)
    assert section.available
    assert rows_of(section, "careers-ladder")["1 Foundation"][3] == "not available"
    assert "level_progression, salary_bands" in text(section.notes[-1])


def test_a_mart_without_the_columns_read_is_named_with_what_it_lacks():
    lp = progression_mart().drop(columns="promotions")
    section, _ = careers_section(marts(level_progression=lp), Q, THR)
    assert "level_progression (lacks promotions)" in text(section.notes[-1])
    # another name for the year is read as the year
    renamed = progression_mart().rename(columns={"year": "calendar_year"})
    _, facts = careers_section(marts(level_progression=renamed), Q, THR)
    assert facts.year == 2025 and facts.promotions == sum(y[0][1] for y in LEVEL_YEARS.values())


# --- reading the marts: which copy of each ----------------------------------------------------


def test_salary_bands_come_from_the_published_mart_even_with_the_build_file(tmp_path):
    published, build = tmp_path / "talent.duckdb", tmp_path / "build.duckdb"
    pay = salary_mart()
    outcomes = outcomes_mart(planted_episodes()).drop(columns="published_suppressed")
    shown = outcomes.assign(suppressed=outcomes["participants"] < THR)
    # the build file holds the marts too (the published file is a copy of them)
    for path in (published, build):
        with duckdb.connect(str(path)) as con:
            con.execute("create schema marts")
            for name, df in (("salary_bands", pay), ("programme_outcomes", shown)):
                con.register("f", df)
                con.execute(f"create table marts.{name} as select * from f")
                con.unregister("f")
    with duckdb.connect(str(build)) as con:
        con.execute("create schema restricted")
        # the build file's copy: unrounded pay of every group, however small
        raw = pay.assign(pay_median_usd=123457.0, headcount=pay["headcount"].fillna(3))
        for name, df in (("salary_bands", raw), ("programme_outcomes", outcomes)):
            con.register("f", df)
            con.execute(f"create table restricted.{name} as select * from f")
            con.unregister("f")
    loaded = load_marts(published, build)
    assert "pay_median_usd" not in loaded.tables["salary_bands"].columns
    assert loaded.tables["salary_bands"]["headcount"].isna().sum() == 1
    # programme outcomes: the restricted rows, flagged where the published mart hides them
    out = loaded.tables["programme_outcomes"]
    assert out["published_suppressed"].tolist() == (out["participants"] < THR).tolist()


# --- the whole report --------------------------------------------------------------------------


def planted_warehouse(path: Path, **kw) -> Path:
    db = build_published_fixture(path, **kw)
    with duckdb.connect(str(db)) as con:
        for name, df in planted_tables().items():
            con.register("f", df.drop(columns=["published_suppressed"], errors="ignore"))
            con.execute(f"create table marts.{name} as select * from f")
            con.unregister("f")
    return db


def test_the_whole_report_with_both_sections_is_consistent(tmp_path):
    db = planted_warehouse(tmp_path / "talent.duckdb")
    inputs = load_inputs()
    html = render_html(build_context(load_marts(db), Q, THR, inputs))
    assert 'id="programmes" class="available' in html and 'id="careers" class="available' in html
    assert problems(html) == []
    from pipelines.lib.report.glossary import ACRONYMS

    assert acronym_problems(html, {**ACRONYMS, **inputs.acronyms}) == []


@pytest.mark.slow
def test_the_whole_report_prints_within_twelve_pages_at_any_company_size(tmp_path):
    """The 240-team company of tests/test_report_length.py (ten pages without these two
    sections) with the planted programme and career marts: within the 12 pages."""
    from test_report_length import MANY

    from pipelines.lib.report import render_report

    db = planted_warehouse(tmp_path / "talent.duckdb", teams=MANY)
    result = render_report(db, QUARTER, tmp_path / "out")
    assert result["sections"]["programmes"] and result["sections"]["careers"]
    assert result["pages"] <= 12


def test_programmes_without_a_certification_track_are_counted_from_the_spend():
    # apprenticeship and internal courses name no certification: no episode is theirs, but the
    # investment counts their people and costs, so the section must not drop them
    tracked = [e for e in planted_episodes() if e.programme not in ("apprenticeship", "internal")]
    spend = pd.DataFrame(
        [dict(quarter=date(2026, 4, 1), spend_category="apprenticeship", participants=6,
              enrolments=6, completions=4, spend_usd=0.0, training_hours=300.0),
         dict(quarter=date(2026, 7, 1), spend_category="apprenticeship", participants=5,
              enrolments=5, completions=1, spend_usd=0.0, training_hours=120.0),
         dict(quarter=date(2026, 7, 1), spend_category="internal", participants=3,
              enrolments=3, completions=3, spend_usd=0.0, training_hours=24.0),
         dict(quarter=date(2026, 7, 1), spend_category="online", participants=40,
              enrolments=44, completions=30, spend_usd=9000.0, training_hours=800.0)]
    )  # fmt: skip
    tables = {
        name: df[~df["programme_type"].isin(["apprenticeship", "internal"])]
        if "programme_type" in df else df
        for name, df in planted_tables(tracked).items()
    }  # fmt: skip
    tables["training_spend"] = spend
    section, _ = programmes_section(Marts(tables=tables, source=Path("p.duckdb")), THR)
    rows = rows_of(section, "programmes-untracked")
    assert rows == {"Apprenticeship": ["11", "5", "$0", "420"], "Internal": ["<5"] * 4}
    assert "Apprenticeship and Internal courses carry no certification track" in text(section.lead)
    assert "Apprenticeship" not in rows_of(section, "programmes")


def test_each_programmes_time_to_the_next_level_is_printed_from_its_mart():
    nl = pd.DataFrame(
        [dict(programme_type="online", episodes=40, engineers=35, promotions=12,
              median_months=None, q1_months=14.0, promoted_within_12m_share=0.21,
              suppressed=False),
         dict(programme_type="bootcamp", episodes=9, engineers=8, promotions=5,
              median_months=11.0, q1_months=6.0, promoted_within_12m_share=0.55,
              suppressed=False),
         dict(programme_type="internal", episodes=None, engineers=None, promotions=None,
              median_months=None, q1_months=None, promoted_within_12m_share=None,
              suppressed=True)]
    )  # fmt: skip
    section, _ = careers_section(marts(programme_next_level=nl), Q, THR)
    rows = rows_of(section, "careers-next-level")
    assert rows == {
        "Online": ["35", "12", "not reached (a quarter by 14.0)", "21 %"],
        "Bootcamp": ["8", "5", "11.0", "55 %"],
        "Internal": ["<5"] * 4,
    }
