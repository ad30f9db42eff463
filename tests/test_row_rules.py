"""Every row rule, one row that breaks it: the loader, `talent sources check` and the quality
check judge that row alike.

The rules are enumerated from their one definition (`pipelines/lib/row_rules.py`), so a rule
added there is tested here without touching this file. Each export gets one file: a clean row
(line 2, from `clean_tables`, which meets every rule) and, per rule, a copy of it changed to
break that rule alone (lines 3, 4, ...). A rule that quarantines must send exactly its line to
the quarantine with a reason naming it; a WARN rule lets its row load. The check, run over the
same rows written straight into a raw file, must find each rule broken on exactly its line.
"""

from __future__ import annotations

import csv
import io
from datetime import date, timedelta
from typing import Any

import duckdb
import pytest
from test_quality_data import PERIOD, FakeSettings, clean_tables, write_raw

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest import ingest_export
from pipelines.lib.ingest.check import check_sources
from pipelines.lib.quality import run_raw_suites
from pipelines.lib.row_rules import RowRule, Severity, row_rules

DAY = date(2023, 5, 10)
RULES = [r for export in EXPORTS for r in row_rules(export)]


def _shifted(value: date, days: int, kind: str) -> Any:
    day = value + timedelta(days=days)
    return f"{day} 10:00:00" if kind == "timestamp" else day.isoformat()


def _break_order(row: dict, rule: RowRule, export: str) -> None:
    """`earlier` after `later` (on the same day for a strict rule); other dates of the row
    moved so that every other order rule still holds (or emptied when none can)."""
    earlier, later = rule.columns
    kind = EXPORTS[export].column(earlier).type
    row[earlier] = _shifted(DAY, 0, kind)
    row[later] = _shifted(DAY, 0 if rule.strict else -1, kind)
    demands: dict[str, set[int]] = {}
    for other in row_rules(export):
        if other.kind != "order" or other is rule:
            continue
        a, b = other.columns
        if a not in rule.columns and b in rule.columns:
            demands.setdefault(a, set()).add(-10)
        if b not in rule.columns and a in rule.columns:
            demands.setdefault(b, set()).add(10)
    for column, moves in demands.items():
        optional = not EXPORTS[export].column(column).required
        if len(moves) > 1 and optional:
            row[column] = None
        else:
            row[column] = _shifted(DAY, moves.pop(), EXPORTS[export].column(column).type)


def broken(row: dict, rule: RowRule, export: str) -> dict:
    """A copy of `row` that breaks `rule` and nothing else."""
    row = dict(row)
    col = rule.columns[0]
    if rule.kind == "not_null":
        row[col] = None
    elif rule.kind == "in_set":
        row[col] = "zzz-unlisted"
    elif rule.kind == "pattern":
        row[col] = "not-an-address"
    elif rule.kind == "order":
        _break_order(row, rule, export)
    else:
        if rule.min_value is not None:
            value = rule.min_value if rule.strict_min else rule.min_value - 1
        else:
            value = rule.max_value if rule.strict_max else rule.max_value + 1
        integer = EXPORTS[export].column(col).type == "integer"
        row[col] = int(value) if integer else float(value)
    return row


