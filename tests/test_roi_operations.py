"""The operations returns: efficiency and faster deployment priced from marts.operations_effect.

The effects are those the generator plants (`tools.generate.operations.OperationsModel`), the
projects and cluster-months small frames; every expected amount is recomputed here directly
from the frames with the formula the README states (days saved = days x (ratio^-share - 1) per
expansion, once; lost GPU-hours avoided = available x 10 x certified share x -effect), priced at
the assumptions file's fleet cost per GPU-year over 8,760 hours.
"""

from __future__ import annotations

import html
from datetime import date

import polars as pl
import pytest

from pipelines.lib.report import charts
from pipelines.lib.report.sections.roi import RoiFacts
from pipelines.lib.report.sections.summary import return_chart, verdict
from pipelines.lib.roi import DEFAULT_ASSUMPTIONS_PATH, base_params, load_assumptions
from pipelines.lib.roi.evidence import headline, read_effect_evidence
from pipelines.lib.roi.warehouse import build_roi_tables, warehouse_assumptions
from tests.test_roi_warehouse import _marts
from tools.generate.operations import OperationsModel

PLANTED = OperationsModel()
ASSUMPTIONS = load_assumptions(DEFAULT_ASSUMPTIONS_PATH)
MIN_GROUP = 5
GPU_HOUR = ASSUMPTIONS["fleet_cost_usd_per_gpu_year"].base / 8760.0

PROJECTS = pl.DataFrame(
    {
        "project_id": ["p1", "p2", "p3", "p4", "p5"],
        "gpus_added": [512.0, 256.0, 128.0, 64.0, 1024.0],
        "accepted_on": [date(2024, 2, 10), date(2024, 3, 1), date(2024, 5, 20), date(2024, 6, 2), None],
        "days_to_production": [28.0, 40.0, 15.0, 22.0, None],
        # both leads certified, one of two, none, one of three; p5 is still commissioning
        "certified_share_of_leads": [1.0, 0.5, 0.0, 1 / 3, 1.0],
    }
)  # fmt: skip
UTILISATION = pl.DataFrame(
    {
        "month": [date(2024, 1, 1), date(2024, 1, 1), date(2024, 4, 1), date(2024, 5, 1)],
        "cluster": ["a", "b", "a", "a"],
        "gpu_hours_available": [89_280.0, 29_760.0, 86_400.0, 148_800.0],
        "certified_share": [0.5, 0.2, 0.75, None],
    }
)


def _ops_effect(estimable: bool = True) -> pl.DataFrame:
    """The planted effects as the estimator would publish them (a narrow interval around them)."""
    r, b = PLANTED.commissioning_time_ratio, PLANTED.lost_share_per_10_points
    return pl.DataFrame(
        {
            "metric": ["commissioning_time_ratio", "lost_share_per_10_points"],
            "estimate": [r, b] if estimable else [None, None],
            "ci_low": [r - 0.1, b - 0.002] if estimable else [None, None],
            "ci_high": [r + 0.1, b + 0.002] if estimable else [None, None],
            "estimable": [estimable, estimable],
            "finding": [estimable, estimable],
            "not_estimable_reason": [None, None] if estimable else ["too few projects"] * 2,
            "data_needed": [None, None] if estimable else ["more expansions"] * 2,
        },
        schema_overrides={"estimate": pl.Float64, "ci_low": pl.Float64, "ci_high": pl.Float64},
    )


def _tables(estimable: bool = True) -> dict[str, pl.DataFrame]:
    marts = {
        **_marts(),
        "capacity_commissioning": PROJECTS.lazy(),
        "cluster_utilisation": UTILISATION.lazy(),
        "operations_effect": _ops_effect(estimable).lazy(),
    }
    return build_roi_tables(marts, ASSUMPTIONS)


def _line(tables, item: str) -> dict:
    s = tables["roi_summary"]
    return s.filter(pl.col("item") == item).row(0, named=True)


