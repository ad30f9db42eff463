"""What the report could not show because an export was not delivered (page 1).

Only the employees export is required. `marts.source_deliveries` names every export nobody
delivered and what cannot be shown without it; page 1 repeats that in one line each, so a
reader knows why a section is missing before they look for it.
"""

from __future__ import annotations

from pipelines.lib.report.data import Marts


def data_gaps(marts: Marts) -> list[str]:
    """One sentence per export not delivered, e.g. "gpu_fleet: no fleet export: team templates
    by fleet size not shown."; empty when everything was delivered or the mart is absent."""
    df = marts.get("source_deliveries")
    if df is None or df.empty:
        return []
    missing = df[~df["delivered"].astype(bool)].sort_values("export")
    return [f"{row.export}: {row.if_missing}." for row in missing.itertuples()]
