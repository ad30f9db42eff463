"""The rules that judge one row at a time: one definition for the loader and the quality checks.

A row rule names the suite it belongs to (`raw.<export>` or `marts.<model>`), the columns it
reads and what it demands of them (a value present, a value from a list, one date not after
another, a number within bounds, a shape). Three places read these definitions and nothing
else restates them:

- the loader (`pipelines/lib/ingest/reader.py`) rejects a row that breaks a rule which
  `quarantines`, into `raw.quarantine` with its file, line and the rule's reason, while the
  rest of the file loads; `talent sources check` reads files through the same reader, so it
  judges every row as the load will;
- the quality suites (`pipelines/lib/quality/rules.py`) turn every rule into its Great
  Expectations expectation over the current rows, so a row the loader kept meets every
  blocking rule, and a row that reached the raw layer another way is still found;
- `docs/data-quality.md` and `sources/README.md` list them.

What quarantines: a contract's own demands (a required value, a value list) always; among the
rules the quality suites add, the ERROR ones (an ERROR rule is one whose failure would make a
published figure wrong). A WARN rule is reported by the checks and the row still loads. Rules
that need more than one row (a natural key unique within a delivery, a job record after the
person's first hire) are not row rules: the blocking checks keep guarding them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from pipelines.lib.contracts import EXPORTS, Export


class Severity(StrEnum):
    ERROR = "ERROR"
    WARN = "WARN"


# An incident that took a GPU cluster down for more than 30 days is a typo, not an outage.
MAX_DOWNTIME_MINUTES = 30 * 24 * 60
# More GPUs than the largest fleets in the world own: a unit or column mix-up.
MAX_GPUS = 1_000_000
E_MAIL_PATTERN = r"^[^@\s]+@[^@\s]+\.[^@\s]+$"

# SQL of a column's value: `ref(column)` the typed value, `shown(column)` the value as delivered
Ref = Callable[[str], str]


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _number(x: float) -> str:
    return f"{x:g}"


@dataclass(frozen=True)
class RowRule:
    """One demand on a single row."""

    suite: str  # "raw.employees", "marts.certification_effect"
    name: str  # unique within the suite, stable (check metadata, quarantine reasons, docs)
    kind: str  # "not_null" | "in_set" | "order" | "range" | "pattern"
    columns: tuple[str, ...]  # order: (earlier, later); the others: (column,)
    severity: Severity
    why: str
    strict: bool = False  # order: earlier < later (else earlier <= later)
    values: tuple[str, ...] = ()  # in_set: the allowed values (lower case); pattern: (regex,)
    min_value: float | None = None
    max_value: float | None = None
    strict_min: bool = False
    strict_max: bool = False
    personal: bool = False  # the column holds personal data: values never leave the check

    @property
    def quarantines(self) -> bool:
        """Whether the loader rejects a row that breaks this rule (see the module's text)."""
        if not self.suite.startswith("raw."):
            return False
        return self.kind in ("not_null", "in_set") or self.severity is Severity.ERROR

    def expectation(self) -> tuple[str, dict[str, Any]]:
        """The Great Expectations expectation (class name, arguments) that tests this rule."""
        col = self.columns[0]
        if self.kind == "not_null":
            return "ExpectColumnValuesToNotBeNull", {"column": col}
        if self.kind == "in_set":
            return "ExpectColumnValuesToBeInSet", {"column": col, "value_set": list(self.values)}
        if self.kind == "pattern":
            return "ExpectColumnValuesToMatchRegex", {"column": col, "regex": self.values[0]}
        if self.kind == "order":
            earlier, later = self.columns
            return "ExpectColumnPairValuesAToBeGreaterThanB", {
                "column_A": later,
                "column_B": earlier,
                "or_equal": not self.strict,
                "ignore_row_if": "either_value_is_missing",
            }
        bounds: dict[str, Any] = {}
        if self.min_value is not None:
            bounds["min_value"] = self.min_value
        if self.max_value is not None:
            bounds["max_value"] = self.max_value
        if self.strict_min:
            bounds["strict_min"] = True
        if self.strict_max:
            bounds["strict_max"] = True
        return "ExpectColumnValuesToBeBetween", {"column": col, **bounds}

    def broken_sql(self, ref: Ref) -> str:
        """SQL that is true when a row breaks the rule (an empty value breaks only not_null)."""
        col = ref(self.columns[0])
        if self.kind == "not_null":
            return f"{col} IS NULL"
        if self.kind == "in_set":
            return f"{col} NOT IN ({', '.join(_lit(v) for v in self.values)})"
        if self.kind == "pattern":
            return f"NOT regexp_matches({col}, {_lit(self.values[0])})"
        if self.kind == "order":
            earlier, later = (ref(c) for c in self.columns)
            return f"{earlier} {'>=' if self.strict else '>'} {later}"
        out = []
        if self.min_value is not None:
            out.append(f"{col} {'<=' if self.strict_min else '<'} {_number(self.min_value)}")
        if self.max_value is not None:
            out.append(f"{col} {'>=' if self.strict_max else '>'} {_number(self.max_value)}")
        return "(" + " OR ".join(out) + ")"

    def reason_sql(self, shown: Ref) -> str:
        """SQL of the reason a broken row is quarantined with: the rule, the columns and the
        values as delivered (`shown`), and why the rule exists."""
        first = self.columns[0]

        def value(c: str) -> str:
            return f"'\"' || left({shown(c)}, 60) || '\"'"

        if self.kind == "not_null":
            return _lit(f"{first}: missing required value")
        if self.kind == "in_set":
            allowed = ", ".join(self.values)
            return f"{_lit(first + ': ')} || {value(first)} || {_lit(' is not one of ' + allowed)}"
        if self.kind == "order":
            earlier, later = self.columns
            relation = "before" if self.strict else "on or before"
            return (
                f"{_lit(f'{self.name}: {earlier} ')} || {value(earlier)} || "
                f"{_lit(f' is not {relation} {later} ')} || {value(later)} || "
                f"{_lit(f' ({self.why})')}"
            )
        what = f" does not match {self.values[0]}" if self.kind == "pattern" else self.bounds_text()
        return (
            f"{_lit(f'{self.name}: {first} ')} || {value(first)} || {_lit(f'{what} ({self.why})')}"
        )

    def bounds_text(self) -> str:
        """' must be at least 1 and at most 5', ...: a range rule's demand in words."""
        low, high = self.min_value, self.max_value
        lo = None if low is None else f"{'above' if self.strict_min else 'at least'} {_number(low)}"
        hi = (
            None if high is None else f"{'below' if self.strict_max else 'at most'} {_number(high)}"
        )
        return " must be " + " and ".join(x for x in (lo, hi) if x)

    def describe(self) -> str:
        """The demand in words (docs)."""
        first = self.columns[0]
        if self.kind == "not_null":
            return f"`{first}` is set"
        if self.kind == "in_set":
            return f"`{first}` is one of {', '.join(f'`{v}`' for v in self.values)}"
        if self.kind == "pattern":
            return f"`{first}` looks like an e-mail address"
        if self.kind == "order":
            earlier, later = self.columns
            return f"`{earlier}` {'before' if self.strict else 'on or before'} `{later}`"
        return f"`{first}`{self.bounds_text().replace(' must be ', ' is ', 1)}"


# ---------------------------------------------------------------------------------------------
# Severity decisions that differ from the default of their kind. Keyed by (export, column).
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


def _contract_rules(export: Export) -> Iterator[RowRule]:
    """What every export's contract demands of a row: required values filled, listed values
    within their list, e-mails shaped like e-mails."""
    s = f"raw.{export.name}"
    for c in export.columns:
        if not c.required:
            continue
        warn = _NOT_NULL_WARN.get((export.name, c.name))
        in_key = c.name in export.key
        why = warn or (
            "part of the natural key: rows without it cannot be deduplicated"
            if in_key
            else "required by the contract and used by the marts"
        )
        severity = Severity.WARN if warn and not in_key else Severity.ERROR
        yield RowRule(
            s, f"{c.name}_not_null", "not_null", (c.name,), severity, why, personal=c.personal
        )
    for c in export.columns:
        if c.values:
            warn = _ENUM_WARN.get((export.name, c.name))
            yield RowRule(
                s,
                f"{c.name}_in_set",
                "in_set",
                (c.name,),
                Severity.WARN if warn else Severity.ERROR,
                warn or "marts group by this value; an unknown value is a segment nobody reads",
                values=tuple(c.values),
            )
    for c in export.columns:
        if c.personal and c.name.endswith("email"):
            yield RowRule(
                s,
                f"{c.name}_shape",
                "pattern",
                (c.name,),
                Severity.WARN,
                "a malformed e-mail cannot be linked to a person; identity_match reports it",
                values=(E_MAIL_PATTERN,),
                personal=True,
            )


def order(
    suite: str, earlier: str, later: str, strict: bool, severity: Severity, why: str
) -> RowRule:
    """`earlier <= later` (or `<`), ignoring rows where either is empty."""
    op = "before" if strict else "not_after"
    return RowRule(
        suite, f"{earlier}_{op}_{later}", "order", (earlier, later), severity, why, strict
    )


def between(suite: str, column: str, severity: Severity, why: str, **bounds: Any) -> RowRule:
    """`column` within bounds (`min_value`, `max_value`, `strict_min`, `strict_max`)."""
    return RowRule(suite, f"{column}_in_range", "range", (column,), severity, why, **bounds)


E, W = Severity.ERROR, Severity.WARN

# What a contract cannot say: dates in order, plausible ranges.
_RAW_SPECIFIC: tuple[RowRule, ...] = (
    order(
        "raw.employees",
        "hire_date",
        "termination_date",
        False,
        E,
        "a spell that ends before it starts gives negative tenure and a separation before hire",
    ),
    order(
        "raw.employees",
        "original_hire_date",
        "hire_date",
        False,
        W,
        "the first spell cannot start after the current one; only tenure labels use it",
    ),
    between(
        "raw.job_history",
        "skill_level",
        E,
        "levels 1-5 (seed skill_levels); the marts segment and match templates by level",
        min_value=1,
        max_value=5,
    ),
    between(
        "raw.job_history",
        "fte",
        W,
        "0 < fte <= 1; headcount does not use it",
        min_value=0,
        max_value=1,
        strict_min=True,
    ),
    between(
        "raw.contractor_hours",
        "hours",
        E,
        "negative hours make negative contractor cost",
        min_value=0,
    ),
    between(
        "raw.contractor_hours",
        "hourly_rate_usd",
        E,
        "negative rates make negative cost",
        min_value=0,
    ),
    between(
        "raw.courses", "hours", W, "nominal learning hours; training_hours sums them", min_value=0
    ),
    between("raw.courses", "cost_usd", E, "list prices feed training_spend and ROI", min_value=0),
    order(
        "raw.enrolments",
        "enrolled_on",
        "completed_on",
        False,
        W,
        "completion before enrolment: time-to-complete would be negative",
    ),
    between(
        "raw.enrolments", "cost_usd", E, "charged amounts feed training_spend and ROI", min_value=0
    ),
    between("raw.enrolments", "score", W, "scores are 0-100", min_value=0, max_value=100),
    between("raw.enrolments", "hours_spent", W, "time spent cannot be negative", min_value=0),
    order(
        "raw.certifications",
        "issued_on",
        "expires_on",
        True,
        E,
        "an award that expires before it is issued is never active: coverage drops",
    ),
    order(
        "raw.certifications",
        "exam_date",
        "issued_on",
        False,
        W,
        "an award is issued on or after its exam",
    ),
    between("raw.certifications", "score", W, "scores are 0-100", min_value=0, max_value=100),
    between(
        "raw.certifications",
        "exam_fee_usd",
        E,
        "exam fees feed training_spend and ROI",
        min_value=0,
    ),
    order(
        "raw.incidents",
        "opened_at",
        "acknowledged_at",
        False,
        W,
        "acknowledged before opened: time to acknowledge would be negative",
    ),
    order(
        "raw.incidents",
        "acknowledged_at",
        "resolved_at",
        False,
        W,
        "resolved before acknowledged: the tool's clock or export is off",
    ),
    order(
        "raw.incidents",
        "opened_at",
        "resolved_at",
        False,
        E,
        "resolved before opened gives a negative time to restore in the MTTR marts",
    ),
    between(
        "raw.incidents",
        "downtime_minutes",
        E,
        f"0 <= downtime < {MAX_DOWNTIME_MINUTES} minutes (30 days); gpu_hours_lost uses it",
        min_value=0,
        max_value=MAX_DOWNTIME_MINUTES,
        strict_max=True,
    ),
    between(
        "raw.incidents",
        "gpus_affected",
        E,
        "a negative GPU count makes negative gpu_hours_lost",
        min_value=0,
        max_value=MAX_GPUS,
    ),
    order(
        "raw.requisitions",
        "opened_on",
        "filled_on",
        False,
        E,
        "filled before it was opened gives a negative time to fill in marts.replacement_cost",
    ),
    between(
        "raw.requisitions",
        "level",
        E,
        "levels 1-5 (seed skill_levels); the vacancy is priced at its level's pay band",
        min_value=1,
        max_value=5,
    ),
    between(
        "raw.requisitions",
        "agency_fee_usd",
        E,
        "a negative fee lowers the measured replacement cost the ROI prices exits with",
        min_value=0,
    ),
    between(
        "raw.requisitions",
        "other_hiring_cost_usd",
        E,
        "a negative cost lowers the measured replacement cost the ROI prices exits with",
        min_value=0,
    ),
    between(
        "raw.gpu_fleet",
        "gpu_count",
        E,
        "fleet size classes (small / medium / large) come from this count",
        min_value=0,
        max_value=MAX_GPUS,
    ),
)


def row_rules(export: str) -> tuple[RowRule, ...]:
    """Every row rule of one export: its contract's, then the quality suites' own."""
    suite = f"raw.{export}"
    return (
        *_contract_rules(EXPORTS[export]),
        *(r for r in _RAW_SPECIFIC if r.suite == suite),
    )


def load_rules(export: str) -> tuple[RowRule, ...]:
    """The row rules the loader applies to `export` (those that quarantine)."""
    return tuple(r for r in row_rules(export) if r.quarantines)
