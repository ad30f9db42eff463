"""Who a privacy request is about: a person's ids, e-mails and names as the raw layer holds them,
the columns of each export that name a person, and the keyed hashes that recognise a person
again without keeping anything in clear (`raw.erasures`).
"""

from __future__ import annotations

import hashlib
import hmac
import re
import unicodedata
from dataclasses import dataclass, field

import duckdb

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.pseudonym import pseudonym

# How each export names the person a row is about (the row is theirs) ...
SUBJECT_COLUMNS: dict[str, dict[str, str]] = {
    "employees": {"employee_id": "id", "work_email": "email"},
    "job_history": {"employee_id": "id"},
    "enrolments": {"learner_email": "email"},
    "certifications": {"learner_email": "email"},
    "responders": {"responder_email": "email", "responder_name": "name"},
    "changes": {"implementer_email": "email", "implementer_name": "name"},
}
# ... and the columns that refer to another person (blanked, the row stays its owner's).
REFERENCE_COLUMNS: dict[str, dict[str, str]] = {
    "job_history": {"manager_id": "id"},
    # a requisition names the leaver it replaces and the person hired; neither owns the row
    "requisitions": {"replaces_employee_id": "id", "hired_employee_id": "id"},
}
# ... and the columns that list several people, separated by , or ; (a capacity project's
# leads): the person's entries leave the list (`rewrite.blank_mentions`), the row stays.
LIST_COLUMNS: dict[str, dict[str, tuple[str, ...]]] = {
    "capacity_changes": {"led_by": ("id", "email"), "led_by_name": ("name",)},
}

# Domain separation: the erasure log's hashes never equal a published `person_key` of the
# same id, although both are keyed with the pseudonym key.
HASH_CONTEXT = "talent-metrics erasure v1\x00"


def normalised(kind: str, value: str | None) -> str | None:
    """The form a value is compared in: ids trimmed, e-mails and names trimmed and lower-cased
    (names with single spaces), as staging compares them."""
    if value is None:
        return None
    text = value.strip()
    if kind in ("email", "name"):
        text = re.sub(r"\s+", " ", text).lower()
    return text or None


def keyed_hash(kind: str, value: str, key: str) -> str:
    """HMAC-SHA256 of a normalised value under the pseudonym key (hex, 64 characters)."""
    message = f"{HASH_CONTEXT}{kind}\x00{normalised(kind, value)}".encode()
    return hmac.new(key.encode("utf-8"), message, hashlib.sha256).hexdigest()


@dataclass
class Subject:
    """One person (or several, for a list of ids) as values in clear, held in memory only."""

    ids: set[str] = field(default_factory=set)
    emails: set[str] = field(default_factory=set)
    names: set[str] = field(default_factory=set)  # "first last", normalised
    first_last: set[tuple[str, str]] = field(default_factory=set)

    def values(self, kind: str) -> set[str]:
        return {"id": self.ids, "email": self.emails, "name": self.names}[kind]

    def hashes(self, key: str) -> list[tuple[str, str]]:
        """(kind, keyed hash) of every id, e-mail and full name."""
        return sorted(
            {(k, keyed_hash(k, v, key)) for k in ("id", "email", "name") for v in self.values(k)}
        )

    def matches(self, kind: str, value: str | None) -> bool:
        return normalised(kind, value) in self.values(kind)

    def mentioned_in(self, text: str) -> bool:
        """Whether a raw line names the person: one of its fields is an id, or it holds an
        e-mail (ids are compared whole: `17` must not match `2017`)."""
        low = text.lower()
        if any(e in low for e in self.emails):
            return True
        fields = re.split(r"[,;\t|\n]", text)
        return any(f.strip().strip('"').strip() in self.ids for f in fields)

    def __bool__(self) -> bool:
        return bool(self.ids or self.emails)


RETAINED_ID = "R-"
RETAINED_DOMAIN = "@retained.invalid"
RETAINED_NAME = "retained"


def retained_value(kind: str, value: str, key: str) -> str:
    """The pseudonym the retention policy gives an id, an e-mail or a name: the same for the
    same value wherever it stands, so joins between exports still hold."""
    digest = keyed_hash(kind, value, key)[:16]
    if kind == "id":
        return RETAINED_ID + digest
    if kind == "email":
        return f"r-{digest}{RETAINED_DOMAIN}"
    # a name word by word: the HRIS's first and last name and a full name elsewhere (a change's
    # implementer, a project's lead) still make the same full name, which links as before
    words = (normalised("name", value) or "").split(" ")
    return " ".join(f"{RETAINED_NAME}-{keyed_hash('name', w, key)[:12]}" for w in words if w)


def linked_name(full_name: str) -> str:
    """A full name as the dbt macro `normalised_name` gives it on DuckDB, where the name link
    (`stg_hris__person_names`) compares it: runs of RE2's whitespace (tab, newline, form feed,
    carriage return, space) made one space, trimmed, lower-cased, accents stripped."""
    text = re.sub(r"[\t\n\f\r ]+", " ", full_name).strip(" ").lower()
    bare = "".join(c for c in unicodedata.normalize("NFD", text) if not unicodedata.combining(c))
    return unicodedata.normalize("NFC", bare)


def name_key(full_name: str, key: str) -> str:
    """`stg_hris__person_names.name_key` of a full name: the keyed pseudonym (the DuckDB
    plugin's `pseudonym()`) of its normalised form."""
    return pseudonym(linked_name(full_name), key)


