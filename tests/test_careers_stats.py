"""Programme and career statistics (``pipelines/lib/careers``) against data simulated here with
planted effects, hand calculations and the assumptions file.

Episodes: programme choice depends on skill level (juniors to bootcamps, seniors to vendor
courses) and higher levels certify faster and pass more often, so a comparison that ignores
level is off; times to certify are drawn from a Weibull accelerated failure time model with
known programme ratios, first attempts from a logistic model with known odds ratios, and
voluntary exits from a hazard with known programme multipliers on top of a certified effect.
"""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import polars as pl
import pytest

from pipelines.lib import careers
from pipelines.lib.careers import careers as career_stats
from pipelines.lib.careers import programmes as prog_stats
from pipelines.lib.careers.result import prepare_episodes
from pipelines.lib.effects.prepare import (
    ENGINEER_MONTH_COLUMNS,
    INCIDENT_COLUMNS,
    prepare_engineer_months,
)
from pipelines.lib.roi.assumptions import DEFAULT_ASSUMPTIONS_PATH, base_params, load_assumptions
from pipelines.lib.small_groups import small_group_mentions

AS_OF = pd.Timestamp("2024-12-31")
DAYS = 30.4375
TRACKS = {"NCA-AIIO": 1.0, "NCP-AII": 1.4}  # time ratio of the track
PLANTED_TIME = {"bootcamp": 0.5, "vendor_partnership": 0.7, "apprenticeship": 1.3, "internal": 1.0}
PLANTED_ODDS = {"bootcamp": 2.0, "vendor_partnership": 1.5, "apprenticeship": 1.0, "internal": 0.7}
PLANTED_EXIT = {"bootcamp": 1.0, "vendor_partnership": 0.5, "apprenticeship": 1.0, "internal": 1.0}
LEVEL_TIME = 0.75  # time ratio per level above 1: seniors certify faster
LEVEL_ODDS = 1.6  # odds ratio of a first-attempt pass per level
CERTIFIED_EXIT = 0.6  # exit hazard ratio once certified


def simulate_episodes(
    seed: int,
    n: int = 2400,
    time_ratio: dict | None = None,
    odds: dict | None = None,
    exit_hr: dict | None = None,
    shape: float = 1.5,
) -> pd.DataFrame:
    """One episode per engineer, shaped like intermediate.int_programme_episodes."""
    time_ratio = PLANTED_TIME if time_ratio is None else time_ratio
    odds = PLANTED_ODDS if odds is None else odds
    exit_hr = PLANTED_EXIT if exit_hr is None else exit_hr
    rng = np.random.default_rng(seed)
    level = rng.choice([1, 2, 3, 4, 5], size=n, p=[0.25, 0.25, 0.2, 0.2, 0.1])
    # who is sent where: juniors to bootcamps and apprenticeships, seniors to vendor courses
    weights = {
        "online": np.full(n, 1.0),
        "bootcamp": np.where(level <= 2, 1.6, 0.15),
        "apprenticeship": np.where(level <= 2, 0.8, 0.05),
        "vendor_partnership": np.where(level >= 4, 1.8, 0.15),
        "internal": np.full(n, 0.4),
    }
    names = list(weights)
    w = np.column_stack([weights[k] for k in names])
    w /= w.sum(axis=1, keepdims=True)
    pick = (rng.random(n)[:, None] > w.cumsum(axis=1)).sum(axis=1)
    choice = np.array(names)[np.minimum(pick, len(names) - 1)]
    track = rng.choice(list(TRACKS), size=n)
    tenure = np.clip(level * 12 - 6 + rng.normal(0, 6, n), 0, None)
    ratio = np.array([time_ratio.get(p, 1.0) for p in choice])
    scale = 6.0 * ratio * LEVEL_TIME ** (level - 1) * np.array([TRACKS[t] for t in track])
    t_cert = scale * (-np.log(rng.random(n))) ** (1 / shape)
    follow = rng.uniform(1, 36, n)  # months from the first enrolment to the as-of date
    # voluntary exits: a monthly hazard times the programme's multiplier, lower once certified
    base = 0.02 * np.array([exit_hr.get(p, 1.0) for p in choice])
    e1 = rng.exponential(1 / base)
    e2 = t_cert + rng.exponential(1 / (base * CERTIFIED_EXIT))
    exit_t = np.where(e1 < t_cert, e1, e2)
    certified = t_cert < np.minimum(exit_t, follow)
    months = np.minimum(np.minimum(t_cert, exit_t), follow)
    left = exit_t < follow
    start = AS_OF - pd.to_timedelta(np.round(follow * DAYS), unit="D")
    attempt = rng.random(n) < 0.85
    logit = -0.3 + np.log([odds.get(p, 1.0) for p in choice]) + np.log(LEVEL_ODDS) * (level - 3)
    passed = rng.random(n) < 1 / (1 + np.exp(-logit))
    fees = {"online": 300.0, "bootcamp": 20000.0, "vendor_partnership": 6000.0}
    df = pd.DataFrame(
        {
            "person_key": [f"p_{i:06d}" for i in range(n)],
            "certification_code": track,
            "programme_type": choice,
            "first_enrolled_on": start,
            "skill_level_at_entry": level,
            "role_family_at_entry": "operations_engineer",
            "tenure_months_at_entry": tenure,
            "enrolments": 1,
            "completed": True,
            "attempts": attempt.astype(int),
            "first_attempt_on": start.where(attempt),
            "first_attempt_passed": pd.Series(passed, dtype="boolean").where(attempt),
            "certified": certified,
            "months_followed": months,
            "fees_usd": [fees.get(p, 0.0) for p in choice],
            "list_price_usd": [fees.get(p, 0.0) for p in choice],
            "exam_fees_usd": np.where(attempt, 400.0, 0.0),
            "training_hours": rng.uniform(10, 120, n).round(1),
            "apprenticeship": choice == "apprenticeship",
            "voluntary_exit_12m": left & (exit_t <= 12),
            "followed_12m": (follow >= 12) | left,
        }
    )
    df["cohort_quarter"] = df["first_enrolled_on"].dt.to_period("Q").dt.start_time
    df["certified_on"] = (
        df["first_enrolled_on"] + pd.to_timedelta(np.round(months * DAYS), unit="D")
    ).where(certified)
    df["followed_until"] = df["first_enrolled_on"] + pd.to_timedelta(
        np.round(months * DAYS), unit="D"
    )
    exit_on = df["first_enrolled_on"] + pd.to_timedelta(np.round(exit_t * DAYS), unit="D")
    df["exit_on"] = exit_on.where(left)
    df["exit_type"] = pd.Series(np.where(left, "voluntary", None), dtype="string")
    # the day of an exit ends follow-up: an episode not certified is followed until then
    return df


