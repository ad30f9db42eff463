"""What the suites validate: the SQL that selects each frame, read through DuckDB into pandas.

Great Expectations cannot validate DuckDB through SQLAlchemy, so every frame is read here with
a read-only connection (closed before the function returns) and handed over as a pandas frame.

Current rows of an export (docs/architecture.md, "Raw layer"): rows of `active` files; per
natural key, the rows of the latest delivery `(_period, _version)`. Staging then keeps the last
line of that delivery. The checks keep *every* row of that delivery, because a key delivered
twice in one file is what the uniqueness expectations must see (staging keeps the last line),
and they keep every row with an empty key part so that the not-null expectation counts them
(staging would collapse them into one "NULL key"). `_first_copy` is false for exact copies of
an earlier line of the same file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa

from pipelines.lib import db
from pipelines.lib.contracts import EXPORTS, Export
from pipelines.lib.ingest.reader import duckdb_type
from pipelines.lib.quality.rules import QUARANTINE_ERROR_MIN_ROWS, rules_for

# Above this many raw rows an export's current rows are validated in parts of about this size,
# one part in memory at a time, so the checks' memory stays flat as the company grows. Each part
# costs Great Expectations' fixed work per validation again (its suite, data source and batch,
# the frame's fingerprint). With text as Arrow strings (`pandas_frame`), parts of 250,000 rows
# against 100,000: at 200,000 employees all nine suites 27.5 against 30.3 CPU s, both peaking at
# about 1.7 GB; at 1,000,000 the responders' and incidents' suites 93 against 100 CPU s, peaking
# at 3.2 against 2.5 GB (below dbt's build, the run's peak). Unchunked at 200,000: no faster
# than 250,000 and 2.4 GB.
CHUNK_ROWS = 250_000
# DuckDB's memory for the current rows the parts are cut from (beyond it, DuckDB spills to its
# temporary directory): by default DuckDB may keep up to 80 % of the machine's memory.
PARTS_MEMORY = "1GB"

# Columns added to every raw frame so that a failure can name the file and line.
LOCATION_COLUMNS = ("_file_name", "_line")


class MissingTable(Exception):
    """The table a suite validates does not exist (yet)."""


def _q(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _first_hire(export: Export, with_employees: bool) -> tuple[str, str]:
    """The column and join that give each job record its person's first hire (job_history
    only: "no job record before the person was hired"); empty for the other exports."""
    if export.name != "job_history":
        return "", ""
    if not with_employees:
        return ", null::date as _first_hire_date", ""
    return ", h._first_hire_date", (
        "left join (select employee_id, min(coalesce(original_hire_date, hire_date)) "
        "as _first_hire_date from employees where _file_id in (select file_id from manifest "
        "where export = 'employees' and status = 'active') "
        "group by employee_id) h on h.employee_id = r.employee_id"
    )


def current_rows_sql(
    export: Export,
    columns: set[str] | None = None,
    with_employees: bool = True,
    only_files: Sequence[str] | None = None,
    ordered: bool = True,
) -> str:
    """SELECT for the current rows of `export` in the raw database (schema main).

    `columns`: the table's actual columns; contract columns missing from the table are left
    out here so that the column-presence expectation (not a SQL error) reports them.
    Enumerations are lower-cased, the contract compares them that way. `with_employees`:
    raw.employees exists, so job records can be compared with the person's first hire.
    `only_files`: the current rows among these deliveries (file ids) only. `ordered`: by file
    and line (the parts sort what they store themselves).
    """
    present = [c for c in export.columns if columns is None or c.name in columns]
    select = []
    for c in present:
        expr = f"lower(r.{_q(c.name)})" if c.values and c.type == "string" else f"r.{_q(c.name)}"
        select.append(f"{expr} as {_q(c.name)}")
    key = [k for k in export.key if columns is None or k in columns]
    any_key_null = " or ".join(f"r.{_q(k)} is null" for k in key) or "false"
    partition = ", ".join(f"r.{_q(k)}" for k in key) or "1"
    extra_cols, extra_join = _first_hire(export, with_employees)
    only = (
        ""
        if only_files is None
        else "and file_id in ("
        + ", ".join("'" + f.replace("'", "''") + "'" for f in only_files)
        + ")"
    )
    every = ", ".join(f"r.{_q(c.name)}" for c in present) or "1"
    table = _q(export.name)
    # `_first_copy` compares whole rows, but only rows that share their delivery and key can
    # be copies of each other: the rows of a key seen once are first copies without comparing
    # (partitioning every row by every column took 10 of 12 s for the incidents of
    # 1,000,000 employees). NULL key parts group together here, as identical rows have them.
    return f"""