def test_deployment_return_is_the_days_saved_once_per_expansion_at_the_named_price():
    r = PLANTED.commissioning_time_ratio
    done = PROJECTS.filter(pl.col("accepted_on").is_not_null())
    saved_gpu_hours = sum(
        24 * g * d * (r ** (-s) - 1)
        for g, d, s in done.select(
            "gpus_added", "days_to_production", "certified_share_of_leads"
        ).iter_rows()
    )
    tables = _tables()
    line = _line(tables, "faster_deployment")
    assert line["amount_usd"] == pytest.approx(saved_gpu_hours * GPU_HOUR, rel=1e-5)
    assert (line["effect_evidence"], line["price_evidence"]) == ("measured", "assumed")
    assert line["status"] == "measured" and line["counted_usd"] == pytest.approx(line["amount_usd"])
    # once per expansion, in the quarter it was accepted: p1, p2 in Q1, p3, p4 in Q2
    bp = tables["roi_by_period"].filter(pl.col("period_type") == "quarter").sort("period_start")
    q1 = sum(24 * g * d * (r ** (-s) - 1) for g, d, s in [(512, 28, 1.0), (256, 40, 0.5)])
    assert bp["faster_deployment_usd"].to_list() == pytest.approx(
        [q1 * GPU_HOUR, (saved_gpu_hours - q1) * GPU_HOUR], rel=1e-5
    )
    # the installed fleet does not earn it again: the fleet's size does not enter
    bigger = {
        **_marts(),
        "fleet_size": _marts()["fleet_size"].with_columns(pl.col("gpu_count") * 10),
    }
    again = build_roi_tables(
        {**bigger, "capacity_commissioning": PROJECTS.lazy(),
         "cluster_utilisation": UTILISATION.lazy(), "operations_effect": _ops_effect().lazy()},
        ASSUMPTIONS,
    )  # fmt: skip
    assert _line(again, "faster_deployment")["amount_usd"] == pytest.approx(line["amount_usd"])


def test_efficiency_is_the_lost_gpu_hours_avoided_at_the_named_price():
    b = PLANTED.lost_share_per_10_points
    avoided = sum(
        a * 10 * (s or 0.0) * -b
        for a, s in UTILISATION.select("gpu_hours_available", "certified_share").iter_rows()
    )
    line = _line(_tables(), "efficiency")
    assert line["amount_usd"] == pytest.approx(avoided * GPU_HOUR, abs=0.005)  # cents
    assert (line["effect_evidence"], line["price_evidence"]) == ("measured", "assumed")
    assert "lost_share_per_10_points=-0.008" in line["inputs"]


def test_not_estimable_operations_effects_leave_the_lines_assumed_and_name_the_export():
    tables = _tables(estimable=False)
    deploy = _line(tables, "faster_deployment")
    # the stated value, once per GPU deployed by certified leads: sum of GPUs x certified share
    gpus = sum(
        g * s
        for g, s, when in PROJECTS.select(
            "gpus_added", "certified_share_of_leads", "accepted_on"
        ).iter_rows()
        if when is not None
    )
    assert deploy["amount_usd"] == pytest.approx(
        gpus * ASSUMPTIONS["faster_deployment_usd_per_gpu"].base
    )
    assert (deploy["status"], deploy["evidence"], deploy["effect_evidence"]) == (
        "stated", "assumed", "assumed"
    )  # fmt: skip
    assert deploy["counted_usd"] == 0
    effects = read_effect_evidence(_ops_effect(estimable=False))
    assumed = warehouse_assumptions(
        ASSUMPTIONS, _marts()["certification_effect"].collect(), _ops_effect(False)
    )
    h = headline({"certified_gpus_deployed": gpus}, base_params(assumed), effects)
    part = next(c for c in h.parts if c.item == "faster_deployment")
    assert part.evidence == "assumed" and "capacity_changes export" in part.why


def test_every_line_of_the_summary_carries_both_evidence_tags():
    for estimable in (True, False):
        s = _tables(estimable)["roi_summary"]
        returns = s.filter(pl.col("category") == "return")
        assert set(returns["effect_evidence"]) <= {"measured", "assumed"}
        assert set(s["price_evidence"]) <= {"measured", "assumed"}
        assert s["effect_evidence"].null_count() == 0 and s["price_evidence"].null_count() == 0
        # nothing the assumptions file prices is called measured
        assert set(returns["price_evidence"]) == {"assumed"}