def empty_months() -> pd.DataFrame:
    """The months panel with its required columns and no rows."""
    return pd.DataFrame({c: pd.Series(dtype="object") for c in ENGINEER_MONTH_COLUMNS}).astype(
        {"month": "datetime64[ns]", "first_certified_month": "datetime64[ns]"}
    )


def empty_incidents() -> pd.DataFrame:
    cols = INCIDENT_COLUMNS
    return pd.DataFrame({c: pd.Series(dtype="object") for c in cols}).astype(
        {"month": "datetime64[ns]"}
    )


def episodes_for_panel(em: pd.DataFrame, seed: int, share_bootcamp: float = 0.5) -> pd.DataFrame:
    """Episodes for the engineers of a months panel who certified while observed: the first
    certification came through a bootcamp or an online course (at random), the episode starting
    three months before it."""
    rng = np.random.default_rng(seed)
    first = (
        em.dropna(subset=["first_certified_month"])
        .groupby("person_key", as_index=False)
        .agg(first=("first_certified_month", "first"), level=("skill_level", "first"))
    )
    n = len(first)
    programme = np.where(rng.random(n) < share_bootcamp, "bootcamp", "online")
    start = first["first"] - pd.DateOffset(months=3)
    certified_on = first["first"] + pd.Timedelta(days=10)
    return pd.DataFrame(
        {
            "person_key": first["person_key"],
            "certification_code": "NCA-AIIO",
            "programme_type": programme,
            "first_enrolled_on": start,
            "cohort_quarter": start.dt.to_period("Q").dt.start_time,
            "skill_level_at_entry": first["level"],
            "tenure_months_at_entry": 12.0,
            "first_attempt_passed": True,
            "certified": True,
            "certified_on": certified_on,
            "followed_until": certified_on,
            "months_followed": (certified_on - start).dt.days / DAYS,
            "fees_usd": 0.0,
            "exam_fees_usd": 0.0,
            "training_hours": 0.0,
            "apprenticeship": False,
            "exit_on": pd.NaT,
            "exit_type": pd.Series([None] * n, dtype="string"),
        }
    )