with active as (
    select file_id, any_value(file_name) as file_name
    from manifest
    where export = '{export.name}' and status = 'active' {only}
    group by file_id
),
shared_key as (
    select r.rowid as _row
    from {table} as r
    join active as a on a.file_id = r._file_id
    qualify count(*) over (partition by r._file_id, {partition}) > 1
),
later_copies as (
    select r.rowid as _row
    from {table} as r
    semi join shared_key as k on k._row = r.rowid
    qualify row_number() over (partition by r._file_id, {every} order by r._line) > 1
)
select
    {", ".join(select)},
    a.file_name as _file_name,
    r._line as _line,
    c._row is null as _first_copy{extra_cols}
from {table} as r
join active as a on a.file_id = r._file_id
left join later_copies as c on c._row = r.rowid
{extra_join}
qualify ({any_key_null})
    or dense_rank() over (
        partition by {partition} order by r._period desc, r._version desc
    ) = 1
{"order by a.file_name, r._line" if ordered else ""}
"""


def deliveries_sql(export: Export) -> str:
    """One row summarising the export's deliveries in the manifest (quarantine share).

    The `material_` share and the worst file count only quarantines of at least
    QUARANTINE_ERROR_MIN_ROWS rows: those are the ones that block.
    """
    least = int(QUARANTINE_ERROR_MIN_ROWS)
    return f"""
select
    count(*) filter (where status = 'active') as active_files,
    count(*) filter (where status = 'failed') as failed_files,
    coalesce(sum(rows_loaded) filter (where status = 'active'), 0) as rows_loaded,
    coalesce(sum(rows_quarantined) filter (where status = 'active'), 0) as rows_quarantined,
    sum(rows_quarantined) filter (where status = 'active')
        / nullif(sum(rows_loaded + rows_quarantined) filter (where status = 'active'), 0)
        as quarantine_share,
    case
        when sum(rows_quarantined) filter (where status = 'active') >= {least}
            then sum(rows_quarantined) filter (where status = 'active')
                / nullif(sum(rows_loaded + rows_quarantined) filter (where status = 'active'), 0)
        else 0
    end as material_quarantine_share,
    coalesce(max(rows_quarantined / nullif(rows_loaded + rows_quarantined, 0))
        filter (where status = 'active' and rows_quarantined >= {least}), 0)
        as worst_file_quarantine_share,
    arg_max(file_name, rows_quarantined / nullif(rows_loaded + rows_quarantined, 0))
        filter (where status = 'active') as worst_file_name,
    string_agg(file_name, ', ' order by file_name) filter (where status = 'failed')
        as failed_file_names
