"""ROI of training and certification: investment, returns, ROI figures and sensitivity.

`model` holds the line items shared by both entry points; `warehouse` prices the marts per
quarter and year (the ROI assets); `scenario` prices a plan from a YAML file (`talent roi`);
`evidence` tags each return by the strength of its evidence and prices the headline that counts
only what the data measure (the report uses it for its windows).
See README.md in this folder for the output tables and every formula.
"""

from pipelines.lib.roi.assumptions import (
    DEFAULT_ASSUMPTIONS_PATH,
    Assumption,
    RoiInputError,
    apply_overrides,
    base_params,
    load_assumptions,
)
from pipelines.lib.roi.model import LINE_ITEMS, compute_items, floor_percent, sensitivity, totals
from pipelines.lib.roi.scenario import Scenario, load_scenario, run_scenario, scenario_drivers
from pipelines.lib.roi.warehouse import (
    INPUT_MARTS,
    INPUT_SCHEMAS,
    OUTPUT_TABLES,
    build_roi_tables,
    read_marts,
    write_tables,
)

__all__ = [
    "DEFAULT_ASSUMPTIONS_PATH",
    "INPUT_MARTS",
    "INPUT_SCHEMAS",
    "LINE_ITEMS",
    "OUTPUT_TABLES",
    "Assumption",
    "RoiInputError",
    "Scenario",
    "apply_overrides",
    "base_params",
    "build_roi_tables",
    "compute_items",
    "floor_percent",
    "load_assumptions",
    "load_scenario",
    "read_marts",
    "run_scenario",
    "scenario_drivers",
    "sensitivity",
    "totals",
    "write_tables",
]