def text(value: Any, kind: str) -> str:
    """A typed value as our own export format writes it."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if kind == "month":
        return str(value)[:7]
    return str(value)


def _named(rule: RowRule) -> str:
    """How a quarantine reason starts: a contract demand names its column, the others the rule."""
    return f"{rule.columns[0] if rule.kind in ('not_null', 'in_set') else rule.name}: "


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """{export: [clean row, broken row per rule]}, and {rule label: (export, line)}."""
    tables, lines = {}, {}
    clean = clean_tables()
    for export in EXPORTS:
        rows = [clean[export][0]]
        for rule in row_rules(export):
            rows.append(broken(clean[export][0], rule, export))
            lines[f"{rule.suite}.{rule.name}"] = (export, len(rows) + 1)
        tables[export] = rows
    return tables, lines


@pytest.fixture(scope="module")
def loaded(planted, tmp_path_factory):
    """The rows as files of a sources folder: what `talent sources check` says of them, and
    the raw layer one load makes of them."""
    from pipelines.lib.settings import Settings

    tables, _ = planted
    root = tmp_path_factory.mktemp("row_rules")
    for export, rows in tables.items():
        contract = EXPORTS[export]
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(contract.column_names)
        for row in rows:
            writer.writerow([text(row.get(c.name), c.type) for c in contract.columns])
        folder = root / "sources" / contract.folder
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"{export}_{PERIOD}.csv").write_text(out.getvalue())
    settings = Settings(sources_dir=root / "sources", warehouse_dir=root / "wh", settle_seconds=0)
    report = check_sources(settings.sources_dir)
    for export in EXPORTS:
        ingest_export(settings, export)
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        quarantine = con.execute(
            "select export, line_number, reason from quarantine order by export, line_number"
        ).fetchall()
        manifest = con.execute(
            "select export, rows_loaded, rows_quarantined from manifest"
        ).fetchall()
    return report, quarantine, manifest


@pytest.fixture(scope="module")
def checked(planted, tmp_path_factory):
    """The quality suites over the same rows, written straight into a raw file."""
    tables, _ = planted
    settings = FakeSettings(tmp_path_factory.mktemp("row_rules_check"))
    write_raw(settings.raw_db, tables)
    return {r.suite: r for r in run_raw_suites(settings)}


def test_every_blocking_row_rule_quarantines():
    # a blocking (ERROR) row rule the loader did not apply would stop the run on one row
    assert RULES and all(r.quarantines for r in RULES if r.severity is Severity.ERROR)


@pytest.mark.parametrize("rule", RULES, ids=lambda r: f"{r.suite}.{r.name}")
def test_loader_and_check_judge_the_row_alike(rule, planted, loaded, checked):
    _, lines = planted
    _, quarantine, _ = loaded
    export, line = lines[f"{rule.suite}.{rule.name}"]
    reasons = [reason for e, n, reason in quarantine if (e, n) == (export, line)]
    if rule.quarantines:
        # quarantined for this rule alone, named by it (a contract demand names its column)
        assert len(reasons) == 1, reasons
        assert reasons[0].startswith(_named(rule)), reasons
        others = [r for r in row_rules(export) if r.quarantines and _named(r) != _named(rule)]
        assert not [r.name for r in others if f"; {_named(r)}" in reasons[0]], reasons
    else:
        assert reasons == []  # a WARN rule: the row loads
    outcome = checked[rule.suite].outcome(rule.name)
    assert not outcome.passed and outcome.unexpected_count == 1
    assert outcome.locations == (f"{export}_{PERIOD}_v2.csv line {line}",)
    assert outcome.rule.severity is rule.severity


def test_the_clean_row_loads_and_passes(loaded, checked):
    _, quarantine, _ = loaded
    assert not [q for q in quarantine if q[1] == 2]
    names = {(r.suite, r.name) for r in RULES}
    for suite in checked.values():
        for o in suite.outcomes:
            if (suite.suite, o.rule.name) in names:
                assert not any(x.endswith(" line 2") for x in o.locations), o.message


def test_sources_check_says_what_the_load_does(loaded):
    report, quarantine, manifest = loaded
    by_export = {e: (n_loaded, n_quarantined) for e, n_loaded, n_quarantined in manifest}
    for f in report.files:
        assert f.status == "loads", f
        assert (f.loadable, f.quarantined) == by_export[f.export], f.path
        # the same reasons, each first met on the same line
        firsts: dict[str, int] = {}
        for e, line, reason in quarantine:
            if e == f.export:
                firsts.setdefault(reason, line)
        assert {(r, line) for r, _, line in f.reasons} == set(firsts.items())
    expected = {e: 1 + sum(r.quarantines is False for r in row_rules(e)) for e in EXPORTS}
    assert {e: n for e, n, _ in manifest} == expected
