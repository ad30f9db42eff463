"""A subject's copy (GDPR article 15): everything the warehouse holds about one person, as one
JSON file HR can hand over, and nothing about anyone else.

From the restricted raw layer, which holds every row ever loaded: the person's rows of every
export (HR record, job history and pay, course enrolments with the course, certification
attempts, incident responses with the incident), each with the delivered file, its line and
whether that delivery still counts; the rejected lines that name them (`raw.quarantine`); and
whether and when they were pseudonymised or their salary removed. A value that names another
person in their rows (a manager's id) is withheld. The marts hold the person only as a keyed
pseudonym inside aggregates, which the copy says.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal
from pathlib import Path

import duckdb

from pipelines.lib import db
from pipelines.lib.privacy.subjects import (
    REFERENCE_COLUMNS,
    SUBJECT_COLUMNS,
    Subject,
    identify,
    keyed_hash,
    sql_normalised,
)
from pipelines.lib.settings import Settings

WITHHELD = "(withheld: another person)"

# what each export is, in the copy's words, and the context joined to the person's rows
SECTIONS = {
    "employees": ("employment records (HR system)", None),
    "job_history": ("job history and pay", None),
    "enrolments": ("course enrolments", ("courses", "course_id")),
    "certifications": ("certification attempts", None),
    "responders": ("incident responses", ("incidents", "incident_number")),
    "changes": ("change requests implemented", None),
}


def subject_copy(settings: Settings, employee_id: str) -> dict:
    """The copy as a dict (see the module's docstring)."""
    with db.connect(settings.raw_db, read_only=True) as con:
        subject = identify(con, [employee_id])
        copy: dict = {
            "employee_id": employee_id,
            "generated_at": datetime.now(UTC).isoformat(timespec="seconds"),
            "about": (
                "Everything the talent-metrics warehouse holds about this person: their rows as "
                "delivered by each system, with the file and line, rejected lines naming them, "
                "and privacy actions. The analyst-facing marts hold people only as a keyed "
                "pseudonym inside counts of five or more."
            ),
            "emails": sorted(subject.emails),
        }
        for export, (title, context) in SECTIONS.items():
            copy[export] = {"what": title, "rows": _rows(con, export, subject, context)}
        copy["rejected_lines"] = _quarantine(con, subject)
        copy["privacy_actions"] = _actions(con, settings, subject)
    return copy


def write_subject_copy(settings: Settings, employee_id: str, out: Path) -> dict:
    copy = subject_copy(settings, employee_id)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(copy, indent=2, default=_json, ensure_ascii=False))
    return copy


def _rows(
    con: duckdb.DuckDBPyConnection, export: str, subject: Subject, context: tuple | None
) -> list[dict]:
    where = []
    params: list = []
    for column, kind in SUBJECT_COLUMNS[export].items():
        values = sorted(subject.values(kind))
        if values:
            where.append(f"list_contains(?, {sql_normalised(kind, column)})")
            params.append(values)
    if not where:
        return []
    join = ""
    extra = ""
    if context is not None:
        table, key = context
        join = (
            f'LEFT JOIN (SELECT DISTINCT ON ("{key}") * FROM "{table}" '
            f'ORDER BY "{key}", _period DESC, _version DESC) AS c USING ("{key}")'
        )
        extra = f", to_json(c) AS {table}"
    rows = con.execute(
        f"""
        SELECT m.file_name, m.status AS delivery_status, r._line AS line, r.* EXCLUDE (_file_id,
               _line){extra}
        FROM "{export}" AS r
        JOIN manifest AS m ON m.file_id = r._file_id AND m.export = '{export}'
        {join}
        WHERE {" OR ".join(where)}
        ORDER BY r._period, r._version, m.file_name, r._line
        """,
        params,
    )
    names = [d[0] for d in rows.description]
    found = [dict(zip(names, row, strict=True)) for row in rows.fetchall()]
    for row in found:
        for column in REFERENCE_COLUMNS.get(export, {}):
            if row.get(column) is not None and row[column] not in subject.ids:
                row[column] = WITHHELD
        for key in [k for k in row if k in ("courses", "incidents")]:
            row[key] = json.loads(row[key]) if row[key] else None
            for internal in ("_file_id", "_line", "_period", "_version", "_extra"):
                (row[key] or {}).pop(internal, None)
    return found


def _quarantine(con: duckdb.DuckDBPyConnection, subject: Subject) -> list[dict]:
    rows = con.execute(
        "SELECT file_name, export, line_number, raw_line, reason FROM quarantine "
        "ORDER BY file_name, export, line_number"
    ).fetchall()
    keys = ("file_name", "export", "line", "as_delivered", "reason")
    return [dict(zip(keys, r, strict=True)) for r in rows if r[3] and subject.mentioned_in(r[3])]


def _actions(con: duckdb.DuckDBPyConnection, settings: Settings, subject: Subject) -> list[dict]:
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    if "erasures" not in tables or not subject.ids:
        return []
    hashes = [keyed_hash("id", i, settings.pseudonym_key) for i in subject.ids]
    rows = con.execute(
        "SELECT DISTINCT erased_at, reason FROM erasures WHERE kind = 'id' "
        "AND list_contains(?, value_hash) ORDER BY erased_at",
        [hashes],
    ).fetchall()
    return [{"at": at, "action": reason} for at, reason in rows]


def _json(value: object) -> object:
    if isinstance(value, datetime | date):
        return value.isoformat()
    if isinstance(value, Decimal):
        return float(value)
    return str(value)
