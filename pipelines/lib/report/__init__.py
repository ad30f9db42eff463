"""The quarterly talent report for leadership: HTML and PDF from the published marts.

`render_report(published_db, quarter, out_dir)` is the entry point; `suppression` holds the
small-group rules every figure passes through.
"""

from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.render import latest_complete_quarter, render_report
from pipelines.lib.report.suppression import mask_label, suppression_grid, suppression_mask

__all__ = [
    "Quarter",
    "latest_complete_quarter",
    "mask_label",
    "render_report",
    "suppression_grid",
    "suppression_mask",
]
