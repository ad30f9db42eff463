"""Certification-effect estimators against panels simulated with planted effects.

The simulation follows the data-generating process in docs/architecture.md ("Synthetic
company"): incidents grow with the fleet and fall with level, experienced engineers certify
earlier, resolve times fall with calendar time, and exits are a monthly hazard. The adjusted
estimates must recover the planted ratios; the naive ones must miss them in the direction the
confounding predicts.
"""

from __future__ import annotations

import gc
import re
import weakref

import duckdb
import numpy as np
import pandas as pd
import polars as pl
import pytest

from pipelines.lib import effects as stats
from pipelines.lib.effects.power import POWER_COLUMNS
from tests.conftest import talent_resources

SEVERITY_SHIFT = {"sev1": 0.5, "sev2": 0.2, "sev3": 0.0, "sev4": -0.2}


def simulate(
    seed: int,
    n: int = 700,
    months: int = 48,
    irr: float = 0.70,
    mttr: float = 0.80,
    hr: float = 0.60,
    cert_base: float = 0.012,
    select: float = 0.0,
    shock: float = 0.0,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Engineer-month panel and incident responses shaped like the intermediate models.

    ``select``: certifying hazard x frailty^-select (those with fewer incidents anyway certify
    more; frailty is not in the data). ``shock``: monthly probability of a 4-month bad spell
    (twice the incident rate; six times the certifying hazard in its last two months)."""
    rng = np.random.default_rng(seed)
    start_tenure = np.where(rng.random(n) < 0.6, rng.integers(0, 72, n), 0)
    entry = np.where(start_tenure > 0, 0, rng.integers(0, months - 6, n))
    level = np.clip(1 + np.floor(start_tenure / 12 * 0.8 + rng.normal(0, 0.7, n)), 1, 5)
    frailty = rng.gamma(shape=5.0, scale=0.2, size=n)  # mean 1, variance 0.2
    team = rng.integers(0, 8, n)
    team_growth = np.linspace(0.02, 0.04, 8)
    team_fleet0 = np.array([64, 96, 256, 512, 800, 1024, 2048, 4096])

    certified = np.zeros(n, bool)
    cert_until = np.full(n, -1)
    first_cert = np.full(n, -1)
    active = np.zeros(n, bool)
    gone = np.zeros(n, bool)
    frames, incidents = [], []
    shock_until = np.full(n, -1)
    for t in range(months):
        if shock:
            start = active & ~certified & (shock_until < t) & (rng.random(n) < shock)
            shock_until = np.where(start, t + 3, shock_until)
        in_shock = shock_until >= t
        late_in_shock = in_shock & (shock_until - t <= 1)  # the spell's last two months
        active |= (entry == t) & ~gone
        tenure = start_tenure + (t - entry)
        level = np.where(active & (rng.random(n) < 0.015), np.minimum(level + 1, 5), level)
        # certifications: expire after 24 months, renewed with probability 0.6
        expired = certified & (cert_until < t)
        renew = expired & (rng.random(n) < 0.6)
        cert_until = np.where(renew, t + 23, cert_until)
        certified &= ~(expired & ~renew)
        p_cert = cert_base * np.exp(0.35 * (level - 1) + 0.25 * tenure / 12)
        p_cert = np.minimum(p_cert * frailty**-select * np.where(late_in_shock, 6.0, 1.0), 0.5)
        new = active & ~certified & (rng.random(n) < p_cert)
        certified |= new
        cert_until = np.where(new, t + 23, cert_until)
        first_cert = np.where(new & (first_cert < 0), t, first_cert)
        # incidents as primary responder
        fleet = team_fleet0[team] * np.exp(team_growth[team] * t)
        lam = 1.0 * np.exp(team_growth[team] * t) * np.exp(-0.15 * (level - 2)) * frailty
        lam = lam * np.where(certified, irr, 1.0) * np.where(in_shock, 2.0, 1.0)
        count = np.where(active, rng.poisson(lam), 0)
        # exits
        u = rng.random(n)
        vol = active & (u < 0.012 * np.where(certified, hr, 1.0))
        invol = active & ~vol & (rng.random(n) < 0.004)
        idx = np.flatnonzero(active)
        frames.append(
            pd.DataFrame(
                {
                    "pid": idx,
                    "t": t,
                    "team": team[idx],
                    "skill_level": level[idx].astype(int),
                    "tenure_months": tenure[idx],
                    "is_certified": certified[idx],
                    "incidents": count[idx],
                    "separated": (vol | invol)[idx],
                    "separation_type": np.where(
                        vol[idx], "voluntary", np.where(invol[idx], "involuntary", None)
                    ),
                    "fleet_gpus": np.round(fleet[idx]).astype(int),
                }
            )
        )
        who = np.repeat(idx, count[idx])
        if len(who):
            sev = rng.choice(list(SEVERITY_SHIFT), size=len(who))
            shift = np.array([SEVERITY_SHIFT[s] for s in sev])
            log_m = (
                np.log(120)
                + shift
                - 0.05 * level[who]
                - 0.15 * t / 12
                + np.log(mttr) * certified[who]
                + rng.normal(0, 0.7, len(who))
            )
            incidents.append(
                pd.DataFrame(
                    {
                        "pid": who,
                        "t": t,
                        "is_certified": certified[who],
                        "severity": sev,
                        "resolve_minutes": np.exp(log_m),
                    }
                )
            )
        gone |= vol | invol
        active &= ~(vol | invol)

    em = pd.concat(frames, ignore_index=True)
    month0 = pd.Timestamp("2021-01-01")

    def to_month(t):
        return pd.to_datetime([month0 + pd.DateOffset(months=int(k)) for k in range(months)])[t]

    em["person_key"] = "p_" + em["pid"].astype(str).str.zfill(16)
    em["month"] = to_month(em["t"].to_numpy())
    fc = first_cert[em["pid"].to_numpy()]
    em["first_certified_month"] = pd.Series(to_month(np.maximum(fc, 0))).where(fc >= 0)
    em["months_since_first_cert"] = np.where(fc >= 0, em["t"] - fc, np.nan)
    em["exposure_months"] = 1.0
    em["role_family"] = "operations_engineer"
    em["site"] = "site-a"
    em["team"] = "cluster-" + em["team"].astype(str)
    inc = pd.concat(incidents, ignore_index=True)
    inc["incident_number"] = "INC" + pd.Series(np.arange(len(inc))).astype(str)
    inc["person_key"] = "p_" + inc["pid"].astype(str).str.zfill(16)
    inc["month"] = to_month(inc["t"].to_numpy())
    inc["opened_at"] = inc["month"] + pd.Timedelta(hours=5)
    keep_em = [
        "person_key",
        "month",
        "team",
        "role_family",
        "skill_level",
        "site",
        "tenure_months",
        "is_certified",
        "first_certified_month",
        "months_since_first_cert",
        "incidents",
        "exposure_months",
        "separated",
        "separation_type",
        "fleet_gpus",
    ]
    keep_inc = [
        "incident_number",
        "person_key",
        "is_certified",
        "severity",
        "opened_at",
        "resolve_minutes",
        "month",
    ]
    return em[keep_em], inc[keep_inc]


PLANTED = {"incident_rate_ratio": 0.70, "mttr_ratio": 0.80, "attrition_hazard_ratio": 0.60}


@pytest.fixture(scope="module", params=[11, 23])
def planted_run(request):
    em, inc = simulate(request.param)
    effects, study = stats.analyse(em, inc)
    return effects.set_index("metric"), study


@pytest.mark.parametrize("metric", list(PLANTED))
def test_adjusted_ci_covers_planted_effect_and_naive_misses_it(planted_run, metric):
    row = planted_run[0].loc[metric]
    truth = PLANTED[metric]
    assert row.ci_low <= truth <= row.ci_high, row.to_dict()
    assert not (row.ci_low <= row.naive_estimate <= row.ci_high), row.to_dict()
    assert abs(np.log(row.naive_estimate / truth)) > abs(np.log(row.estimate / truth))


def test_naive_figures_are_biased_the_way_the_confounding_predicts(planted_run):
    effects = planted_run[0]
    # fleet growth inflates "after" incident rates; tooling improvements shrink "after" MTTR;
    # immortal time flatters the ever-certified.
    assert effects.loc["incident_rate_ratio", "naive_estimate"] > PLANTED["incident_rate_ratio"]
    assert effects.loc["mttr_ratio", "naive_estimate"] < PLANTED["mttr_ratio"]
    assert (
        effects.loc["attrition_hazard_ratio", "naive_estimate"] < PLANTED["attrition_hazard_ratio"]
    )


def test_effect_rows_have_the_mart_columns_and_plain_words(planted_run):
    effects = planted_run[0].reset_index()
    assert list(effects.columns) == [*stats.EFFECT_COLUMNS, *POWER_COLUMNS]
    # a detectable reduction exists for each, and the data need for the business case's size
    assert effects["mde_ratio"].between(0, 1, inclusive="neither").all()
    assert (effects["claimed_ratio"] == 0.80).all()
    assert (effects["more_engineer_months_needed"] >= 0).all()
    assert list(effects["metric"]) == list(stats.METRICS)
    assert (effects["n_engineers"] > 100).all() and (effects["n_events"] > 0).all()
    assert (effects["n_cohorts"] > 3).all()
    assert effects["estimable"].all() and not effects["pretrend_rejected"].any()
    excludes_one = (effects["ci_high"] < 1) | (effects["ci_low"] > 1)
    assert (effects["finding"] == excludes_one).all()
    assert effects.loc[:1, "finding"].all()  # incidents and MTTR: thousands of events
    assert effects["not_estimable_reason"].isna().all() and effects["data_needed"].isna().all()
    assert effects["method"].str.len().min() > 100
    assert effects["naive_method"].str.len().min() > 50
    assert (effects["naive_ci_low"] < effects["naive_estimate"]).all()
    assert (effects["naive_estimate"] < effects["naive_ci_high"]).all()
    # the one-indicator figure beside the incident ratio, covering the planted constant effect
    inc = effects.loc[0]
    assert inc.robustness_ci_low <= PLANTED["incident_rate_ratio"] <= inc.robustness_ci_high
    assert "one indicator" in inc.robustness_method and "one indicator" in inc.caveats
    assert effects.loc[1:, "robustness_estimate"].isna().all()
    assert effects.loc[1:, "robustness_method"].isna().all()
    assert effects.loc[:1, "caveats"].str.contains("Comparing each engineer with themselves").all()
    assert "compared with each other" in effects.loc[2, "caveats"]
    assert "Pre-trend check" in effects.loc[0, "caveats"]
    # a test that applies has a p-value; the hazard ratio has none
    assert effects["pretrend_p"].notna().tolist() == [True, True, False]
    assert str(effects.loc[0, "window_start"]) == "2021-01-01"
    assert str(effects.loc[0, "window_end"]) == "2024-12-01"


def test_event_study_is_flat_before_and_near_the_planted_ratio_after(planted_run):
    study = planted_run[1]
    assert list(study.columns) == list(stats.EVENT_STUDY_COLUMNS)
    assert list(study["relative_month"]) == list(range(-12, 13))
    ref = study.set_index("relative_month").loc[-1]
    assert ref.estimate == 1.0 and np.isnan(ref.ci_low)
    pre = study[study["relative_month"].between(-11, -2)]
    post = study[study["relative_month"].between(1, 11)]
    # the bulk of the window: about 95 % of intervals cover the true value in each period
    assert (pre["ci_low"].le(1.0) & pre["ci_high"].ge(1.0)).mean() >= 0.8
    assert (post["ci_low"].le(0.7) & post["ci_high"].ge(0.7)).mean() >= 0.8
    assert np.exp(np.log(post["estimate"]).mean()) == pytest.approx(0.7, abs=0.08)
    assert (study["engineers"] > 0).all()


def test_null_effect_gives_intervals_covering_one():
    em, inc = simulate(5, irr=1.0, mttr=1.0, hr=1.0)
    effects = stats.estimate_effects(em, inc).set_index("metric")
    for metric in stats.METRICS:
        row = effects.loc[metric]
        assert row.ci_low <= 1.0 <= row.ci_high, (metric, row.to_dict())


def test_no_certified_engineers_gives_null_rows_with_a_reason_not_a_crash():
    em, inc = simulate(3, n=150, months=24, cert_base=0.0)
    assert not em["is_certified"].any()
    effects, study = stats.analyse(em, inc)
    assert list(effects["metric"]) == list(stats.METRICS)
    assert effects["estimate"].isna().all() and effects["ci_low"].isna().all()
    assert not effects["estimable"].any() and not effects["finding"].any()
    assert effects["not_estimable_reason"].notna().all()
    assert effects["data_needed"].str.contains("about|certif").all(), effects["data_needed"]
    assert study["estimate"].isna().all()


def test_polars_input_gives_the_same_result_as_pandas():
    em, inc = simulate(7, n=200, months=30)
    a = stats.estimate_effects(em, inc)
    b = stats.estimate_effects(pl.from_pandas(em), pl.from_pandas(inc))
    np.testing.assert_allclose(a["estimate"], b["estimate"], rtol=1e-9)


def test_small_event_study_cells_are_suppressed():
    em, inc = simulate(9, n=200, months=30)
    study = stats.event_study(em, inc, min_group_size=10_000)
    assert study["estimate"].drop(index=study.index[study.relative_month == -1]).isna().all()
    # the published counts of those months are suppressed too; with a threshold of 1 they show
    assert study["engineers"].isna().all() and study["engineer_months"].isna().all()
    shown = stats.event_study(em, inc, min_group_size=1)
    assert (shown["engineers"] > 0).all()


def test_missing_column_names_table_and_column():
    em, inc = simulate(1, n=50, months=12)
    with pytest.raises(stats.StatsInputError, match="int_engineer_months.*exposure_months"):
        stats.estimate_effects(em.drop(columns="exposure_months"), inc)
    with pytest.raises(stats.StatsInputError, match="int_incident_responses.*severity"):
        stats.estimate_effects(em, inc.drop(columns="severity"))


def test_bad_values_name_the_row():
    em, inc = simulate(1, n=50, months=12)
    em.loc[4, "exposure_months"] = -1.0
    with pytest.raises(stats.StatsInputError, match=r"row 5 .*negative exposure"):
        stats.estimate_effects(em, inc)
    em2, _ = simulate(1, n=50, months=12)
    em2 = pd.concat([em2, em2.iloc[[0]]], ignore_index=True)
    with pytest.raises(stats.StatsInputError, match="repeats a \\(person_key, month\\)"):
        stats.estimate_effects(em2, inc)


def test_counting_process_compresses_runs_and_keeps_the_event_at_the_end():
    months = pd.date_range("2024-01-01", periods=5, freq="MS")
    em = pd.DataFrame(
        {
            "person_key": ["a"] * 5 + ["b"] * 2,
            "month": list(months) + list(months[:2]),
            "skill_level": [2, 2, 2, 3, 3, 1, 1],
            "tenure_months": [10, 11, 12, 13, 14, 0, 1],
            "is_certified": [False, True, True, True, True, False, False],
            "first_certified_month": [months[1]] * 5 + [pd.NaT] * 2,
            "incidents": 0,
            "exposure_months": 1.0,
            "separated": [False] * 4 + [True] + [False, True],
            "separation_type": [None] * 4 + ["voluntary", None, "involuntary"],
        }
    )
    cp = stats.counting_process(stats.prepare_engineer_months(em))
    got = cp[["start", "stop", "event", "certified", "skill_level"]].values.tolist()
    # status at the start of the month: the award in the 2nd month counts from the 3rd month
    assert got == [
        [10.0, 12.0, False, 0.0, 2.0],
        [12.0, 13.0, False, 1.0, 2.0],
        [13.0, 15.0, True, 1.0, 3.0],
        [0.0, 2.0, False, 0.0, 1.0],
    ]


def test_counting_process_intervals_never_overlap_when_the_exit_month_repeats_the_tenure():
    # hired on the 20th, left on the 10th: tenure measured on the last day worked is 6 in both
    # the last full month and the exit month; the exit month still covers tenure 7 to 8
    months = pd.date_range("2024-01-01", periods=3, freq="MS")
    em = pd.DataFrame(
        {
            "person_key": ["a"] * 3,
            "month": months,
            "skill_level": [2, 2, 2],
            "tenure_months": [5, 6, 6],
            "is_certified": False,
            "first_certified_month": pd.NaT,
            "incidents": 0,
            "exposure_months": [1.0, 1.0, 0.3],
            "separated": [False, False, True],
            "separation_type": [None, None, "voluntary"],
        }
    )
    cp = stats.counting_process(stats.prepare_engineer_months(em))
    got = cp[["start", "stop", "event"]].values.tolist()
    assert got == [[5.0, 8.0, True]]


def test_dagster_asset_writes_both_marts(tmp_path, monkeypatch):
    import dagster as dg

    from pipelines.defs import effects as stats_defs

    em, inc = simulate(4, n=150, months=24)
    build = tmp_path / "build" / "talent.duckdb"
    build.parent.mkdir(parents=True)
    with duckdb.connect(str(build)) as con:
        con.execute("create schema intermediate")
        con.execute("create table intermediate.int_engineer_months as select * from em")
        con.execute("create table intermediate.int_incident_responses as select * from inc")
        create_complete_panels(con)
    result = dg.materialize(
        [stats_defs.certification_statistics],
        resources=talent_resources(warehouse_dir=tmp_path),
    )
    assert result.success
    with duckdb.connect(str(build), read_only=True) as con:
        effects = con.execute("select * from marts.certification_effect").df()
        study = con.execute("select * from marts.certification_event_study").df()
        uncommented = con.execute(
            "select table_name, column_name from duckdb_columns() where schema_name = 'marts' "
            "and (comment is null or comment = '')"
        ).fetchall()
        tables = con.execute(
            "select count(*) from duckdb_tables() where schema_name = 'marts' and comment <> ''"
        ).fetchone()[0]
    # what analysts read in the published file: every table and column describes itself
    assert uncommented == [] and tables == 2
    assert list(effects["metric"]) == list(stats.METRICS)
    assert len(study) == 25
    mats = result.asset_materializations_for_node("certification_statistics")
    meta = {m.asset_key.to_user_string(): m.metadata for m in mats}
    assert "incident_rate_ratio" in meta["marts/certification_effect"]


def create_complete_panels(con) -> None:
    """The dbt models that cut the complete months (`int_*_complete.sql`), created as views over
    the tables in `con`: their SQL with `ref()` resolved to schema `intermediate`."""
    import re

    from pipelines.lib.project_files import DBT_PROJECT_DIR

    # the test panels are built from frames without the optional start of preparing; the model
    # reads it, so it is added empty (unknown: the 3 months before certifying are preparation)
    columns = {r[0] for r in con.execute("describe intermediate.int_engineer_months").fetchall()}
    if "first_preparation_month" not in columns:
        con.execute(
            "alter table intermediate.int_engineer_months add column first_preparation_month date"
        )
    for name in ("int_engineer_months_complete", "int_incident_responses_complete"):
        sql = (DBT_PROJECT_DIR / "models" / "intermediate" / f"{name}.sql").read_text()
        sql = re.sub(r"\{\{\s*ref\('(\w+)'\)\s*\}\}", r"intermediate.\1", sql)
        con.execute(f"create or replace view intermediate.{name} as {sql}")


def complete_panel_reads(con) -> dict[str, str]:
    """What the statistics asset reads of the two panels (`select_used`)."""
    from pipelines.defs.effects import select_used
    from pipelines.lib.effects.prepare import ENGINEER_MONTHS, INCIDENT_RESPONSES

    create_complete_panels(con)
    return {t: select_used(con, t) for t in (ENGINEER_MONTHS, INCIDENT_RESPONSES)}


def test_the_asset_reads_only_the_columns_the_statistics_use_of_complete_months():
    from pipelines.lib.effects.prepare import INCIDENT_COLUMNS
    from pipelines.lib.effects.window import complete_months

    em, inc = simulate(5, n=40, months=12)
    em = em.assign(team_name="platform", salary_band="b3")  # columns no estimator reads
    with duckdb.connect() as con:
        con.execute("create schema intermediate")
        con.execute("create table intermediate.int_engineer_months as select * from em")
        con.execute(
            "create table intermediate.int_incident_responses as "
            "select *, 'note' as free_text from inc"
        )
        queries = complete_panel_reads(con)
        months, incidents = (con.execute(sql).df() for sql in queries.values())
        through = pd.Timestamp(em["month"].max()) - pd.DateOffset(months=1)
        assert "team_name" not in months and "salary_band" not in months
        assert sorted(incidents.columns) == sorted(INCIDENT_COLUMNS)
        # the latest month (the month in progress) is left out
        assert pd.Timestamp(months["month"].max()) == pd.Timestamp(through)
        assert pd.Timestamp(through) < pd.Timestamp(em["month"].max())
        assert (pd.to_datetime(incidents["month"]) <= pd.Timestamp(through)).all()
        # the narrow read in SQL gives the estimates of the same cut made on the whole frames
        whole = [
            con.execute(f"select * from intermediate.{t}").df()
            for t in ("int_engineer_months", "int_incident_responses")
        ]
        cut_em, cut_inc, cut_through = complete_months(*whole)
        assert pd.Timestamp(cut_through) == through and len(cut_em) == len(months)
        pd.testing.assert_frame_equal(
            stats.estimate_effects(months, incidents), stats.estimate_effects(cut_em, cut_inc)
        )
        # a used column the table lacks still reaches the error that names it
        con.execute("drop view intermediate.int_engineer_months_complete")
        con.execute("alter table intermediate.int_engineer_months drop column exposure_months")
        con.execute(
            "create view intermediate.int_engineer_months_complete as "
            "select * from intermediate.int_engineer_months"
        )
        from pipelines.defs.effects import select_used

        queries = {t: select_used(con, t) for t in queries}
        short = con.execute(queries["intermediate.int_engineer_months_complete"]).df()
    with pytest.raises(stats.StatsInputError, match="int_engineer_months.*exposure_months"):
        stats.estimate_effects(short, inc)


def _cut_tables(con, em_rows, inc_rows):
    """The two intermediate tables with the given (person_key, month, first_certified_month,
    incidents) and (person_key, month, resolve_minutes) rows; the other columns constant."""
    con.execute("create schema if not exists intermediate")
    con.execute(
        "create or replace table intermediate.int_engineer_months (person_key varchar, "
        "month date, first_certified_month date, incidents int, skill_level int default 2, "
        "tenure_months int default 12, is_certified boolean default false, "
        "separated boolean default false, separation_type varchar, "
        "exposure_months double default 1.0, fleet_gpus int default 64)"
    )
    con.executemany(
        "insert into intermediate.int_engineer_months "
        "(person_key, month, first_certified_month, incidents) values (?, ?, ?, ?)",
        em_rows,
    )
    con.execute(
        "create or replace table intermediate.int_incident_responses (person_key varchar, "
        "month date, resolve_minutes double, is_certified boolean default false, "
        "severity varchar default 'sev3')"
    )
    con.executemany(
        "insert into intermediate.int_incident_responses (person_key, month, resolve_minutes) "
        "values (?, ?, ?)",
        inc_rows,
    )


def test_the_month_in_progress_and_later_certifications_are_left_out():
    """Rows of the latest month go; a certification first held in it is not yet known to the
    earlier months; an incident without a month stays (the estimators count it as left out)."""
    from datetime import date

    from pipelines.lib.effects.window import complete_months

    jul, aug, sep = date(2026, 7, 1), date(2026, 8, 1), date(2026, 9, 1)
    em_rows = [
        ("a", jul, None, 1),
        ("a", aug, None, 0),
        ("a", sep, sep, 2),  # a certifies in the month in progress
        ("b", jul, jul, 0),
        ("b", aug, jul, 1),
        ("b", sep, jul, 0),
    ]
    inc_rows = [("a", jul, 30.0), ("b", aug, 45.0), ("a", sep, 60.0), ("b", None, 10.0)]
    with duckdb.connect() as con:
        _cut_tables(con, em_rows, inc_rows)
        create_complete_panels(con)
        em = con.execute(
            "select person_key, month, first_certified_month, incidents "
            "from intermediate.int_engineer_months_complete order by 1, 2"
        ).fetchall()
        inc = con.execute(
            "select person_key, resolve_minutes, month "
            "from intermediate.int_incident_responses_complete order by 2"
        ).fetchall()
        whole = [
            con.execute(f"select * from intermediate.{t}").df()
            for t in ("int_engineer_months", "int_incident_responses")
        ]
    assert em == [("a", jul, None, 1), ("a", aug, None, 0), ("b", jul, jul, 0), ("b", aug, jul, 1)]
    assert inc == [("b", 10.0, None), ("a", 30.0, jul), ("b", 45.0, aug)]
    # the same cut on frames
    cut_em, cut_inc, cut_through = complete_months(*whole)
    assert cut_through == aug
    first = cut_em.sort_values(["person_key", "month"])["first_certified_month"]
    assert [None if pd.isna(v) else pd.Timestamp(v).date() for v in first] == [
        None,
        None,
        jul,
        jul,
    ]
    assert sorted(cut_inc["resolve_minutes"]) == [10.0, 30.0, 45.0]


def test_one_month_of_data_leaves_nothing_complete_and_the_metrics_not_estimable():
    from datetime import date

    sep = date(2026, 9, 1)
    with duckdb.connect() as con:
        _cut_tables(con, [("a", sep, sep, 1)], [("a", sep, 5.0)])
        queries = complete_panel_reads(con)
        counts = [
            con.execute(f"select count(*) from ({q})").fetchone()[0] for q in queries.values()
        ]
        # a real panel of which only the latest month was delivered
        em, inc = simulate(5, n=40, months=12)
        latest = em["month"].max()
        em, inc = em[em["month"] == latest], inc[inc["month"] == latest]  # noqa: F841 (SQL)
        con.execute("create or replace table intermediate.int_engineer_months as from em")
        con.execute("create or replace table intermediate.int_incident_responses as from inc")
        queries = complete_panel_reads(con)
        months, incidents = (con.execute(sql).df() for sql in queries.values())
    assert counts == [0, 0] and len(months) == 0 and len(incidents) == 0
    effects = stats.estimate_effects(months, incidents)
    assert not effects["estimable"].any()
    assert effects["not_estimable_reason"].notna().all()


def _panel(seed: int, people: int = 120, months: int = 20):
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(people), months)
    t = np.tile(np.arange(months), people)
    start = rng.integers(0, months, people)
    certified = (t >= start[pid]).astype(float)
    z = rng.normal(size=len(pid))
    frailty = rng.gamma(2, 0.5, people)[pid]
    return rng, pid, t, np.column_stack([certified, z]), frailty


def test_fixed_effects_poisson_matches_statsmodels_with_dummies():
    """Demeaned Poisson == GLM(Poisson) with one dummy per engineer and per month: same slopes,
    same clustered covariance (without small-sample factors, which differ by design)."""
    import statsmodels.api as sm

    rng, pid, t, x, frailty = _panel(0)
    exposure = rng.uniform(0.5, 1.0, len(pid))
    y = rng.poisson(exposure * np.exp(x @ [-0.35, 0.1] + 0.02 * t) * frailty)
    keep = stats.fit.informative_rows(y.astype(float), [pid, t])
    pid, t, x, y, exposure = pid[keep], t[keep], x[keep], y[keep], exposure[keep]
    ours = stats.fe_poisson(y, x, np.log(exposure), [pid, t], pid, ["certified", "z"])
    dummies = pd.get_dummies(pd.DataFrame({"p": pid, "t": t}).astype(str), drop_first=True)
    design = np.column_stack([x, np.ones(len(y)), dummies.to_numpy(float)])
    ref = sm.GLM(y, design, family=sm.families.Poisson(), offset=np.log(exposure)).fit(
        cov_type="cluster", cov_kwds={"groups": pid, "use_correction": False}
    )
    np.testing.assert_allclose(ours.params, ref.params[:2], rtol=1e-6)
    np.testing.assert_allclose(ours.cov / ours.factor, ref.cov_params()[:2, :2], rtol=1e-5)


def test_the_poisson_start_is_proportional_fitting_of_the_model_without_slopes():
    """`starting_means` scales engineers' and months' expected events to the observed ones in
    turn; iterated, it reaches the maximum likelihood of the model with engineer and month
    effects only (statsmodels with one dummy per engineer and per month), and two passes
    already match every engineer's and month's total to within a few per cent."""
    import statsmodels.api as sm

    rng, pid, t, x, frailty = _panel(3)
    exposure = rng.uniform(0.5, 1.0, len(pid))
    y = rng.poisson(exposure * np.exp(0.02 * t) * frailty).astype(float)
    keep = stats.fit.informative_rows(y, [pid, t])
    pid, t, y, exposure = pid[keep], t[keep], y[keep], exposure[keep]
    offset = np.log(exposure)
    dummies = pd.get_dummies(pd.DataFrame({"p": pid, "t": t}).astype(str), drop_first=True)
    design = np.column_stack([np.ones(len(y)), dummies.to_numpy(float)])
    ref = sm.GLM(y, design, family=sm.families.Poisson(), offset=offset).fit()
    converged = stats.fit.starting_means(y, offset, [pid, t], rounds=500)
    np.testing.assert_allclose(converged, ref.fittedvalues, rtol=1e-6)
    two = stats.fit.starting_means(y, offset, [pid, t])
    people, months = np.unique(pid), np.unique(t)  # those left after informative_rows
    by_person = (np.bincount(pid, weights=two) / np.bincount(pid, weights=y))[people]
    by_month = (np.bincount(t, weights=two) / np.bincount(t, weights=y))[months]
    np.testing.assert_allclose(by_month, 1.0, rtol=1e-12)  # the last pass scaled the months
    assert np.abs(by_person - 1).max() < 0.05


def test_engineers_numbered_across_frames_group_and_sort_as_their_keys():
    """`encode_people`: one number per key in every frame, in the keys' order, so merges,
    groupings and sorts give what the strings gave; `shared_strings` keeps every value."""
    from pipelines.lib.effects.prepare import encode_people, shared_strings

    rng = np.random.default_rng(7)
    keys = np.array([f"k{rng.integers(0, 10**6):x}" for _ in range(300)], dtype=object)
    a = pd.DataFrame({"person_key": rng.choice(keys, 2000), "x": rng.normal(size=2000)})
    b = pd.DataFrame({"person_key": rng.choice(keys[:150], 700), "y": rng.normal(size=700)})
    before = a.merge(b, on="person_key").sort_values(["person_key", "x", "y"], kind="stable")
    strings = a["person_key"].to_numpy().copy()
    encode_people(a, b)
    assert a["person_key"].dtype == np.int64
    after = a.merge(b, on="person_key").sort_values(["person_key", "x", "y"], kind="stable")
    np.testing.assert_array_equal(before[["x", "y"]].to_numpy(), after[["x", "y"]].to_numpy())
    # the same key has the same number in both frames, and numbers sort as the keys
    order = np.argsort(strings, kind="stable")
    assert (np.diff(a["person_key"].to_numpy()[order]) >= 0).all()
    assert len(set(zip(strings, a["person_key"], strict=True))) == len(set(strings))

    # one new string object per row, as the warehouse hands them over
    values = np.array(["-".join(["key", k]) for k in "bacba"], object)
    values[2] = None
    assert values[0] == values[3] and values[0] is not values[3]
    shared = shared_strings(values)
    assert list(shared) == list(values) and shared[0] is shared[3] and shared[1] is shared[4]


def test_prepared_panels_are_new_frames_with_shared_normalised_text():
    """`prepare` gives frames that neither refer to nor share memory with the frames as read,
    so a step that drops those before fitting frees them; the normalised separation types and severities are
    what pandas' own strip and lower give, one string object per distinct value."""
    em, inc = simulate(11)
    raw_m = em.to_pandas() if hasattr(em, "to_pandas") else em
    raw_i = inc.to_pandas() if hasattr(inc, "to_pandas") else inc
    as_read = raw_m.copy(deep=True), raw_i.copy(deep=True)
    panels = stats.prepare(raw_m, raw_i)
    # the frames as read are read, not copied, and so must come out as they went in
    pd.testing.assert_frame_equal(raw_m, as_read[0])
    pd.testing.assert_frame_equal(raw_i, as_read[1])
    # nothing prepared refers back to the frames as read: once dropped, they are freed
    m_read, i_read = raw_m.copy(), raw_i.copy()
    kept = stats.prepare(m_read, i_read)
    read = [weakref.ref(m_read), weakref.ref(i_read)]
    del m_read, i_read
    gc.collect()
    assert [r() for r in read] == [None, None]
    pd.testing.assert_frame_equal(kept.months, panels.months)
    for prepared, raw in ((panels.months, raw_m), (panels.incidents, raw_i)):
        for column in prepared.columns:
            values = prepared[column].array
            values = getattr(values, "_ndarray", np.asarray(values))
            for source in raw.columns:
                assert not np.shares_memory(values, np.asarray(raw[source].array)), (
                    column,
                    source,
                )
    for prepared, raw, column in (
        (panels.months, raw_m, "separation_type"),
        (panels.incidents, raw_i, "severity"),
    ):
        plain = raw[column].astype("string").str.strip().str.lower()
        text = prepared[column]
        assert text.dtype == plain.dtype
        assert set(text.dropna()) == set(plain.dropna())
        objects = {id(v) for v in text.array._ndarray if isinstance(v, str)}
        assert len(objects) == text.nunique()
    months = raw_m.assign(
        separation_type=raw_m["separation_type"].map(
            lambda v: f"  {v.upper()} " if isinstance(v, str) else v
        )
    )
    again = stats.prepare(months, raw_i).months
    pd.testing.assert_series_equal(again["separation_type"], panels.months["separation_type"])


def test_a_sparse_design_gives_the_fit_of_the_dense_one():
    """The estimators hand the fits sparse designs (``sparse_design``, sparse ``dummies``);
    both fits, with a control column that no engineer changes (dropped), must give the slopes
    and covariance of the same design passed dense."""
    from pipelines.lib.effects.fit import dummies, sparse_design

    rng, pid, t, x, frailty = _panel(3)
    level = rng.integers(1, 4, len(pid))
    flat = (pid % 2).astype(float)  # constant within every engineer: dropped by both
    exposure = rng.uniform(0.5, 1.0, len(pid))
    y = rng.poisson(exposure * np.exp(x @ [-0.35, 0.1] + 0.02 * t) * frailty)
    keep = stats.fit.informative_rows(y.astype(float), [pid, t])
    pid, t, x, y, exposure, level, flat = (v[keep] for v in (pid, t, x, y, exposure, level, flat))
    lv, lv_names = dummies(level, "level")
    names = ["certified", "z", "flat", *lv_names]
    sparse_x = sparse_design(x[:, 0] > 0.5, x[:, 1], flat, lv)
    dense_x = np.column_stack([x[:, 0] > 0.5, x[:, 1], flat, lv.toarray()]).astype(float)
    args = ([pid, t], pid, names)
    pairs = [
        (
            stats.fe_poisson(y, dense_x, np.log(exposure), *args),
            stats.fe_poisson(y, sparse_x, np.log(exposure), *args),
        ),
        (
            stats.fe_ols(np.log1p(y), dense_x, *args, small_sample="cr2"),
            stats.fe_ols(np.log1p(y), sparse_x, *args, small_sample="cr2"),
        ),
    ]
    for dense, sparse in pairs:
        assert dense.names == sparse.names and "flat" not in sparse.names
        np.testing.assert_allclose(sparse.params, dense.params, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(sparse.cov, dense.cov, rtol=1e-9, atol=1e-14)


def test_within_algebra_equals_the_demeaned_design():
    """``Within`` works from the sparse design and group sums; every quantity the Poisson fit
    uses must equal the one computed on the explicitly demeaned dense design, with weights,
    for clusters that are the groups and for clusters that cut across them."""
    from scipy import sparse

    from pipelines.lib.effects.fit import Within, demean

    rng, pid, t, x, _ = _panel(2)
    months = (t[:, None] == np.arange(1, t.max() + 1)[None, :]).astype(float)
    dense = np.column_stack([x, months])  # an indicator, a continuous column, month dummies
    w = rng.uniform(0.1, 3.0, len(pid))
    z = rng.normal(size=len(pid))
    within = Within(sparse.csc_matrix(dense), pid)
    within.reweight(w)
    xd = demean(dense, [pid], w)
    zd = demean(z[:, None], [pid], w)[:, 0]
    np.testing.assert_allclose(within.gram(), (xd * w[:, None]).T @ xd, rtol=1e-9, atol=1e-8)
    rows = np.array([[0, 5, 9], [17, 3, 11]])
    np.testing.assert_allclose(within.demeaned(rows), xd[rows], atol=1e-12)
    rhs, zbar = within.cross(z)
    np.testing.assert_allclose(rhs, xd.T @ (w * zd), rtol=1e-9, atol=1e-8)
    beta = rng.normal(size=dense.shape[1])
    np.testing.assert_allclose(within.fitted(beta, zbar), z - (zd - xd @ beta), atol=1e-9)
    score = rng.normal(size=len(pid))
    for clusters in (pid, rng.integers(0, 40, len(pid))):
        codes = pd.factorize(clusters)[0]
        g = int(codes.max()) + 1
        want = np.column_stack(
            [np.bincount(codes, weights=xd[:, j] * score, minlength=g) for j in range(xd.shape[1])]
        )
        np.testing.assert_allclose(within.cluster_sums(score, codes, g), want, atol=1e-9)


def test_fixed_effects_least_squares_matches_statsmodels_with_dummies():
    import statsmodels.api as sm

    rng, pid, t, x, frailty = _panel(1)
    y = x @ [-0.2, 0.3] + np.log(frailty) + 0.01 * t + rng.normal(size=len(pid))
    ours = stats.fe_ols(y, x, [pid, t], pid, ["certified", "z"])
    dummies = pd.get_dummies(pd.DataFrame({"p": pid, "t": t}).astype(str), drop_first=True)
    design = np.column_stack([x, np.ones(len(y)), dummies.to_numpy(float)])
    ref = sm.OLS(y, design).fit(
        cov_type="cluster", cov_kwds={"groups": pid, "use_correction": False}
    )
    np.testing.assert_allclose(ours.params, ref.params[:2], rtol=1e-8)
    np.testing.assert_allclose(ours.cov / ours.factor, ref.cov_params()[:2, :2], rtol=1e-6)
    # the few-cluster factor: G/(G-1) (N-1)/(N-K), K = 2 slopes + 19 month effects
    n, g = len(y), 120
    assert ours.factor == pytest.approx(g / (g - 1) * (n - 1) / (n - 2 - 19))


def _staggered_panel(seed: int, people: int, months: int, ramp: int):
    """Engineer-months shaped like the prepared frame: staggered first certification (a third
    never certify), an effect of log 0.6 that grows over ``ramp`` months, frailty per engineer
    and a calendar trend. Returns the frame and the planted average log ratio over certified
    months after the first."""
    rng = np.random.default_rng(seed)
    pid = np.repeat(np.arange(people), months)
    t = np.tile(np.arange(months), people).astype(float)
    first = rng.integers(2, months, people).astype(float)
    first[rng.uniform(size=people) < 1 / 3] = np.nan
    rel = t - first[pid]
    level = rng.integers(1, 4, people)[pid].astype(float)
    certified = rel >= 0
    effect = np.where(rel > 0, np.log(0.6) * np.minimum(1.0, (np.nan_to_num(rel) + 1) / ramp), 0)
    rate = 0.5 * rng.gamma(2, 0.5, people)[pid] * np.exp(0.02 * t - 0.1 * level + effect)
    d = pd.DataFrame(
        {
            "person_key": pid.astype(str),
            "t": t,
            "skill_level": level,
            "is_certified": certified,
            "first_t": first[pid],
            "rel": rel,
            "lapsed": np.zeros(len(pid), dtype=bool),
            "ever_certified": ~np.isnan(first[pid]),
            "exposure": np.ones(len(pid)),
            "incidents": rng.poisson(rate).astype(float),
        }
    )
    truth = float(effect[certified & (rel > 0)].mean())
    return d, truth


def test_model_frame_keeps_the_models_columns_and_the_never_certified():
    """The model frame is the rows a plain filter gives (month 0 left out on request, engineers
    who never certified, whose month since certifying is NaN, kept), with the columns the
    incident models read and no other."""
    from pipelines.lib.effects import incidents
    from pipelines.lib.effects.fit import factor_codes, informative_rows

    d, _ = _staggered_panel(5, people=60, months=12, ramp=3)
    d["tenure_months"] = d["t"] + 7.0  # read by attrition and careers, not by these models
    d.loc[d.index[::9], "exposure"] = 0.0
    d.loc[d.index[::13], "skill_level"] = np.nan
    for leave_out, rows in ((False, d), (True, d[d["rel"] != 0])):
        frame = incidents.model_frame(d, without_month_zero=leave_out)
        plain = rows[(rows["exposure"] > 0) & rows["skill_level"].notna()]
        codes = factor_codes(plain["person_key"], plain["t"])
        plain = plain[informative_rows(plain["incidents"].to_numpy(), codes)]
        assert frame.index.equals(plain.index)
        assert list(frame.columns) == [c for c in incidents.MODEL_COLUMNS if c in d.columns]
        assert "tenure_months" not in frame.columns
        pd.testing.assert_frame_equal(frame, plain[frame.columns])
        assert frame["rel"].isna().any()  # the never-certified are the controls
        assert (frame["rel"] == 0).any() != leave_out


def test_cell_ratio_matches_statsmodels_glm_with_dummies_and_the_delta_method():
    """The extended two-way fixed-effects ratio == statsmodels' Poisson GLM with a dummy per
    engineer, month and cell and one for the preparation months, its cell coefficients averaged with weights = certified
    engineer-months, and the variance w'Vw from statsmodels' clustered covariance."""
    import statsmodels.api as sm

    from pipelines.lib.effects import incidents, staggered

    d, _ = _staggered_panel(11, people=150, months=16, ramp=4)
    d = incidents.model_frame(d[d["rel"] != 0]).reset_index(drop=True)
    (est, lo, hi), n_cells = incidents.cell_ratio(d)
    treated = (d["is_certified"] & (d["rel"] > 0)).to_numpy()
    labels = staggered.cells(d, treated)
    cell_dummies = pd.get_dummies(labels).reindex(d.index, fill_value=False).astype(float)
    assert cell_dummies.shape[1] == n_cells > 3
    weights = cell_dummies.sum().to_numpy() / treated.sum()
    # skill_level is constant per engineer here, so the engineer dummies carry it
    fe = pd.get_dummies(d[["person_key", "t"]].astype(str), drop_first=True)
    rel = d["rel"].to_numpy()
    preparing = ((rel >= -incidents.PREPARATION_MONTHS) & (rel < 0)).astype(float)
    design = np.column_stack(
        [cell_dummies.to_numpy(), preparing, np.ones(len(d)), fe.to_numpy(float)]
    )
    ref = sm.GLM(d["incidents"].to_numpy(), design, family=sm.families.Poisson()).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(d["person_key"])[0]}, tol=1e-12
    )
    b = weights @ ref.params[:n_cells]
    assert np.log(est) == pytest.approx(b, abs=1e-6)
    # same covariance up to the small-sample factor, which differs by design
    cells = staggered.cell_columns(labels, len(d), np.flatnonzero(treated))
    fit = incidents._fit(d, {**cells, "preparing": preparing > 0})
    v = ref.cov_params()[:n_cells, :n_cells]
    se_ref = np.sqrt(weights @ v @ weights)
    g = d["person_key"].nunique()
    half = np.log(hi / est) / sps_t_quantile(g - 1)
    ratio = half / se_ref
    # statsmodels' correction is G/(G-1)(N-1)/(N-K) with K counting every dummy; ours counts
    # the engineer effects as nested in the clusters: the two factors differ, the rest agrees
    n, k_ref = len(d), design.shape[1]
    sm_factor = g / (g - 1) * (n - 1) / (n - k_ref)
    assert ratio**2 == pytest.approx(fit.factor / sm_factor, rel=1e-4)


