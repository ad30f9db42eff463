"""The generator's operations exports: Slurm, Grafana/DCGM, ServiceNow and Jira files that the
vendor profiles read without quarantine, drawn from a stream of their own so that every other
file stays byte-identical whatever the operations world plants."""

from __future__ import annotations

import csv
import json
from collections import defaultdict
from datetime import date
from pathlib import Path

import pytest

from pipelines.lib.ingest.check import check_sources
from tools.generate import OperationsModel, generate_company

END = date(2026, 9, 30)
PROFILES = {
    "fleet/sacct_": "slurm-sacct",
    "fleet/dcgm-data_": "grafana-dcgm",
    "changes/change_request_": "servicenow-change",
    "changes/Jira Capacity_": "jira-epics",
}


def generate(out: Path, operations: OperationsModel | None = None) -> Path:
    generate_company(
        out, employees=500, years=2, end_date=END, seed=23, progress=False, operations=operations
    )
    return out


@pytest.fixture(scope="module")
def company(tmp_path_factory) -> Path:
    return generate(tmp_path_factory.mktemp("ops"))


@pytest.fixture(scope="module")
def truth(company) -> dict:
    return json.loads((company / "ground_truth.json").read_text())["operations"]


def test_every_operations_file_is_read_by_its_tools_profile_without_quarantine(company, truth):
    files = {f.path: f for f in check_sources(company).files}
    assert truth["files"], "no operations files written"
    for name in truth["files"]:
        check = files[name]
        prefix = next(p for p in PROFILES if name.startswith(p))
        assert (check.status, check.profile) == ("loads", PROFILES[prefix]), check
        assert check.quarantined == 0 and check.rows > 0, check
        assert check.period == name.rsplit("_", 1)[1][:7], check
    assert {p.rsplit("_", 1)[0] + "_" for p in truth["files"]} == set(PROFILES)


def test_sacct_is_pipe_separated_and_lost_hours_are_failed_jobs(company):
    """Independent reading of the sacct files: GPU-hours from AllocTRES x Elapsed; the lost share
    of the allocated hours is that of FAILED, NODE_FAIL and OUT_OF_MEMORY jobs."""
    allocated, lost = defaultdict(float), defaultdict(float)
    for path in sorted((company / "fleet").glob("sacct_*.csv")):
        text = path.read_text(encoding="utf-8")
        assert '"' not in text and "," not in text.splitlines()[0]
        for row in csv.DictReader(text.splitlines(), delimiter="|"):
            gpus = int(row["AllocTRES"].split("gres/gpu=")[1].split(",")[0])
            days, _, clock = row["Elapsed"].rpartition("-")
            h, m, s = (int(x) for x in clock.split(":"))
            hours = int(days or 0) * 24 + h + m / 60 + s / 3600
            key = (row["Cluster"], path.name)
            allocated[key] += gpus * hours
            if row["State"] in ("FAILED", "NODE_FAIL", "OUT_OF_MEMORY"):
                lost[key] += gpus * hours
    shares = [lost[k] / allocated[k] for k in allocated]
    assert all(0 < s < 0.6 for s in shares)
    assert 0.03 < sum(shares) / len(shares) < 0.2


def test_other_exports_stay_byte_identical_whatever_the_operations_world(company, tmp_path, truth):
    none = OperationsModel(
        change_failure_ratio=1.0,
        busy_share_per_10_points=0.0,
        lost_share_per_10_points=0.0,
        commissioning_time_ratio=1.0,
    )
    other = generate(tmp_path / "none", none)
    planted = json.loads((other / "ground_truth.json").read_text())["operations"]
    ops = set(truth["files"]) | set(planted["files"])

    def files(root: Path) -> dict[str, bytes]:
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*.csv"))}

    a, b = files(company), files(other)
    assert {k: v for k, v in a.items() if k not in ops} == {
        k: v for k, v in b.items() if k not in ops
    }
    assert any(a[k] != b.get(k) for k in ops if k.startswith("changes/change_request_"))
    assert planted["change_failure_ratio"] == 1.0 and planted["busy_share_per_10_points"] == 0.0
