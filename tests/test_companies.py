"""Generated companies of many sizes and seeds, each run as the nightly runs it: every one must
publish, and its published file must show no group of 1 to 4 people, in a number or in a text.

The scan of the published file is written here, independently of the publishing guard
(`pipelines/lib/publish.py`): it opens the file read-only and reads every table of every schema,

- every numeric column that counts the people a row is built from (POPULATION_COLUMNS) must not
  hold 1..MIN_GROUP_SIZE-1;
- no text value may quote a group of 1..MIN_GROUP_SIZE-1 people, in digits or words ("1
  engineers", "three responders", "engineers: bootcamp 2, online 30", "apprentices=3").

`make test` runs the scan's own planted cases, the shared 600-employee company and the small young
company of tests/conftest.py (150 employees, one year); `make test-companies` (marker `companies`; .ci/run runs it after
`make test`) runs twenty-two more companies of 300 to 20,000 employees, two at a time, each in
its own temporary folder.
"""

from __future__ import annotations

import os
import re
import sys
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb
import pytest

from tests.conftest import generated_warehouse, talent_run

MIN_GROUP_SIZE = 5

# Numeric columns that count the people a published row is built from: the size each mart
# suppresses by (docs/architecture.md, "Small-group suppression of the published marts") and
# the columns the marts' .yml files describe as such:
#   headcount                 in-scope people on the day (certification_coverage, level_mix,
#                             salary_bands, team_composition)
#   headcount_start / _end    in scope at the opening / close of the period (attrition)
#   current_headcount         in-scope people at the end of the last month (dim_team)
#   engineers                 distinct engineers / people of the row (incident_rates,
#                             level_progression, time_in_level, certification_event_study)
#   n_engineers               engineers in the estimate (certification_effect,
#                             programme_comparison, promotion_effect)
#   participants              distinct people, or episodes, one per engineer and track
#                             (training_spend, programme_outcomes, programme_costs,
#                             time_to_certify)
#   responders                "the people the row is built from" (incident_downtime)
#   engagements               distinct contractor engagements (contractor_costs)
# Not population columns: counts of events in a group (hires, separations and leavers, exits,
# incidents, promotions, awards, enrolments, n_events), people with an outcome inside a group
# that is shown (any_cert_headcount, headcount_with_pay, headcount_in_level_band,
# engineers_start_observed, certified, apprentices: the group's result, as the report shows
# it), data-quality counts of a source (identity_match), and dim_certification.holders_ever
# (certification_awards publishes each holder's pseudonymous row by design).
POPULATION_COLUMNS = frozenset(
    {
        "headcount",
        "headcount_start",
        "headcount_end",
        "current_headcount",
        "engineers",
        "n_engineers",
        "participants",
        "responders",
        "engagements",
    }
)

# Nouns that name people; a number directly before one (a few qualifiers allowed in between)
# quotes a group of that many people.
PEOPLE = (
    r"(?:engineers?|people|persons?|employees?|participants?|responders?|apprentices?"
    r"|individuals?|members?|holders?|learners?|trainees?|contractors?|colleagues?)"
)
QUALIFIER = (
    r"(?:(?:certified|uncertified|distinct|other|different|unique|active|new|eligible"
    r"|linked|matched|unmatched)\s+)"
)
NUMBER_WORDS = {"one": 1, "two": 2, "three": 3, "four": 4, "single": 1}
# "3 engineers", "1 responders with ...", "two certified engineers", "a single engineer"
QUOTED_GROUP = re.compile(
    rf"(?<![\w.,-])(?P<n>\d[\d,]*|{'|'.join(NUMBER_WORDS)})\s+{QUALIFIER}{{0,2}}{PEOPLE}\b",
    re.IGNORECASE,
)
# a bound, not a group: "at least 2 engineers", "minimum 3 responders", "more than 1 person"
BOUND_BEFORE = re.compile(r"(?:at least|minimum(?: of)?|more than|over|>=?)\s*$", re.IGNORECASE)
# "engineers: bootcamp 2, online 30" and "apprentices=3", up to the next ';', bracket or line end
LABELLED_GROUP = re.compile(rf"\b(?:\w+_)?{PEOPLE}\s*[:=]\s*(?P<segment>[^;()\n]*)", re.IGNORECASE)
INTEGER = re.compile(r"(?<![\w.,])\d[\d,]*(?![\w.]|,\d)")