from manifest
where export = '{export.name}'
"""


@dataclass(frozen=True)
class Frames:
    """The frames one suite validates, keyed by batch name ("rows", "deliveries")."""

    suite: str
    frames: dict[str, pd.DataFrame | None]
    # the "rows" frame in parts, each read when validated (frames["rows"] is then None)
    row_chunks: tuple[Callable[[], pd.DataFrame], ...] = field(default=())


def partition_columns(suite: str) -> list[str]:
    """Columns whose hash splits the current rows into parts without changing any outcome.

    Every row rule judges one row, except the uniqueness rules; rows that agree on the columns
    of every uniqueness rule must meet in one part, so the parts are split by the columns the
    uniqueness rules share (none: any split will do). The key alone is enough for a key unique
    within each file: rows that agree on key and file agree on the key."""
    sets = []
    for r in rules_for(suite):
        if r.batch != "rows":
            continue
        if r.expectation == "ExpectColumnValuesToBeUnique":
            sets.append({r.kwargs["column"]})
        elif r.expectation == "ExpectCompoundColumnsToBeUnique":
            sets.append(set(r.kwargs["column_list"]))
    if not sets:
        return list(LOCATION_COLUMNS)
    shared = set.intersection(*sets)
    return sorted(shared - set(LOCATION_COLUMNS) or shared)


class _Parts:
    """The current rows of one export in `count` parts, by the hash of `columns`.

    The current-rows query runs once, into a temporary table of a read-only connection (DuckDB
    keeps it compactly, in at most ``PARTS_MEMORY`` and spilled beyond), stored in part order;
    each part is then a scan of its own row groups (at 1,000,000 employees, a scan of the whole
    table per part doubled the responders' checks, 52 -> 116 s). The connection closes after
    the last part is read."""

    def __init__(self, raw_db: Path, sql: str, columns: list[str], count: int) -> None:
        self.raw_db, self.sql, self.columns, self.count = raw_db, sql, columns, count
        self._con: duckdb.DuckDBPyConnection | None = None

    def reader(self, part: int) -> Callable[[], pd.DataFrame]:
        return lambda: self.read(part)

    def read(self, part: int) -> pd.DataFrame:
        if self._con is None:
            self._con = db.connect(self.raw_db, read_only=True)
            self._con.execute(f"set memory_limit = '{PARTS_MEMORY}'")
            # a part is read in the order it was stored in (file, line) without sorting again
            self._con.execute("set preserve_insertion_order = true")
            key = ", ".join(_q(c) for c in self.columns)
            # stored in part order, so reading a part touches that part's row groups only
            # (DuckDB skips the others by their min/max), not the whole table each time
            self._con.execute(
                f"create temp table current_rows as select * from (select *, hash({key}) % "
                f"{self.count} as _part from ({self.sql})) order by _part, _file_name, _line"
            )
        frame = pandas_frame(
            self._con, "select * exclude (_part) from current_rows where _part = ?", [part]
        )
        if part == self.count - 1:
            self._con.close()
            self._con = None
        return frame


def pandas_frame(
    con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None
) -> pd.DataFrame:
    """A query's rows as the frame Great Expectations validates, text as Arrow-backed strings
    (`string[pyarrow]`). Its null, set and uniqueness checks then run in Arrow's kernels, not
    over Python objects: the raw checks of incidents, responders and job history at 200,000
    employees took 27 s instead of 37 s, with the same outcomes to the sample rows. Other types
    as Arrow converts them: dates as Python dates, booleans with NULLs as objects (`.df()` gave
    datetime64 and pandas' nullable booleans; the outcomes of all nine raw suites were the
    same)."""
    table = con.sql(sql, params=params).to_arrow_table()
    return table.to_pandas(types_mapper=_text_as_arrow_strings)


def _text_as_arrow_strings(arrow_type: pa.DataType) -> pd.StringDtype | None:
    if pa.types.is_string(arrow_type) or pa.types.is_large_string(arrow_type):
        return pd.StringDtype("pyarrow")
    return None


def tables_in(con: duckdb.DuckDBPyConnection, schema: str) -> set[str]:
    rows = con.execute(
        "select table_name from information_schema.tables where table_schema = ?", [schema]
    ).fetchall()
    return {r[0] for r in rows}


def _column_types(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> dict[str, str]:
    rows = con.execute(
        "select column_name, data_type from information_schema.columns "
        "where table_schema = ? and table_name = ?",
        [schema, table],
    ).fetchall()
    return {r[0]: r[1] for r in rows}


def _columns(con: duckdb.DuckDBPyConnection, schema: str, table: str) -> set[str]:
    return set(_column_types(con, schema, table))


def schema_frame(export: Export, declared: dict[str, str]) -> pd.DataFrame:
    """One row per contract column: the type the raw table declares and the one ingestion
    creates it with."""
    return pd.DataFrame(
        {
            "column": [c.name for c in export.columns],
            "declared_type": [declared.get(c.name) for c in export.columns],
            "expected_type": [duckdb_type(c) for c in export.columns],
        }
    )


def active_files(raw_db: Path, export_name: str) -> list[str]:
    """The file ids of the export's active deliveries (none when nothing is loaded yet)."""
    if not Path(raw_db).exists():
        return []
    with db.connect(raw_db, read_only=True) as con:
        if "manifest" not in tables_in(con, "main"):
            return []
        rows = con.execute(
            "select distinct file_id from manifest where export = ? and status = 'active' "
            "order by 1",
            [export_name],
        ).fetchall()
    return [r[0] for r in rows]


def read_raw_frames(
    raw_db: Path, export_name: str, only_files: Sequence[str] | None = None
) -> Frames:
    """Current rows and the delivery summary of one export, from the restricted raw file.

    `only_files`: the rows of these deliveries only (file ids); an empty list reads no rows
    (the frame is None: nothing new to validate).
    """
    export = EXPORTS[export_name]
    suite = f"raw.{export_name}"
    if not Path(raw_db).exists():
        raise MissingTable(
            f"{raw_db.name} does not exist: run the ingestion (talent run, or materialize "
            f"raw/{export_name}) before checking {suite}"
        )
    with db.connect(raw_db, read_only=True) as con:
        tables = tables_in(con, "main")
        for needed in (export_name, "manifest"):
            if needed not in tables:
                raise MissingTable(
                    f"table {needed} is missing from {raw_db.name}: run the ingestion of "
                    f"{export_name} before checking {suite}"
                )
        declared = _column_types(con, "main", export_name)
        cols = set(declared)
        missing_meta = {"_file_id", "_line", "_period", "_version"} - cols
        if missing_meta:
            raise MissingTable(
                f"{raw_db.name}: table {export_name} lacks the load columns "
                f"{sorted(missing_meta)}; re-create it with the current ingestion"
            )
        sql = current_rows_sql(export, cols, "employees" in tables, only_files)
        nothing_new = only_files is not None and not only_files
        # raw rows of the deliveries read (at least as many as the current rows among them)
        count, params = f"select count(*) from {_q(export_name)}", []
        if only_files:
            count, params = count + " where _file_id in (select unnest(?))", [list(only_files)]
        raw_rows = 0 if nothing_new else con.execute(count, params).fetchall()[0][0]
        shared = partition_columns(suite)
        parts = -(-int(raw_rows) // CHUNK_ROWS)
        chunked = parts > 1 and bool(shared) and set(shared) <= cols | set(LOCATION_COLUMNS)
        rows = None if nothing_new or chunked else pandas_frame(con, sql)
        deliveries = con.execute(deliveries_sql(export)).df()
    chunks: tuple[Callable[[], pd.DataFrame], ...] = ()
    if chunked:
        unordered = current_rows_sql(export, cols, "employees" in tables, only_files, False)
        split = _Parts(raw_db, unordered, shared, parts)
        chunks = tuple(split.reader(i) for i in range(parts))
    return Frames(
        suite,
        {"rows": rows, "deliveries": deliveries, "schema": schema_frame(export, declared)},
        chunks,
    )


def read_mart_frames(build_db: Path, model: str) -> Frames:
    """One mart from the build file (schema marts)."""
    suite = f"marts.{model}"
    if not Path(build_db).exists():
        raise MissingTable(
            f"{build_db.name} does not exist: build the warehouse (dbt build) before checking "
            f"{suite}"
        )
    with db.connect(build_db, read_only=True) as con:
        if model not in tables_in(con, "marts"):
            raise MissingTable(
                f"table marts.{model} is missing from {build_db.name}: materialize "
                f"marts/{model} before checking {suite}"
            )
        rows = con.execute(f"select * from marts.{_q(model)}").df()
    return Frames(suite, {"rows": rows})
