"""ROI over the marts: pure Polars jobs on tiny frames, the tables in DuckDB, the Dagster asset."""

from __future__ import annotations

from datetime import date

import dagster as dg
import duckdb
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from pipelines.defs.roi import roi_tables
from pipelines.lib.roi import (
    DEFAULT_ASSUMPTIONS_PATH,
    INPUT_SCHEMAS,
    RoiInputError,
    base_params,
    load_assumptions,
    read_marts,
    write_tables,
)
from pipelines.lib.roi.warehouse import (
    build_roi_tables,
    contractor_drivers,
    downtime_drivers,
    fleet_drivers,
    investment_drivers,
    quarterly_drivers,
    roi_by_period,
    warehouse_assumptions,
)
from tests.conftest import talent_resources

Q1, Q2 = date(2024, 1, 1), date(2024, 4, 1)


def _training_spend() -> pl.LazyFrame:
    return pl.LazyFrame(
        {
            "quarter": [Q1, Q1, Q2, Q2],
            "spend_category": ["online", "certification_exam", "apprenticeship", "bootcamp"],
            "participants": [3, 2, 1, 1],
            "enrolments": [4, 3, 1, 1],
            "completions": [2, 2, 0, 1],
            "spend_usd": [3000.0, 1200.0, 500.0, 20000.0],
            "list_price_usd": [4000.0, 1200.0, None, 20000.0],
            "discount_usd": [1000.0, 0.0, 0.0, 0.0],
            "training_hours": [40.0, None, 20.0, 80.0],
        }
    )


def _marts() -> dict[str, pl.LazyFrame]:
    return {
        "training_spend": _training_spend(),
        "contractor_costs": pl.LazyFrame(
            {
                "period_start": [date(2024, m, 1) for m in range(1, 7)],
                "hours": [100.0, 100.0, 100.0, 60.0, 40.0, 120.0],
            }
        ),
        "fleet_size": pl.LazyFrame(
            {
                "month_end": [
                    date(2024, 1, 31),
                    date(2024, 2, 29),
                    date(2024, 6, 30),
                    date(2024, 6, 30),
                ],
                "cluster": ["a", "a", "a", "b"],
                "gpu_count": [120, 120, 200, 40],
            }
        ),
        "incident_downtime": pl.LazyFrame(
            {
                "quarter": [Q1, Q1, Q2],
                "certification_status": ["certified", "not_certified", "certified"],
                "gpu_hours_lost": [10.0, 99.0, 30.0],
            }
        ),
        "certification_coverage": pl.LazyFrame(
            {
                "month_end": [
                    date(2024, 1, 31),
                    date(2024, 1, 31),
                    date(2024, 2, 29),
                    date(2024, 6, 30),
                ],
                "segment_type": ["all", "team", "all", "all"],
                "segment_value": ["all", "a", "all", "all"],
                "any_cert_share": [0.5, 0.9, 1.0, 0.25],
            }
        ),
        "attrition": pl.LazyFrame(
            {
                "period_type": ["quarter", "quarter", "quarter", "month"],
                "period_start": [Q1, Q1, Q2, Q1],
                "segment_type": [
                    "certification_status",
                    "certification_status",
                    "all",
                    "certification_status",
                ],
                "segment_value": ["certified", "not_certified", "all", "certified"],
                "voluntary_separations": [3, 9, 12, 1],
            }
        ),  # fmt: skip
        "certification_effect": pl.LazyFrame(
            {
                "metric": ["incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio"],
                "estimate": [0.8, 0.625, 0.6],
                "ci_low": [0.6, 0.5, 0.4],
                "ci_high": [1.1, 0.9, 0.9],
            }
        ),
    }


@pytest.fixture(scope="module")
def assumptions():
    return load_assumptions(DEFAULT_ASSUMPTIONS_PATH)


# --- pure Polars jobs on tiny frames ----------------------------------------------------------