def sps_t_quantile(dof: int) -> float:
    from scipy import stats as sps

    return float(sps.t.ppf(0.975, dof))


def test_cell_ratio_recovers_an_effect_that_builds_up_where_one_indicator_does_not():
    """Planted: the ratio reaches 0.6 only after 18 months (seeds 12-14 all show it). The one-indicator estimate leans
    towards 1 (earlier certifiers serve as controls while their effect still grows); the cell
    estimate's interval holds the planted average over certified months."""
    from pipelines.lib.effects import incidents

    d, truth = _staggered_panel(12, people=1500, months=36, ramp=18)
    d = incidents.model_frame(d[d["rel"] != 0]).reset_index(drop=True)
    (est, lo, hi), _ = incidents.cell_ratio(d)
    single, s_lo, s_hi = incidents.single_indicator_ratio(d)
    assert lo <= np.exp(truth) <= hi
    assert np.log(single) - truth > 0.05  # biased towards no effect, outside its interval
    assert abs(np.log(est) - truth) < np.log(single) - truth
    assert not s_lo <= np.exp(truth) <= s_hi


def test_cr2_with_one_row_per_cluster_is_statsmodels_hc2_with_the_binary_regressor_df():
    """CR2 with singleton clusters and only an intercept absorbed is HC2 (statsmodels); for a
    binary regressor its Satterthwaite df under the equal-variance working model is
    (1/N0 + 1/N1)^2 / (1/(N0^2 (N0-1)) + 1/(N1^2 (N1-1))) (Imbens and Kolesar 2016)."""
    import statsmodels.api as sm

    rng = np.random.default_rng(7)
    n = 60
    x = (rng.uniform(size=n) < 0.3).astype(float)
    y = 0.5 * x + rng.normal(size=n) * (1 + x)
    fit = stats.fe_ols(
        y, x[:, None], [np.zeros(n, dtype=int)], np.arange(n), ["x"], small_sample="cr2"
    )
    ref = sm.OLS(y, np.column_stack([np.ones(n), x])).fit(cov_type="HC2")
    assert fit.cov[0, 0] == pytest.approx(ref.cov_params()[1, 1], rel=1e-9)
    n1 = x.sum()
    n0 = n - n1
    welch_equal = (1 / n0 + 1 / n1) ** 2 / (1 / (n0**2 * (n0 - 1)) + 1 / (n1**2 * (n1 - 1)))
    assert fit.dof_of("x") == pytest.approx(welch_equal, rel=1e-9)


