"""The strength of the evidence behind each return, the headline that counts only what this
company's data measure, its verdict at the ends of every range, and the assumptions file's
sources, lines and targets. Expected figures are worked out by hand from the formulas in
pipelines/lib/roi/README.md."""

from __future__ import annotations

import sys
from datetime import date
from pathlib import Path

import polars as pl
import pytest

from pipelines.lib.roi import DEFAULT_ASSUMPTIONS_PATH, base_params, load_assumptions
from pipelines.lib.roi.assumptions import RoiInputError, load_targets
from pipelines.lib.roi.evidence import (
    EffectEvidence,
    components,
    headline,
    headline_sensitivity,
    read_effect_evidence,
    window_drivers,
)
from pipelines.lib.roi.warehouse import build_roi_tables, warehouse_assumptions

sys.path.insert(0, str(Path(__file__).parent))
from test_roi_warehouse import _marts  # noqa: E402

SHOWN, NOT_SHOWN = True, False


def _effects(
    irr=(0.8, 0.6, 1.1, NOT_SHOWN), mttr=(0.5, 0.4, 0.6, SHOWN), hr=(0.6, 0.4, 0.9, SHOWN)
):
    out = {}
    for m, (est, lo, hi, shown) in (
        ("incident_rate_ratio", irr),
        ("mttr_ratio", mttr),
        ("attrition_hazard_ratio", hr),
    ):
        out[m] = EffectEvidence(m, est, lo, hi, True, shown, "" if shown else "interval")
    return out


def _params(effects) -> dict[str, float]:
    p = base_params(load_assumptions(DEFAULT_ASSUMPTIONS_PATH))
    return {**p, **{m: e.estimate for m, e in effects.items()}}


DRIVERS = {
    "certified_downtime_gpu_hours": 1000.0,
    "certified_voluntary_exits": 10.0,
    "contractor_hours_replaced": 100.0,
    "certified_fleet_gpu_years": 10.0,
    "certified_gpus_deployed": 10.0,
    "course_list_price_usd": 10_000.0,
    "training_hours": 100.0,
}


def test_a_line_resting_on_a_shown_and_a_hidden_effect_splits():
    parts = {(c.item, c.evidence): c for c in components(DRIVERS, _params(_effects()), _effects())}
    # faster restore (0.5, shown) alone: 1,000 GPU-hours x (1 / 0.5 - 1) x 50 USD
    faster = parts[("downtime_avoided", "measured")]
    assert faster.amount == pytest.approx(50_000)
    assert faster.label == "Less downtime: faster restore" and faster.rests_on == ("mttr_ratio",)
    # the rest of the line rests on fewer incidents (0.8, not shown): 1,000 x 1.5 x 50 - 50,000
    rest = parts[("downtime_avoided", "not_shown")]
    assert rest.amount == pytest.approx(25_000) and rest.rests_on == ("incident_rate_ratio",)
    # its range: the shown ratio at 0.6 and at 0.4
    assert (faster.low, faster.high) == pytest.approx((1000 * (1 / 0.6 - 1) * 50, 75_000))
    # attrition (0.6, shown): 10 exits x (1 / 0.6 - 1) x 150,000
    assert parts[("attrition_cost_avoided", "measured")].amount == pytest.approx(1_000_000)
    # no effect estimate supports these: assumed
    assert parts[("contractor_cost_avoided", "assumed")].amount == pytest.approx(100 * (300 - 70))
    assert parts[("efficiency", "assumed")].amount == pytest.approx(10 * 5000 * 0.15)
    assert parts[("faster_deployment", "assumed")].amount == pytest.approx(10 * 3000)


def test_an_effect_not_estimable_makes_its_line_unavailable():
    effects = _effects()
    effects["mttr_ratio"] = EffectEvidence("mttr_ratio", None, None, None, False, False, "few")
    parts = components(DRIVERS, _params(effects) | {"mttr_ratio": 1.0}, effects)
    downtime = [c for c in parts if c.item == "downtime_avoided"]
    assert [(c.evidence, c.amount) for c in downtime] == [("unavailable", None)]
    assert "mttr ratio not estimable: few" in downtime[0].why