def test_investment_drivers_split_fees_by_kind_and_fall_back_to_spend():
    lf = _training_spend()
    before = lf.collect()
    out = investment_drivers(lf).sort("quarter").collect()
    assert_frame_equal(lf.collect(), before)  # the input is untouched
    q1, q2 = out.row(0, named=True), out.row(1, named=True)
    assert q1["course_list_price_usd"] == 4000 and q1["exam_list_price_usd"] == 1200
    assert q1["discounts_usd"] == 1000 and q1["exam_attempts"] == 3 and q1["lab_enrolments"] == 4
    # apprenticeship list price missing -> spend + discount = 500
    assert q2["course_list_price_usd"] == 500 and q2["bootcamp_list_price_usd"] == 20000
    assert q2["apprentices"] == 1 and q2["lab_enrolments"] == 1 and q2["training_hours"] == 100


def test_contractor_hours_replaced_are_the_shortfall_below_the_first_months():
    out = (
        contractor_drivers(_marts()["contractor_costs"], baseline_months=3)
        .sort("quarter")
        .collect()
    )
    # baseline 100 h/month; Q2: (100-60) + (100-40) + max(0, 100-120) = 100
    assert out["contractor_hours_replaced"].to_list() == [0.0, 100.0]


def test_certified_gpu_years_and_certified_downtime_per_quarter():
    marts = _marts()
    fleet = (
        fleet_drivers(marts["fleet_size"], marts["certification_coverage"])
        .sort("quarter")
        .collect()
    )
    # Q1: (120 x 0.5 + 120 x 1.0) / 12 = 15 (the team row is ignored); Q2: 240 x 0.25 / 12 = 5
    assert fleet["certified_fleet_gpu_years"].to_list() == [15.0, 5.0]
    down = downtime_drivers(_marts()["incident_downtime"]).sort("quarter").collect()
    assert down["certified_downtime_gpu_hours"].to_list() == [10.0, 30.0]


def test_quarterly_drivers_fill_absent_quarters_with_zero():
    a = pl.LazyFrame({"quarter": [Q1], "certified_fleet_gpu_years": [5.0]})
    b = pl.LazyFrame({"quarter": [Q2], "contractor_hours_replaced": [7.0]})
    out = quarterly_drivers(a, b).collect()
    assert out["quarter"].to_list() == [Q1, Q2]
    assert out["certified_fleet_gpu_years"].to_list() == [5.0, 0.0]
    assert out["contractor_hours_replaced"].to_list() == [0.0, 7.0]
    assert out["exam_attempts"].to_list() == [0.0, 0.0]


def test_year_rows_are_the_sum_of_their_quarters(assumptions):
    drivers = pl.LazyFrame(
        {
            "quarter": [Q1, Q2],
            "course_list_price_usd": [1000.0, 3000.0],
            "certified_fleet_gpu_years": [10.0, 30.0],
        }
    )
    p = base_params(assumptions)
    out = roi_by_period(drivers, p).collect()
    year = out.filter(pl.col("period_type") == "year").row(0, named=True)
    quarters = out.filter(pl.col("period_type") == "quarter")
    assert year["period_start"] == date(2024, 1, 1) and year["period_end"] == date(2024, 12, 31)
    assert quarters["period_end"].to_list() == [date(2024, 3, 31), date(2024, 6, 30)]
    for col in ("investment_usd", "return_usd", "efficiency_usd"):
        assert year[col] == pytest.approx(quarters[col].sum())
    assert year["net_roi"] == pytest.approx((year["return_usd"] - 4000) / 4000)


# --- the three tables, checked by hand --------------------------------------------------------