def test_cr2_with_absorbed_effects_matches_explicit_dummies_and_hat_matrix():
    """Absorbed engineer effects (nested in the clusters) and month indicators give the same
    CR2 covariance and degrees of freedom as the textbook formulas on the full dummy design:
    (I - H_gg)^(-1/2) (pseudo-inverse) on each cluster's residuals, and
    df = tr(W)^2 / tr(W^2) with W = P'(I - H)P."""
    rng, pid, t, x, frailty = _panel(4, people=30, months=8)
    y = x @ [0.3, -0.2] + np.log(frailty) + 0.1 * t + rng.normal(size=len(pid))
    keep = rng.uniform(size=len(pid)) > 0.2  # unequal clusters
    pid, t, x, y = pid[keep], t[keep], x[keep], y[keep]
    ours = stats.fe_ols(y, x, [pid, t], pid, ["certified", "z"], small_sample="cr2")
    z = np.column_stack([x, pd.get_dummies(pd.DataFrame({"p": pid, "t": t}).astype(str))])
    z = z.astype(float)
    bread = np.linalg.pinv(z.T @ z)
    resid_maker = np.eye(len(y)) - z @ bread @ z.T
    e = resid_maker @ y
    meat = np.zeros((z.shape[1], z.shape[1]))
    p = np.zeros((len(y), 30))
    for g in range(30):
        r = pid == g
        vals, vecs = np.linalg.eigh(resid_maker[np.ix_(r, r)])
        k = vals > 1e-10
        a = vecs[:, k] / np.sqrt(vals[k]) @ vecs[:, k].T
        u = z[r].T @ a @ e[r]
        meat += np.outer(u, u)
        p[r, g] = a @ z[r] @ bread[:, 0]
    np.testing.assert_allclose(ours.cov, (bread @ meat @ bread)[:2, :2], rtol=1e-8)
    w = p.T @ resid_maker @ p
    assert ours.dof_of("certified") == pytest.approx(np.trace(w) ** 2 / np.sum(w * w), rel=1e-8)
    assert ours.dof_of("certified") < 29  # fewer than G-1: wider intervals than CR1's t(G-1)


