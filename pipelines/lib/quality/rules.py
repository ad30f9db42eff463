"""Every data-quality expectation of the pipeline, with its severity: the one table to read.

A rule names the suite it belongs to (`raw.<export>` or `marts.<model>`), the Great Expectations
expectation that tests it, and a severity:

- ERROR: the failure would make a published figure wrong (double counting, negative durations,
  segments that do not exist). The checks on raw exports and marts are blocking, so an ERROR
  stops every asset downstream and the previous published warehouse stays in place.
- WARN: worth fixing at the source, but the marts stay right (a descriptive field is empty, an
  e-mail that cannot be linked lowers the match rate the identity_match mart already reports).

Raw rules are derived from the export contracts (`pipelines/lib/contracts.py`) so that a new
column or enumeration is checked without touching this file; the hand-written rules below
encode what a contract cannot say (date order, plausible ranges). `docs/data-quality.md` is
rendered from this table (`tools.quality_docs`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from pipelines.lib.contracts import EXPORTS, Export


class Severity(StrEnum):
    ERROR = "ERROR"
    WARN = "WARN"


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
# An incident that took a GPU cluster down for more than 30 days is a typo, not an outage.
MAX_DOWNTIME_MINUTES = 30 * 24 * 60
# More GPUs than the largest fleets in the world own: a unit or column mix-up.
MAX_GPUS = 1_000_000
E_MAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"


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


# ---------------------------------------------------------------------------------------------
# Severity decisions that differ from the default of their kind. Keyed by (suite, rule name).
# ---------------------------------------------------------------------------------------------
_NOT_NULL_WARN = {
    # Descriptive fields no mart computes on.
    ("employees", "first_name"): "names are never used by a mart",
    ("employees", "last_name"): "names are never used by a mart",
    ("employees", "work_email"): (
        "a person without e-mail cannot be linked to LMS and incident records; identity_match "
        "reports the lower match rate, the HRIS figures stay right"
    ),
    ("courses", "title"): "descriptive only",
    ("courses", "provider"): "descriptive only",
    ("contractor_hours", "vendor"): "descriptive only; costs are summed per month",
    ("incidents", "service"): "descriptive only; rates are per cluster and responder",
    ("gpu_fleet", "site"): "the cluster name carries the team; site is descriptive",
    ("job_history", "site"): "a person without site drops out of the site segment only",
}
_ENUM_WARN = {
    ("enrolments", "status"): "enrolment status only feeds completion counts in training_spend",
}


def _raw(export: Export) -> Iterator[Rule]:
    """Rules every export gets from its contract."""
    yield from _structure_rules(export)
    yield from _column_rules(export)
    yield from _key_rules(export)
    yield from _delivery_rules(export)


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


def _column_rules(export: Export) -> Iterator[Rule]:
    """Required columns filled, enumerations within their values, e-mails shaped like e-mails."""
    s = f"raw.{export.name}"
    for c in export.columns:
        if not c.required:
            continue
        warn = _NOT_NULL_WARN.get((export.name, c.name))
        in_key = c.name in export.key
        yield Rule(
            s,
            f"{c.name}_not_null",
            "ExpectColumnValuesToNotBeNull",
            {"column": c.name},
            Severity.WARN if warn and not in_key else Severity.ERROR,
            warn
            or (
                "part of the natural key: rows without it cannot be deduplicated"
                if in_key
                else "required by the contract and used by the marts"
            ),
            personal=c.personal,
        )
    for c in export.columns:
        if c.values:
            warn = _ENUM_WARN.get((export.name, c.name))
            yield Rule(
                s,
                f"{c.name}_in_set",
                "ExpectColumnValuesToBeInSet",
                {"column": c.name, "value_set": list(c.values)},
                Severity.WARN if warn else Severity.ERROR,
                warn or "marts group by this value; an unknown value is a segment nobody reads",
            )
    for c in export.columns:
        if c.personal and c.name.endswith("email"):
            yield Rule(
                s,
                f"{c.name}_shape",
                "ExpectColumnValuesToMatchRegex",
                {"column": c.name, "regex": E_MAIL_PATTERN},
                Severity.WARN,
                "a malformed e-mail cannot be linked to a person; identity_match reports it",
                personal=True,
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
        "so nothing downstream is built on it until a corrected delivery arrives"
    )
    personal_key = any(export.column(k).personal for k in export.key)
    if len(export.key) == 1:
        yield Rule(
            s,
            "natural_key_unique",
            "ExpectColumnValuesToBeUnique",
            {"column": export.key[0]},
            Severity.ERROR,
            unique_why,
            personal=personal_key,
            only_where="_first_copy",
        )
    else:
        yield Rule(
            s,
            "natural_key_unique",
            "ExpectCompoundColumnsToBeUnique",
            {"column_list": list(export.key)},
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


def _order(suite: str, a: str, b: str, strict: bool, severity: Severity, why: str) -> Rule:
    """`a <= b` (or `a < b`), ignoring rows where either is empty."""
    op = "before" if strict else "not_after"
    return Rule(
        suite,
        f"{a}_{op}_{b}",
        "ExpectColumnPairValuesAToBeGreaterThanB",
        {
            "column_A": b,
            "column_B": a,
            "or_equal": not strict,
            "ignore_row_if": "either_value_is_missing",
        },
        severity,
        why,
    )


def _between(suite: str, column: str, severity: Severity, why: str, **bounds: Any) -> Rule:
    return Rule(
        suite,
        f"{column}_in_range",
        "ExpectColumnValuesToBeBetween",
        {"column": column, **bounds},
        severity,
        why,
    )


E, W = Severity.ERROR, Severity.WARN

_RAW_SPECIFIC: tuple[Rule, ...] = (
    _order(
        "raw.employees",
        "hire_date",
        "termination_date",
        False,
        E,
        "a spell that ends before it starts gives negative tenure and a separation before hire",
    ),
    _order(
        "raw.employees",
        "original_hire_date",
        "hire_date",
        False,
        W,
        "the first spell cannot start after the current one; only tenure labels use it",
    ),
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
        W,
        "a job record effective before the person was first hired is dropped by the as-of join",
    ),
    _between(
        "raw.job_history",
        "skill_level",
        E,
        "levels 1-5 (seed skill_levels); the marts segment and match templates by level",
        min_value=1,
        max_value=5,
    ),
    _between(
        "raw.job_history",
        "fte",
        W,
        "0 < fte <= 1; headcount does not use it",
        min_value=0,
        max_value=1,
        strict_min=True,
    ),
    _between(
        "raw.contractor_hours",
        "hours",
        E,
        "negative hours make negative contractor cost",
        min_value=0,
    ),
    _between(
        "raw.contractor_hours",
        "hourly_rate_usd",
        E,
        "negative rates make negative cost",
        min_value=0,
    ),
    _between(
        "raw.courses", "hours", W, "nominal learning hours; training_hours sums them", min_value=0
    ),
    _between("raw.courses", "cost_usd", E, "list prices feed training_spend and ROI", min_value=0),
    _order(
        "raw.enrolments",
        "enrolled_on",
        "completed_on",
        False,
        W,
        "completion before enrolment: time-to-complete would be negative",
    ),
    _between(
        "raw.enrolments", "cost_usd", E, "charged amounts feed training_spend and ROI", min_value=0
    ),
    _between("raw.enrolments", "score", W, "scores are 0-100", min_value=0, max_value=100),
    _between("raw.enrolments", "hours_spent", W, "time spent cannot be negative", min_value=0),
    _order(
        "raw.certifications",
        "issued_on",
        "expires_on",
        True,
        E,
        "an award that expires before it is issued is never active: coverage drops",
    ),
    _order(
        "raw.certifications",
        "exam_date",
        "issued_on",
        False,
        W,
        "an award is issued on or after its exam",
    ),
    _between("raw.certifications", "score", W, "scores are 0-100", min_value=0, max_value=100),
    _between(
        "raw.certifications",
        "exam_fee_usd",
        E,
        "exam fees feed training_spend and ROI",
        min_value=0,
    ),
    _order(
        "raw.incidents",
        "opened_at",
        "acknowledged_at",
        False,
        W,
        "acknowledged before opened: time to acknowledge would be negative",
    ),
    _order(
        "raw.incidents",
        "acknowledged_at",
        "resolved_at",
        False,
        W,
        "resolved before acknowledged: the tool's clock or export is off",
    ),
    _order(
        "raw.incidents",
        "opened_at",
        "resolved_at",
        False,
        E,
        "resolved before opened gives a negative time to restore in the MTTR marts",
    ),
    _between(
        "raw.incidents",
        "downtime_minutes",
        E,
        f"0 <= downtime < {MAX_DOWNTIME_MINUTES} minutes (30 days); gpu_hours_lost uses it",
        min_value=0,
        max_value=MAX_DOWNTIME_MINUTES,
        strict_max=True,
    ),
    _between(
        "raw.incidents",
        "gpus_affected",
        E,
        "a negative GPU count makes negative gpu_hours_lost",
        min_value=0,
        max_value=MAX_GPUS,
    ),
    _between(
        "raw.gpu_fleet",
        "gpu_count",
        E,
        "fleet size classes (small / medium / large) come from this count",
        min_value=0,
        max_value=MAX_GPUS,
    ),
)

_EFFECT_METRICS = ["incident_rate_ratio", "mttr_ratio", "attrition_hazard_ratio"]


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
    _order(
        "marts.certification_effect",
        "ci_low",
        "estimate",
        False,
        E,
        "the estimate lies inside its confidence interval",
    ),
    _order(
        "marts.certification_effect",
        "estimate",
        "ci_high",
        False,
        E,
        "the estimate lies inside its confidence interval",
    ),
    _between(
        "marts.certification_effect",
        "estimate",
        E,
        "a ratio is positive",
        min_value=0,
        strict_min=True,
    ),
)


def _build() -> tuple[Rule, ...]:
    rules: list[Rule] = []
    for export in EXPORTS.values():
        rules.extend(_raw(export))
        rules.extend(r for r in _RAW_SPECIFIC if r.suite == f"raw.{export.name}")
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