def test_tables_from_tiny_marts_match_a_hand_calculation(assumptions):
    tables = build_roi_tables(_marts(), assumptions)
    p = base_params(assumptions)
    by_item = {r["item"]: r["amount_usd"] for r in tables["roi_summary"].iter_rows(named=True)}
    # downtime: (10 + 30) GPU-h x (1 / (0.8 x 0.625) - 1 = 1) x cost per GPU-hour
    assert by_item["downtime_avoided"] == pytest.approx(40 * p["downtime_cost_usd_per_gpu_hour"])
    assert by_item["contractor_cost_avoided"] == pytest.approx(
        100 * (p["contractor_rate_usd_per_hour"] - p["employee_rate_usd_per_hour"])
    )
    assert by_item["vendor_discounts"] == -1000
    # attrition: 3 certified voluntary exits x (1 / 0.6 - 1) x replacement cost per exit; the
    # monthly row and the uncertified and all-engineer rows are not counted
    assert by_item["attrition_cost_avoided"] == pytest.approx(
        3 * (1 / 0.6 - 1) * p["replacement_cost_usd_per_exit"]
    )
    assert by_item["efficiency"] == pytest.approx(
        20 * p["fleet_cost_usd_per_gpu_year"] * p["efficiency_share_of_fleet_cost"]
    )
    assert by_item["apprenticeship_senior_time"] == pytest.approx(
        p["apprenticeship_months"]
        * p["hours_per_month"]
        * p["senior_rate_usd_per_hour"]
        * p["apprenticeship_senior_productivity_loss"]
    )
    year = tables["roi_by_period"].filter(pl.col("period_type") == "year").row(0, named=True)
    invested = tables["roi_summary"].filter(pl.col("category") == "investment")["amount_usd"].sum()
    assert year["investment_usd"] == pytest.approx(invested)
    assert (
        "incident_rate_ratio=0.8"
        in tables["roi_summary"].filter(pl.col("item") == "downtime_avoided")["inputs"].item()
    )


def test_sensitivity_uses_the_effect_ci_and_its_base_is_the_base_roi(assumptions):
    tables = build_roi_tables(_marts(), assumptions)
    sens, years = tables["roi_sensitivity"], tables["roi_by_period"]
    summary = tables["roi_summary"]
    inv = summary.filter(pl.col("category") == "investment")["amount_usd"].sum()
    ret = summary.filter(pl.col("category") == "return")["amount_usd"].sum()
    assert sens["base_roi"].unique().to_list() == [pytest.approx((ret - inv) / inv)]
    assert years.filter(pl.col("period_type") == "year")["net_roi"].item() == pytest.approx(
        (ret - inv) / inv
    )
    irr = sens.filter(pl.col("assumption") == "incident_rate_ratio").row(0, named=True)
    assert (irr["low_value"], irr["base_value"], irr["high_value"]) == (0.6, 0.8, 1.1)
    joint = sens.filter(pl.col("assumption").str.starts_with("certification_effect CI")).row(
        0, named=True
    )
    # both ratios at their lower bounds = the largest effect = the highest ROI
    assert joint["roi_at_low"] > joint["base_roi"] > joint["roi_at_high"]
    assert sens["swing"].to_list() == sorted(sens["swing"].to_list(), reverse=True)


def test_missing_effect_metric_is_named(assumptions):
    effect = pl.DataFrame(
        {"metric": ["mttr_ratio"], "estimate": [0.8], "ci_low": [0.7], "ci_high": [0.9]}
    )
    with pytest.raises(RoiInputError, match="incident_rate_ratio.*statistics asset"):
        warehouse_assumptions(assumptions, effect)


# --- DuckDB in and out, and the Dagster asset -------------------------------------------------


def _write_marts(path, skip: str | None = None) -> None:
    """Each input where the pipeline leaves it: dbt marts' detail in `restricted`, the rest in
    `marts` (INPUT_SCHEMAS)."""
    with duckdb.connect(str(path)) as con:
        for name, lf in _marts().items():
            if name != skip:
                schema = INPUT_SCHEMAS[name]
                con.execute(f"create schema if not exists {schema}")
                arrow = lf.collect().to_arrow()  # noqa: F841 - read by name below
                con.execute(f"create table {schema}.{name} as select * from arrow")


def test_missing_mart_fails_with_its_name(tmp_path):
    db = tmp_path / "talent.duckdb"
    _write_marts(db, skip="fleet_size")
    with (
        duckdb.connect(str(db)) as con,
        pytest.raises(RoiInputError, match=r"marts\.fleet_size is missing"),
    ):
        read_marts(con)