def test_the_headline_counts_measured_parts_only_with_range_payback_and_verdict():
    effects = _effects()
    h = headline(DRIVERS, _params(effects), effects, date(2025, 10, 1), date(2026, 9, 30))
    assert h.investment == pytest.approx(10_000 + 100 * 70)  # list price + own time
    assert h.counted == pytest.approx(50_000 + 1_000_000)
    assert h.total("not_shown") == pytest.approx(25_000)
    # unfavourable ends: time to restore 0.6, attrition 0.9
    low = 1000 * (1 / 0.6 - 1) * 50 + 10 * (1 / 0.9 - 1) * 150_000
    assert h.counted_low == pytest.approx(low)
    assert h.net_roi == pytest.approx((1_050_000 - 17_000) / 17_000)
    assert h.payback_months == pytest.approx(17_000 / (1_050_000 / 12))
    assert h.verdict == "pays"  # even the low end covers the investment


@pytest.mark.parametrize(
    "hr, verdict",
    [
        ((0.97, 0.90, 1.2, NOT_SHOWN), "not_shown"),  # only faster restore: 50,000 < 60,000
        ((0.8, 0.6, 0.99, SHOWN), "likely"),  # at the estimate yes, at 0.99 no
    ],
)
def test_the_verdict_follows_the_measured_return_and_its_low_end(hr, verdict):
    effects = _effects(hr=hr)
    drivers = {**DRIVERS, "course_list_price_usd": 53_000.0, "certified_voluntary_exits": 1.0}
    h = headline(drivers, _params(effects), effects, date(2025, 10, 1), date(2026, 9, 30))
    assert h.investment == pytest.approx(60_000)
    assert h.verdict == verdict


def test_sensitivity_shows_the_verdict_at_both_ends_of_the_replacement_cost():
    assumed = load_assumptions(DEFAULT_ASSUMPTIONS_PATH)
    effects = _effects()
    for m, e in effects.items():
        assumed[m] = assumed[m].__class__(**{**assumed[m].__dict__, "base": e.estimate})
    drivers = {**DRIVERS, "course_list_price_usd": 200_000.0}
    rows = {s.name: s for s in headline_sensitivity(drivers, assumed, effects)}
    cost = rows["replacement_cost_usd_per_exit"]
    a = assumed["replacement_cost_usd_per_exit"]
    invest = 200_000 + 7_000
    for value, roi in ((a.low, cost.roi_at_low), (a.high, cost.roi_at_high)):
        counted = 50_000 + 10 * (1 / 0.6 - 1) * value
        assert roi == pytest.approx((counted - invest) / invest)
    # at 31,500 per exit the measured return (260,000) still covers 207,000 at the estimates,
    # but not at the low end of the intervals
    assert (cost.verdict_at_low, cost.verdict_at_high) == ("likely", "pays")
    # statistical rows are apart from the assumptions, and an assumption that prices only a
    # return the headline leaves out (the per-GPU values) is not listed
    kinds = [s.kind for s in headline_sensitivity(drivers, assumed, effects)]
    assert kinds == sorted(kinds)  # assumptions first, then statistical
    assert "faster_deployment_usd_per_gpu" not in rows
    assert {"mttr_ratio", "attrition_hazard_ratio", "all measured effects together"} <= set(rows)


def test_window_drivers_sum_the_quarters_inside_the_window():
    bp = pl.DataFrame(
        {
            "period_type": ["quarter", "quarter", "quarter", "year"],
            "period_start": [
                date(2025, 7, 1),
                date(2025, 10, 1),
                date(2026, 7, 1),
                date(2025, 1, 1),
            ],
            "training_hours": [1.0, 10.0, 100.0, 1000.0],
        }
    )
    d = window_drivers(bp, date(2025, 10, 1), date(2026, 7, 1))
    assert d["training_hours"] == 110.0 and d["apprentices"] == 0.0


