"""Read one export file into typed rows and rejected rows, following its contract.

Bad input is normal input: a row that cannot be typed, or that breaks a row rule which
quarantines (`pipelines/lib/row_rules.py`: a required value, a value list, dates in order, a
plausible range), is rejected with a reason naming the column and the value, and the rest of
the file still loads. Only a file that cannot be read as
a whole (empty, undecodable, header missing required columns) raises `FileError`.

Splitting into records: the common file (UTF-8, no quote character, every line a record of
the header's width) is cut by Arrow's CSV reader straight into Arrow strings, one record per
physical line (`_split_plain_arrow`). Every other file goes through Python (`read_table`):
the csv module tracks physical line numbers across quoted newlines, which DuckDB's CSV reader
does not expose, and the quarantine must point at the line an operator sees in an editor; a
line of another width or a blank line is kept or skipped there with its reason. Both paths
give the same rows (tests/test_ingest_reader.py compares them). Trimming and typing are done in
bulk by DuckDB over an Arrow table of strings (one query for all new files of an export), never
value by value.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from pipelines.lib import db
from pipelines.lib.contracts import EXPORTS, Column, Export
from pipelines.lib.row_rules import RowRule, load_rules

TRUE_WORDS = ("true", "yes", "ja", "1")
FALSE_WORDS = ("false", "no", "nein", "0")
# what "trimmed" removes: ASCII whitespace and the no-break space spreadsheets like to add
_BLANKS = " \t\n\r\u00a0"

# Python's csv module refuses fields above 128 KiB by default; a free-text column may exceed it.
csv.field_size_limit(16 * 1024 * 1024)


class FileError(ValueError):
    """The file cannot be read as a whole; the message names the file, the problem and a fix."""


@dataclass(frozen=True)
class Rejected:
    line_number: int  # first physical line of the record (header = line 1)
    raw_line: str  # the record as delivered (several lines when a quoted field holds newlines)
    reason: str


@dataclass
class ParsedFile:
    file_name: str
    export: str
    encoding: str
    delimiter: str
    locale: str
    rows_total: int  # data records in the file (blank lines not counted)
    rows: pa.Table  # typed contract columns + `_line` + `_extra`
    rejected: list[Rejected]
    ignored_columns: tuple[str, ...]  # headers kept in `_extra`


# --- decoding and header ---------------------------------------------------------------------


def decode(data: bytes, encodings: Sequence[str], file_name: str) -> tuple[str, str]:
    """Return (text, encoding). A BOM means UTF-8; otherwise UTF-8, then cp1252 if allowed."""
    if data.startswith(b"\xef\xbb\xbf"):
        try:
            return data[3:].decode("utf-8"), "utf-8-sig"
        except UnicodeDecodeError as e:
            raise FileError(
                _undecodable(file_name, data, e, "UTF-8 (it starts with a UTF-8 BOM)")
            ) from e
    try:
        return data.decode("utf-8"), "utf-8"
    except UnicodeDecodeError as e:
        if "cp1252" not in encodings:
            raise FileError(
                _undecodable(file_name, data, e, "UTF-8")
                + " This export accepts only UTF-8 (with or without BOM)."
            ) from e
        try:
            return data.decode("cp1252"), "cp1252"
        except UnicodeDecodeError as e2:
            raise FileError(_undecodable(file_name, data, e2, "UTF-8 or Windows-1252")) from e2


def _undecodable(file_name: str, data: bytes, e: UnicodeDecodeError, tried: str) -> str:
    line = data[: e.start].count(b"\n") + 1
    return (
        f"{file_name}: cannot be decoded as {tried}: byte 0x{data[e.start]:02x} at line {line} "
        "is not valid text. Ask the sender to export the file again as UTF-8; nothing from "
        "this file was loaded."
    )


def detect_delimiter(header_line: str) -> str:
    """The separator the header uses most outside quotes: tab (tab-separated exports, e.g.
    Workday's or an HRIS's "text" download), `;` (German-locale Excel), `|` (Slurm's `sacct
    --parsable2`) or `,` (the default)."""
    outside = re.sub(r'"[^"]*"', "", header_line)
    counts = {d: outside.count(d) for d in (",", ";", "\t", "|")}
    best = max(counts, key=lambda d: (counts[d], d == ","))
    return best if counts[best] else ","


def normalise_header(name: str) -> str:
    return " ".join(name.replace("\ufeff", "").strip().casefold().split())


def header_lookup(export: Export) -> dict[str, str]:
    """Every accepted spelling (name and aliases, case-insensitive) -> contract column name."""
    lookup: dict[str, str] = {}
    for col in export.columns:
        for spelling in (col.name, *col.aliases):
            lookup[normalise_header(spelling)] = col.name
    return lookup


def map_header(
    header: list[str], export: Export, file_name: str, text_ends_in_header: bool
) -> tuple[dict[str, int], dict[str, int]]:
    """Return (contract column -> field index, extra header -> field index) or raise FileError."""
    lookup = header_lookup(export)
    known: dict[str, int] = {}
    extra: dict[str, int] = {}
    for i, raw in enumerate(header):
        name = raw.replace("\ufeff", "").strip()
        canonical = lookup.get(normalise_header(name))
        if canonical is None:
            if not name:
                name = f"column_{i + 1}"
            extra[name] = i
            continue
        if canonical in known:
            raise FileError(
                f"{file_name}: line 1 (header) has column {canonical!r} twice (fields "
                f"{known[canonical] + 1} and {i + 1}, spelled {header[known[canonical]]!r} and "
                f"{raw!r}). Remove one of them and deliver the file again."
            )
        known[canonical] = i
    missing = [c for c in export.required_columns if c not in known]
    if missing:
        last = normalise_header(header[-1]) if header else ""
        cut_off = text_ends_in_header or (
            last and last not in lookup and any(s.startswith(last) for s in lookup)
        )
        found = ", ".join(h.strip() for h in header) or "nothing"
        if cut_off:
            raise FileError(
                f"{file_name}: the header (line 1) is cut off after {header[-1].strip()!r}; "
                f"required columns missing: {', '.join(missing)}. The file looks truncated: ask "
                "for a complete re-delivery. Nothing from this file was loaded."
            )
        raise FileError(
            f"{file_name}: the header (line 1) lacks required column(s) {', '.join(missing)} "
            f"of the {export.name} contract (found: {found}). Check that the file holds the "
            f"{export.name} export and that its header uses the contract names or aliases (see "
            "sources/README.md); nothing from this file was loaded."
        )
    return known, extra


# --- locale ----------------------------------------------------------------------------------

_DE_VALUE = re.compile(r"^(\d{1,2}\.\d{1,2}\.\d{4}.*|\d{1,2}\.\d{4}|-?[\d.]*\d,\d+)$")
_EN_VALUE = re.compile(r"^(\d{4}-\d{2}(-\d{2}.*)?)$")


def detect_locale(
    export: Export, columns: dict[str, Sequence[str] | pa.ChunkedArray], delimiter: str
) -> str:
    """Vote over date, month and decimal values; a tie falls back to the delimiter.

    Only locales the contract allows are considered, so an English-only export with German
    dates gets its rows rejected with a clear reason rather than silently reinterpreted.
    """
    if "de" not in export.locales:
        return "en"
    if "en" not in export.locales:
        return "de"
    de = en = 0
    for name, values in columns.items():
        if export.column(name).type not in ("date", "timestamp", "month", "decimal"):
            continue
        seen = 0
        for raw in _python_strings(values):
            v = raw.strip() if raw else ""
            if not v:
                continue
            if _DE_VALUE.match(v):
                de += 1
            elif _EN_VALUE.match(v):
                en += 1
            seen += 1
            if seen >= 200:
                break
    if de != en:
        return "de" if de > en else "en"
    return "de" if delimiter == ";" else "en"


def _python_strings(values: Sequence[str] | pa.ChunkedArray) -> Iterator[str | None]:
    """The values one by one as Python strings (Arrow strings converted a slice at a time)."""
    if not isinstance(values, pa.ChunkedArray):
        yield from values
        return
    for start in range(0, len(values), 1024):
        yield from values.slice(start, 1024).to_pylist()


# --- typing in SQL ---------------------------------------------------------------------------

_FORMATS = {
    ("date", "en"): "YYYY-MM-DD",
    ("date", "de"): "DD.MM.YYYY or YYYY-MM-DD",
    ("timestamp", "en"): "YYYY-MM-DD HH:MM[:SS]",
    ("timestamp", "de"): "DD.MM.YYYY HH:MM[:SS] or YYYY-MM-DD HH:MM[:SS]",
    ("month", "en"): "YYYY-MM",
    ("month", "de"): "MM.YYYY or YYYY-MM",
    ("integer", "en"): "a whole number such as 1200",
    ("integer", "de"): "a whole number such as 1200 or 1.200",
    ("decimal", "en"): "a number with a decimal point such as 1234.5",
    ("decimal", "de"): "a number with a decimal comma such as 1234,5",
}


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _lit(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _number_text(v: str, locale: str) -> str:
    """SQL turning a delivered number into one with a decimal point and no grouping."""
    if locale == "de":
        return (
            f"CASE WHEN regexp_full_match({v}, '[+-]?\\d{{1,3}}(\\.\\d{{3}})+(,\\d*)?') "
            f"THEN replace(replace({v}, '.', ''), ',', '.') ELSE replace({v}, ',', '.') END"
        )
    return (
        f"CASE WHEN regexp_full_match({v}, '[+-]?\\d{{1,3}}(,\\d{{3}})+(\\.\\d*)?') "
        f"THEN replace({v}, ',', '') ELSE {v} END"
    )


def typed_sql(col: Column, locale: str) -> str:
    """SQL expression typing the VARCHAR column `col.name`; NULL when it cannot be typed."""
    v = _q(col.name)
    t = col.type
    if t == "string":
        return f"lower({v})" if col.values else v
    if t in ("integer", "decimal"):
        n = _number_text(v, locale)
        if t == "integer":
            return f"CASE WHEN regexp_full_match({n}, '[+-]?\\d+') THEN try_cast({n} AS BIGINT) END"
        return (
            f"CASE WHEN regexp_full_match({n}, '[+-]?(\\d+\\.?\\d*|\\.\\d+)([eE][+-]?\\d+)?') "
            f"THEN try_cast({n} AS DOUBLE) END"
        )
    if t == "boolean":
        trues = ", ".join(_lit(w) for w in TRUE_WORDS)
        falses = ", ".join(_lit(w) for w in FALSE_WORDS)
        return f"CASE WHEN lower({v}) IN ({trues}) THEN true WHEN lower({v}) IN ({falses}) THEN false END"
    if t == "date":
        iso = f"CASE WHEN regexp_full_match({v}, '\\d{{4}}-\\d{{2}}-\\d{{2}}') THEN try_cast({v} AS DATE) END"
        if locale == "de":
            return f"coalesce({iso}, CAST(try_strptime({v}, '%d.%m.%Y') AS DATE))"
        return iso
    if t == "month":
        iso = f"CASE WHEN regexp_full_match({v}, '\\d{{4}}-\\d{{1,2}}') THEN CAST(try_strptime({v}, '%Y-%m') AS DATE) END"
        if locale == "de":
            return f"coalesce({iso}, CAST(try_strptime({v}, '%m.%Y') AS DATE))"
        return iso
    if t == "timestamp":
        # An explicit offset (Z, +02:00) is converted to UTC; a bare wall-clock time is kept.
        iso = (
            f"CASE WHEN regexp_full_match({v}, '\\d{{4}}-\\d{{2}}-\\d{{2}}([T ]\\d{{1,2}}:\\d{{2}}(:\\d{{2}}(\\.\\d+)?)?)?') "
            f"THEN try_cast({v} AS TIMESTAMP) "
            f"WHEN regexp_full_match({v}, '\\d{{4}}-\\d{{2}}-\\d{{2}}[T ]\\d{{1,2}}:\\d{{2}}(:\\d{{2}}(\\.\\d+)?)? ?(Z|[+-]\\d{{2}}(:?\\d{{2}})?)') "
            f"THEN try_cast({v} AS TIMESTAMPTZ) AT TIME ZONE 'UTC' END"
        )
        if locale == "de":
            fmts = "['%d.%m.%Y %H:%M:%S', '%d.%m.%Y %H:%M', '%d.%m.%Y']"
            return f"coalesce({iso}, try_strptime({v}, {fmts}))"
        return iso
    raise ValueError(f"unknown column type {t!r}")


def typed_name(col: Column) -> str:
    return _q(col.name + "$typed")


def reason_sql(col: Column, locale: str, rules: Sequence[RowRule] = ()) -> str:
    """SQL for the rejection reason of one column, NULL when the value is fine.

    Refers to the trimmed text as `"<name>"` and to the typed value as `"<name>$typed"`, so
    each value is typed once. A value that cannot be typed is named first; then the column's
    own row rules among `rules` (`pipelines/lib/row_rules.py`: a required value, a value
    list), then a date outside the plausible window.
    """
    v = _q(col.name)
    shown = f"'\"' || left({v}, 60) || '\"'"
    cases = []
    if col.type != "string" and not col.values:
        what = {
            "boolean": "not a yes/no value (expected " + "/".join(TRUE_WORDS + FALSE_WORDS) + ")",
        }.get(col.type, f"not a valid {col.type} (expected {_FORMATS.get((col.type, locale))})")
        cases.append(
            f"WHEN {v} IS NOT NULL AND {typed_name(col)} IS NULL THEN "
            f"{_lit(col.name + ': ')} || {shown} || {_lit(' is ' + what)}"
        )
    for rule in rules:
        if rule.kind not in _OWN_KINDS or rule.columns != (col.name,):
            continue
        cases.append(f"WHEN {rule.broken_sql(_typed_ref)} THEN {rule.reason_sql(_q)}")
    if col.type in ("date", "timestamp", "month"):
        first, last = plausible_window(col)
        t = typed_name(col)
        cases.append(
            f"WHEN {t} < DATE '{first}' OR {t} > DATE '{last}' THEN "
            f"{_lit(col.name + ': ')} || {shown} || "
            f"{_lit(f' is outside the plausible range {first} .. {last}; a typo in the year?')}"
        )
    if not cases:
        return "NULL"
    return "CASE " + " ".join(cases) + " END"


def _typed_ref(column: str) -> str:
    return _q(column + "$typed")


# the row rules `reason_sql` words per column; `rule_reasons_sql` words the others
_OWN_KINDS = ("not_null", "in_set")


def rule_reasons_sql(rules: Sequence[RowRule]) -> list[str]:
    """SQL of the reasons of the row rules over several columns or bounds (date order,
    ranges), each NULL when the row meets it; a value left empty meets them."""
    out = []
    for rule in rules:
        if rule.kind in _OWN_KINDS:
            continue
        filled = " AND ".join(f"{_typed_ref(c)} IS NOT NULL" for c in rule.columns)
        out.append(
            f"CASE WHEN {filled} AND {rule.broken_sql(_typed_ref)} THEN {rule.reason_sql(_q)} END"
        )
    return out


def plausible_window(col: Column, today: date | None = None) -> tuple[date, date]:
    """Dates a column may hold: from 1970 to `years_ahead` years after the load date."""
    today = today or datetime.now(UTC).date()
    return date(1970, 1, 1), today + timedelta(days=366 * col.years_ahead)


_DUCK_TYPES = {
    "string": "VARCHAR",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "integer": "BIGINT",
    "decimal": "DOUBLE",
    "boolean": "BOOLEAN",
    "month": "DATE",
}


def duckdb_type(col: Column) -> str:
    return _DUCK_TYPES[col.type]


# --- the reader --------------------------------------------------------------------------------


class PhysicalLines:
    """The text's physical lines, split once on first use (rejected rows are usually few)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.lines: list[str] | None = None

    def get(self, first: int, last: int) -> str:
        if self.lines is None:
            self.lines = self.text.split("\n")
        return "\n".join(self.lines[first - 1 : last])


@dataclass
class SplitFile:
    """A file cut into records with its header mapped, before typing (see `type_split_files`)."""

    file_name: str
    export: str
    encoding: str
    delimiter: str
    locale: str
    rows_total: int
    # contract column -> raw field per kept record (Arrow strings when Arrow cut the file)
    values: dict[str, Sequence[str] | pa.ChunkedArray]
    lines: list[int]
    extras: list[str | None] | None
    rejected: list[Rejected]
    ignored_columns: tuple[str, ...]
    physical: PhysicalLines
    multi_line: dict[int, int]  # first -> last physical line of records spanning lines

    def raw_text(self, first: int) -> str:
        """The record starting on physical line `first`, as delivered."""
        return self.physical.get(first, self.multi_line.get(first, first))


def read_export_file(path: Path, export: str) -> ParsedFile:
    """Read and type one export file from disk (see `parse_export_bytes`)."""
    return parse_export_bytes(Path(path).read_bytes(), export, Path(path).name)


def parse_export_bytes(
    data: bytes,
    export_name: str,
    file_name: str,
    con: duckdb.DuckDBPyConnection | None = None,
) -> ParsedFile:
    """Split, check and type one delivered file; raise FileError if it is unreadable as a whole."""
    return type_split_files([split_export_bytes(data, export_name, file_name)], con)[0]


def split_export_bytes(data: bytes, export_name: str, file_name: str) -> SplitFile:
    """Decode, map the header and cut records (physical line numbers); raise FileError."""
    export = EXPORTS[export_name]
    plain = _split_plain_arrow(data, export, file_name)
    if plain is not None:
        return plain
    table = read_table(data, file_name, export.encodings)
    known, extra = map_header(table.header, export, file_name, table.ends_in_header)
    records = table.records
    values = _columns_of(records, known, len(table.header))
    return SplitFile(
        file_name=file_name,
        export=export.name,
        encoding=table.encoding,
        delimiter=table.delimiter,
        locale=detect_locale(export, values, table.delimiter),
        rows_total=table.rows_total,
        values=values,
        lines=table.lines,
        extras=extras_json(records, extra),
        rejected=table.rejected,
        ignored_columns=tuple(extra),
        physical=table.physical,
        multi_line=table.multi_line,
    )


def _split_plain_arrow(data: bytes, export: Export, file_name: str) -> SplitFile | None:
    """The common case cut by Arrow's CSV reader: a UTF-8 file without quotes or NUL bytes
    in which every line is a record of the header's width. None for any other file, which
    `read_table` cuts, with its rejects and their reasons.

    One record per physical line, exactly as `_cut_plain` cuts it, but the fields go straight
    into Arrow strings: at 1,000,000 employees the Python split made a third of the ingestion.
    """
    if data.startswith(XLSX_MAGIC) or b'"' in data or b"\x00" in data:
        return None
    text, encoding = decode_text(data, export.encodings, file_name)
    if encoding == "cp1252":
        return None
    raw = data[3:] if encoding == "utf-8-sig" else data
    if b"\r" in raw:  # CRLF and lone CR are one line break each, as in `read_table`
        raw = raw.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if b"\n" not in raw:
        return None
    first_line = text.split("\n", 1)[0]
    delimiter = detect_delimiter(first_line)
    body = raw[raw.index(b"\n") + 1 :]
    body = body[:-1] if body.endswith(b"\n") else body
    if not body or _has_blank_line(body, delimiter):
        return None
    header = next(csv.reader([first_line], delimiter=delimiter))
    n_fields = len(header)
    try:
        table = pacsv.read_csv(
            pa.py_buffer(raw),
            read_options=pacsv.ReadOptions(
                column_names=[f"f{i}" for i in range(n_fields)],
                skip_rows=1,
                use_threads=False,
                block_size=1 << 22,
            ),
            parse_options=pacsv.ParseOptions(
                delimiter=delimiter,
                quote_char=False,
                escape_char=False,
                double_quote=False,
                newlines_in_values=False,
                ignore_empty_lines=False,
            ),
            convert_options=pacsv.ConvertOptions(
                column_types={f"f{i}": pa.string() for i in range(n_fields)},
                strings_can_be_null=False,
                check_utf8=False,
            ),
        )
    except pa.ArrowException:
        return None  # a line of another width (or a field beyond the block): the general path
    n = table.num_rows
    if n != body.count(b"\n") + 1:
        return None
    known, extra = map_header(header, export, file_name, False)
    values = {name: table.column(i) for name, i in known.items()}
    extras = None
    if extra:
        columns = [table.column(i).to_pylist() for i in extra.values()]
        rows = list(zip(*columns, strict=True))
        extras = extras_json(rows, {h: j for j, h in enumerate(extra)})
    return SplitFile(
        file_name=file_name,
        export=export.name,
        encoding=encoding,
        delimiter=delimiter,
        locale=detect_locale(export, values, delimiter),
        rows_total=n,
        values=values,
        lines=list(range(2, n + 2)),
        extras=extras,
        rejected=[],
        ignored_columns=tuple(extra),
        physical=PhysicalLines(text),
        multi_line={},
    )


def _has_blank_line(body: bytes, delimiter: str) -> bool:
    """Whether a line of `body` (no final line break) holds nothing but the delimiter and
    blanks, which the general path skips: with those bytes deleted, such a line is empty.
    In valid UTF-8, 0xC2 and 0xA0 make a line empty only as no-break spaces."""
    kept = body.translate(None, (delimiter + " \t").encode() + b"\xc2\xa0")
    return not kept or kept.startswith(b"\n") or kept.endswith(b"\n") or b"\n\n" in kept


def _columns_of(
    records: list[list[str]], known: dict[str, int], n: int
) -> dict[str, Sequence[str]]:
    fields = list(zip(*records, strict=True)) if records else [()] * n
    return {name: fields[i] for name, i in known.items()}


def extras_json(records: list[list[str]], extra: dict[str, int]) -> list[str | None] | None:
    """Columns the contract does not know, per record, as a JSON object (None when empty)."""
    if not extra:
        return None
    out: list[str | None] = []
    for record in records:
        kept = {h: record[i].strip() for h, i in extra.items() if record[i].strip()}
        out.append(json.dumps(kept, ensure_ascii=False) if kept else None)
    return out


@dataclass
class RawTable:
    """A delivered file cut into records, before any contract is applied."""

    header: list[str]
    records: list[list[str]]
    lines: list[int]
    multi_line: dict[int, int]
    rejected: list[Rejected]
    rows_total: int
    encoding: str
    delimiter: str
    physical: PhysicalLines
    ends_in_header: bool


XLSX_MAGIC = b"PK\x03\x04"


def read_table(
    data: bytes, file_name: str, encodings: Sequence[str] = ("utf-8", "utf-8-sig", "cp1252")
) -> RawTable:
    """Decode (CSV text or an .xlsx workbook) and cut records; raise FileError if unreadable."""
    if data.startswith(XLSX_MAGIC):
        text, encoding = xlsx_to_text(data, file_name), "xlsx"
    else:
        text, encoding = decode_text(data, encodings, file_name)
    # One line-break convention from here on: CRLF and lone CR count as one physical line each
    # (as csv counts them), and values spanning lines carry plain "\n".
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    delimiter = detect_delimiter(text.split("\n", 1)[0])
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        header = next(reader)
    except csv.Error as e:
        raise FileError(f"{file_name}: line 1 (header) is not valid CSV ({e}).") from e
    ends_in_header = reader.line_num == 1 and "\n" not in text
    n_fields = len(header)
    physical = PhysicalLines(text)
    if '"' in text:
        cut = _cut_quoted(reader, n_fields, physical, _count_lines(text), file_name)
    else:
        cut = _cut_plain(text, delimiter, n_fields, physical)
    records, lines, multi_line, rejected, rows_total = cut
    if "\x00" in text:
        records, lines = _reject_nul_records(records, lines, rejected, physical, multi_line)
    return RawTable(
        header,
        records,
        lines,
        multi_line,
        rejected,
        rows_total,
        encoding,
        delimiter,
        physical,
        ends_in_header,
    )


def peek_header(path: Path, limit: int = 65536) -> list[str]:
    """The header of a delivery without reading all of it (a workbook is read whole)."""
    with open(path, "rb") as fh:
        head = fh.read(4096)  # a header line is short: read more only when it is not
        if b"\n" not in head and b"\r" not in head:
            head += fh.read(limit - len(head))
    if head.startswith(XLSX_MAGIC):
        return read_table(Path(path).read_bytes(), Path(path).name).header
    if not head.strip(b" \t\r\n\xef\xbb\xbf"):
        raise FileError(f"{Path(path).name}: the file is empty.")
    line = head.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n", 1)[0]
    try:  # the header as the whole file will be decoded: UTF-8 (BOM or not), else Windows-1252
        first = line.decode("utf-8-sig")
    except UnicodeDecodeError:
        first = line.decode("cp1252", errors="replace")
    return next(csv.reader(io.StringIO(first), delimiter=detect_delimiter(first)), [])


def decode_text(data: bytes, encodings: Sequence[str], file_name: str) -> tuple[str, str]:
    """Reject empty and binary (UTF-16) files, then decode (see `decode`)."""
    if not data.strip(b" \t\r\n\xef\xbb\xbf"):
        raise FileError(
            f"{file_name}: the file is empty. Ask the sender to export it again; a delivery "
            "without records still needs its header line."
        )
    nul = data.find(b"\x00")
    if nul >= 0 and (
        data[:2] in (b"\xff\xfe", b"\xfe\xff") or data.count(b"\x00") * 10 > len(data)
    ):
        line = data[:nul].count(b"\n") + 1
        raise FileError(
            f"{file_name}: contains NUL bytes (line {line} and many more), so it is binary or "
            "UTF-16, not a CSV text file. Export it again as UTF-8 CSV; nothing from this file "
            "was loaded."
        )
    return decode(data, encodings, file_name)


def _reject_nul_records(
    records: list[list[str]],
    lines: list[int],
    rejected: list[Rejected],
    physical: PhysicalLines,
    multi_line: dict[int, int],
) -> tuple[list[list[str]], list[int]]:
    """A NUL byte in a field quarantines that record, not the file."""
    kept_records, kept_lines = [], []
    for record, line in zip(records, lines, strict=True):
        bad = next((i for i, f in enumerate(record) if "\x00" in f), None)
        if bad is None:
            kept_records.append(record)
            kept_lines.append(line)
            continue
        raw = physical.get(line, multi_line.get(line, line)).replace("\x00", "\\0")
        rejected.append(
            Rejected(
                line, raw, f"field {bad + 1} contains a NUL byte (binary garbage in the export)"
            )
        )
    rejected.sort(key=lambda r: r.line_number)
    return kept_records, kept_lines


def xlsx_to_text(data: bytes, file_name: str) -> str:
    """The first worksheet of a workbook as CSV text; dates become ISO values."""
    from python_calamine import CalamineWorkbook

    try:
        book = CalamineWorkbook.from_filelike(io.BytesIO(data))
        sheet = book.get_sheet_by_index(0)
        rows = sheet.to_python(skip_empty_area=False)
    except Exception as e:  # calamine raises its own error types for broken workbooks
        raise FileError(
            f"{file_name}: the Excel workbook cannot be read ({e}). Save it again as .xlsx or "
            "export CSV; nothing from this file was loaded."
        ) from e
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    for row in rows:
        writer.writerow([_cell_text(v) for v in row])
    return out.getvalue()


def _cell_text(v: object) -> str:
    if v is None:
        return ""
    if isinstance(v, datetime):
        return (
            v.isoformat(sep=" ")
            if (v.hour, v.minute, v.second) != (0, 0, 0)
            else v.date().isoformat()
        )
    if isinstance(v, date):
        return v.isoformat()
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)


_Cut = tuple[list[list[str]], list[int], dict[int, int], list[Rejected], int]


def _wrong_count(first: int, raw: str, n_fields: int, found: int, at_end: bool) -> Rejected:
    hint = (
        "; the file ends here, so it looks truncated"
        if at_end
        else "; an unquoted delimiter or line break inside a value is the usual cause"
    )
    return Rejected(
        first,
        raw,
        f"wrong column count: expected {n_fields} fields like the header, found {found}{hint}",
    )


def _cut_plain(text: str, delimiter: str, n_fields: int, physical: PhysicalLines) -> _Cut:
    """Fast path for files without any quote character: one record per physical line.

    Most exports never quote anything; splitting lines with comprehensions is several times
    faster than the csv module plus per-record line bookkeeping, with identical results.
    """
    body = text.split("\n")[1:]
    if text.endswith("\n"):
        body.pop()
    records = [line.split(delimiter) for line in body]
    blank = delimiter + _BLANKS
    good = [i for i, r in enumerate(records) if len(r) == n_fields and body[i].strip(blank)]
    rejected = [
        _wrong_count(i + 2, body[i], n_fields, len(r), at_end=i == len(body) - 1)
        for i, r in enumerate(records)
        if len(r) != n_fields and body[i].strip(blank)
    ]
    rows_total = len(good) + len(rejected)
    return [records[i] for i in good], [i + 2 for i in good], {}, rejected, rows_total


def _cut_quoted(
    reader: Iterator[list[str]],
    n_fields: int,
    physical: PhysicalLines,
    total_lines: int,
    file_name: str,
) -> _Cut:
    """General path: the csv module handles quotes; we track each record's physical lines."""
    records: list[list[str]] = []
    lines: list[int] = []
    multi_line: dict[int, int] = {}
    rejected: list[Rejected] = []
    prev_end = reader.line_num
    rows_total = 0
    try:
        for record in reader:
            first, last = prev_end + 1, reader.line_num
            prev_end = last
            if not record or not "".join(record).strip():
                continue  # blank line or a line of bare delimiters: no data
            rows_total += 1
            if last != first:
                multi_line[first] = last
            at_end = last >= total_lines
            if at_end and last > first and physical.get(first, last).count('"') % 2 == 1:
                # csv swallows everything after a quote that is never closed into one field
                rejected.append(
                    Rejected(
                        first,
                        physical.get(first, last),
                        f"a quote opened on line {first} is never closed, so lines {first}-{last} "
                        "ran together into one record; the file looks truncated or has a stray quote",
                    )
                )
                continue
            if len(record) != n_fields:
                rejected.append(
                    _wrong_count(first, physical.get(first, last), n_fields, len(record), at_end)
                )
                continue
            records.append(record)
            lines.append(first)
    except csv.Error as e:
        raise FileError(
            f"{file_name}: line {reader.line_num} is not valid CSV ({e}). Fix or re-export "
            "the file; nothing from this file was loaded."
        ) from e
    return records, lines, multi_line, rejected, rows_total


def _count_lines(text: str) -> int:
    n = text.count("\n")
    return n if text.endswith("\n") else n + 1


def type_split_files(
    files: list[SplitFile], con: duckdb.DuckDBPyConnection | None = None
) -> list[ParsedFile]:
    """Type many files of one export with one query per locale.

    Planning the typing query costs far more than running it on a small file, so a folder of
    many small monthly files is typed in one go. `con` is only used as a calculator (nothing
    is written); without it an in-memory DuckDB is started.
    """
    if con is None:
        with db.memory() as own:
            return type_split_files(files, own)
    out: list[ParsedFile | None] = [None] * len(files)
    for locale in sorted({f.locale for f in files}):
        group = [i for i, f in enumerate(files) if f.locale == locale]
        export = EXPORTS[files[group[0]].export]
        table = _in_file_order(_type_rows(export, [files[i] for i in group], locale, con))
        # the rows come ordered by file: each file's rows are one slice
        ends = np.searchsorted(table["_file"].to_numpy(), np.arange(len(group)), side="right")
        for pos, i in enumerate(group):
            f = files[i]
            start = int(ends[pos - 1]) if pos else 0
            rows = table.slice(start, int(ends[pos]) - start)
            ok = pc.is_null(rows["_reason"])
            typed = rows.filter(ok).drop_columns(["_reason", "_file"])
            rejected = list(f.rejected)
            for r in rows.filter(pc.invert(ok)).select(["_line", "_reason"]).to_pylist():
                rejected.append(Rejected(r["_line"], f.raw_text(r["_line"]), r["_reason"]))
            rejected.sort(key=lambda r: r.line_number)
            out[i] = ParsedFile(
                file_name=f.file_name,
                export=f.export,
                encoding=f.encoding,
                delimiter=f.delimiter,
                locale=f.locale,
                rows_total=f.rows_total,
                rows=typed,
                rejected=rejected,
                ignored_columns=f.ignored_columns,
            )
    return [p for p in out if p is not None]


def _in_file_order(table: pa.Table) -> pa.Table:
    """The typed rows by file and line. DuckDB hands them back in the order they went in
    (`preserve_insertion_order`, on by default), which is that order: sorting them in the query
    cost a tenth of the ingestion at 1,000,000 employees. Should that ever not hold, they are
    sorted here (stably: a vendor's list column gives several rows one line)."""
    files, lines = table["_file"].to_numpy(), table["_line"].to_numpy()
    step_file, step_line = np.diff(files), np.diff(lines)
    if np.all((step_file > 0) | ((step_file == 0) & (step_line >= 0))):
        return table
    return table.sort_by([("_file", "ascending"), ("_line", "ascending")])


def _arrow_strings(
    values: Sequence[str] | pa.ChunkedArray | None, n: int
) -> pa.Array | pa.ChunkedArray:
    """A column's raw fields as Arrow strings (all NULL when the file lacks the column)."""
    if isinstance(values, pa.ChunkedArray):
        return values
    return pa.array(values if values is not None else [None] * n, type=pa.string())


def _type_rows(
    export: Export, files: list[SplitFile], locale: str, con: duckdb.DuckDBPyConnection
) -> pa.Table:
    """Trim and type all rows of `files` at once; `_reason` NULL means the row is fine."""
    batches = []
    for pos, f in enumerate(files):
        n = len(f.lines)
        batches.append(
            pa.table(
                {
                    **{c.name: _arrow_strings(f.values.get(c.name), n) for c in export.columns},
                    "_file": pa.array([pos] * n, type=pa.int32()),
                    "_line": pa.array(f.lines, type=pa.int64()),
                    "_extra": pa.array(
                        f.extras if f.extras is not None else [None] * n, type=pa.string()
                    ),
                }
            )
        )
    batch = pa.concat_tables(batches)
    cleaned = [
        f"nullif(trim({_q(c.name)}, {_lit(_BLANKS)}), '') AS {_q(c.name)}" for c in export.columns
    ]
    typed = [f"{typed_sql(c, locale)} AS {typed_name(c)}" for c in export.columns]
    final = [f"{typed_name(c)} AS {_q(c.name)}" for c in export.columns]
    rules = load_rules(export.name)
    reason_parts = [reason_sql(c, locale, rules) for c in export.columns]
    reason_parts += rule_reasons_sql(rules)
    if export.require_one_of:
        unset = " AND ".join(f"{_q(c)} IS NULL" for c in export.require_one_of)
        named = " or ".join(export.require_one_of)
        reason_parts.append(
            f"CASE WHEN {unset} THEN {_lit(named + ': one of them is required')} END"
        )
    reasons = ", ".join(reason_parts)
    sql = (
        f"WITH cleaned AS (SELECT {', '.join(cleaned)}, _file, _line, _extra FROM _ingest_batch), "
        f"typed AS (SELECT *, {', '.join(typed)} FROM cleaned) "
        f"SELECT {', '.join(final)}, _line, _extra, _file, "
        f"nullif(concat_ws('; ', {reasons}), '') AS _reason FROM typed"
    )
    con.register("_ingest_batch", batch)
    try:
        return con.sql(sql).to_arrow_table()
    finally:
        con.unregister("_ingest_batch")