def test_tables_round_trip_through_duckdb(tmp_path, assumptions):
    db = tmp_path / "talent.duckdb"
    _write_marts(db)
    with duckdb.connect(str(db)) as con:
        tables = build_roi_tables(read_marts(con), assumptions)
        write_tables(con, tables)
        write_tables(con, tables)  # create or replace: a rerun is fine
        counts = {
            n: con.execute(f"select count(*) from marts.{n}").fetchall()[0][0] for n in tables
        }
    assert counts == {n: df.height for n, df in tables.items()}


def test_published_roi_by_period_keeps_totals_and_every_column_is_described(tmp_path, assumptions):
    # the per-driver columns (apprentices, bootcamp fees, certified exits of a quarter) would
    # repeat suppressed training_spend and attrition cells: they stay in schema restricted
    db = tmp_path / "talent.duckdb"
    _write_marts(db)
    with duckdb.connect(str(db)) as con:
        write_tables(con, build_roi_tables(read_marts(con), assumptions))
        published = [r[0] for r in con.execute("describe marts.roi_by_period").fetchall()]
        full = [r[0] for r in con.execute("describe restricted.roi_by_period").fetchall()]
        uncommented = con.execute(
            "select table_name, column_name from duckdb_columns() where schema_name = 'marts' "
            "and table_name like 'roi_%' and (comment is null or comment = '')"
        ).fetchall()
    assert "apprentices" in full and "apprentices" not in published
    assert published == [
        "period_type", "period_start", "period_end", "investment_usd", "return_usd",
        "net_return_usd", "net_roi", "gross_return_multiple",
    ]  # fmt: skip
    assert uncommented == []


