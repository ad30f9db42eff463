"""Benchmark: a large company end to end, then one more day of exports.

    uv run python -m pipelines.bench [--employees 50000] [--years 5]

1. generates the company (cached in bench/work/ between runs with the same parameters), holding
   back the exports of the last day;
2. runs the full pipeline (`talent run`) on a fresh warehouse, sampling the RSS of the whole
   process tree;
3. adds the held-back day and runs the nightly again (the incremental run);
4. runs the same dbt models' compiled SQL in one plain DuckDB session (`sql_only_s`), to show
   what orchestration adds;
5. prints a table and writes bench/results.json.

It measures; it asserts nothing. Targets (2 cores): full run < 5 min, incremental < a quarter of
the full run, peak RSS < 4 GB, SQL at least half of the full run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import psutil

from pipelines.config import DBT_PROJECT_DIR, PROJECT_ROOT

PHASES = ("ingest", "dbt", "checks", "statistics", "roi", "publish", "report", "other")


def phase_of(step_key: str) -> str:
    """Which benchmark phase a Dagster step belongs to (by its key)."""
    k = step_key.lower()
    if "freshness" in k or "check" in k or "suite" in k or "quality" in k:
        return "checks"
    if k.startswith("raw") or "ingest" in k:
        return "ingest"
    if "dbt" in k:
        return "dbt"
    if "certification_effect" in k or "stat" in k or "event_study" in k:
        return "statistics"
    if "roi" in k:
        return "roi"
    if "publish" in k:
        return "publish"
    if "report" in k:
        return "report"
    return "other"


class TreeRssSampler:
    """Peak resident memory of a process and all its descendants, sampled every 0.1 s."""

    def __init__(self, pid: int) -> None:
        self.root = psutil.Process(pid)
        self.peak = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                procs = [self.root, *self.root.children(recursive=True)]
                total = 0
                for p in procs:
                    with contextlib.suppress(psutil.Error):
                        total += p.memory_info().rss
                self.peak = max(self.peak, total)
            except psutil.Error:
                pass
            self._stop.wait(0.1)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_pipeline(sources: Path, warehouse: Path, log: Path) -> dict:
    """`talent run` in a child process; returns wall time, peak RSS and per-phase seconds."""
    cmd = [sys.executable, "-m", "pipelines.cli", "run", "--sources", str(sources),
           "--warehouse-dir", str(warehouse)]
    env = {**os.environ, "TALENT_REPORTS_DIR": str(warehouse / "reports")}
    env.pop("DAGSTER_HOME", None)  # ephemeral instance: the benchmark leaves no run history
    t0 = time.monotonic()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        with TreeRssSampler(proc.pid) as sampler:
            rc = proc.wait()
    wall = time.monotonic() - t0
    if rc != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise SystemExit(f"benchmark run failed (exit {rc}); see {log}:\n{tail}")
    phases = dict.fromkeys(PHASES, 0.0)
    for name in ("last_nightly.json", "last_quarterly_report.json"):
        record_path = warehouse / "runs" / name
        if record_path.exists():
            for step, seconds in json.loads(record_path.read_text())["step_seconds"].items():
                phases[phase_of(step)] += seconds
    return {
        "wall_s": round(wall, 2),
        "peak_rss_mb": round(sampler.peak / 1e6, 1),
        "phases_s": {k: round(v, 2) for k, v in phases.items()},
    }


def sql_only_seconds(warehouse: Path) -> float:
    """Run every dbt model's compiled SQL, in dependency order, in one plain DuckDB session."""
    import duckdb

    from pipelines.config import Settings
    from pipelines.lib.pseudonym import pseudonym

    env = {**os.environ, "TALENT_WAREHOUSE_DIR": str(warehouse)}
    settings = Settings(**{**Settings.from_env().__dict__, "warehouse_dir": warehouse})
    env.update(settings.dbt_env())
    target = warehouse / "bench-dbt-target"
    subprocess.run(
        [sys.executable, "-m", "dbt.cli.main", "compile", "--project-dir", str(DBT_PROJECT_DIR),
         "--profiles-dir", str(DBT_PROJECT_DIR), "--target-path", str(target), "--quiet"],
        cwd=DBT_PROJECT_DIR, env=env, check=True,
    )
    manifest = json.loads((target / "manifest.json").read_text())
    models = {k: n for k, n in manifest["nodes"].items() if n["resource_type"] == "model"}
    seeds = {k: n for k, n in manifest["nodes"].items() if n["resource_type"] == "seed"}
    order: list[str] = []
    seen: set[str] = set()

    def visit(key: str) -> None:
        if key in seen or key not in models:
            return
        seen.add(key)
        for dep in models[key]["depends_on"]["nodes"]:
            visit(dep)
        order.append(key)

    for key in sorted(models):
        visit(key)
    # same file name as the build file, so the compiled SQL's catalog references resolve
    db = warehouse / "bench-sql-only" / settings.build_db.name
    db.parent.mkdir(parents=True, exist_ok=True)
    db.unlink(missing_ok=True)
    con = duckdb.connect(str(db))
    try:
        con.create_function("pseudonym", lambda v: pseudonym(v), ["VARCHAR"], "VARCHAR",
                            null_handling="special")
        con.execute(f"attach '{settings.raw_db}' as raw (read_only)")
        # seeds are reference data: copy them from the build file, outside the timing
        con.execute(f"attach '{settings.build_db}' as build (read_only)")
        for node in seeds.values():
            con.execute(f"create schema if not exists {node['schema']}")
            con.execute(
                f"create or replace table {node['schema']}.{node['alias']} as "
                f"select * from build.{node['schema']}.{node['alias']}"
            )
        con.execute("detach build")
        t0 = time.monotonic()
        for key in order:
            node = models[key]
            con.execute(f"create schema if not exists {node['schema']}")
            kind = "view" if node["config"].get("materialized") == "view" else "table"
            con.execute(
                f"create or replace {kind} {node['schema']}.{node['alias']} as "
                f"{node['compiled_code']}"
            )
        return round(time.monotonic() - t0, 2)
    finally:
        con.close()