@dataclass
class ErasedHashes:
    """The people of `raw.erasures`, recognised by the keyed hashes of their values alone:
    `hashes` of people erased on request, `retained` of leavers the retention policy
    pseudonymised."""

    key: str
    hashes: set[tuple[str, str]] = field(default_factory=set)
    retained: set[tuple[str, str]] = field(default_factory=set)

    def matches(self, kind: str, value: str | None) -> bool:
        norm = normalised(kind, value)
        return norm is not None and (kind, keyed_hash(kind, norm, self.key)) in self.hashes

    def retains(self, kind: str, value: str | None) -> bool:
        norm = normalised(kind, value)
        return norm is not None and (kind, keyed_hash(kind, norm, self.key)) in self.retained

    def mentioned_in(self, text: str) -> bool:
        fields = [f.strip().strip('"').strip() for f in re.split(r"[,;\t|\n]", text)]
        kinds = ("id", "email")
        return any(self.matches(k, f) or self.retains(k, f) for f in fields if f for k in kinds)

    def __bool__(self) -> bool:
        return bool(self.hashes or self.retained)


def _in(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> list[tuple]:
    return con.execute(sql, params).fetchall()


def identify(
    con: duckdb.DuckDBPyConnection,
    employee_ids: list[str] = (),
    emails: list[str] = (),
) -> Subject:
    """The person (people) of these ids and e-mails with every e-mail and name the HRIS export
    gave them; an e-mail the HRIS never gave is kept as it is (a learner not in the HRIS)."""
    subject = Subject(
        ids={normalised("id", i) for i in employee_ids if normalised("id", i)},
        emails={normalised("email", e) for e in emails if normalised("email", e)},
    )
    if subject.emails:
        for (emp,) in _in(
            con,
            "SELECT DISTINCT trim(employee_id) FROM employees "
            "WHERE list_contains(?, lower(trim(work_email)))",
            [sorted(subject.emails)],
        ):
            subject.ids.add(emp)
    if subject.ids:
        rows = _in(
            con,
            "SELECT DISTINCT lower(trim(work_email)), trim(first_name), trim(last_name) "
            "FROM employees WHERE list_contains(?, trim(employee_id))",
            [sorted(subject.ids)],
        )
        for email, first, last in rows:
            if email:
                subject.emails.add(email)
            if first and last:
                subject.first_last.add((first, last))
                subject.names.add(normalised("name", f"{first} {last}"))
    return subject


def subject_lines(con: duckdb.DuckDBPyConnection, subject: Subject) -> dict[str, set[int]]:
    """file_id -> physical lines of the person's own rows, over every export."""
    found: dict[str, set[int]] = {}
    for export, columns in SUBJECT_COLUMNS.items():
        for column, kind in columns.items():
            values = sorted(subject.values(kind))
            if not values:
                continue
            for file_id, line in _in(
                con,
                f'SELECT _file_id, _line FROM "{export}" WHERE list_contains(?, {sql_normalised(kind, column)})',
                [values],
            ):
                found.setdefault(file_id, set()).add(line)
    return found


def referring_files(con: duckdb.DuckDBPyConnection, subject: Subject) -> set[str]:
    """Files in which another person's row refers to this one (a manager id) or a row's list
    of people names them (a capacity project's leads)."""
    wanted = [
        (export, f"list_contains(?, {sql_normalised(kind, column)})", subject.values(kind))
        for export, columns in REFERENCE_COLUMNS.items()
        for column, kind in columns.items()
    ] + [
        (
            export,
            f"list_has_any(?, {sql_members(column)})",
            set().union(*map(subject.values, kinds)),
        )
        for export, columns in LIST_COLUMNS.items()
        for column, kinds in columns.items()
    ]
    found: set[str] = set()
    for export, condition, values in wanted:
        if values:
            sql = f'SELECT DISTINCT _file_id FROM "{export}" WHERE {condition}'
            found |= {f for (f,) in _in(con, sql, [sorted(values)])}
    return found


def quarantined_lines(con: duckdb.DuckDBPyConnection, subject: Subject) -> dict[str, set[int]]:
    """file_id -> lines of rejected rows (`raw.quarantine`) that name the person."""
    found: dict[str, set[int]] = {}
    rows = _in(con, "SELECT file_id, line_number, raw_line FROM quarantine", [])
    for file_id, line, text in rows:
        if text and subject.mentioned_in(text):
            found.setdefault(file_id, set()).add(line)
    return found


def sql_normalised(kind: str, column: str) -> str:
    if kind == "id":
        return f'trim("{column}")'
    return f"""lower(regexp_replace(trim("{column}"), '\\s+', ' ', 'g'))"""


def sql_members(column: str) -> str:
    """The entries of a list column, each as an id compares (trimmed) and as an e-mail or a
    name compares (also lower-cased, single spaces)."""
    parts = f"""string_split_regex(coalesce("{column}", ''), '[,;]')"""
    return (
        f"list_concat(list_transform({parts}, lambda x: trim(x)), list_transform({parts}, "
        f"""lambda x: lower(regexp_replace(trim(x), '\\s+', ' ', 'g'))))"""
    )


def person_columns() -> dict[str, dict[str, str]]:
    """Every column of the contracts that names a person, by export (for the subject's copy)."""
    merged: dict[str, dict[str, str]] = {}
    for source in (SUBJECT_COLUMNS, REFERENCE_COLUMNS):
        for export, columns in source.items():
            assert export in EXPORTS
            merged.setdefault(export, {}).update(columns)
    for export, listed in LIST_COLUMNS.items():
        merged.setdefault(export, {}).update({c: kinds[-1] for c, kinds in listed.items()})
    return merged