def simulate_careers(
    seed: int, n: int = 900, months: int = 48, hr: float = 1.8, cert_base: float = 0.02
) -> pd.DataFrame:
    """A months panel (shaped like int_engineer_months_complete) with promotions: a monthly
    hazard that falls with level, times ``hr`` while certified; engineers with more tenure
    certify more often (tenure is also the time scale)."""
    rng = np.random.default_rng(seed)
    hired_before = rng.random(n) < 0.5
    tenure0 = np.where(hired_before, rng.uniform(1, 60, n), 0.0)
    entry = np.where(hired_before, 0, rng.integers(0, months - 6, n))
    level = np.where(hired_before, np.clip(1 + tenure0 // 18, 1, 4), 1).astype(int)
    certified = np.zeros(n, bool)
    first_cert = np.full(n, -1)
    active = np.zeros(n, bool)
    gone = np.zeros(n, bool)
    base = {1: 0.08, 2: 0.05, 3: 0.035, 4: 0.02, 5: 0.0}
    frames = []
    for t in range(months):
        active |= (entry == t) & ~gone
        tenure = tenure0 + (t - entry) + 0.5
        idx = np.flatnonzero(active)
        leave = active & (rng.random(n) < 0.01)
        frames.append(
            pd.DataFrame(
                {
                    "pid": idx,
                    "t": t,
                    "skill_level": level[idx],
                    "tenure_months": tenure[idx],
                    "is_certified": certified[idx],
                    "separated": leave[idx],
                }
            )
        )
        # this month's promotion shows as a higher level next month (effective on its first
        # day); the status this month's row shows is what the hazard depends on
        h = np.array([base[v] for v in level]) * np.where(certified, hr, 1.0)
        promote = active & ~leave & (rng.random(n) < h)
        level = np.where(promote, np.minimum(level + 1, 5), level)
        p_cert = np.minimum(cert_base * np.exp(0.3 * tenure / 12), 0.5)
        new = active & ~certified & (rng.random(n) < p_cert)
        certified |= new
        first_cert = np.where(new & (first_cert < 0), t + 1, first_cert)
        gone |= leave
        active &= ~leave
    em = pd.concat(frames, ignore_index=True)
    month0 = pd.Timestamp("2021-01-01")
    to_month = pd.to_datetime([month0 + pd.DateOffset(months=k) for k in range(months + 1)])
    em["person_key"] = "p_" + em["pid"].astype(str).str.zfill(8)
    em["month"] = to_month[em["t"].to_numpy()]
    fc = first_cert[em["pid"].to_numpy()]
    # certified during the previous month: first_certified_month is the month the status shows
    em["first_certified_month"] = pd.Series(to_month[np.clip(fc, 0, months)]).where(
        (fc >= 0) & (fc < months)
    )
    em["incidents"] = 0
    em["exposure_months"] = 1.0
    em["separation_type"] = np.where(em["separated"], "voluntary", None)
    return em.drop(columns=["pid", "t"])


def comparison(ep_raw: pd.DataFrame, k: int = 5) -> dict[str, dict]:
    """metric -> programme -> Effect for the three between-engineer models."""
    ep = prepare_episodes(ep_raw)
    programmes = sorted(p for p in ep["programme_type"].unique() if p != "online")
    return {
        "time_to_certify_ratio": prog_stats.time_to_certify_ratios(ep, programmes, k),
        "first_pass_odds_ratio": prog_stats.first_pass_odds_ratios(ep, programmes, k),
        "voluntary_exit_hazard_ratio": prog_stats.exit_hazard_ratios(ep, programmes, k),
    }


@pytest.fixture(scope="module")
def planted():
    return comparison(simulate_episodes(1))


@pytest.mark.parametrize("programme", ["bootcamp", "vendor_partnership", "apprenticeship"])
def test_adjusted_time_ratio_holds_the_planted_ratio_and_the_naive_misses_it(planted, programme):
    e = planted["time_to_certify_ratio"][programme]
    truth = PLANTED_TIME[programme]
    assert e.estimable and e.ci_low <= truth <= e.ci_high, e.row()
    # level drives both the programme and the time: ignoring it moves the figure off the truth
    assert not e.naive[1] <= truth <= e.naive[2], e.row()
    assert e.finding


@pytest.mark.parametrize("programme", ["bootcamp", "vendor_partnership"])
def test_adjusted_first_pass_odds_ratio_holds_the_planted_ratio(planted, programme):
    e = planted["first_pass_odds_ratio"][programme]
    truth = PLANTED_ODDS[programme]
    assert e.estimable and e.ci_low <= truth <= e.ci_high, e.row()
    assert not e.naive[1] <= truth <= e.naive[2], e.row()


def test_exit_hazard_ratio_holds_the_planted_multipliers(planted):
    # the two programmes chosen by level (juniors to bootcamps, seniors to vendor courses)
    for programme in ("bootcamp", "vendor_partnership"):
        truth = PLANTED_EXIT[programme]
        e = planted["voluntary_exit_hazard_ratio"][programme]
        assert e.estimable and e.ci_low <= truth <= e.ci_high, (programme, e.row())
    assert planted["voluntary_exit_hazard_ratio"]["vendor_partnership"].finding
    assert (
        "net of certifying" in planted["voluntary_exit_hazard_ratio"]["bootcamp"].row()["caveats"]
    )


def test_a_null_world_gives_no_finding_where_the_naive_comparison_sees_one():
    null = {"bootcamp": 1.0}
    ep = simulate_episodes(7, n=1500, time_ratio=null, odds=null, exit_hr=null)
    ep = ep[ep["programme_type"].isin(["online", "bootcamp"])]
    out = comparison(ep)
    time_ratio = out["time_to_certify_ratio"]["bootcamp"]
    assert time_ratio.estimable and not time_ratio.finding, time_ratio.row()
    assert not (time_ratio.naive[1] <= 1.0 <= time_ratio.naive[2])  # juniors: slower anyway
    odds = out["first_pass_odds_ratio"]["bootcamp"]
    assert odds.estimable and not odds.finding, odds.row()


def kaplan_meier_by_hand(times, events):
    """Product-limit estimate in plain Python: [(t, S(t))] at each event time."""
    steps, s = [], 1.0
    for t in sorted({t for t, e in zip(times, events, strict=True) if e}):
        at_risk = sum(1 for u in times if u >= t)
        died = sum(1 for u, e in zip(times, events, strict=True) if u == t and e)
        s *= 1 - died / at_risk
        steps.append((t, s))
    return steps


def test_kaplan_meier_summary_matches_a_hand_calculation():
    times = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0, 9.5]
    events = [1, 1, 0, 1, 0, 1, 1, 0, 1, 0]
    steps = kaplan_meier_by_hand(times, events)

    def first_at_or_below(q):
        return next(t for t, s in steps if s <= q + 1e-12)

    def survival(t):
        return min([s for u, s in steps if u <= t], default=1.0)

    got = prog_stats.km_summary(np.array(times), np.array(events, dtype=bool))
    assert got["median_months"] == pytest.approx(first_at_or_below(0.5))
    assert got["q1_months"] == pytest.approx(first_at_or_below(0.75))
    assert got["certified_within_6m_share"] == pytest.approx(1 - survival(6.0))
    assert got["q3_months"] == pytest.approx(first_at_or_below(0.25))
    assert math.isnan(got["certified_within_12m_share"])  # nobody followed 12 months
    assert got["median_ci_low"] <= got["median_months"]


def test_too_small_groups_are_not_estimable_and_say_what_data_is_needed():
    ep = simulate_episodes(3, n=1200)
    internal = ep.index[ep["programme_type"] == "internal"]
    ep = ep.drop(internal[3:])  # three internal episodes left
    out = comparison(ep)
    for metric in out:
        e = out[metric]["internal"]
        row = e.row()
        assert not row["estimable"] and not row["finding"], row
        assert (
            "too few" in row["not_estimable_reason"] and "internal" in row["not_estimable_reason"]
        )
        # three engineers: the text says "fewer than 5" and quotes none of their counts
        assert "internal: fewer than 5 engineers" in row["not_estimable_reason"], row
        assert re.search(r"at least 5 engineers (with an attempt )?in internal", row["data_needed"])
        for text in (row["not_estimable_reason"], row["data_needed"], row["caveats"]):
            assert small_group_mentions(text, 5) == [], text
            # neither the internal side's counts nor the gap to the minimum (which gives
            # them back)
            assert not re.search(r"internal: [^;)]* with|about \d+ more [^;]* in internal", text)
        assert math.isnan(row["estimate"]) and math.isnan(row["ci_low"])
    assert out["time_to_certify_ratio"]["bootcamp"].estimable


def _no_line_with_one_hidden_row(df, line):
    hidden = df.groupby(line)["suppressed"].sum()
    return not (hidden == 1).any()


def test_small_groups_are_suppressed_in_every_frame():
    em = simulate_careers(5, n=300, months=30)
    # two engineers at level 5 with a seen start: too few to show
    top = em["person_key"].isin(em.loc[em["skill_level"] == 5, "person_key"].unique()[2:])
    em = em[~(top & (em["skill_level"] == 5))]
    ep = simulate_episodes(4, n=600)
    ep = ep.drop(ep.index[ep["programme_type"] == "internal"][4:])
    stats = careers.programme_statistics(ep, em, empty_incidents())
    stats["programme_costs"] = careers.programme_costs(
        ep, base_params(load_assumptions(DEFAULT_ASSUMPTIONS_PATH))
    )
    stats |= careers.career_statistics(em)
    ttc = stats["time_to_certify"]
    shown = ttc["participants"].dropna()
    assert not ((shown >= 1) & (shown < 5)).any()
    small = ttc["suppressed"] & ttc["participants"].isna()
    assert small.any() and ttc.loc[small, "median_months"].isna().all()
    assert _no_line_with_one_hidden_row(ttc, ["programme_type", "certification_code"])
    costs = stats["programme_costs"]
    internal = costs[costs["programme_type"] == "internal"]
    assert internal["suppressed"].all() and internal["total_cost_usd"].isna().all()
    assert _no_line_with_one_hidden_row(costs, ["programme_type"])
    # a track hidden in costs is hidden in time_to_certify's 'all' cohort too
    hidden_tracks = set(
        map(tuple, costs.loc[costs["suppressed"], ["programme_type", "certification_code"]].values)
    )
    all_rows = ttc[ttc["cohort"] == "all"]
    for prog, code, hidden in all_rows[
        ["programme_type", "certification_code", "suppressed"]
    ].values:
        if (prog, code) in hidden_tracks:
            assert hidden, (prog, code)
    levels = stats["time_in_level"].set_index("skill_level")
    assert levels.loc[5, "suppressed"] and pd.isna(levels.loc[5, "engineers"])
    assert not levels.loc[1, "suppressed"] and levels.loc[1, "engineers"] >= 5
    comp = stats["programme_comparison"]
    n = comp["n_engineers"].dropna()
    assert not ((n >= 1) & (n < 5)).any()
    assert set(comp["programme_type"]) == {
        "bootcamp",
        "vendor_partnership",
        "apprenticeship",
        "internal",
    }
    assert list(comp.columns[:2]) == ["programme_type", "metric"]


def test_costs_match_a_hand_computation_from_the_assumptions_file():
    prices = base_params(load_assumptions(DEFAULT_ASSUMPTIONS_PATH))
    ep = simulate_episodes(2, n=800)
    costs = careers.programme_costs(pl.from_pandas(ep), prices).set_index(
        ["programme_type", "certification_code"]
    )
    for (prog, code), row in costs.iterrows():
        g = ep[ep["programme_type"] == prog]
        if code != "all":
            g = g[g["certification_code"] == code]
        engineer = g["training_hours"].sum() * prices["employee_rate_usd_per_hour"]
        senior = (
            g["apprenticeship"].sum()
            * prices["apprenticeship_months"]
            * prices["hours_per_month"]
            * prices["apprenticeship_senior_productivity_loss"]
            * prices["senior_rate_usd_per_hour"]
        )
        total = g["fees_usd"].sum() + g["exam_fees_usd"].sum() + engineer + senior
        if row["suppressed"]:
            assert pd.isna(row["total_cost_usd"]) and pd.isna(row["participants"])
            continue
        assert row["participants"] == g["person_key"].nunique()
        assert row["engineer_time_usd"] == pytest.approx(engineer)
        assert row["senior_time_usd"] == pytest.approx(senior)
        assert row["total_cost_usd"] == pytest.approx(total)
        assert row["cost_per_certification_usd"] == pytest.approx(total / g["certified"].sum())
        assert (
            f"employee_rate_usd_per_hour={prices['employee_rate_usd_per_hour']:g}"
            in (row["priced_with"])
        )
        assert ("senior_rate_usd_per_hour" in row["priced_with"]) == bool(senior)


def test_costs_name_the_missing_price():
    with pytest.raises(ValueError, match="hours_per_month"):
        careers.programme_costs(simulate_episodes(2, n=50), {"employee_rate_usd_per_hour": 70})


@pytest.fixture(scope="module")
def career_run():
    em = simulate_careers(1)
    return em, careers.career_statistics(em)


def test_promotion_hazard_ratio_holds_the_planted_ratio_and_the_naive_misses_it(career_run):
    row = career_run[1]["promotion_effect"].iloc[0]
    assert row["metric"] == "promotion_hazard_ratio"
    assert row["estimable"] and row["ci_low"] <= 1.8 <= row["ci_high"], row.to_dict()
    assert not row["naive_ci_low"] <= 1.8 <= row["naive_ci_high"]
    assert row["finding"]


def test_time_in_level_counts_spells_with_a_seen_start_and_reads_the_bands_from_the_seed(
    career_run,
):
    em, out = career_run
    levels = out["time_in_level"].set_index("skill_level")
    seed = pd.read_csv(career_stats.SKILL_LEVELS_SEED).set_index("skill_level")
    assert (levels["band_min_months"] == seed["experience_min_months"]).all()
    # engineers hired before the data are in a level spell whose start is not seen: they are
    # counted at a level only once they reach it (a promotion) or when hired into the data
    m = prepare_engineer_months(em)
    hired_in = m.groupby("person_key")["tenure_months"].first() < 1
    level1 = set(m.loc[m["skill_level"] == 1, "person_key"]) & set(hired_in.index[hired_in])
    assert levels.loc[1, "engineers"] == len(level1)
    # level 1's monthly promotion hazard is 0.08 (x 1.8 while certified): median at most
    # log 2 / 0.08 = 8.7 months, at least log 2 / (0.08 x 1.8) = 4.8
    assert 4.8 - 1 <= levels.loc[1, "median_months"] <= 8.7 + 1
    assert levels.loc[5, "promotions"] == 0 and pd.isna(levels.loc[5, "median_months"])


def test_within_engineer_ratios_by_programme_hold_the_planted_effects():
    from tests.test_effects import simulate

    em, inc = simulate(11)
    ep = episodes_for_panel(em, 1)
    comp = careers.programme_statistics(ep, em, inc)["programme_comparison"]
    rows = comp.set_index(["programme_type", "metric"])
    irr = rows.loc[("bootcamp", "incident_rate_ratio")]
    mttr = rows.loc[("bootcamp", "mttr_ratio")]
    assert irr["estimable"] and irr["ci_low"] <= 0.70 <= irr["ci_high"], irr.to_dict()
    assert mttr["estimable"] and mttr["ci_low"] <= 0.80 <= mttr["ci_high"], mttr.to_dict()
    assert "online courses" in irr["caveats"]
    assert "first certification came through bootcamp" in irr["comparison"]


def test_a_curve_that_does_not_reach_one_half_has_no_median():
    got = prog_stats.km_summary(np.arange(1.0, 9.0), np.array([1, 0, 0, 0, 0, 0, 0, 0], bool))
    assert math.isnan(got["median_months"]) and math.isnan(got["median_ci_high"])
    assert got["certified_within_6m_share"] == pytest.approx(1 / 8)


def test_dagster_asset_writes_the_six_marts_with_descriptions(tmp_path):
    import dagster as dg
    import duckdb

    from pipelines.defs import careers as career_defs
    from tests.conftest import talent_resources
    from tests.test_effects import create_complete_panels, simulate

    em, inc = simulate(4, n=150, months=24)
    ep = episodes_for_panel(em, 2)  # noqa: F841 (read by name in SQL)
    build = tmp_path / "build" / "talent.duckdb"
    build.parent.mkdir(parents=True)
    with duckdb.connect(str(build)) as con:
        con.execute("create schema intermediate")
        con.execute("create table intermediate.int_engineer_months as select * from em")
        con.execute("create table intermediate.int_incident_responses as select * from inc")
        con.execute("create table intermediate.int_programme_episodes as select * from ep")
        con.execute("create table intermediate.int_programme_episodes_complete as select * from ep")
        create_complete_panels(con)
    result = dg.materialize(
        [career_defs.programme_career_statistics, career_defs.programme_costs],
        resources=talent_resources(warehouse_dir=tmp_path),
    )
    assert result.success
    with duckdb.connect(str(build), read_only=True) as con:
        tables = {
            name: con.execute(f"select * from marts.{name}").df()
            for name in [*career_defs.MART_KEYS, "programme_costs"]
        }
        uncommented = con.execute(
            "select table_name, column_name from duckdb_columns() where schema_name = 'marts' "
            "and (comment is null or comment = '')"
        ).fetchall()
        described = con.execute(
            "select count(*) from duckdb_tables() where schema_name = 'marts' and comment <> ''"
        ).fetchone()[0]
    assert uncommented == [] and described == 6
    assert list(tables["promotion_effect"]["metric"]) == ["promotion_hazard_ratio"]
    assert set(tables["programme_next_level"]["programme_type"]) <= set(ep["programme_type"])
    assert set(tables["programme_comparison"]["metric"]) == set(careers.COMPARISON_METRICS)
    mats = result.asset_materializations_for_node("programme_career_statistics")
    meta = {m.asset_key.to_user_string(): m.metadata for m in mats}
    assert "vs_online/bootcamp" in meta["marts/programme_comparison"]


def test_no_episodes_or_only_online_gives_empty_frames_not_a_crash():
    prices = base_params(load_assumptions(DEFAULT_ASSUMPTIONS_PATH))
    ep = simulate_episodes(1, n=200)
    for episodes in (ep.iloc[0:0], ep[ep["programme_type"] == "online"]):
        out = careers.programme_statistics(episodes, empty_months(), empty_incidents())
        assert out["programme_comparison"].empty
        assert list(out["programme_comparison"].columns) == list(careers.COMPARISON_COLUMNS)
        ttc = out["time_to_certify"]
        assert set(ttc["programme_type"]) == set(episodes["programme_type"])
        assert len(careers.programme_costs(episodes, prices)) == (
            0 if episodes.empty else episodes["certification_code"].nunique() + 1
        )


def rare_tracks(ep: pd.DataFrame, seed: int) -> pd.DataFrame:
    """``ep`` plus a few episodes of three rare tracks (as in a company whose engineers prepare
    now and then for AWS, Six Sigma or VMware certifications): every one certified after one
    passed attempt and nobody left, so each track's outcome does not vary. A model with one
    indicator per track cannot fit them (perfect separation)."""
    rng = np.random.default_rng(seed)
    extra = []
    for code, k in (("AWS-SAP", 1), ("SIX-SIGMA", 1), ("VCP-DCV", 5)):
        rows = ep.sample(k, random_state=int(rng.integers(1 << 31))).copy()
        rows["person_key"] = [f"{code}_{i}" for i in range(k)]
        rows["certification_code"] = code
        rows["programme_type"] = "online"
        rows["attempts"] = 1
        rows["first_attempt_on"] = rows["first_enrolled_on"]
        rows["first_attempt_passed"] = pd.array([True] * k, dtype="boolean")
        rows["certified"] = True
        rows["months_followed"] = 2.0
        rows["certified_on"] = rows["first_enrolled_on"] + pd.Timedelta(days=61)
        rows["followed_until"] = rows["certified_on"]
        rows["exit_on"] = pd.NaT
        rows["exit_type"] = pd.array([None] * k, dtype="string")
        extra.append(rows)
    return pd.concat([ep, *extra], ignore_index=True)


def test_rare_tracks_whose_outcome_does_not_vary_are_pooled_not_fatal():
    ep = rare_tracks(simulate_episodes(1), 3)
    out = comparison(ep)
    # the figures still hold the planted ratios of simulate_episodes
    for metric, truths in (
        ("time_to_certify_ratio", PLANTED_TIME),
        ("first_pass_odds_ratio", PLANTED_ODDS),
        ("voluntary_exit_hazard_ratio", PLANTED_EXIT),
    ):
        for programme in ("bootcamp", "vendor_partnership"):
            e = out[metric][programme]
            assert e.estimable and e.ci_low <= truths[programme] <= e.ci_high, (metric, e.row())
    # the caveats name the pooled tracks (in the Weibull model too: each has too few episodes
    # for an indicator of its own)
    for metric in out:
        assert "AWS-SAP, SIX-SIGMA, VCP-DCV" in out[metric]["bootcamp"].row()["caveats"]
    assert "'other tracks'" in out["first_pass_odds_ratio"]["bootcamp"].method


def test_pool_tracks_keeps_tracks_with_enough_cases_and_a_varying_outcome():
    codes = pd.Series(["A"] * 30 + ["B"] * 25 + ["C"] * 19 + ["D"] * 3 + ["E"] * 22)
    event = pd.Series(
        [True, False] * 15  # A: varies
        + [True] * 25  # B: every case an event
        + [True, False] * 9
        + [True]  # C: too few
        + [False] * 3  # D: too few
        + [False] * 22  # E: no event
    )
    got = prog_stats.pool_tracks(codes, event)
    assert list(got.unique()) == ["A", "B", prog_stats.OTHER_TRACKS]
    assert (got[codes.isin(["C", "D", "E"])] == prog_stats.OTHER_TRACKS).all()
    # with failures required too, B (no failure) is pooled as well
    pooled = prog_stats.pool_tracks(codes, event, ~event)
    assert set(pooled) == {"A", prog_stats.OTHER_TRACKS}
    # a pooled group that is itself too small or uniform joins the most common track
    keep = codes.isin(["A", "B", "D"])
    small = prog_stats.pool_tracks(codes[keep], event[keep])
    assert set(small) == {"A", "B"} and (small[codes == "D"] == "A").all()


def test_a_programme_of_one_episode_gives_no_naive_figure_instead_of_an_overflow():
    # a small company (found at 800 employees): one internal episode, not certified after two
    # months, beside online episodes. Fitted with an indicator of its own, the naive Weibull
    # coefficient of internal ran off (about 12, standard error in the thousands) and exp of
    # its interval overflowed a float (OverflowError); such a programme is now left out of
    # the fit, and an interval that overflows is no figure (NaN)
    times = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0, 2.2, 4.4, 7.0, 9.0, 3.1]
    ep = simulate_episodes(4, n=len(times) + 1)
    ep["programme_type"] = ["online"] * len(times) + ["internal"]
    ep["certification_code"] = "NCA-AIIO"
    ep["months_followed"] = [*times, 2.27]
    ep["certified"] = [True] * 12 + [False] * 3 + [False]
    out = careers.programme_statistics(ep, empty_months(), empty_incidents())
    rows = out["programme_comparison"].set_index("metric")
    ttc = rows.loc["time_to_certify_ratio"]
    assert not ttc["estimable"] and "too few" in ttc["not_estimable_reason"]
    assert pd.isna(ttc["naive_estimate"]) and pd.isna(ttc["naive_ci_high"])
    assert prog_stats._wald(11.96, 6220.9) == pytest.approx((math.nan,) * 3, nan_ok=True)