def test_asset_materialises_the_three_tables(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    _write_marts(build / "talent.duckdb")
    result = dg.materialize([roi_tables], resources=talent_resources(warehouse_dir=tmp_path))
    assert result.success
    with duckdb.connect(str(build / "talent.duckdb"), read_only=True) as con:
        names = {
            r[0]
            for r in con.execute(
                "select table_name from information_schema.tables where table_schema = 'marts'"
            ).fetchall()
        }
    assert {"roi_by_period", "roi_summary", "roi_sensitivity"} <= names


def test_asset_keeps_its_tables_while_the_input_marts_are_unchanged(tmp_path):
    """The decision before a run (`versions.decide`) leaves the ROI tables out while their input
    marts, the assumptions and the code are those they were computed from."""
    from pipelines.defs.versions import decide, tables_in

    build = tmp_path / "build"
    build.mkdir()
    db = build / "talent.duckdb"
    _write_marts(db)
    instance = dg.DagsterInstance.ephemeral()
    defs = dg.Definitions(assets=[roi_tables])

    def decided():
        return decide(defs, instance, roi_tables.keys, tables_in(db))

    assert decided().because == {"roi_tables": "never computed"}
    first = dg.materialize(
        [roi_tables], resources=talent_resources(warehouse_dir=tmp_path), instance=instance
    )
    assert first.success
    plan = decided()
    assert not plan.selection and set(plan.kept.values()) == {first.run_id}
    # an input mart is rebuilt with other figures (a new data version): computed again
    instance.report_runless_asset_event(
        dg.AssetMaterialization(
            asset_key=[INPUT_SCHEMAS["training_spend"], "training_spend"],
            tags={"dagster/data_version": "rebuilt"},
        )
    )
    plan = decided()
    assert plan.selection == set(roi_tables.keys)
    assert plan.because["roi_tables"].startswith(
        f"new data in {INPUT_SCHEMAS['training_spend']}/training_spend"
    )


def test_asset_fails_with_the_missing_mart_named(tmp_path):
    build = tmp_path / "build"
    build.mkdir()
    _write_marts(build / "talent.duckdb", skip="certification_effect")
    result = dg.materialize(
        [roi_tables],
        resources=talent_resources(warehouse_dir=tmp_path),
        raise_on_error=False,
    )
    assert not result.success
    failure = result.get_step_failure_events()[0].step_failure_data.error
    assert "marts.certification_effect is missing" in str(failure)


def test_larger_measured_effect_never_lowers_downtime_avoided(assumptions):
    """Observed certified downtime fixed; a smaller ratio (larger effect) avoids more."""
    from pipelines.lib.roi import compute_items

    drivers = pl.LazyFrame({"certified_downtime_gpu_hours": [0.0, 1.0, 250.0]})
    grid = [r / 10 for r in range(1, 13)]  # 0.1 .. 1.2 (above 1: certification made it worse)
    p = base_params(assumptions)
    for fixed in (0.3, 0.8, 1.1):
        for name, other in (
            ("incident_rate_ratio", "mttr_ratio"),
            ("mttr_ratio", "incident_rate_ratio"),
        ):
            cols = [
                compute_items(drivers, {**p, name: r, other: fixed}).collect()[
                    "downtime_avoided_usd"
                ]
                for r in grid
            ]
            for row in range(3):
                values = [c[row] for c in cols]
                assert values == sorted(values, reverse=True), (name, fixed, row)


def _with_effect(**incident) -> dict:
    marts = _marts()
    eff = marts["certification_effect"].collect()
    row = {"metric": "incident_rate_ratio", "estimate": 0.8, "ci_low": 0.6, "ci_high": 1.1}
    row.update(incident)
    others = eff.filter(pl.col("metric") != "incident_rate_ratio")
    marts["certification_effect"] = pl.concat(
        [others, pl.DataFrame([row])], how="diagonal_relaxed"
    ).lazy()
    return marts


@pytest.mark.parametrize(
    "incident, reason",
    [
        # the mart's newer contract: flagged, with its reason
        (
            {
                "estimate": None,
                "ci_low": None,
                "ci_high": None,
                "estimable": False,
                "not_estimable_reason": "too few incidents before certification",
            },
            "too few incidents before certification",
        ),
        # the older contract: an infinite interval is not an estimate
        ({"ci_high": float("inf")}, "no estimate with a finite interval"),
    ],
)
def test_a_non_estimable_effect_prices_no_return(assumptions, incident, reason):
    tables = build_roi_tables(_with_effect(**incident), assumptions)
    rows = {r["item"]: r for r in tables["roi_summary"].iter_rows(named=True)}
    downtime = rows["downtime_avoided"]
    assert downtime["amount_usd"] is None and downtime["status"] == "unavailable"
    assert reason in downtime["note"] and "incident rate ratio" in downtime["note"]
    # the other lines are priced as before: contractor is measured, the per-GPU values stated
    p = base_params(assumptions)
    assert rows["contractor_cost_avoided"]["status"] == "measured"
    assert rows["contractor_cost_avoided"]["amount_usd"] == pytest.approx(
        100 * (p["contractor_rate_usd_per_hour"] - p["employee_rate_usd_per_hour"])
    )
    assert rows["efficiency"]["status"] == "stated"
    # and no quarter books downtime avoided on a ratio nobody estimated
    assert tables["roi_by_period"]["downtime_avoided_usd"].abs().sum() == 0


def test_the_inputs_text_names_a_small_group_of_people_by_the_minimum():
    """`apprentices` counts people: 1..k-1 of them read "fewer than k" in roi_summary.inputs, as
    in the marts; counts of events (exam attempts) and larger groups keep their number."""
    from pipelines.lib.roi.warehouse import driver_text

    assert driver_text("apprentices", 4.0, 5) == "apprentices=fewer than 5"
    assert driver_text("apprentices", 3.0, 3) == "apprentices=3"
    assert driver_text("apprentices", 12.0, 5) == "apprentices=12"
    assert driver_text("apprentices", 0.0, 5) == "apprentices=0"
    assert driver_text("exam_attempts", 3.0, 5) == "exam_attempts=3"