def _facts(estimable: bool, operations: bool = True) -> RoiFacts:
    """Page 1's facts; `operations` False: no operations export delivered (no effect rows)."""
    ops = _ops_effect(estimable) if operations else _ops_effect(estimable).head(0)
    assumed = warehouse_assumptions(ASSUMPTIONS, _marts()["certification_effect"].collect(), ops)
    effects = read_effect_evidence(
        pl.concat([_marts()["certification_effect"].collect(), ops], how="diagonal_relaxed")
    )
    summed = {
        "certified_voluntary_exits": 10.0,
        "certified_downtime_gpu_hours": 1000.0,
        "certified_fleet_gpu_years": 500.0,
        "certified_gpus_deployed": 400.0,
        "certified_share_gpu_hours": 5_000_000.0,
        "commissioning_gpu_hours_share_pow1": 300_000.0,
        "course_list_price_usd": 200_000.0,
    }
    h = headline(summed, base_params(assumed), effects, date(2023, 10, 1), date(2024, 9, 30))
    return RoiFacts(year=h, since=h, assumptions=assumed)


def test_page_one_never_draws_a_bar_for_assumed_money_and_says_how_to_measure_it():
    f = _facts(estimable=False)
    assumed = [c for c in f.year.parts if c.evidence == "assumed" and c.amount]
    assert {c.item for c in assumed} >= {"efficiency", "faster_deployment"}
    chart = return_chart(f)
    assert isinstance(chart, charts.Chart)
    text = str(verdict(f))
    for c in assumed:
        assert c.label not in chart.svg
        assert c.label.lower() in text
    # the exports were delivered, the effects are not estimable: more of them would measure it
    assert "the gpu_usage export holds too few clusters and months to measure it" in text
    assert "the capacity_changes export holds too few expansions to measure it" in text
    assert "export would measure it" not in text
    # without the exports, page 1 names the export that would measure each
    text = str(verdict(_facts(estimable=False, operations=False)))
    assert "gpu_usage export would measure it" in text
    assert "capacity_changes export would measure it" in text


def test_the_headline_names_what_it_multiplies():
    f = _facts(estimable=True)
    text = str(verdict(f))
    assert "measured effect × assumed price of $150,000 per voluntary exit" in text
    assert f"${GPU_HOUR:,.2f} per GPU-hour of capacity" in text


def _report_effects(shown_both: bool = True):
    import pandas as pd

    from pipelines.lib.report.sections.effects import read_effects

    return read_effects(
        pd.DataFrame(
            {
                "metric": ["incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio"],
                "estimate": [0.7, 0.8, 0.6],
                "ci_low": [0.6, 0.7, 0.4],
                "ci_high": [0.8, 0.9, 0.9],
                "estimable": [True, True, True],
                "finding": [shown_both, True, True],
            }
        )
    )


def test_page_one_prints_the_downtime_return_once_when_incidents_and_restore_are_both_shown():
    from pipelines.lib.report.sections.roi import evidence_of
    from pipelines.lib.report.sections.summary import effect_rows

    effects = _report_effects()
    assumed = warehouse_assumptions(
        ASSUMPTIONS, _marts()["certification_effect"].collect(), _ops_effect(False)
    )
    summed = {"certified_downtime_gpu_hours": 10_000.0, "certified_voluntary_exits": 4.0,
              "course_list_price_usd": 50_000.0}  # fmt: skip
    h = headline(summed, base_params(assumed), evidence_of(effects))
    f = RoiFacts(year=h, since=h, assumptions=assumed)
    cells = [str(row[3]) for row in effect_rows(effects, f)]
    downtime = next(c for c in h.parts if c.item == "downtime_avoided")
    assert downtime.rests_on == ("incident_rate_ratio", "mttr_ratio")
    printed = [c for c in cells if f"${downtime.amount:,.0f}" in c]
    assert len(printed) == 1, cells
    assert "counted once, with incidents" in cells[1]


def test_page_one_gives_the_verdict_at_both_ends_of_an_assumed_price_that_flips_it():
    from pipelines.lib.roi.evidence import headline_sensitivity

    effects = read_effect_evidence(_marts()["certification_effect"].collect().with_columns(
        estimate=pl.lit(0.6), ci_low=pl.lit(0.5), ci_high=pl.lit(0.7)))  # fmt: skip
    assumed = warehouse_assumptions(
        ASSUMPTIONS,
        _marts()["certification_effect"]
        .collect()
        .with_columns(estimate=pl.lit(0.6), ci_low=pl.lit(0.5), ci_high=pl.lit(0.7)),
        _ops_effect(False),
    )
    # 10 certified exits at a hazard ratio of 0.6: 10 x (1 / 0.6 - 1) = 6.67 exits avoided; at
    # the base 150,000 per exit 1.0M returned, at the low 31,500 only 210,000: an investment of
    # 500,000 is covered at the base, not at the low end
    summed = {"certified_voluntary_exits": 10.0, "course_list_price_usd": 500_000.0}
    h = headline(summed, base_params(assumed), effects)
    swings = headline_sensitivity(summed, assumed, effects)
    f = RoiFacts(year=h, since=h, assumptions=assumed, swings=swings)
    text = str(verdict(f))
    low = assumed["replacement_cost_usd_per_exit"].low
    roi_low = (10 * (1 / 0.6 - 1) * low - 500_000) / 500_000
    assert f"${low:,.0f}" in text and f"{roi_low * 100:.0f}" in text.replace("−", "-")
    assert "does not pay off" in text and "verdict changes" in text