def _textbook_cr2(y, x, pid, t):
    """CR2 covariance of the first column of x and its Satterthwaite df from the full dummy
    design, cluster by cluster: (I - H_gg)^(-1/2) by eigendecomposition (pseudo-inverse), and
    df = tr(W)^2 / tr(W^2) with W = P'(I - H)P, without forming the N x N hat matrix."""
    z = np.column_stack([x, pd.get_dummies(pd.DataFrame({"p": pid, "t": t}).astype(str))])
    z = z.astype(float)
    bread = np.linalg.pinv(z.T @ z)
    e = y - z @ (bread @ (z.T @ y))
    clusters = np.unique(pid)
    meat = np.zeros((z.shape[1], z.shape[1]))
    p = np.zeros((len(y), len(clusters)))
    for i, g in enumerate(clusters):
        r = pid == g
        block = np.eye(r.sum()) - z[r] @ bread @ z[r].T
        vals, vecs = np.linalg.eigh(block)
        k = vals > 1e-10 * vals.max()
        a = vecs[:, k] / np.sqrt(vals[k]) @ vecs[:, k].T
        u = z[r].T @ a @ e[r]
        meat += np.outer(u, u)
        p[r, i] = a @ z[r] @ bread[:, 0]
    w = p.T @ p - (p.T @ z) @ bread @ (z.T @ p)
    cov = bread @ meat @ bread
    return cov[: x.shape[1], : x.shape[1]], np.trace(w) ** 2 / np.sum(w * w)


