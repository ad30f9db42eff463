"""Rows of erased people dropped on arrival, while their erasure stands.

A delivery loaded after an erasure (the same export delivered again, a late correction) may
still hold the person. Before its archive copy is written, every export the file feeds is cut
into records and each record whose person column hashes (`subjects.keyed_hash`) to an erased
id, e-mail or name in `raw.erasures` is left out, as are rejected lines naming them; a manager
id of an erased person is blanked. The archive keeps the screened copy under its own hash
(`manifest.archive_sha256`) and the manifest's `message` says how many rows were dropped.
Deliveries already loaded (the original file delivered again) are recognised by the delivered
file's hash and load nothing. A leaver the retention policy pseudonymised is given the same
pseudonyms on arrival (ids, e-mails, and their names in their own records), so a file loaded
after the policy ran (a later export of the same run, a re-delivery) links them as before.
"""

from __future__ import annotations

from dataclasses import dataclass

import duckdb

from pipelines.lib.ingest.reader import FileError
from pipelines.lib.privacy.rewrite import blank_mentions, rewrite_records
from pipelines.lib.privacy.subjects import (
    SUBJECT_COLUMNS,
    ErasedHashes,
    retained_value,
)


def erased_people(con: duckdb.DuckDBPyConnection, key: str) -> ErasedHashes:
    """The keyed hashes of the people erased on request and of the leavers retained."""
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    found = ErasedHashes(key)
    if "erasures" in tables:
        rows = con.execute(
            "SELECT DISTINCT reason, kind, value_hash FROM erasures WHERE kind <> 'none'"
        ).fetchall()
        found.hashes = {(k, h) for r, k, h in rows if r == "request"}
        found.retained = {(k, h) for r, k, h in rows if r == "retention"}
    return found


@dataclass
class Screened:
    data: bytes  # the bytes to archive
    dropped: int = 0  # records of people erased on request left out
    pseudonymised: int = 0  # records of retained leavers given their pseudonyms

    def notes(self) -> list[str]:
        """The manifest's message about what was changed on arrival."""
        notes = []
        if self.dropped:
            notes.append(f"{self.dropped} row(s) of people erased on request left out on arrival")
        if self.pseudonymised:
            notes.append(
                f"{self.pseudonymised} row(s) of leavers past the retention period pseudonymised "
                "on arrival"
            )
        return notes or ["references to people erased on request blanked on arrival"]


def screen_arrival(
    erased: ErasedHashes, data: bytes, exports: tuple[str, ...], file_name: str, split
) -> Screened:
    """`split(export)` cuts the file for one export (the loader's own `split_delivery`); a file
    that cannot be cut is archived as delivered (its load fails and names why)."""
    if not erased:
        return Screened(data)
    drop: set[int] = set()
    own: dict[int, set[str]] = {}  # line -> the retained leaver's names in that record
    try:
        for export in exports:
            cut = split(export)
            names = [_texts(cut.values[c]) for c in NAME_COLUMNS if c in cut.values]
            for column, kind in SUBJECT_COLUMNS.get(export, {}).items():
                if column not in cut.values:
                    continue
                for i, (line, value) in enumerate(
                    zip(cut.lines, _texts(cut.values[column]), strict=True)
                ):
                    if erased.matches(kind, value):
                        drop.add(line)
                    elif erased.retains(kind, value):
                        own.setdefault(line, set()).update(n[i] for n in names if n[i])
        edits = {line: _own_edit(erased, found) for line, found in own.items()}
        new, dropped = rewrite_records(data, file_name, drop, _edit(erased), erased, edits)
    except FileError:
        return Screened(data)
    if new == data:
        return Screened(data)
    return Screened(new, dropped, len(own))


NAME_COLUMNS = ("first_name", "last_name", "responder_name", "implementer_name")


def _edit(erased: ErasedHashes):
    """A field naming someone erased goes; one naming a retained leaver gets their pseudonym."""
    blank = blank_mentions(erased)

    def edit(value: str) -> str | None:
        gone = blank(value)
        if gone is not None:
            return gone
        for kind in ("id", "email"):
            if erased.retains(kind, value):
                return retained_value(kind, value, erased.key)
        return None

    return edit


def _own_edit(erased: ErasedHashes, names: set[str]):
    """In a retained leaver's own record their names go too."""
    other = _edit(erased)

    def edit(value: str) -> str | None:
        replaced = other(value)
        if replaced is None and value in names:
            return retained_value("name", value, erased.key)
        return replaced

    return edit


def _texts(values) -> list[str | None]:
    if hasattr(values, "to_pylist"):
        return values.to_pylist()
    return list(values)