def test_roi_summary_carries_the_evidence_and_the_counted_part():
    marts = _marts()
    effect = marts["certification_effect"].collect()
    tables = build_roi_tables(marts, load_assumptions(DEFAULT_ASSUMPTIONS_PATH))
    rows = {r["item"]: r for r in tables["roi_summary"].iter_rows(named=True)}
    evidence = read_effect_evidence(effect)
    # the fixture: incidents 0.8 (0.6-1.1) not shown, time to restore 0.625 (0.5-0.9) shown
    assert not evidence["incident_rate_ratio"].shown and evidence["mttr_ratio"].shown
    downtime = rows["downtime_avoided"]
    assert downtime["evidence"] == "measured + not_shown"
    assert downtime["rests_on"] == "incident_rate_ratio, mttr_ratio"
    # 40 certified GPU-hours x (1 / 0.625 - 1) x 50 USD, the incident ratio at 1
    assert downtime["counted_usd"] == pytest.approx(40 * (1 / 0.625 - 1) * 50)
    assert rows["contractor_cost_avoided"]["evidence"] == "assumed"
    assert rows["contractor_cost_avoided"]["counted_usd"] == 0
    assert rows["course_fees"]["evidence"] == "investment"
    sens = tables["roi_sensitivity"]
    kinds = dict(zip(sens["assumption"], sens["kind"], strict=True))
    assert kinds["mttr_ratio"] == "statistical"
    assert kinds["replacement_cost_usd_per_exit"] == "assumption"
    assert warehouse_assumptions  # the warehouse prices with the same assumptions


# --- the assumptions file ----------------------------------------------------------------


def test_every_assumption_names_its_kind_of_source_and_its_line():
    text = DEFAULT_ASSUMPTIONS_PATH.read_text(encoding="utf-8")
    lines = text.splitlines()
    for name, a in load_assumptions(DEFAULT_ASSUMPTIONS_PATH).items():
        assert f"  {name}:\n    source_type:" in text, name  # declared, not inferred
        assert lines[a.line - 1].strip().startswith("base:"), (name, a.line)
        assert a.location == f"assumptions.yaml, line {a.line}"
        if a.source_type == "study":
            assert a.published_range, name


def test_replacement_cost_spans_its_published_range():
    # Boushey and Glynn (2012): a typical 21 % of a year's salary; Gallup (2019): one-half to
    # two times; applied to 150,000 USD, the middle of the seed's level-3 band (125,000-175,000)
    a = load_assumptions(DEFAULT_ASSUMPTIONS_PATH)["replacement_cost_usd_per_exit"]
    salary = (125_000 + 175_000) / 2
    assert (a.low, a.base, a.high) == (0.21 * salary, 1.0 * salary, 2.0 * salary)
    assert a.source_type == "study" and "Gallup (2019)" in a.source


def _with_targets(tmp_path: Path, block: str) -> Path:
    path = tmp_path / "assumptions.yaml"
    text = DEFAULT_ASSUMPTIONS_PATH.read_text(encoding="utf-8")
    path.write_text(text[: text.index("targets:")] + block, encoding="utf-8")
    return path


def test_the_shipped_file_sets_no_target():
    assert load_targets(DEFAULT_ASSUMPTIONS_PATH) == {}


def test_a_target_with_an_owner_is_read_with_its_line(tmp_path):
    path = _with_targets(
        tmp_path,
        "targets:\n  required_cert_compliance:\n    value: 0.8\n    owner: VP Infrastructure\n"
        "    set_on: 2026-01-15\n",
    )
    t = load_targets(path)["required_cert_compliance"]
    assert (t.value, t.owner, t.higher_is_better) == (0.8, "VP Infrastructure", True)
    line = path.read_text().splitlines().index("    value: 0.8") + 1
    assert t.location == f"assumptions.yaml, line {line}"


@pytest.mark.parametrize(
    "block, message",
    [
        (
            "targets:\n  attrition_12m:\n    value: 0.1\n",
            r"line \d+, target 'attrition_12m'.*no owner",
        ),
        ("targets:\n  attrition_12m: {value: 12, owner: CFO}\n", "a share between 0 and 1"),
        ("targets:\n  atrition_12m: {value: 0.1, owner: CFO}\n", "did you mean 'attrition_12m'"),
    ],
)
def test_a_target_nobody_owns_or_cannot_be_read_is_refused(tmp_path, block, message):
    with pytest.raises(RoiInputError, match=message):
        load_targets(_with_targets(tmp_path, block))