def test_cr2_of_many_clusters_takes_the_series_and_matches_the_textbook(monkeypatch):
    """With many clusters every cluster's leverage is small: CR2 takes the binomial series of
    (I - H_gg)^(-1/2) instead of an eigendecomposition per cluster (forbidden here), and the
    covariance and df are those of the textbook computation to 1e-9."""
    from pipelines.lib.effects import cr2

    rng, pid, t, x, frailty = _panel(9, people=400, months=10)
    y = x @ [0.3, -0.2] + np.log(frailty) + 0.1 * t + rng.normal(size=len(pid))
    keep = rng.uniform(size=len(pid)) > 0.3  # unequal clusters
    pid, t, x, y = pid[keep], t[keep], x[keep], y[keep]
    want_cov, want_dof = _textbook_cr2(y, x, pid, t)

    def no_eigendecomposition(m):
        raise AssertionError("a cluster of small leverage took the eigendecomposition")

    monkeypatch.setattr(cr2, "_inv_sqrt", no_eigendecomposition)
    ours = stats.fe_ols(y, x, [pid, t], pid, ["certified", "z"], small_sample="cr2")
    np.testing.assert_allclose(ours.cov, want_cov, rtol=1e-9)
    assert ours.dof_of("certified") == pytest.approx(want_dof, rel=1e-9)