def test_a_promotion_takes_the_status_at_the_end_of_the_month_before_it_takes_effect():
    # one engineer, months Jan-Jun 2022 at level 2: certified during February (the February
    # row, measured on its last day, shows it), promoted effective 1 March (level 3 from the
    # March row), the certification lapsed by the end of May
    months = pd.date_range("2022-01-01", periods=6, freq="MS")
    em = pd.DataFrame(
        {
            "person_key": "p_1",
            "month": months,
            "skill_level": [2, 2, 3, 3, 3, 3],
            "tenure_months": [12.5, 13.5, 14.5, 15.5, 16.5, 17.5],
            "is_certified": [False, True, True, True, False, False],
            "first_certified_month": pd.Timestamp("2022-02-01"),
            "incidents": 0,
            "exposure_months": 1.0,
            "separated": False,
            "separation_type": None,
        }
    )
    cp = career_stats.promotion_process(prepare_engineer_months(em))
    # rows: January (not yet certified), February (certified, ends in the promotion), March
    # to April at level 3 certified, May (lapsed; June has no next month: not at risk)
    assert list(cp["event"]) == [False, True, False, False]
    assert list(cp["certified"]) == [0.0, 1.0, 1.0, 0.0]
    assert list(cp["lapsed"]) == [0.0, 0.0, 0.0, 1.0]
    assert list(cp["stop"] - cp["start"]) == [1.0, 1.0, 2.0, 1.0]


