"""The graph is the documentation: it validates, and every change to it is a visible diff.

Regenerate the snapshot after an intended change with
`UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_graph.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SNAPSHOT = Path(__file__).parent / "snapshots" / "graph.json"


def graph_summary() -> dict:
    from pipelines.definitions import defs

    repo = defs.get_repository_def()
    graph = defs.resolve_asset_graph()
    assets = {}
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        if not node.is_materializable:
            continue
        assets[key.to_user_string()] = {
            "group": node.group_name,
            "upstream": sorted(k.to_user_string() for k in node.parent_keys),
        }
    checks = sorted(f"{k.asset_key.to_user_string()}:{k.name}" for k in graph.asset_check_keys)
    return {
        "assets": assets,
        "checks": checks,
        "jobs": sorted(j.name for j in repo.get_all_jobs() if not j.name.startswith("__")),
        "schedules": sorted(s.name for s in repo.schedule_defs),
        "sensors": sorted(s.name for s in repo.sensor_defs),
    }


def test_definitions_validate():
    proc = subprocess.run(
        [sys.executable, "-m", "dagster", "definitions", "validate", "-m", "pipelines.definitions"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "DAGSTER_HOME": ""},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Validation successful" in proc.stderr + proc.stdout


def test_graph_matches_snapshot():
    current = graph_summary()
    if os.environ.get("UPDATE_SNAPSHOTS") or not SNAPSHOT.exists():
        SNAPSHOT.write_text(json.dumps(current, indent=1, sort_keys=True) + "\n")
    expected = json.loads(SNAPSHOT.read_text())
    assert current == expected, (
        "the asset graph changed; if intended, run "
        "`UPDATE_SNAPSHOTS=1 .venv/bin/pytest tests/test_graph.py` and commit the snapshot"
    )


def test_every_export_flows_from_raw_through_dbt_to_the_published_file():
    from pipelines.lib.contracts import EXPORTS

    assets = graph_summary()["assets"]
    for export in EXPORTS:
        key = f"raw/{export}"
        assert assets[key]["group"] == "ingestion"
        assert any(key in a["upstream"] for a in assets.values()), f"nothing reads {key}"
    published = assets["warehouse/published"]["upstream"]
    marts = [k for k in assets if k.startswith("marts/")]
    assert set(marts) <= set(published)
    assert assets["report/quarterly_talent_report"]["upstream"] == ["warehouse/published"]
