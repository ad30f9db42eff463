"""The planner's inputs from the build file: demand from the seeds, the team, measured rates."""

import csv
from datetime import date

import duckdb
import numpy as np
import pytest

from pipelines.lib.plan import warehouse as wh
from pipelines.lib.plan.fleet import FleetRow, PlanInputError
from pipelines.lib.plan.model import Layout
from pipelines.lib.plan.rates import SEEDS


def test_demand_sums_the_seed_templates_of_each_cluster_size():
    rows = [
        FleetRow("a", "2027-Q1", 50, 2),  # small
        FleetRow("b", "2027-Q1", 500, 3),  # medium
        FleetRow("b", "2027-Q3", 0, 4),  # retired from Q3
    ]
    quarters = ["2027-Q1", "2027-Q2", "2027-Q3"]
    demand = wh.demand_from_fleet(rows, quarters)
    with open(SEEDS / "team_template_requirements.csv") as fh:
        seed = list(csv.DictReader(fh))
    need = {}
    for size, qs in (("small", (0, 1, 2)), ("medium", (0, 1))):
        for r in seed:
            if r["fleet_size_class"] == size:
                for q in qs:
                    need[(r["role_family"], q)] = need.get((r["role_family"], q), 0) + int(
                        r["headcount"]
                    )
    for i, role in enumerate(demand.roles):
        assert [demand.headcount[i, q] for q in range(3)] == [
            need[(role.name, q)] for q in range(3)
        ]
    ops = demand.roles[[r.name for r in demand.roles].index("operations_engineer")]
    assert ops.track == ("NCA-AIIO", "RHCE") and ops.band == (2, 3)
    with pytest.raises(PlanInputError, match="ends in 2027-Q3, before the first quarter"):
        wh.demand_from_fleet(rows, ["2028-Q1", "2028-Q2"])


@pytest.fixture
def build_file(tmp_path):
    con = duckdb.connect(str(tmp_path / "talent.duckdb"))
    con.execute("create schema intermediate; create schema restricted")
    con.execute(
        "create table intermediate.int_engineer_months (person_key varchar, month date, "
        "role_family varchar, skill_level integer, active_at_month_end boolean, "
        "active_certification_codes varchar[])"
    )
    people = [
        ("operations_engineer", 2, [], True),
        ("operations_engineer", 2, ["NCA-AIIO"], True),
        ("operations_engineer", 3, ["NCA-AIIO", "RHCE", "CKA"], True),
        ("operations_engineer", 3, ["RHCE"], False),  # left during the month
        ("senior_engineer", 4, ["NCA-AIIO"], True),
        ("senior_engineer", 4, ["NCP-AII"], True),  # its prerequisite NCA-AIIO expired
    ]
    for i, (role, lvl, codes, active) in enumerate(people):
        con.execute(
            "insert into intermediate.int_engineer_months values (?, ?, ?, ?, ?, ?)",
            [f"p{i}", date(2026, 9, 1), role, lvl, active, codes],
        )
    con.execute(
        "create table restricted.attrition (period_type varchar, period_start date, "
        "segment_type varchar, segment_value varchar, separations bigint, transfers_out bigint, "
        "average_headcount double)"
    )
    for start in (date(2026, 4, 1), date(2026, 7, 1)):
        con.executemany(
            "insert into restricted.attrition values ('quarter', ?, ?, ?, ?, ?, ?)",
            [
                (start, "all", "all", 8, 2, 200.0),
                (start, "level", "2", 3, 1, 40.0),
                (start, "certification_status", "certified", 2, 0, 100.0),
                (start, "certification_status", "not_certified", 6, 2, 100.0),
            ],
        )
    yield con
    con.close()


def test_the_team_counts_the_track_certifications_each_person_holds(build_file):
    demand = wh.demand_from_fleet([FleetRow("b", "2027-Q1", 500, 2)], ["2027-Q1"])
    layout = Layout(demand.roles, 1)
    idle0, head = wh.read_team(build_file, layout, date(2026, 9, 1))
    names = [r.name for r in layout.roles]
    ops = idle0[names.index("operations_engineer")]
    assert ops[1, :3].tolist() == [1, 1, 0]  # level 2: none held, NCA-AIIO held
    assert ops[2, :3].tolist() == [0, 0, 1]  # level 3: both of the track (CKA is not in it)
    senior = idle0[names.index("senior_engineer")]
    assert senior[3, 1] == 1 and head.sum() == 5
    assert senior[3, 2] == 1  # NCP-AII held: NCA-AIIO is not needed again


def test_exit_rates_are_the_level_rate_scaled_by_certification_status(build_file):
    from pipelines.lib.plan.rates import domain_rates

    rates = domain_rates(["NCA-AIIO"])
    wh._exit_rates(build_file, date(2026, 9, 30), rates)
    level, overall = (3 + 1) * 2 / 80, (8 + 2) * 2 / 400
    certified, uncertified = 2 * 2 / 200, 8 * 2 / 200
    got = rates.exit[(2, True)], rates.exit[(2, False)]
    assert got[0].value == pytest.approx(level * certified / overall)
    assert got[1].value == pytest.approx(level * uncertified / overall)
    assert got[0].source.startswith("restricted.attrition") and got[0].measured
    assert got[0].window == "2026-04-01..2026-09-30"
    assert not rates.exit[(3, True)].measured  # no level-3 rows: the domain's figure stays
    assert np.isclose(got[0].exposure, 80)


def test_too_little_history_gives_an_empty_typed_backtest_and_says_why(build_file):
    """The build file's months are one month (2026-09): neither 4 nor 8 quarters back exist."""
    from pipelines.lib.plan.backtest import BACKTEST_COLUMNS, backtest_frame

    frame, notes = backtest_frame(build_file, None, {}, 5)
    assert frame.empty and list(frame.columns) == list(BACKTEST_COLUMNS)
    assert frame["forecast"].dtype == "float64" and frame["quarter"].dtype == "string"
    assert [n.split(":")[0] for n in notes] == [
        "no backtest 4 quarters back",
        "no backtest 8 quarters back",
    ]


def test_a_programme_measured_without_a_median_or_a_share_keeps_the_domain_s_figures():
    """A programme whose participants give neither a median nor a 12-month share (NaN, as a
    track nobody certified in yet gives) and no cost keeps the domain's time and cost: a NaN
    taken for a measurement made the planner's costs NaN and the solver refuse the night."""
    import math

    from pipelines.lib.plan.rates import domain_rates

    rates = domain_rates(["RHCE"])
    key = next(k for k in rates.median_months if k[1] == "RHCE")
    before_time, before_cost = rates.median_months[key], rates.cost_per_start[key]
    wh.apply_time_rows([(*key, None, None, None, math.nan, 5)], rates, "w", "t")
    wh.apply_cost_rows([(*key, math.nan, 5)], rates, "w", "t")
    assert rates.median_months[key] is before_time and rates.cost_per_start[key] is before_cost
    wh.apply_time_rows([(*key, None, None, None, 0.5, 5)], rates, "w", "t")
    measured = rates.median_months[key]
    # a Weibull through half certified by month 12 has its median at month 12
    assert measured.value == pytest.approx(12.0) and "12-month share" in measured.source
