"""Rows of erased people dropped on arrival, while their erasure stands.

A delivery loaded after an erasure (the same export delivered again, a late correction) may
still hold the person. Before its archive copy is written, every export the file feeds is cut
into records and each record whose person column hashes (`subjects.keyed_hash`) to an erased
id, e-mail or name in `raw.erasures` is left out, as are rejected lines naming them; a manager
id of an erased person is blanked. The archive keeps the screened copy under its own hash
(`manifest.archive_sha256`) and the manifest's `message` says how many rows were dropped.
Deliveries already loaded (the original file delivered again) are recognised by the delivered
file's hash and load nothing.
"""

from __future__ import annotations

import duckdb

from pipelines.lib.ingest.reader import FileError
from pipelines.lib.privacy.rewrite import blank_mentions, rewrite_records
from pipelines.lib.privacy.subjects import SUBJECT_COLUMNS, ErasedHashes, normalised


def erased_people(con: duckdb.DuckDBPyConnection, key: str) -> ErasedHashes:
    """The keyed hashes of the people erased on request (retention pseudonymises instead)."""
    tables = {t for (t,) in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    found = ErasedHashes(key)
    if "erasures" in tables:
        rows = con.execute(
            "SELECT DISTINCT kind, value_hash FROM erasures WHERE reason = 'request'"
        ).fetchall()
        found.hashes = {(k, h) for k, h in rows if k != "none"}
    return found


def screen_arrival(
    erased: ErasedHashes, data: bytes, exports: tuple[str, ...], file_name: str, split
) -> tuple[bytes, int]:
    """(the bytes to archive, records left out). `split(export)` cuts the file for one export
    (the loader's own `split_delivery`); a file that cannot be cut is archived as delivered
    (its load fails and names why)."""
    if not erased:
        return data, 0
    drop: set[int] = set()
    try:
        for export in exports:
            columns = SUBJECT_COLUMNS.get(export, {})
            cut = split(export)
            for column, kind in columns.items():
                values = cut.values.get(column)
                if values is None:
                    continue
                for line, value in zip(cut.lines, _texts(values), strict=True):
                    if value is not None and erased.matches(kind, normalised(kind, value)):
                        drop.add(line)
        new, dropped = rewrite_records(data, file_name, drop, blank_mentions(erased), erased)
    except FileError:
        return data, 0
    return (data, 0) if new == data else (new, dropped)


def _texts(values) -> list[str | None]:
    if hasattr(values, "to_pylist"):
        return values.to_pylist()
    return list(values)
