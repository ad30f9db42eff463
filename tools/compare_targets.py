"""Build the dbt project on PostgreSQL or Spark and compare every mart with DuckDB's, row for row.

    python -m tools.compare_targets --target postgres --sources /tmp/acme --work /tmp/compare
    python -m tools.compare_targets --target spark --sources sources/sample --work /tmp/compare

The exports are ingested once (as the ingestion assets do, into `<work>/duckdb`) and built by
dbt on DuckDB; the same raw file is then built on the other target (`<work>/<target>`: the raw tables handed over,
`dbt build` there, the built tables copied back, pipelines/lib/targets.py) and the two build
files are compared table by table: the dbt-built marts and their restricted detail. Doubles
must agree to REL_TOL (relative) / ABS_TOL (absolute); everything else exactly. A PostgreSQL
target needs TALENT_BUILD_DSN and PGPASSWORD (`source .postgres/env` after `make postgres`).
Prints one line per table and exits 1 on any difference.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import json
import math
import os
import shutil
import subprocess
import sys
import time
from decimal import Decimal
from pathlib import Path

from pipelines.lib import db, targets
from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.settings import Settings

# Doubles: the targets sum and divide in other orders and precisions; a few ulps apart is equal.
REL_TOL = 1e-9
ABS_TOL = 1e-9
COMPARED_SCHEMAS = ("marts", "restricted")


def dbt_build(settings: Settings, target_path: Path, env: dict[str, str] | None = None) -> float:
    """`dbt build` of the project on the settings' build target; returns wall seconds. Fails
    with dbt's own output."""
    dbt = Path(sys.executable).parent / "dbt"
    child = {**(os.environ if env is None else env), **settings.dbt_env()}
    started = time.monotonic()
    proc = subprocess.run(
        [str(dbt), "build", "--vars", json.dumps(settings.dbt_vars())]
        + ["--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR)]
        + ["--target-path", str(target_path)],
        env=child,
        cwd=DBT_PROJECT_DIR,
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"dbt build on {settings.build_target} failed:\n{proc.stdout[-8000:]}\n"
            f"{proc.stderr[-3000:]}"
        )
    return time.monotonic() - started


def build_on(settings: Settings, env: dict[str, str] | None = None) -> float:
    """Raw tables to the target, dbt build there, built tables back into settings.build_db."""
    settings.build_db.parent.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    targets.prepare_build(settings)
    dbt_build(settings, settings.warehouse_dir / "dbt-target", env)
    targets.collect_build(settings)
    return time.monotonic() - started


def _normal(value):
    """Values of one meaning compare equal across drivers: Decimal and int as float where a
    float is involved, a timestamp at midnight as its date."""
    if isinstance(value, Decimal):
        return float(value)
    if isinstance(value, dt.datetime) and value.time() == dt.time(0) and value.tzinfo is None:
        return value.date()
    return value


def values_equal(a, b) -> bool:
    a, b = _normal(a), _normal(b)
    if a is None or b is None:
        return a is None and b is None
    if isinstance(a, float) or isinstance(b, float):
        if isinstance(a, bool) or isinstance(b, bool):
            return False
        try:
            return math.isclose(float(a), float(b), rel_tol=REL_TOL, abs_tol=ABS_TOL)
        except (TypeError, ValueError):
            return False
    return a == b


# Marts the pipeline's Python steps write after dbt (statistics, deliveries, programmes and
# careers, ROI): not built by dbt, so not on a target that only ran dbt. The list is the one
# the dbt docs describe them from (tools.dbt_sources), so a new Python mart is never missed.
@functools.cache
def python_written() -> frozenset[str]:
    from tools.dbt_sources import python_marts

    return frozenset(name for name, *_ in python_marts())


def written_by_python(name: str) -> bool:
    return name.split(".")[-1] in python_written()


def compare_tables(reference: Path, candidate: Path, schemas=COMPARED_SCHEMAS) -> list[str]:
    """Every difference between the tables of `schemas` in two DuckDB files: a table or column
    missing on one side, a row count, or the first differing rows (rows sorted by every column,
    doubles rounded to 6 decimals for the order)."""
    problems: list[str] = []
    con = db.memory()
    try:
        con.execute(f"attach '{reference}' as ref (read_only)")
        con.execute(f"attach '{candidate}' as cand (read_only)")

        def tables(catalog: str) -> dict[str, list[tuple[str, str]]]:
            found: dict[str, list[tuple[str, str]]] = {}
            for schema, table, column, data_type in con.execute(
                "select schema_name, table_name, column_name, data_type from duckdb_columns() "
                "where database_name = ? and schema_name in (select unnest(?)) "
                "order by schema_name, table_name, column_index",
                [catalog, list(schemas)],
            ).fetchall():
                found.setdefault(f"{schema}.{table}", []).append((column, data_type))
            return found

        ref, cand = tables("ref"), tables("cand")
        for name in sorted(set(ref) | set(cand)):
            if name not in cand:
                if not written_by_python(name):
                    problems.append(f"{name}: missing on the target")
                continue
            if name not in ref:
                if not written_by_python(name):
                    problems.append(f"{name}: only on the target")
                continue
            ref_cols = [c for c, _ in ref[name]]
            if set(ref_cols) != {c for c, _ in cand[name]}:
                problems.append(
                    f"{name}: columns differ: {sorted(set(ref_cols) ^ {c for c, _ in cand[name]})}"
                )
                continue
            doubles = {c for c, t in ref[name] if t in ("DOUBLE", "FLOAT")} | {
                c for c, t in cand[name] if t in ("DOUBLE", "FLOAT") or t.startswith("DECIMAL")
            }
            order = ", ".join(
                f'round("{c}"::double, 6) nulls first' if c in doubles else f'"{c}" nulls first'
                for c in ref_cols
            )
            cols = ", ".join(f'"{c}"' for c in ref_cols)
            schema, table = name.split(".")
            left = con.execute(
                f'select {cols} from ref."{schema}"."{table}" order by {order}'
            ).fetchall()
            right = con.execute(
                f'select {cols} from cand."{schema}"."{table}" order by {order}'
            ).fetchall()
            if len(left) != len(right):
                problems.append(f"{name}: {len(left)} rows on DuckDB, {len(right)} on the target")
                continue
            bad = [
                (i, c, a, b)
                for i, (lrow, rrow) in enumerate(zip(left, right, strict=True))
                for c, a, b in zip(ref_cols, lrow, rrow, strict=True)
                if not values_equal(a, b)
            ]
            if bad:
                shown = "; ".join(f"row {i} {c}: {a!r} vs {b!r}" for i, c, a, b in bad[:5])
                problems.append(f"{name}: {len(bad)} value(s) differ: {shown}")
    finally:
        con.close()
    return problems


def ingest(settings: Settings) -> None:
    """Every export of `settings.sources_dir` into `settings.raw_db`, as the ingestion assets do."""
    from pipelines.lib.contracts import EXPORTS
    from pipelines.lib.ingest.loader import ingest_export

    settings.ensure_dirs()
    for export in EXPORTS:
        ingest_export(settings, export, settle_seconds=0)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.compare_targets", description=__doc__)
    parser.add_argument("--target", choices=("postgres", "spark"), required=True)
    parser.add_argument("--sources", type=Path, required=True)
    parser.add_argument("--work", type=Path, required=True)
    args = parser.parse_args(argv)
    work = args.work.resolve()
    shutil.rmtree(work, ignore_errors=True)
    reference = Settings.from_env(
        os.environ, sources_dir=args.sources, warehouse_dir=work / "duckdb", build_target="duckdb"
    )
    started = time.monotonic()
    ingest(reference)
    print(f"ingested {reference.sources_dir} in {time.monotonic() - started:.1f} s")
    seconds = dbt_build(reference, reference.warehouse_dir / "dbt-target")
    print(f"duckdb: dbt build in {seconds:.1f} s")
    other = Settings.from_env(
        os.environ,
        sources_dir=args.sources,
        warehouse_dir=work / args.target,
        build_target=args.target,
    )
    other.warehouse_dir.mkdir(parents=True)
    shutil.copy2(reference.raw_db, other.raw_db)
    seconds = build_on(other)
    print(f"{args.target}: raw tables over, dbt build, tables back in {seconds:.1f} s")
    problems = compare_tables(reference.build_db, other.build_db)
    for line in problems:
        print(line)
    print("identical" if not problems else f"{len(problems)} table(s) differ")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