def test_cr2_computes_the_df_of_the_named_slopes_only():
    """``dof_for`` leaves the other slopes' df uncomputed (asking for one says how to get it);
    the covariance and the named slope's df are those of the full computation."""
    rng, pid, t, x, frailty = _panel(5, people=40, months=8)
    y = x @ [0.3, -0.2] + np.log(frailty) + rng.normal(size=len(pid))
    args = (y, x, [pid, t], pid, ["certified", "z"])
    every = stats.fe_ols(*args, small_sample="cr2")
    named = stats.fe_ols(*args, small_sample="cr2", dof_for=("certified",))
    np.testing.assert_allclose(named.cov, every.cov, rtol=1e-12)
    assert named.dof_of("certified") == pytest.approx(every.dof_of("certified"), rel=1e-12)
    assert every.dof_of("z") > 0
    with pytest.raises(ValueError, match="dof_for"):
        named.dof_of("z")


def test_cr2_falls_back_to_cr1_with_a_note_for_an_engineer_of_too_many_rows():
    """One engineer with more rows than CR2's guard allows: the fit is CR1 (the same
    covariance as without CR2) and its notes say why, instead of a block too large to adjust."""
    from pipelines.lib.effects import cr2

    rng = np.random.default_rng(3)
    busy = cr2.MAX_CLUSTER_ROWS + 1
    pid = np.r_[np.zeros(busy, dtype=int), np.repeat(np.arange(1, 41), 6)]
    t = np.r_[np.arange(busy) % 12, np.tile(np.arange(6), 40)]
    x = (t >= 3).astype(float)[:, None] * (pid % 2 == 0)[:, None]
    y = 0.2 * x[:, 0] + rng.normal(size=len(pid))
    args = (y, x, [pid, t], pid, ["certified"])
    fit = stats.fe_ols(*args, small_sample="cr2")
    np.testing.assert_allclose(fit.cov, stats.fe_ols(*args).cov, rtol=1e-12)
    assert fit.dofs is None
    assert any(f"more than {cr2.MAX_CLUSTER_ROWS:,} rows" in n for n in fit.notes)


