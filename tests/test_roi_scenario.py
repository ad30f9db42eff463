"""The ROI planner: the worked example reproduced, hand-checked cases, monotonicity, rounding."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.lib.roi import (
    DEFAULT_ASSUMPTIONS_PATH,
    RoiInputError,
    base_params,
    floor_percent,
    load_assumptions,
    load_scenario,
    run_scenario,
    scenario_drivers,
    totals,
)

SCENARIOS = Path(__file__).resolve().parent.parent / "sources" / "scenarios"
WORKED = SCENARIOS / "worked-example.yaml"


@pytest.fixture(scope="module")
def params() -> dict[str, float]:
    return base_params(load_assumptions(DEFAULT_ASSUMPTIONS_PATH))


# --- the worked example of seed-facts.md, through the command line --------------------------


def test_worked_example_json_reproduces_the_document():
    result = CliRunner().invoke(app, ["roi", "--scenario", str(WORKED), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["investment_usd"] == 145_000
    assert out["annual_return_usd"] == 675_000
    # the document's four return lines and its total investment lines
    amounts = {i["item"]: i["amount_usd"] for i in out["items"]}
    assert amounts["downtime_avoided"] == 100_000
    assert amounts["contractor_cost_avoided"] == 200_000
    assert amounts["efficiency"] == 75_000
    assert amounts["faster_deployment"] == 300_000
    assert amounts["course_fees"] == 75_000  # training: 5 engineers x 15,000
    assert amounts["exam_fees"] + amounts["exam_materials"] == 20_000
    assert amounts["bootcamp_fees"] + amounts["lab_access"] == 50_000
    assert out["first_year_roi"]["ratio"] == pytest.approx((675_000 - 145_000) / 145_000)
    assert out["ongoing_roi"]["ratio"] == pytest.approx(675_000 / 145_000)
    assert out["first_year_roi"]["percent_rounded_down"] == 365
    assert out["ongoing_roi"]["percent_rounded_down"] == 465


def test_worked_example_table_labels_and_explains_rounding():
    result = CliRunner().invoke(app, ["roi", "--scenario", str(WORKED)])
    assert result.exit_code == 0, result.output
    text = result.output
    for expected in (
        "Total investment",
        "145,000",
        "Total annual return",
        "675,000",
        "ROI, first year (net)",
        "365 %",
        "ROI, ongoing (gross return multiple)",
        "465 %",
        "rounded DOWN",
        "Less downtime",
        "Contractor cost avoided",
        "ASSUMED",
    ):
        assert expected in text, expected


def test_missing_scenario_file_is_named_in_the_error(tmp_path):
    missing = tmp_path / "nope.yaml"
    result = CliRunner().invoke(app, ["roi", "--scenario", str(missing)])
    assert result.exit_code == 1
    assert "nope.yaml" in result.output and "not found" in result.output


def test_unknown_quantity_suggests_the_right_name(tmp_path):
    f = tmp_path / "typo.yaml"
    f.write_text("name: t\nquantities:\n  fleet_gpu: {value: 10, basis: given}\n")
    with pytest.raises(RoiInputError, match=r"typo\.yaml.*fleet_gpu.*did you mean 'fleet_gpus'"):
        load_scenario(f)


def test_bad_assumption_value_names_file_and_key(tmp_path):
    f = tmp_path / "bad.yaml"
    f.write_text("name: t\nassumptions:\n  employee_rate_usd_per_hour: {base: seventy}\n")
    with pytest.raises(RoiInputError, match=r"bad\.yaml.*employee_rate_usd_per_hour.*number"):
        load_scenario(f)


# --- the three worked cases -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["case-financial-services", "case-health-system", "case-startup"])
def test_worked_cases_run_and_mark_their_assumptions(name):
    result = run_scenario(load_scenario(SCENARIOS / f"{name}.yaml"))
    assert result["investment_usd"] > 0
    assert any(q["basis"] == "assumed" for q in result["quantities"])
    assert any(q["basis"] == "given" for q in result["quantities"])


def test_financial_services_case_invests_what_the_text_says():
    """The text: 180,000 USD training + 300,000 USD contractor support."""
    items = {
        i["item"]: i["amount_usd"]
        for i in run_scenario(load_scenario(SCENARIOS / "case-financial-services.yaml"))["items"]
    }
    training = sum(
        items[k]
        for k in (
            "course_fees",
            "bootcamp_fees",
            "exam_fees",
            "exam_materials",
            "lab_access",
            "vendor_discounts",
        )
    )
    assert training == 180_000
    assert items["transition_support"] == 300_000


# --- a small case computed by hand ----------------------------------------------------------


def test_small_case_by_hand(params):
    p = {
        **params,
        "course_fee_usd_per_participant": 1000.0,
        "vendor_discount_share": 0.5,
        "exam_fee_usd": 200.0,
        "exam_materials_usd_per_attempt": 50.0,
        "lab_access_usd_per_enrolment": 100.0,
        "training_hours_per_participant": 10.0,
        "employee_rate_usd_per_hour": 50.0,
        "contractor_rate_usd_per_hour": 150.0,
        "incident_rate_ratio": 0.5,
        "mttr_ratio": 0.5,
        "downtime_cost_usd_per_gpu_hour": 10.0,
        "fleet_cost_usd_per_gpu_year": 1000.0,
        "efficiency_share_of_fleet_cost": 0.1,
        "faster_deployment_usd_per_gpu": 0.0,
    }
    q = {
        "course_participants": 2,
        "vendor_course_participants": 1,
        "exam_attempts": 2,
        "lab_enrolments": 2,
        "training_participants": 2,
        "baseline_downtime_gpu_hours": 100,
        "contractor_hours_replaced": 10,
        "fleet_gpus": 10,
    }
    t = totals(scenario_drivers(q, p), p)
    assert t["efficiency_usd"] == 1000  # whole team certified by default: 10 GPUs x 1000 x 0.1
    q["certified_share_of_team"] = 0.5
    t = totals(scenario_drivers(q, p), p)
    # investment: fees 2 x 1000 = 2000, discount -1 x 1000 x 0.5 = -500, exams 2 x 200 = 400,
    # materials 2 x 50 = 100, labs 2 x 100 = 200, own time 2 x 10 h x 50 = 1000 -> 3200
    assert t["investment_usd"] == 3200
    # returns: downtime 100 x (1 - 0.25) x 10 = 750; contractor 10 x (150 - 50) = 1000;
    # efficiency on half the team certified: 10 x 0.5 x 1000 x 0.1 = 500 -> 2250
    assert t["downtime_avoided_usd"] == 750
    assert t["return_usd"] == 2250
    assert t["net_roi"] == pytest.approx((2250 - 3200) / 3200)
    assert t["gross_return_multiple"] == pytest.approx(2250 / 3200)


def test_no_investment_gives_no_ratio(params):
    t = totals(scenario_drivers({"fleet_gpus": 10}, params), params)
    assert t["investment_usd"] == 0 and t["net_roi"] is None and t["gross_return_multiple"] is None


# --- monotonicity (property style over a grid) ----------------------------------------------


def test_higher_contractor_rate_never_lowers_the_return(params):
    q = {"contractor_hours_replaced": 500, "fleet_gpus": 20, "baseline_downtime_gpu_hours": 50}
    for employee_rate in (40.0, 70.0, 120.0):
        previous = None
        for rate in range(0, 601, 25):
            p = {
                **params,
                "contractor_rate_usd_per_hour": float(rate),
                "employee_rate_usd_per_hour": employee_rate,
            }
            ret = totals(scenario_drivers(q, p), p)["return_usd"]
            assert previous is None or ret >= previous, (rate, employee_rate)
            previous = ret


def test_larger_effect_never_lowers_downtime_avoided(params):
    """A smaller incident-rate or MTTR ratio means a larger effect."""
    ratios = [r / 20 for r in range(2, 21)]  # 0.1 .. 1.0
    for baseline in (10.0, 1000.0):
        q = {"baseline_downtime_gpu_hours": baseline}
        for fixed in ratios[::6]:
            avoided = [
                totals(scenario_drivers(q, p), p)["downtime_avoided_usd"]
                for p in ({**params, "incident_rate_ratio": r, "mttr_ratio": fixed} for r in ratios)
            ]
            assert avoided == sorted(avoided, reverse=True)
            avoided = [
                totals(scenario_drivers(q, p), p)["downtime_avoided_usd"]
                for p in ({**params, "incident_rate_ratio": fixed, "mttr_ratio": r} for r in ratios)
            ]
            assert avoided == sorted(avoided, reverse=True)


# --- rounding and sensitivity -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("ratio", "shown"),
    [
        (530_000 / 145_000, 365),
        (675_000 / 145_000, 465),
        (3.0 - 1e-12, 300),
        (0.999, 99),
        (-0.255, -26),
        (None, None),
    ],
)
def test_floor_percent_rounds_down_like_the_document(ratio, shown):
    assert floor_percent(ratio) == shown


def test_sensitivity_base_column_is_the_base_roi():
    result = run_scenario(load_scenario(WORKED))
    sens = pl.DataFrame(result["sensitivity"])
    assert sens["base_roi"].unique().to_list() == [pytest.approx(result["first_year_roi"]["ratio"])]
    row = sens.filter(pl.col("assumption") == "contractor_rate_usd_per_hour").row(0, named=True)
    assert row["roi_at_low"] < row["base_roi"] < row["roi_at_high"]
    # 100 USD/h less margin on 869.57 h lowers the return by 86,956.52
    assert row["roi_at_low"] == pytest.approx((530_000 - 100 * 200_000 / 230) / 145_000)


def test_assumptions_are_read_from_the_path_given(tmp_path):
    own = tmp_path / "assumptions.yaml"
    own.write_text(
        "assumptions:\n"
        "  downtime_cost_usd_per_gpu_hour:\n"
        "    {unit: USD/GPU-hour, source: customer estimate, low: 1, base: 2, high: 3}\n",
        encoding="utf-8",
    )
    loaded = load_assumptions(own)
    assert list(loaded) == ["downtime_cost_usd_per_gpu_hour"]
    assert loaded["downtime_cost_usd_per_gpu_hour"].base == 2
    with pytest.raises(TypeError):
        load_assumptions()  # type: ignore[call-arg]  # no hidden default: the caller names it


def test_voluntary_exits_avoided_follow_the_hazard_ratio(tmp_path):
    f = tmp_path / "exits.yaml"
    f.write_text(
        "name: exits\nquantities:\n"
        "  baseline_voluntary_exits: {value: 10, basis: given}\n"
        "assumptions:\n"
        "  attrition_hazard_ratio: {base: 0.7}\n"
        "  replacement_cost_usd_per_exit: {base: 100000}\n"
    )
    items = {i["item"]: i["amount_usd"] for i in run_scenario(load_scenario(f))["items"]}
    # certified engineers leave at 0.7 x the baseline: 10 x (1 - 0.7) = 3 exits avoided
    assert items["attrition_cost_avoided"] == pytest.approx(3 * 100_000)
