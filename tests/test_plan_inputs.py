"""The fleet plan is checked like an export: bad rows named by file, line and reason."""

from pathlib import Path

import pytest

from pipelines.lib.plan.fleet import PlanInputError, find_fleet_plan, read_fleet_plan

SAMPLE = Path(__file__).resolve().parent.parent / "sources" / "sample"


def test_the_bundled_sample_plan_reads_whole():
    path = find_fleet_plan(SAMPLE)
    rows = read_fleet_plan(path)
    lines = path.read_text().splitlines()
    assert len(rows) == len(lines) - 1
    first = lines[1].split(",")
    assert (rows[0].cluster, rows[0].quarter, rows[0].planned_gpus) == (
        first[0],
        first[1],
        int(first[2]),
    )
    assert read_fleet_plan(path) == rows  # read twice, the same plan


def test_bad_rows_are_named_with_file_line_and_reason(tmp_path):
    path = tmp_path / "fleet_plan.csv"
    path.write_text(
        "cluster;quarter;GPUs\n"
        "fra-1;2027-Q1;100\n"
        "fra-1;2027-13;100\n"
        ";2027-Q2;5\n"
        "fra-1;2027-Q1;120\n"
        "fra-2;2027-Q1;many\n"
    )
    with pytest.raises(PlanInputError) as exc:
        read_fleet_plan(path)
    text = str(exc.value)
    assert "fleet_plan.csv line 3: quarter '2027-13' is not a quarter" in text
    assert "fleet_plan.csv line 4: cluster is empty" in text
    assert "fleet_plan.csv line 5: fra-1 2027-Q1 is planned twice (also line 2)" in text
    assert "fleet_plan.csv line 6: planned_gpus 'many'" in text
    assert "line 2:" not in text


def test_yaml_plan_and_a_missing_column(tmp_path):
    good = tmp_path / "plans" / "fleet_plan.yaml"
    good.parent.mkdir()
    good.write_text("clusters:\n  - {cluster: a, quarter: 2027Q3, planned_gpus: 1200}\n")
    assert find_fleet_plan(tmp_path) == good
    [row] = read_fleet_plan(good)
    assert (row.cluster, row.quarter, row.planned_gpus) == ("a", "2027-Q3", 1200)
    bad = tmp_path / "fleet_plan.csv"
    bad.write_text("cluster,quarter\na,2027-Q1\n")
    with pytest.raises(PlanInputError, match="no column planned_gpus"):
        read_fleet_plan(bad)
    with pytest.raises(PlanInputError, match="no fleet plan in"):
        find_fleet_plan(tmp_path / "elsewhere")
