"""The workforce plan's backtest on a generated company: its actuals recounted from the marts
with SQL of their own, and its forecast error the difference of the two columns."""

import csv

import duckdb
import pytest

from pipelines.lib.plan.rates import SEEDS

PREREQUISITE = {"NCP-AII": "NCA-AIIO"}  # seed-facts.md "Certifications"


@pytest.fixture(scope="module")
def build(shared_company):
    con = duckdb.connect(str(shared_company.warehouse / "build" / "talent.duckdb"), read_only=True)
    yield con
    con.close()


@pytest.fixture(scope="module")
def backtest(build):
    return build.execute("select * from marts.workforce_plan_backtest").df()


def quarter_end_month(label: str) -> str:
    year, q = label.split("-Q")
    return f"{year}-{3 * int(q):02d}-01"


def roles_and_tracks(build, quarters: list[str]) -> dict[str, set[str]]:
    """The template roles the fleet's size classes in those quarters need, each with every
    certification its templates require (and their prerequisites)."""
    ends = [quarter_end_month(q) for q in quarters]
    classes = {
        r[0]
        for r in build.execute(
            "select distinct fleet_size_class from marts.fleet_size where gpu_count > 0 and "
            "date_trunc('month', month_end) in (select unnest(?::date[]))",
            [ends],
        ).fetchall()
    }
    with open(SEEDS / "team_template_requirements.csv", newline="") as fh:
        seed = [r for r in csv.DictReader(fh) if r["fleet_size_class"] in classes]
    out: dict[str, set[str]] = {}
    for r in seed:
        if int(r["headcount"]) > 0:
            codes = {c for c in r["required_certification_codes"].split(";") if c}
            codes |= {PREREQUISITE[c] for c in codes if c in PREREQUISITE}
            out.setdefault(r["role_family"], set()).update(codes)
    return out


def recount(build, quarter: str, tracks: dict[str, set[str]]) -> dict[str, float]:
    month = quarter_end_month(quarter)
    people = build.execute(
        "select role_family, coalesce(active_certification_codes, []) "
        "from intermediate.int_engineer_months where month = ?::date and active_at_month_end "
        "and skill_level between 1 and 5 and role_family in (select unnest(?::varchar[]))",
        [month, list(tracks)],
    ).fetchall()
    certified = 0
    for role, codes in people:
        held = set(codes) | {PREREQUISITE[c] for c in codes if c in PREREQUISITE}
        certified += tracks[role] <= held
    year, q = quarter.split("-Q")
    start = f"{year}-{3 * int(q) - 2:02d}-01"
    exits = build.execute(
        "select coalesce(sum(separations) + sum(transfers_out), 0) from restricted.attrition "
        "where period_type = 'quarter' and period_start = ?::date and segment_type = "
        "'role_family' and segment_value in (select unnest(?::varchar[]))",
        [start, list(tracks)],
    ).fetchone()[0]
    spend = build.execute(
        "select coalesce(sum(spend_usd), 0) from restricted.training_spend where quarter = ?::date",
        [start],
    ).fetchone()[0]
    return {
        "headcount": len(people),
        "certified_engineers": certified,
        "exits": exits,
        "training_spend_usd": spend,
    }


def test_the_backtest_actuals_are_what_the_marts_record(build, backtest):
    # two years of data to 2026-Q3: the planner as of 2025-Q3; 8 quarters back is before it
    assert set(backtest["quarters_back"]) == {4}
    assert set(backtest["origin_quarter"]) == {"2025-Q3"}
    quarters = sorted(backtest["quarter"].unique())
    assert quarters == ["2025-Q4", "2026-Q1", "2026-Q2", "2026-Q3"]
    tracks = roles_and_tracks(build, quarters)
    assert tracks
    for q in quarters:
        got = backtest[backtest["quarter"] == q].set_index("measure")
        assert not got["suppressed"].any()
        for measure, value in recount(build, q, tracks).items():
            assert got.loc[measure, "actual"] == pytest.approx(float(value), abs=0.01), (
                q,
                measure,
            )


def test_the_forecast_error_is_the_forecast_less_the_actual(backtest):
    err = backtest["forecast"] - backtest["actual"]
    assert backtest["forecast_error"].to_numpy() == pytest.approx(err.to_numpy(), abs=0.011)
    assert backtest["absolute_error"].to_numpy() == pytest.approx(err.abs().to_numpy(), abs=0.011)
    nonzero = backtest["actual"] != 0
    rel = err[nonzero] / backtest["actual"][nonzero]
    assert backtest.loc[nonzero, "relative_error"].to_numpy() == pytest.approx(
        rel.to_numpy(), abs=1e-4
    )
    assert backtest.loc[~nonzero, "relative_error"].isna().all()
    # the forecast starts from the team as it was: one quarter ahead, the headcount is near it
    first = backtest[(backtest["quarters_ahead"] == 1) & (backtest["measure"] == "headcount")]
    assert (first["forecast"] > 0).all()


def test_the_backtest_measures_its_rates_only_from_what_was_known_on_its_day(build):
    """As of 2025-09-30 every measured rate's window ends by that day, and the times to certify
    follow the episodes no further: a pass after it is not yet known."""
    from datetime import date

    from pipelines.lib import project_files
    from pipelines.lib.plan import warehouse as wh
    from pipelines.lib.plan.backtest import programme_rates_as_of
    from pipelines.lib.roi.assumptions import base_params, load_assumptions

    as_of = date(2025, 9, 30)
    assumptions = load_assumptions(project_files.default_assumptions_file())
    codes = ["NCA-AIIO", "NCP-AII", "CKA", "RHCE"]
    then = wh.read_rates(
        build,
        codes,
        as_of,
        assumptions,
        5,
        programme_rates_as_of(as_of, base_params(assumptions), 5),
    )
    measured = [r for r in then.all() if r.measured]
    assert measured
    for r in measured:
        assert r.window and date.fromisoformat(r.window.split("..")[1]) <= as_of, (r.name, r.window)
    # an independent count: participants of a track begun by then, from the episodes themselves
    for (prog, code), rate in then.median_months.items():
        if not rate.measured:
            continue
        begun = build.execute(
            "select count(*) from intermediate.int_programme_episodes where programme_type = ? "
            "and certification_code = ? and first_enrolled_on <= ?",
            [prog, code, as_of],
        ).fetchone()[0]
        assert f", {begun} participants" in rate.source