def test_cr1_factor_counts_absorbed_effects_only_where_they_are_not_nested_in_the_clusters():
    """G/(G-1) (N-1)/(N-K) with K the slopes, plus the levels - 1 of an absorbed factor that
    spans clusters (months, with engineer clusters); engineer effects, nested in engineer
    clusters, add nothing (fixest's convention)."""
    rng, pid, t, x, frailty = _panel(6, people=50, months=12)
    y = x @ [0.3, -0.2] + np.log(frailty) + rng.normal(size=len(pid))
    n, g, months = len(y), 50, 12
    by_month = stats.fe_ols(y, x, [t], pid, ["certified", "z"])
    assert by_month.factor == pytest.approx(g / (g - 1) * (n - 1) / (n - 2 - (months - 1)))
    by_engineer = stats.fe_ols(y, x, [pid], pid, ["certified", "z"])
    assert by_engineer.factor == pytest.approx(g / (g - 1) * (n - 1) / (n - 2))


def test_a_control_the_absorbed_effects_explain_is_dropped_not_fatal():
    """A control equal to a month indicator (as a level dummy can be in a small company) adds
    nothing once month effects are in: the fit drops it and the slopes stay the same."""
    rng, pid, t, x, frailty = _panel(3)
    y = rng.poisson(np.exp(x @ [-0.35, 0.1]) * frailty)
    keep = stats.fit.informative_rows(y.astype(float), [pid, t])
    pid, t, x, y = pid[keep], t[keep], x[keep], y[keep]
    offset = np.zeros(len(y))
    base = stats.fe_poisson(y, x, offset, [pid, t], pid, ["certified", "z"])
    extra = np.column_stack([x, (t == 5).astype(float)])
    fit = stats.fe_poisson(y, extra, offset, [pid, t], pid, ["certified", "z", "month5"])
    # one of month5 and the month-5 indicator goes; certified and z are what they were
    assert fit.names[:2] == ["certified", "z"]
    np.testing.assert_allclose(fit.params[:2], base.params, rtol=1e-8)
    np.testing.assert_allclose(fit.cov[:2, :2], base.cov, rtol=1e-6)
    ever = np.zeros(len(y))
    ever[pid % 2 == 0] = 1.0  # fixed per engineer: nothing to compare within an engineer
    with pytest.raises(stats.FitError, match="does not change within any engineer"):
        stats.fe_poisson(y, ever[:, None], offset, [pid, t], pid, ["ever"])


def test_wald_pretrend_p_value_matches_a_hand_calculation():
    fit = stats.Fit(
        ["a", "b"], np.array([0.1, -0.2]), np.array([[0.01, 0.0], [0.0, 0.04]]), n_clusters=11
    )
    # Wald = 0.1^2/0.01 + 0.2^2/0.04 = 2, F = 2/2 = 1 on (2, 10) df: p = (1 + 2/10)^-5
    p, dof = fit.wald_p(["a", "b"])
    assert dof == 2 and p == pytest.approx(1.2**-5)
    # interval from Student-t with G-1 = 10 df (2.228), not the normal 1.96
    est, lo, hi = fit.ratio("a")
    assert np.log(hi) - 0.1 == pytest.approx(2.2281389 * 0.1, rel=1e-6)


def test_naive_two_group_ratio_is_the_ratio_of_rates():
    rng = np.random.default_rng(2)
    y = rng.poisson(0.3, 500).astype(float)
    group = rng.random(500) < 0.4
    exposure = rng.uniform(0.2, 1.0, 500)
    est, lo, hi = stats.fit.two_group_ratio(y, group, np.log(exposure), np.arange(500))
    rate = lambda m: y[m].sum() / exposure[m].sum()  # noqa: E731
    assert est == pytest.approx(rate(group) / rate(~group), rel=1e-9)
    assert lo < est < hi