def test_pool_levels_merges_a_small_or_uniform_level_with_the_next_one():
    levels = pd.Series([1.0] * 1 + [2.0] * 40 + [3.0] * 30 + [4.0] * 25 + [5.0] * 6 + [0.0] * 2)
    passed = pd.Series(
        [True]  # level 1: one attempt, passed (separates a logit on its own)
        + [True, False] * 20
        + [True, False] * 15
        + [True] * 24
        + [False]
        + [True] * 6  # level 5: too few
        + [True, False]  # unknown: too few
    )
    got = prog_stats.pool_levels(levels, passed, ~passed)
    assert got[levels == 1].eq("1-2").all() and got[levels == 2].eq("1-2").all()
    assert got[levels == 3].eq("3").all()
    assert got[levels.isin([4, 5])].eq("4-5").all()  # the top level joins the one below
    assert got[levels == 0].eq("1-2").all()  # unknown joins the largest group (41 cases)
    assert set(got) == {"1-2", "3", "4-5"}


def test_time_in_level_quartiles_and_share_within_the_band_match_a_hand_calculation():
    # months in a level (1: promoted, 0: censored); the band is 3 to 6 months
    times = [1.0, 2.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0, 9.5]
    events = [1, 1, 0, 1, 0, 1, 1, 0, 0, 0]
    steps = kaplan_meier_by_hand(times, events)

    def survival(t):
        return min([s for u, s in steps if u <= t], default=1.0)

    got = career_stats.level_quantiles(np.array(times), np.array(events, dtype=bool), (3.0, 6.0))
    assert got["q1_months"] == pytest.approx(next(t for t, s in steps if s <= 0.75 + 1e-12))
    assert math.isnan(got["median_months"]) == (min(s for _, s in steps) > 0.5)
    assert got["promoted_within_band"] == pytest.approx(survival(3.0) - survival(6.0))
    # an open-ended band, or one longer than anyone was followed, gives no share
    assert math.isnan(
        career_stats.level_quantiles(np.array(times), np.array(events), (48.0, math.nan))[
            "promoted_within_band"
        ]
    )
    assert math.isnan(
        career_stats.level_quantiles(np.array(times), np.array(events), (3.0, 12.0))[
            "promoted_within_band"
        ]
    )


