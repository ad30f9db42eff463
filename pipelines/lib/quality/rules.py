"""Every data-quality expectation of the pipeline, with its severity: the one table to read.

A rule names the suite it belongs to (`raw.<export>` or `marts.<model>`), the Great Expectations
expectation that tests it, and a severity:

- ERROR: the failure would make a published figure wrong (double counting, negative durations,
  segments that do not exist). The checks on raw exports and marts are blocking, so an ERROR
  stops every asset downstream and the previous published warehouse stays in place.
- WARN: worth fixing at the source, but the marts stay right (a descriptive field is empty, an
  e-mail that cannot be linked lowers the match rate the identity_match mart already reports).

Raw rules are derived from the export contracts (`pipelines/lib/contracts.py`) so that a new
column or enumeration is checked without touching this file. The rules that judge one row at a
time (required values, value lists, date order, plausible ranges) are defined once in
`pipelines/lib/row_rules.py`: the loader quarantines a row that breaks a blocking one, and the
suites here test the same rules over the current rows. What only a whole delivery can show (a
natural key with two contents in one file, a file that lost its rows to the quarantine) is
defined here. `docs/data-quality.md` is rendered from this table (`tools.quality_docs`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pipelines.lib.contracts import EXPORTS, Export
from pipelines.lib.row_rules import RowRule, Severity, between, order, row_rules

# Which frame a rule runs on: the current rows of the table, the export's deliveries (one row
# summarising the manifest), its schema (one row per contract column with the declared type),
# or the whole table when a check is about its presence.
Batch = str  # "rows" | "deliveries" | "schema" | "table"

# Quarantine share of an export's active deliveries (rows rejected / rows delivered).
QUARANTINE_WARN_SHARE = 0.01
QUARANTINE_ERROR_SHARE = 0.10
# ... and at least this many rows: one stray row in a ten-row export is quarantined and named in
# the run summary, not a reason to stop the warehouse.
QUARANTINE_ERROR_MIN_ROWS = 5


@dataclass(frozen=True)
class Rule:
    """One expectation: what is tested, on which frame, how bad a failure is, and why."""

    suite: str  # "raw.employees", "marts.attrition"
    name: str  # unique within the suite, stable (used in metadata and docs)
    expectation: str  # Great Expectations class name, or "table_exists"
    kwargs: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    severity: Severity = Severity.ERROR
    why: str = ""
    batch: Batch = "rows"
    # True when the tested column holds personal data: sample values never leave the check.
    personal: bool = False
    # A boolean column of the frame: the rule applies only to rows where it is true.
    only_where: str | None = None

    @property
    def label(self) -> str:
        return f"{self.suite}.{self.name}"


def from_row_rule(rule: RowRule) -> Rule:
    """The expectation that tests a row rule (`pipelines/lib/row_rules.py`) over a frame."""
    expectation, kwargs = rule.expectation()
    return Rule(
        rule.suite, rule.name, expectation, kwargs, rule.severity, rule.why, personal=rule.personal
    )


def _raw(export: Export) -> Iterator[Rule]:
    """Rules every export gets: its structure, its row rules, its keys and deliveries."""
    rows = row_rules(export.name)
    contract = [r for r in rows if r.kind in ("not_null", "in_set", "pattern")]
    yield from _structure_rules(export)
    yield from (from_row_rule(r) for r in contract)
    yield from _key_rules(export)
    yield from _delivery_rules(export)
    yield from (from_row_rule(r) for r in rows if r not in contract)
    yield from (r for r in _CROSS_TABLE if r.suite == f"raw.{export.name}")


def _structure_rules(export: Export) -> Iterator[Rule]:
    """The table, its columns and their types."""
    s = f"raw.{export.name}"
    yield Rule(
        s,
        "table_exists",
        "table_exists",
        {},
        Severity.ERROR,
        "ingestion creates one table per export; without it every model fails",
        "table",
    )
    yield Rule(
        s,
        "contract_columns_present",
        "ExpectTableColumnsToMatchSet",
        {"column_set": list(export.column_names), "exact_match": False},
        Severity.ERROR,
        "staging selects every contract column by name",
    )
    yield Rule(
        s,
        "contract_types",
        "ExpectColumnPairValuesToBeEqual",
        {
            "column_A": "declared_type",
            "column_B": "expected_type",
            "ignore_row_if": "either_value_is_missing",
        },
        Severity.ERROR,
        "every column has its contract type (string VARCHAR, date DATE, timestamp "
        "TIMESTAMP, integer BIGINT, decimal DOUBLE, boolean BOOLEAN, month DATE); date "
        "comparisons and sums in staging assume it",
        "schema",
    )


def _key_rules(export: Export) -> Iterator[Rule]:
    """Exact copies warn; one natural key with two contents blocks."""
    s = f"raw.{export.name}"
    yield Rule(
        s,
        "no_identical_rows",
        "ExpectColumnValuesToBeInSet",
        {"column": "_first_copy", "value_set": [True]},
        Severity.WARN,
        "exact copies of a row in one delivery are harmless (staging keeps one) but show an "
        "export that repeats itself",
    )
    unique_why = (
        "one key with different contents in one delivery: which version is true is a guess, "
        "so nothing downstream is built on it until a corrected delivery arrives (two tools "
        "describing one key in two files are reconciled, not a failure: sources/README.md)"
    )
    personal_key = any(export.column(k).personal for k in export.key)
    # unique within a delivery: the file is part of the compared columns
    yield Rule(
        s,
        "natural_key_unique",
        "ExpectCompoundColumnsToBeUnique",
        {"column_list": [*export.key, "_file_name"]},
        Severity.ERROR,
        unique_why,
        personal=personal_key,
        only_where="_first_copy",
    )


def _delivery_rules(export: Export) -> Iterator[Rule]:
    """What the deliveries lost to the quarantine, and files that could not be read."""
    s = f"raw.{export.name}"
    yield Rule(
        s,
        "quarantine_share_below_warn",
        "ExpectColumnValuesToBeBetween",
        {"column": "quarantine_share", "min_value": 0, "max_value": QUARANTINE_WARN_SHARE},
        Severity.WARN,
        f"more than {QUARANTINE_WARN_SHARE:.0%} of the delivered rows were "
        "rejected: look at raw.quarantine",
        "deliveries",
    )
    yield Rule(
        s,
        "quarantine_share_below_error",
        "ExpectColumnValuesToBeBetween",
        {
            "column": "material_quarantine_share",
            "min_value": 0,
            "max_value": QUARANTINE_ERROR_SHARE,
        },
        Severity.ERROR,
        f"more than {QUARANTINE_ERROR_SHARE:.0%} of the delivered rows (and at least "
        f"{QUARANTINE_ERROR_MIN_ROWS}) were rejected: the marts would describe a fraction of "
        "the organisation",
        "deliveries",
    )
    yield Rule(
        s,
        "file_quarantine_share_below_error",
        "ExpectColumnValuesToBeBetween",
        {
            "column": "worst_file_quarantine_share",
            "min_value": 0,
            "max_value": QUARANTINE_ERROR_SHARE,
        },
        Severity.ERROR,
        f"one delivery lost more than {QUARANTINE_ERROR_SHARE:.0%} of its rows (and at least "
        f"{QUARANTINE_ERROR_MIN_ROWS}) to the "
        "quarantine (worst_file_name names it): a broken export, not a few stray rows; "
        "deliver a corrected version (_v<N+1>)",
        "deliveries",
    )
    yield Rule(
        s,
        "no_failed_deliveries",
        "ExpectColumnValuesToBeBetween",
        {"column": "failed_files", "min_value": 0, "max_value": 0},
        Severity.WARN,
        "a file that could not be read at all is missing from the figures",
        "deliveries",
    )


_EFFECT_METRICS = ["incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio"]


E = Severity.ERROR

# A rule that compares a row with another table: not a row rule, checked over the current rows.
_CROSS_TABLE: tuple[Rule, ...] = (
    Rule(
        "raw.job_history",
        "effective_date_not_before_first_hire",
        "ExpectColumnPairValuesAToBeGreaterThanB",
        {
            "column_A": "effective_date",
            "column_B": "_first_hire_date",
            "or_equal": True,
            "ignore_row_if": "either_value_is_missing",
        },
        Severity.WARN,
        "a job record effective before the person was first hired is dropped by the as-of join",
    ),
)


def _mart_table(model: str) -> Rule:
    return Rule(
        f"marts.{model}",
        "table_exists",
        "table_exists",
        {},
        E,
        "the model or asset that writes it has run",
        "table",
    )


# Marts that dbt builds are checked by their dbt tests (models/marts/*.yml), which run as asset
# checks of the same build; Great Expectations checks what Python writes.
_MARTS: tuple[Rule, ...] = (
    _mart_table("certification_effect"),
    Rule(
        "marts.certification_effect",
        "three_metrics",
        "ExpectColumnDistinctValuesToEqualSet",
        {"column": "metric", "value_set": _EFFECT_METRICS},
        E,
        "the report shows exactly these three effects",
    ),
    Rule(
        "marts.certification_effect",
        "metric_unique",
        "ExpectColumnValuesToBeUnique",
        {"column": "metric"},
        E,
        "one row per metric",
    ),
    *(
        from_row_rule(r)
        for r in (
            order(
                "marts.certification_effect",
                "ci_low",
                "estimate",
                False,
                E,
                "the estimate lies inside its confidence interval",
            ),
            order(
                "marts.certification_effect",
                "estimate",
                "ci_high",
                False,
                E,
                "the estimate lies inside its confidence interval",
            ),
            between(
                "marts.certification_effect",
                "estimate",
                E,
                "a ratio is positive",
                min_value=0,
                strict_min=True,
            ),
        )
    ),
)


def _build() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for export in EXPORTS.values():
        rules.extend(_raw(export))
    rules.extend(_MARTS)
    labels = [r.label for r in rules]
    duplicates = {x for x in labels if labels.count(x) > 1}
    if duplicates:
        raise ValueError(f"quality rules defined twice: {sorted(duplicates)}")
    return tuple(rules)


RULES: tuple[Rule, ...] = _build()
RAW_SUITES: tuple[str, ...] = tuple(f"raw.{name}" for name in EXPORTS)
MART_SUITES: tuple[str, ...] = tuple(dict.fromkeys(r.suite for r in _MARTS))


def rules_for(suite: str) -> tuple[Rule, ...]:
    found = tuple(r for r in RULES if r.suite == suite)
    if not found:
        raise KeyError(f"no quality suite named {suite!r}; known: {RAW_SUITES + MART_SUITES}")
    return found
