"""The quarterly talent report for leadership: HTML and PDF from the published marts.

`render_report(published_db, quarter, out_dir)` is the entry point; `suppression` holds the
small-group rules every figure passes through.

Names are imported on first use: rendering pulls in matplotlib, SciPy and the section code
(about a second), which loading the Dagster definitions or the CLI should not pay.
"""

from importlib import import_module
from typing import Any

_EXPORTS = {
    "Quarter": "pipelines.lib.report.quarters",
    "latest_complete_quarter": "pipelines.lib.report.render",
    "render_report": "pipelines.lib.report.render",
    "mask_label": "pipelines.lib.report.suppression",
    "suppression_grid": "pipelines.lib.report.suppression",
    "suppression_mask": "pipelines.lib.report.suppression",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