def _table(results: dict) -> str:
    rows = [("phase", "full run (s)", "one-day nightly (s)")]
    for p in PHASES:
        rows.append((p, f"{results['full']['phases_s'][p]:.1f}",
                     f"{results['incremental']['phases_s'][p]:.1f}"))
    rows += [
        ("wall (whole process)", f"{results['full_run_s']:.1f}", f"{results['incremental_run_s']:.1f}"),
        ("peak RSS, process tree (MB)", f"{results['full']['peak_rss_mb']:.0f}",
         f"{results['incremental']['peak_rss_mb']:.0f}"),
        ("dbt SQL alone, one DuckDB session (s)", f"{results['sql_only_s']:.1f}", ""),
    ]
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)) for r in rows)


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--employees", type=int, default=50_000)
    ap.add_argument("--years", type=int, default=5)
    ap.add_argument("--end-date", type=date.fromisoformat, default=date(2026, 10, 1),
                    help="the held-back 'one more day'")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work", type=Path, default=PROJECT_ROOT / "bench" / "work")
    ap.add_argument("--results", type=Path, default=PROJECT_ROOT / "bench" / "results.json")
    args = ap.parse_args(argv)

    from pipelines.lib.generate import generate_company

    work: Path = args.work
    params = {"employees": args.employees, "years": args.years, "end_date": str(args.end_date),
              "seed": args.seed}
    sources, pending = work / "sources", work / "pending"
    stamp = work / "params.json"
    generate_s = 0.0
    if not stamp.exists() or json.loads(stamp.read_text()) != params:
        shutil.rmtree(work, ignore_errors=True)
        print(f"generating {args.employees:,} employees over {args.years} years ...", flush=True)
        t0 = time.monotonic()
        generate_company(sources, args.employees, args.years, args.end_date, args.seed,
                         daily_from=args.end_date, progress=True)
        generate_s = round(time.monotonic() - t0, 1)
        stamp.write_text(json.dumps(params))
    # hold back the last day's files (and put back any held back by an interrupted benchmark)
    day = str(args.end_date)
    for f in sorted(pending.rglob("*.csv")) if pending.exists() else []:
        dest = sources / f.relative_to(pending)
        dest.parent.mkdir(parents=True, exist_ok=True)
        f.replace(dest)
    held = [f for f in sources.rglob("*.csv") if f"_{day}" in f.name]
    for f in held:
        dest = pending / f.relative_to(sources)
        dest.parent.mkdir(parents=True, exist_ok=True)
        f.replace(dest)
    print(f"held back {len(held)} file(s) of {day} for the incremental run", flush=True)

    warehouse = work / "warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    print("full run ...", flush=True)
    full = run_pipeline(sources, warehouse, work / "full-run.log")
    for f in sorted(pending.rglob("*.csv")):
        dest = sources / f.relative_to(pending)
        f.replace(dest)
    print("one-day nightly ...", flush=True)
    incremental = run_pipeline(sources, warehouse, work / "incremental-run.log")
    print("dbt SQL in one DuckDB session ...", flush=True)
    sql_only = sql_only_seconds(warehouse)

    gt = json.loads((sources / "ground_truth.json").read_text())
    results = {
        "scale": {**params, "infrastructure_engineers": gt.get("counts", {}).get("infra_engineers")},
        "machine": {"cores": os.cpu_count(), "python": platform.python_version(),
                    "platform": platform.platform()},
        "generate_s": generate_s,
        "full_run_s": full["wall_s"],
        "incremental_run_s": incremental["wall_s"],
        "peak_rss_mb": max(full["peak_rss_mb"], incremental["peak_rss_mb"]),
        "sql_only_s": sql_only,
        "full": full,
        "incremental": incremental,
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(_table(results))
    print(f"wrote {args.results}")
    return results


if __name__ == "__main__":
    main()