# --- end to end: a generated company with the planted operations effects --------------------


def check_operations_returns(warehouse) -> dict[str, str]:
    """Recompute the two operations returns of a warehouse's roi_summary from its marts: the
    effects from marts.operations_effect, the expansions and cluster-months from the build
    file's restricted marts, the price from the assumptions file. Returns each line's mode."""
    import duckdb

    with duckdb.connect(str(warehouse / "build" / "talent.duckdb"), read_only=True) as con:
        eff = {
            m: (est, ok)
            for m, est, ok in con.execute(
                "select metric, estimate, estimable from marts.operations_effect"
            ).fetchall()
        }
        projects = con.execute(
            "select gpus_added, days_to_production, coalesce(certified_share_of_leads, 0) "
            "from restricted.capacity_commissioning where accepted_on is not null "
            "and days_to_production > 0 and gpus_added > 0"
        ).fetchall()
        hours = con.execute(
            "select sum(gpu_hours_available * 10 * coalesce(certified_share, 0)) "
            "from restricted.cluster_utilisation"
        ).fetchone()[0]
        lines = {
            item: (amount, status, ev)
            for item, amount, status, ev in con.execute(
                "select item, amount_usd, status, effect_evidence from marts.roi_summary"
            ).fetchall()
        }
    modes = {}
    ratio, ok = eff.get("commissioning_time_ratio", (None, False))
    amount, status, ev = lines["faster_deployment"]
    if ok:
        saved = sum(24 * g * d * (ratio ** (-s) - 1) for g, d, s in projects)
        assert amount == pytest.approx(saved * GPU_HOUR, rel=1e-5)
        assert (status, ev) == ("measured", "measured")
    else:
        stated = ASSUMPTIONS["faster_deployment_usd_per_gpu"].base
        assert amount == pytest.approx(sum(g * s for g, _, s in projects) * stated, rel=1e-9)
        assert (status, ev) == ("stated", "assumed")
    modes["faster_deployment"] = status
    slope, ok = eff.get("lost_share_per_10_points", (None, False))
    amount, status, ev = lines["efficiency"]
    if ok:
        assert amount == pytest.approx(hours * -slope * GPU_HOUR, rel=1e-6)
        assert (status, ev) == ("measured", "measured")
    modes["efficiency"] = status
    return modes


@pytest.mark.slow
def test_a_generated_company_prices_its_operations_returns_from_its_marts(shared_company):
    """The shared company (600 employees, 2 years, the generator's planted operations world):
    each line recomputed from the marts, measured or stated as the estimator found."""
    modes = check_operations_returns(shared_company.warehouse)
    assert set(modes.values()) <= {"measured", "stated"}


def test_certifying_is_priced_from_one_to_every_certification_the_role_requires():
    """127 engineers missing a required certification are not 127 certifications when their
    roles require up to three: the one-off cost is a range, from one each to all of them."""
    from pathlib import Path

    import pandas as pd

    from pipelines.lib.report.data import Marts
    from pipelines.lib.report.sections.actions import Action, _one_off, clusters

    month = date(2026, 9, 1)
    tc = pd.DataFrame(
        {
            "month": [month] * 3,
            "team": ["a", "a", "b"],
            "role_family": ["operations_engineer", "infrastructure_architect", "senior_engineer"],
            "gpu_count": [1200, 1200, 300],
            "fleet_size_class": ["large", "large", "medium"],
            "headcount": [10, 6, 8],
            "required_cert_compliant_headcount": [4, 5, 8],
            "required_certification_codes": ["NCA-AIIO", "NCA-AIIO;NCP-AII;NCP-AIO", None],
        }
    )
    cov = pd.DataFrame(
        {
            "month": [month] * 2,
            "segment_type": ["team"] * 2,
            "segment_value": ["a", "b"],
            "headcount": [16, 8],
            "any_cert_headcount": [9, 8],
            "expiring_next_90d": [0, 0],
        }
    )
    found = {c.team: c for c in clusters(Marts({"team_composition": tc,
                                                "certification_coverage": cov}, Path(".")),
                                         month, 5)}  # fmt: skip
    # team a: 6 operations engineers lack their one certification, 1 architect up to three
    assert found["a"].missing == 7 and found["a"].missing_most == 6 * 1 + 1 * 3
    assert found["b"].missing == 0
    action = Action("certify", "", "", 7 * 1000.0, 0.0, "", one_off_most=9 * 1000.0)
    assert _one_off(action) == "$7,000 to $9,000"
    assert _one_off(Action("certify", "", "", 7000.0, 0.0, "", 7000.0)) == "$7,000"