@dataclass(frozen=True)
class Hit:
    """One published value that shows a group of 1..MIN_GROUP_SIZE-1 people."""

    where: str  # schema.table.column
    row: int  # the table's rowid
    key: str  # the row's descriptive columns, to find it again
    value: object

    def __str__(self) -> str:
        return f"{self.where} row {self.row} ({self.key}): {self.value!r}"


def quoted_small_groups(text: str, k: int = MIN_GROUP_SIZE) -> list[str]:
    """The phrases of `text` that quote a group of 1..k-1 people."""
    found = []
    for m in QUOTED_GROUP.finditer(text):
        raw = m["n"].lower().replace(",", "")
        n = NUMBER_WORDS[raw] if raw in NUMBER_WORDS else int(raw)
        if 1 <= n < k and not BOUND_BEFORE.search(text[: m.start()]):
            found.append(m.group(0))
    for m in LABELLED_GROUP.finditer(text):
        if any(1 <= int(n.replace(",", "")) < k for n in INTEGER.findall(m["segment"])):
            found.append(m.group(0).strip())
    return found


def _quote(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _columns(con: duckdb.DuckDBPyConnection) -> dict[tuple[str, str], list[tuple[str, str]]]:
    """{(schema, table): [(column, type)]} of every table in the file (publishing writes
    tables only: `rowid` names a row)."""
    tables: dict[tuple[str, str], list[tuple[str, str]]] = {}
    for schema, table, column, data_type in con.execute(
        "select c.schema_name, c.table_name, c.column_name, c.data_type "
        "from duckdb_columns() c join duckdb_tables() t using (database_name, schema_name, "
        "table_name) where c.database_name = current_database() "
        "order by c.schema_name, c.table_name, c.column_index"
    ).fetchall():
        tables.setdefault((schema, table), []).append((column, data_type))
    return tables


NUMERIC = re.compile(r"^(TINYINT|SMALLINT|INTEGER|BIGINT|HUGEINT|U\w*INT|DOUBLE|FLOAT|DECIMAL)")


def _key_sql(con: duckdb.DuckDBPyConnection, relation: str, columns: list[tuple[str, str]]) -> str:
    """SQL for a short description of a row: its date columns and its short text columns
    (values of at most 40 characters, not all NULL: the grain, not the notes)."""
    texts = [c for c, t in columns if t == "VARCHAR"]
    longest = (
        con.execute(
            f"select {', '.join(f'max(length({_quote(c)}))' for c in texts)} from {relation}"
        ).fetchone()
        if texts
        else ()
    )
    short = {c for c, n in zip(texts, longest, strict=True) if n is not None and n <= 40}
    keys = [c for c, t in columns if t == "DATE" or c in short][:4]
    if not keys:
        return "''"
    parts = [f"'{c}=' || coalesce(cast({_quote(c)} as varchar), 'NULL')" for c in keys]
    return " || ', ' || ".join(parts)


def scan_published(path: Path, k: int = MIN_GROUP_SIZE) -> tuple[list[Hit], set[str]]:
    """(every hit, the population columns seen) in the published DuckDB file at `path`."""
    hits: list[Hit] = []
    seen: set[str] = set()
    with duckdb.connect(str(path), read_only=True) as con:
        for (schema, table), columns in _columns(con).items():
            relation = f"{_quote(schema)}.{_quote(table)}"
            key = _key_sql(con, relation, columns)
            for column, data_type in columns:
                where = f"{schema}.{table}.{column}"
                if column in POPULATION_COLUMNS and NUMERIC.match(data_type):
                    seen.add(column)
                    rows = con.execute(
                        f"select rowid, {key}, {_quote(column)} from {relation} "
                        f"where {_quote(column)} >= 1 and {_quote(column)} < ? order by rowid",
                        [k],
                    ).fetchall()
                    hits += [Hit(where, r, kv, v) for r, kv, v in rows]
                elif data_type in ("VARCHAR", "JSON"):
                    rows = con.execute(
                        f"select rowid, {key}, cast({_quote(column)} as varchar) from {relation} "
                        f"where {_quote(column)} is not null order by rowid"
                    ).fetchall()
                    hits += [
                        Hit(where, r, kv, phrase)
                        for r, kv, text in rows
                        for phrase in quoted_small_groups(text, k)
                    ]
    return hits, seen


# ---------------------------------------------------------------------- the scan's own cases
def test_the_scan_finds_planted_small_groups_in_numbers_and_text(tmp_path):
    """A file with planted groups of 1-4 (and their harmless neighbours): the scan reports
    exactly the planted ones, each with its table, column, row and value."""
    path = tmp_path / "planted.duckdb"
    with duckdb.connect(str(path)) as con:
        con.execute("create schema marts")
        con.execute(
            "create table marts.rates as select * from (values "
            "(date '2026-01-01', 'certified', 12, 3, 'fewer than 5 engineers'), "
            "(date '2026-04-01', 'certified', 3, 2, 'Based on 28 engineers who certified'), "
            "(date '2026-07-01', 'all', 5, 1, 'too little data: 1 responders with incidents'), "
            "(date '2026-10-01', 'all', NULL, 0, 'each side needs engineers >= 5 (minimum 20)')"
            ") as t(quarter, status, engineers, incidents, note)"
        )
        con.execute(
            "create table marts.texts as select * from (values "
            "('too few (engineers: bootcamp 2, online 30; certifications: bootcamp 1)'), "
            "('apprentices=3; apprenticeship_months=4.5'), "
            "('two certified engineers left'), "
            "('Each incident has one primary responder; at least 2 engineers; 4 distinct months'), "
            "('1.5 engineers on average; 1,200 people; levels 2, 3 and 4'), "
            "(NULL)) as t(caveats)"
        )
        con.execute("create table main.publish_info as select 4 as tables, 2 as headcount")
    hits, seen = scan_published(path)
    found = {(h.where, h.row, h.value) for h in hits}
    assert found == {
        ("main.publish_info.headcount", 0, 2),
        ("marts.rates.engineers", 1, 3),
        ("marts.rates.note", 2, "1 responders"),
        ("marts.texts.caveats", 0, "engineers: bootcamp 2, online 30"),
        ("marts.texts.caveats", 1, "apprentices=3"),
        ("marts.texts.caveats", 2, "two certified engineers"),
    }, "\n".join(map(str, hits))
    assert seen == {"engineers", "headcount"}
    planted = next(h for h in hits if h.where == "marts.rates.engineers")
    assert planted.key == "quarter=2026-04-01, status=certified"


# ------------------------------------------------------------------------------- companies
@dataclass(frozen=True)
class Spec:
    employees: int
    years: int
    seed: int
    end_date: date = date(2026, 9, 30)

    @property
    def label(self) -> str:
        return f"{self.employees}x{self.years}y-seed{self.seed}-to{self.end_date:%Y-%m}"


@dataclass
class Outcome:
    spec: Spec
    published: bool
    hits: list[Hit] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    failure: list[str] = field(default_factory=list)

    def describe(self) -> str:
        s = self.spec
        head = (
            f"seed {s.seed}, {s.employees} employees x {s.years} years to {s.end_date}: "
            + ("published" if self.published else "NOT published")
            + f", {len(self.hits)} small group(s) shown"
        )
        lines = [head, *(f"  failed: {line}" for line in self.failure)]
        return "\n".join(lines + [f"  {hit}" for hit in self.hits])


def failure_lines(output: str, limit: int = 20) -> list[str]:
    """The lines of a failed run that name what failed: its summary's `FAILED <kind> <name>:
    <message>` lines (dbt tests, assets, checks) whole, other lines that say fail or error cut
    to 400 characters; warnings and "0 failed" left out; without any, the output's last lines."""
    lines: list[str] = []
    for line in output.splitlines():
        text = line.strip()
        if text.startswith("FAILED"):
            kept = text[:4000]
        elif re.search(r"fail|error", text, re.IGNORECASE) and not (
            text.startswith("warning:") or re.search(r"\b0 failed\b", text)
        ):
            kept = text[:400]
        else:
            continue
        if kept not in lines:
            lines.append(kept)
    # a run stopped before its summary (a refused setting, a crash): its last lines say why
    return lines[:limit] or [line for line in output.splitlines() if line.strip()][-limit:]


def run_company(spec: Spec, root: Path) -> Outcome:
    """Generate `spec` into root/sources, run the nightly into root/warehouse, scan what it
    published."""
    from tools.generate import generate_company

    sources, warehouse = root / "sources", root / "warehouse"
    generate_company(sources, spec.employees, spec.years, spec.end_date, spec.seed, progress=False)
    env = {**os.environ, "TALENT_MIN_GROUP_SIZE": str(MIN_GROUP_SIZE)}
    proc = talent_run(sources, warehouse, env=env, check=False)
    published = warehouse / "talent.duckdb"
    if proc.returncode != 0 or not published.exists():
        return Outcome(spec, False, failure=failure_lines(proc.stdout + "\n" + proc.stderr))
    hits, seen = scan_published(published)
    return Outcome(spec, True, hits, seen)


def check(outcome: Outcome) -> None:
    """Print the company's line (seed, size, published, hits) and require a clean publish."""
    report = outcome.describe()
    print(report, file=sys.stdout)
    assert outcome.published, f"the nightly did not publish:\n{report}"
    assert not outcome.hits, f"the published file shows groups of 1-4 people:\n{report}"
    # a renamed population column would slip past the scan: each must be found
    assert outcome.seen == POPULATION_COLUMNS, (
        f"population columns not in the published file: {sorted(POPULATION_COLUMNS - outcome.seen)}"
    )


@pytest.mark.slow
def test_the_shared_company_publishes_no_small_group(shared_company):
    """The 600-employee company the end-to-end modules share (built once per session)."""
    hits, seen = scan_published(shared_company.published)
    spec = Spec(
        shared_company.employees, shared_company.years, shared_company.seed, shared_company.end_date
    )
    check(Outcome(spec, True, hits, seen))


# Sizes, seeds and end dates no other test uses, picked in advance (not for their outcome):
# 300 to 20,000 employees, 2-4 years, data ending on a quarter's last day or inside a quarter.
COMPANIES = [
    Spec(300, 2, 8111),
    Spec(350, 3, 8123, date(2026, 6, 30)),
    Spec(450, 2, 8137, date(2025, 12, 31)),
    Spec(550, 4, 8149),
    Spec(700, 2, 8161, date(2026, 8, 31)),
    Spec(800, 3, 8179),
    Spec(900, 4, 8191, date(2026, 3, 31)),
    Spec(1000, 2, 8209),
    Spec(1200, 3, 8221, date(2026, 6, 30)),
    Spec(1400, 4, 8233),
    Spec(1600, 2, 8243, date(2025, 12, 31)),
    Spec(1800, 3, 8263),
    Spec(2000, 4, 8269, date(2026, 8, 31)),
    Spec(2300, 2, 8273),
    Spec(2600, 3, 8287, date(2026, 3, 31)),
    Spec(3000, 4, 8291),
    Spec(3000, 3, 8293, date(2026, 6, 30)),
    Spec(3000, 2, 8297),
    Spec(4000, 4, 8311, date(2025, 12, 31)),
    Spec(6000, 3, 8317),
    Spec(12000, 4, 8231, date(2026, 6, 30)),
    Spec(20000, 4, 8329),
]


@pytest.mark.slow
def test_a_small_young_company_publishes_no_small_group(tmp_path_factory):
    """The 150-employee company of one year that tests/test_report_consistency.py reads too
    (tests/conftest.py, GENERATED; built once per session): most of its groups are small."""
    published = generated_warehouse(tmp_path_factory, "small-young") / "talent.duckdb"
    hits, seen = scan_published(published)
    spec = Spec(150, 1, 4202, date(2026, 6, 30))
    check(Outcome(spec, True, hits, seen))


@pytest.mark.slow
@pytest.mark.companies
@pytest.mark.parametrize("spec", COMPANIES, ids=[s.label for s in COMPANIES])
def test_every_company_publishes_no_small_group(spec, tmp_path):
    check(run_company(spec, tmp_path))
