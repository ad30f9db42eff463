"""A delivered file without a person's rows, or with their values replaced: the archive copy an
erasure or the retention policy leaves.

The file is cut into records exactly as the loader cuts it (`reader.read_table`: the same
physical line numbers the raw rows carry in `_line`), so the person's records are dropped by
line; in every other record a field naming the person (a manager's id) is blanked or replaced.
A dropped record leaves its lines empty (the loader skips blank lines), so every other row
keeps the line number it has in the delivered file. Records that do not change keep their
bytes; a changed record is written again with the file's delimiter. Line breaks become `\\n` and a workbook becomes CSV text of its first sheet (the
loader reads an archived file by its content, so it reads the copy as it read the original).
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from typing import Protocol

from pipelines.lib.ingest.reader import read_table


class Matcher(Protocol):
    def matches(self, kind: str, value: str | None) -> bool: ...

    def mentioned_in(self, text: str) -> bool: ...


# field text -> its replacement, or None when the field does not name the person
FieldEdit = Callable[[str], str | None]


def names_person(matcher: Matcher, value: str) -> bool:
    """Whether a field is one of the person's ids, e-mails or full names."""
    return any(matcher.matches(kind, value) for kind in ("id", "email", "name"))


def blank_mentions(matcher: Matcher) -> FieldEdit:
    """A field that is one of the person's ids, e-mails or full names becomes empty; in a list
    of people (separated by , or ;, as a capacity project's leads) the person's entries go."""

    def edit(value: str) -> str | None:
        if value == "":
            return None
        if names_person(matcher, value):
            return ""
        members = re.split(r"[,;]", value)
        kept = [m.strip() for m in members if not names_person(matcher, m)]
        return ", ".join(kept) if len(members) > 1 and len(kept) < len(members) else None

    return edit


def rewrite_records(
    data: bytes,
    file_name: str,
    drop: set[int],
    edit: FieldEdit,
    matcher: Matcher,
    own: dict[int, FieldEdit] | None = None,
    drop_mentioning: bool = False,
) -> tuple[bytes, int]:
    """(the new bytes, records dropped). `drop`: first physical lines of records to leave out;
    a rejected line that names the person (`matcher.mentioned_in`) goes too. `edit` applies to
    every field of every other record; `own[line]` instead of `edit` to that record's fields.
    `drop_mentioning`: also drop every record that names the person (a file that was never
    loaded, whose rows the raw layer cannot point at)."""
    table = read_table(data, file_name)
    lines = table.physical.text.split("\n")
    out: dict[int, str | None] = {}  # first line -> replacement text of its record (None: drop)
    spans: dict[int, int] = {}
    for first, record in zip(table.lines, table.records, strict=True):
        last = table.multi_line.get(first, first)
        spans[first] = last
        if first in drop or (drop_mentioning and matcher.mentioned_in("\n".join(record))):
            out[first] = None
            continue
        field_edit = (own or {}).get(first, edit)
        edits = [field_edit(v) for v in record]
        if any(e is not None for e in edits):
            new = [v if e is None else e for v, e in zip(record, edits, strict=True)]
            out[first] = _record_text(new, table.delimiter)
    for rejected in table.rejected:
        first = rejected.line_number
        if first in drop or matcher.mentioned_in(rejected.raw_line):
            spans[first] = first + rejected.raw_line.count("\n")
            out[first] = None
    kept: list[str] = []
    line = 1
    while line <= len(lines):
        if line in out:
            # the record's physical lines stay, empty (a blank line is no record), so every
            # other row keeps the line number it has in the delivered file
            text = out[line] if out[line] is not None else ""
            span = spans[line] - line + 1
            kept += [text, *[""] * max(0, span - text.count("\n") - 1)]
            line = spans[line] + 1
            continue
        kept.append(lines[line - 1])
        line += 1
    encoding = "utf-8" if table.encoding == "xlsx" else table.encoding
    dropped = sum(1 for v in out.values() if v is None)
    return "\n".join(kept).encode(encoding), dropped


def _record_text(fields: list[str], delimiter: str) -> str:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="").writerow(fields)
    return buffer.getvalue()