def test_selection_on_unrecorded_proneness_does_not_pose_as_an_effect():
    """Engineers with fewer incidents anyway certify more; comparing each with themselves
    still covers the planted ratio, where comparing certified with other engineers would not."""
    em, inc = simulate(31, select=2.0)
    row = stats.estimate_effects(em, inc).set_index("metric").loc["incident_rate_ratio"]
    assert row.ci_low <= 0.70 <= row.ci_high, row.to_dict()
    assert not row.pretrend_rejected


def test_certifying_after_a_bad_spell_is_flagged_and_not_a_finding():
    em, inc = simulate(37, shock=0.03)
    row = stats.estimate_effects(em, inc).set_index("metric").loc["incident_rate_ratio"]
    assert row.pretrend_rejected and row.pretrend_p < 0.05
    assert not row.finding
    assert "not presented as a finding" in row.caveats


def test_too_few_exits_is_not_estimable_with_the_exits_needed():
    em, inc = simulate(5, n=120, months=24)
    row = stats.estimate_effects(em, inc).set_index("metric").loc["attrition_hazard_ratio"]
    assert not row.estimable and np.isnan(row.estimate) and np.isnan(row.ci_high)
    assert "voluntary exits" in row.not_estimable_reason
    assert re.fullmatch(r"about \d+ more voluntary exits", row.data_needed)


def test_missing_estimates_are_written_as_sql_null():
    from pipelines.defs import effects as stats_defs

    em, inc = simulate(3, n=60, months=12, cert_base=0.0)
    effects = stats.estimate_effects(em, inc)
    with duckdb.connect() as con:
        from pipelines.lib.effects import result

        described = (result.EFFECT_TABLE, result.EFFECT_DESCRIPTIONS)
        stats_defs.write_effect_mart(con, "certification_effect", effects, 5, described)
        nulls = [
            con.execute(
                f"select count(*) from {schema}.certification_effect where estimate is null"
            ).fetchone()[0]
            for schema in ("marts", "restricted")
        ]
    assert nulls == [3, 3]


def test_preparation_months_reach_back_to_three_before_the_first_enrolment():
    """The preparation indicator covers every month from 3 before the start of preparing
    (first_preparation_month) up to the first certification, and at least the 3 months before
    it; without a known start, only those 3."""
    from pipelines.lib.effects.incidents import preparing

    months = pd.date_range("2024-01-01", periods=14, freq="MS")
    em = pd.DataFrame(
        {
            "person_key": ["a"] * 14 + ["b"] * 14,
            "month": list(months) * 2,
            "skill_level": 2,
            "tenure_months": 12,
            "is_certified": [False] * 10 + [True] * 4 + [False] * 10 + [True] * 4,
            "first_certified_month": months[10],
            # a began preparing in month 5 (June 2024); b's start is not known
            "first_preparation_month": [months[5]] * 14 + [pd.NaT] * 14,
            "incidents": 0,
            "exposure_months": 1.0,
            "separated": False,
            "separation_type": None,
        }
    )
    m = stats.prepare_engineer_months(em)
    flags = dict(
        zip(zip(m["person_key"], m["rel"].astype(int), strict=True), preparing(m), strict=True)
    )
    # a: months 2..9 (rel -8..-1) are preparation, month 1 (rel -9) and the certified ones not
    assert [flags[("a", r)] for r in range(-10, 4)] == [False, False] + [True] * 8 + [False] * 4
    # b: the 3 months before certifying only
    assert [flags[("b", r)] for r in range(-10, 4)] == [False] * 7 + [True] * 3 + [False] * 4


def test_row_of_each_nonzero_is_the_row_numpy_repeat_gives_with_empty_rows():
    from scipy import sparse

    from pipelines.lib.effects.fit import row_of_each_nonzero

    rng = np.random.default_rng(3)
    dense = (rng.random((60, 5)) < 0.3) * rng.normal(size=(60, 5))
    dense[[0, 7, 8, 59]] = 0.0  # empty rows, first and last among them
    m = sparse.csr_matrix(dense)
    want = np.repeat(np.arange(60), np.diff(m.indptr))
    np.testing.assert_array_equal(row_of_each_nonzero(m.indptr), want)
    assert len(row_of_each_nonzero(sparse.csr_matrix((4, 3)).indptr)) == 0


def test_drop_absorbed_keeps_and_drops_the_same_columns_for_dense_and_sparse_designs():
    from scipy import sparse

    from pipelines.lib.effects.fit import FitError, drop_absorbed

    groups = np.repeat(np.arange(6), 5)  # six engineers, five rows each
    rows = np.arange(30)
    columns = {
        "certified": (rows % 5 >= 2).astype(float),  # changes within every engineer
        "level_3": np.isin(groups, [1, 4]).astype(float),  # whole engineers only: absorbed
        "part_of_one": ((groups == 2) & (rows % 5 == 0)).astype(float),  # one row of one
        "group_value": groups * 1.5 - 2.0,  # a value per engineer, some negative: absorbed
        "never": np.zeros(30),  # absorbed
        "varies_negative": np.where(groups == 5, -(rows % 5), 0.0),  # only in engineer 5
    }
    x = np.column_stack(list(columns.values()))
    names = list(columns)
    want = ["certified", "part_of_one", "varies_negative"]
    for design in (x, sparse.csc_matrix(x)):
        kept, kept_names = drop_absorbed(design, names, [groups])
        assert kept_names == want
        dense_kept = kept.toarray() if sparse.issparse(kept) else kept
        np.testing.assert_array_equal(dense_kept, x[:, [0, 2, 5]])
    with pytest.raises(FitError, match="level_3 does not change within any engineer"):
        drop_absorbed(sparse.csc_matrix(x[:, 1:]), names[1:], [groups])


def test_a_metric_not_estimable_publishes_no_figure_and_restricted_keeps_the_naive_one(tmp_path):
    from pipelines.defs.effects import write_effect_mart
    from pipelines.lib.effects import result
    from pipelines.lib.publish import publish

    # no certified engineer at all: every metric is not estimable, but the naive figures exist
    em, inc = simulate(3, n=150, months=24, cert_base=0.0)
    effects, _ = stats.analyse(em, inc)
    assert not effects["estimable"].any()
    # a naive figure beside a withheld estimate, the case a reader takes for the answer
    effects.loc[0, ["naive_estimate", "naive_ci_low", "naive_ci_high"]] = (0.22, 0.12, 0.42)
    effects.loc[1, "n_engineers"] = 3
    build = tmp_path / "build.duckdb"
    with duckdb.connect(str(build)) as con:
        write_effect_mart(
            con,
            "certification_effect",
            effects,
            5,
            (result.EFFECT_TABLE, result.EFFECT_DESCRIPTIONS),
        )
    publish(build, tmp_path / "talent.duckdb", min_group_size=5)
    with duckdb.connect(str(tmp_path / "talent.duckdb"), read_only=True) as con:
        marts = con.execute("select * from marts.certification_effect order by metric").df()
        schemas = {r[0] for r in con.execute("select schema_name from duckdb_tables()").fetchall()}
    assert "restricted" not in schemas
    figures = list(result.FIGURE_COLUMNS)
    assert marts[figures].isna().all().all(), marts[figures]
    assert marts["data_needed"].notna().all() and marts["not_estimable_reason"].notna().all()
    assert marts["n_engineers"].isna().sum() == 1  # the planted 3 engineers
    with duckdb.connect(str(build), read_only=True) as con:
        kept = con.execute(
            "select naive_estimate, naive_ci_low, naive_ci_high from "
            "restricted.certification_effect where metric = ?",
            [effects.loc[0, "metric"]],
        ).fetchone()
    assert kept == pytest.approx((0.22, 0.12, 0.42))


def test_the_estimators_run_on_one_blas_thread_and_give_the_setting_back():
    """Every BLAS numpy and scipy loaded (threadpoolctl's own account of them) runs one thread
    inside single_threaded_blas, and its previous thread count afterwards."""
    import scipy.linalg  # noqa: F401 (loads scipy's BLAS, where it has its own)
    from threadpoolctl import threadpool_info

    from pipelines.lib.effects.fit import single_threaded_blas

    def blas() -> list[int]:
        return [pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas"]

    before = blas()
    assert before, "no BLAS found: numpy always loads one"
    with single_threaded_blas():
        assert blas() == [1] * len(before)
    assert blas() == before