# --- the company's own figure: a price its named owner states -----------------------------------


def _with_company_gpu_cost(tmp_path, owner: str | None = "Finance, infrastructure controlling"):
    """The shipped assumptions file with the fleet's cost per GPU-year stated by the company."""
    import yaml

    doc = yaml.safe_load(DEFAULT_ASSUMPTIONS_PATH.read_text(encoding="utf-8"))
    entry = doc["assumptions"]["fleet_cost_usd_per_gpu_year"]
    entry.update(source_type="company", source="finance: depreciation and power per GPU-year")
    entry.update(low=6000, base=7008, high=8000, set_on="2026-01-15")
    if owner is not None:
        entry["owner"] = owner
    path = tmp_path / "assumptions.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return path


def test_a_company_figure_needs_its_owner(tmp_path):
    from pipelines.lib.roi import RoiInputError

    with pytest.raises(RoiInputError, match="a company figure needs 'owner:'"):
        load_assumptions(_with_company_gpu_cost(tmp_path, owner=None))
    a = load_assumptions(_with_company_gpu_cost(tmp_path))["fleet_cost_usd_per_gpu_year"]
    assert (a.source_type, a.owner, a.set_on) == (
        "company",
        "Finance, infrastructure controlling",
        "2026-01-15",
    )


def test_a_company_figure_prices_as_the_company_s_data_and_page_one_names_its_owner(tmp_path):
    from pipelines.lib.roi.evidence import headline_sensitivity
    from pipelines.lib.roi.warehouse import measured_prices

    own = load_assumptions(_with_company_gpu_cost(tmp_path))
    ops = _ops_effect(True)
    cert = _marts()["certification_effect"].collect()
    no_requisitions = pl.DataFrame(schema={"component": pl.String, "amount_usd": pl.Float64})
    assumed, measured = measured_prices(
        no_requisitions, warehouse_assumptions(own, cert, ops), MIN_GROUP
    )
    assert measured == {"fleet_cost_usd_per_gpu_year"}
    effects = read_effect_evidence(pl.concat([cert, ops], how="diagonal_relaxed"))
    summed = {"certified_share_gpu_hours": 5_000_000.0, "course_list_price_usd": 200_000.0}
    params = base_params(assumed)
    h = headline(summed, params, effects, date(2023, 10, 1), date(2024, 9, 30), measured)
    efficiency = next(c for c in h.parts if c.item == "efficiency")
    assert efficiency.evidence == "measured" and efficiency.price_evidence == "measured"
    # the owner's figure is no assumption whose end could flip the verdict
    swings = headline_sensitivity(summed, assumed, effects, measured)
    assert "fleet_cost_usd_per_gpu_year" not in {s.name for s in swings}
    text = html.unescape(
        str(verdict(RoiFacts(year=h, since=h, swings=swings, assumptions=assumed)))
    )
    price = f"${7008 / 8760:,.2f} per GPU-hour of capacity"
    assert (
        f"the company's own price of {price} "
        "(stated by Finance, infrastructure controlling, 2026-01-15)"
    ) in text
    # with the shipped (assumed) figure the same line reads as assumed
    plain, none = measured_prices(
        no_requisitions, warehouse_assumptions(ASSUMPTIONS, cert, ops), MIN_GROUP
    )
    assert none == frozenset()
    h = headline(summed, base_params(plain), effects, date(2023, 10, 1), date(2024, 9, 30))
    assert next(c for c in h.parts if c.item == "efficiency").price_evidence == "assumed"