def test_each_programmes_time_to_the_next_level_is_the_planted_months():
    """Engineers who start a programme at level 2 and move to level 3 a planted number of
    months later (or never, censored at their last month): the Kaplan-Meier figures of the
    mart against the same curve by hand (no step lands on exactly one half)."""
    from pipelines.lib.careers.next_level import next_level_spells, time_to_next_level

    planted = {  # person -> (programme, months to level 3 or None, months seen after the start)
        f"p{i}": ("bootcamp", up, seen)
        for i, (up, seen) in enumerate([(3, 20), (5, 20), (7, 20), (8, 20), (None, 6), (None, 30)])
    } | {f"q{i}": ("online", up, 24) for i, up in enumerate([6, 9, 11, 15, 18, None, None])}
    months, episodes = [], []
    for person, (programme, up, seen) in planted.items():
        for t in range(seen + 1):
            level = 3 if up is not None and t >= up else 2
            months.append(dict(person_key=person, t=100 + t, skill_level=level,
                               month_start=pd.Timestamp(2024, 1, 1) + pd.DateOffset(months=t)))  # fmt: skip
        episodes.append(dict(person_key=person, programme_type=programme,
                             first_enrolled_on=pd.Timestamp(2024, 1, 17)))  # fmt: skip
    m, ep = pd.DataFrame(months), pd.DataFrame(episodes)
    spells = next_level_spells(ep, m).set_index("person_key")
    assert spells.loc["p0", "months"] == 3 and spells.loc["p0", "promoted"]
    assert spells.loc["p4", "months"] == 6 and not spells.loc["p4", "promoted"]
    out = time_to_next_level(ep, m, 5).set_index("programme_type")
    for programme in ("bootcamp", "online"):
        mine = [(up, seen) for p, up, seen in planted.values() if p == programme]
        times = [up if up is not None else seen for up, seen in mine]
        events = [up is not None for up, _ in mine]
        steps = kaplan_meier_by_hand(times, events)
        row = out.loc[programme]
        assert row["median_months"] == next(t for t, s in steps if s <= 0.5 + 1e-12)
        assert row["q1_months"] == next(t for t, s in steps if s <= 0.75 + 1e-12)
        assert row["promoted_within_12m_share"] == pytest.approx(
            1 - min([s for t, s in steps if t <= 12], default=1.0)
        )
        assert row["promotions"] == sum(events) and row["engineers"] == len(mine)
