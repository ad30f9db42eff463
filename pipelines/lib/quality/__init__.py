"""Data quality: Great Expectations suites over the raw exports and the key marts.

Free of Dagster; `pipelines/defs/quality.py` wires these into blocking asset checks.
"""

from pipelines.lib.quality.rules import MART_SUITES, RAW_SUITES, RULES, Rule, Severity, rules_for
from pipelines.lib.quality.validation import Outcome, SuiteResult, run_mart_suites, run_raw_suites

__all__ = [
    "MART_SUITES",
    "RAW_SUITES",
    "RULES",
    "Outcome",
    "Rule",
    "Severity",
    "SuiteResult",
    "rules_for",
    "run_mart_suites",
    "run_raw_suites",
]
