"""The net ROI on measured returns that the report derives from the sensitivity table, checked
against the ROI model re-run with the assumption moved (the seed's worked example)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipelines.lib.report.sections.roi import Item, RoiFacts, _side, measured_roi
from pipelines.lib.roi import load_scenario, run_scenario

WORKED = Path(__file__).resolve().parent.parent / "sources" / "scenarios" / "worked-example.yaml"
STATED = ("efficiency", "faster_deployment")


def _facts(result: dict) -> RoiFacts:
    f = RoiFacts()
    for i in result["items"]:
        kind = (
            "investment"
            if i["category"] == "investment"
            else ("stated" if i["item"] in STATED else "measured")
        )
        f.items.append(Item(i["item"], i["label"], i["amount_usd"], kind))
    f.investment = sum(i.amount for i in f.of("investment"))
    f.measured = sum(i.amount for i in f.of("measured"))
    return f


def _rerun(tmp_path: Path, name: str, value: float) -> RoiFacts:
    doc = yaml.safe_load(WORKED.read_text(encoding="utf-8"))
    doc.setdefault("assumptions", {})[name] = {"base": value, "low": value, "high": value}
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return _facts(run_scenario(load_scenario(path)))


@pytest.mark.parametrize(
    "name, side",
    [
        ("exam_materials_usd_per_attempt", "investment"),  # exam materials only
        ("downtime_cost_usd_per_gpu_hour", "return"),  # less downtime only
        ("contractor_rate_usd_per_hour", "return"),
    ],
)
def test_measured_roi_from_a_sensitivity_row_equals_the_model_rerun(tmp_path, name, side):
    base = run_scenario(load_scenario(WORKED))
    f = _facts(base)
    assert _side(name) == side
    row = next(r for r in base["sensitivity"] if r["assumption"] == name)
    for end in ("low", "high"):
        moved = _rerun(tmp_path, name, row[f"{end}_value"])
        expected = (moved.measured - moved.investment) / moved.investment
        assert measured_roi(row[f"roi_at_{end}"], f, side) == pytest.approx(expected)


def test_an_assumption_on_both_sides_is_not_guessed():
    # the employee rate prices the engineers' own time and the contractor saving
    assert _side("employee_rate_usd_per_hour") == "both"
    assert measured_roi(1.0, RoiFacts(investment=1.0), "both") is None
