"""Benchmark: a large company end to end, then one more day of exports.

    .venv/bin/python -m tools.bench [--employees 50000] [--years 5]

1. generates the company (cached in bench/scratch/ between runs with the same parameters), holding
   back the exports of the last day;
2. runs the full pipeline (`talent run`: nightly job, then the quarterly report) on a fresh
   warehouse, sampling the RSS of the whole process tree;
3. adds the held-back day and runs the nightly job again (`talent run --skip-report`: the
   incremental run; the nightly schedule never renders the report), then once more with no new
   file (a night on which nothing was delivered: `unchanged_run_cpu_s`, not a target);
4. runs the same dbt models' compiled SQL in one plain DuckDB session (`sql_only_s`, its CPU
   `sql_only_cpu_s`), to show what orchestration adds;
5. runs `bench/plain_script.py` on the same CSV files: the core marts as one plain DuckDB
   script computes them (`plain_script_cpu_s`), the yardstick of what the figures cost;
6. runs `talent run` on the bundled sample (`sources/sample`) on a fresh warehouse, with a
   Dagster instance of its own as `make run` has: the fixed floor of a run (`floor_cpu_s`),
   then its dbt build once more, alone (`dbt_rebuild_sample_cpu_s`: what any rebuild of the
   project costs before the data counts); `--no-floor` leaves both out;
7. prints a table and the targets, and writes bench/results.json (keeping the `scale_run` of
   the last scale run).

It measures; it asserts nothing. Targets (2 cores): the full run under 5 minutes of wall time,
the peak RSS of its process tree at most 2.5 GB, the sample at most 40 CPU s. The full run's CPU
over the plain script's (`full_over_plain_script_cpu`) and the nightly's over the full run's
(`nightly_over_full_cpu`) are recorded, not targets: both are mostly the fixed cost of dbt, Great
Expectations and Dagster at this size. What grows with the data is priced by the scale run
(`--scale`): its `marginal_cost_ratio`, at most 4, and the limits in `SCALE_TARGETS`.

Wall time depends on what else the machine runs, so every run also records the CPU seconds of
its whole process tree (dbt included) and the load average before and after. The heavy modules
are imported once before anything is timed, with bytecode writing allowed, so that every timed
process starts from compiled bytecode as a deployed install does (`make setup` compiles the
environment's packages; this also compiles the project's own modules, and any package an
environment left uncompiled). Otherwise an environment with PYTHONDONTWRITEBYTECODE set would
recompile the project in every process of every run.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import resource
import shutil
import subprocess
import sys
import threading
import time
from datetime import date
from pathlib import Path

import psutil

from pipelines.lib.project_files import DBT_PROJECT_DIR

PROJECT_ROOT = Path(__file__).resolve().parents[1]

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
    if "certification_effect" in k or "stat" in k or "event_study" in k or "programme_costs" in k:
        return "statistics"
    if "roi" in k:
        return "roi"
    if "publish" in k:
        return "publish"
    if "report" in k:
        return "report"
    return "other"


class TreeRssSampler:
    """Peak resident memory of a process and all its descendants, sampled every 0.1 s, and
    where it was: each process's share and the run's last progress line at that moment. It
    also keeps the process tree's memory and CPU seconds over time and reads the run's progress
    lines as they appear, so that each step (a line "... done in 2.1 s") gets its own wall time,
    CPU seconds and peak memory (`steps`)."""

    def __init__(self, pid: int, log: Path | None = None) -> None:
        self.root = psutil.Process(pid)
        self.log = log
        self.peak = 0
        self.peak_where: dict = {}
        self.series: list[tuple[float, int, float]] = []  # (seconds, tree RSS, tree CPU s)
        self.ends: list[tuple[str, float, float]] = []  # (step, end second, wall seconds)
        self._offset = 0
        self._t0 = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _last_progress_line(self) -> str:
        if self.log is None or not self.log.exists():
            return ""
        with open(self.log, "rb") as fh:
            fh.seek(max(0, fh.seek(0, os.SEEK_END) - 4096))
            lines = [ln for ln in fh.read().decode(errors="replace").splitlines() if "] " in ln]
        return lines[-1].strip() if lines else ""

    def _new_step_ends(self, now: float) -> None:
        """Steps whose "done in X s" (or "FAILED in X s") line appeared since the last look."""
        if self.log is None or not self.log.exists():
            return
        with open(self.log, "rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
        complete = chunk[: chunk.rfind(b"\n") + 1]
        self._offset += len(complete)
        for line in complete.decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) >= 6 and parts[-1] == "s" and parts[-3] == "in":
                with contextlib.suppress(ValueError):
                    self.ends.append((parts[-5], now, float(parts[-2])))

    def _run(self) -> None:
        while not self._stop.is_set():
            now = time.monotonic() - self._t0
            try:
                procs = [self.root, *self.root.children(recursive=True)]
                sizes = []
                cpu = 0.0
                for p in procs:
                    with contextlib.suppress(psutil.Error):
                        words = [Path(w).name if os.path.isabs(w) else w for w in p.cmdline()[1:4]]
                        sizes.append((" ".join(words)[:60], p.memory_info().rss))
                        times = p.cpu_times()
                        cpu += times.user + times.system
                        if p.pid == self.root.pid:  # children it waited for (dbt, docs)
                            cpu += times.children_user + times.children_system
                total = sum(rss for _, rss in sizes)
                if sizes:  # nothing read: the run has ended (a sample of it would read 0 CPU s)
                    self.series.append((now, total, cpu))
                if total > self.peak:
                    self.peak = total
                    self.peak_where = {
                        "seconds_into_run": round(now, 1),
                        "last_progress_line": self._last_progress_line(),
                        "processes_mb": [[name, round(rss / 1e6)] for name, rss in sizes],
                    }
            except psutil.Error:
                pass
            self._new_step_ends(now)
            self._stop.wait(0.1)

    def steps(self) -> dict[str, dict[str, float]]:
        """step -> wall seconds (as the run printed them), CPU seconds and peak RSS (MB) of the
        process tree while it ran (sampled: accurate to a few tenths of a second)."""
        out = {}

        def cpu_by(t: float) -> float | None:
            # the tree's CPU seconds so far never fall; a sample that missed a process (a child
            # that had exited and was not yet waited for) reads less: the most any sample read
            return max((cpu for s, _, cpu in self.series if s <= t + 1e-9), default=None)

        for step, end, wall in self.ends:
            start = end - wall
            upto = cpu_by(end)
            window = [rss for t, rss, _ in self.series if start - 1e-9 <= t <= end + 1e-9]
            if not window or upto is None:
                continue
            out[step] = {
                "wall_s": round(wall, 2),
                "cpu_s": round(max(0.0, upto - (cpu_by(start) or 0.0)), 2),
                "peak_rss_mb": round(max(window) / 1e6, 1),
            }
        return out

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        self._new_step_ends(time.monotonic() - self._t0)


# Imported once before timing so that their bytecode is cached (see the module docstring).
WARM_IMPORTS = (
    "pipelines.definitions",
    "great_expectations",
    "dbt.cli.main",
    "polars",
    "pipelines.lib.effects",
    "pipelines.lib.report",
)


def child_env(work: Path) -> dict[str, str]:
    """Environment of every timed child process: bytecode is read from and written to the
    usual `__pycache__` folders (the environment's packages are compiled by `make setup`)."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    # no DAGSTER_HOME: each warehouse records its runs in its own `<warehouse>/dagster/`, whose
    # code and data versions decide what the next night keeps, as for any `talent run`
    env.pop("DAGSTER_HOME", None)
    # the company was generated (or copied) completely before the run: no settle wait, which
    # would only add idle wall time to the first run
    env["TALENT_SETTLE_SECONDS"] = "0"
    return env


def warm_bytecode(work: Path) -> float:
    """Import the heavy modules once in a child so that the timed runs start from cached bytecode."""
    t0 = time.monotonic()
    code = "import importlib\n" + "".join(f"importlib.import_module({m!r})\n" for m in WARM_IMPORTS)
    subprocess.run([sys.executable, "-c", code], cwd=PROJECT_ROOT, env=child_env(work), check=True)
    return round(time.monotonic() - t0, 1)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_pipeline(
    sources: Path,
    warehouse: Path,
    log: Path,
    work: Path | None = None,
    *,
    report: bool = True,
    reports_dir: Path | None = None,
    dagster_home: Path | None = None,
) -> dict:
    """`talent run` in a child process: wall time, CPU seconds, peak RSS, per-phase seconds.

    With the warehouse's own Dagster instance (`<warehouse>/dagster/`), unless `dagster_home`
    is given: then with the project's instance (`dagster.yaml`) there, as `make run` has it."""
    cmd = [
        sys.executable,
        "-m",
        "pipelines.cli",
        "run",
        "--sources",
        str(sources),
        "--warehouse-dir",
        str(warehouse),
    ]
    if not report:
        cmd.append("--skip-report")
    reports_dir = reports_dir or warehouse / "reports"
    env = {**child_env(work or warehouse.parent), "TALENT_REPORTS_DIR": str(reports_dir)}
    if dagster_home is not None:
        dagster_home.mkdir(parents=True, exist_ok=True)
        shutil.copy(PROJECT_ROOT / "dagster.yaml", dagster_home / "dagster.yaml")
        env["DAGSTER_HOME"] = str(dagster_home)
    load_before = os.getloadavg()[0]
    cpu0 = _children_cpu()
    t0 = time.monotonic()
    with open(log, "w") as fh:
        proc = subprocess.Popen(cmd, cwd=PROJECT_ROOT, env=env, stdout=fh, stderr=subprocess.STDOUT)
        with TreeRssSampler(proc.pid, log) as sampler:
            rc = proc.wait()
    wall = time.monotonic() - t0
    # CPU of the run and every descendant it waited for (dbt, docs): independent of other load
    cpu = _children_cpu() - cpu0
    if rc != 0:
        tail = log.read_text(errors="replace")[-4000:]
        raise SystemExit(f"benchmark run failed (exit {rc}); see {log}:\n{tail}")
    phases = dict.fromkeys(PHASES, 0.0)
    kept: dict[str, str] = {}
    because: dict[str, str] = {}
    for name in (
        ("last_nightly.json", "last_quarterly_report.json") if report else ("last_nightly.json",)
    ):
        record_path = warehouse / "runs" / name
        if record_path.exists():
            record = json.loads(record_path.read_text())
            for step, seconds in record["step_seconds"].items():
                phases[phase_of(step)] += seconds
            kept.update(record.get("kept", {}))
            because.update(record.get("computed_because", {}))
    return {
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "load_average_before": round(load_before, 2),
        "load_average_after": round(os.getloadavg()[0], 2),
        "peak_rss_mb": round(sampler.peak / 1e6, 1),
        "peak_rss_where": sampler.peak_where,
        "phases_s": {k: round(v, 2) for k, v in phases.items()},
        # each step's wall time, CPU seconds and peak memory of the process tree
        "steps": sampler.steps(),
        # assets whose code and inputs had not changed: kept as an earlier run computed them
        "kept": kept,
        # the steps that computed, each with why (`versions.StepVerdict.because`)
        "computed_because": because,
    }


def dbt_project_args(target: Path) -> list[str]:
    """dbt's options for this project, its profile, and a target folder of the caller's own
    (never the shared `target/` that dagster-dbt loads)."""
    return [
        "--project-dir",
        str(DBT_PROJECT_DIR),
        "--profiles-dir",
        str(DBT_PROJECT_DIR),
        "--target-path",
        str(target),
    ]


def profile_duckdb_settings() -> dict:
    """The DuckDB settings of the dbt profile's DuckDB target (`config_options` in
    `dbt_project/profiles.yml`)."""
    import yaml

    from pipelines.lib.targets import PROFILE_TARGETS

    profiles = yaml.safe_load((DBT_PROJECT_DIR / "profiles.yml").read_text())
    output = profiles["talent_metrics"]["outputs"][PROFILE_TARGETS["duckdb"]]
    return dict(output["config_options"])


def sql_only(warehouse: Path) -> dict:
    """Run every dbt model's compiled SQL, as a full build compiles it, in dependency order, in
    one plain DuckDB session: its wall time and CPU seconds (DuckDB's threads are this
    process's; the CPU of the dbt compile before it is not counted). What the models' SQL
    costs without dbt, the floor under the dbt step."""
    import resource

    import duckdb

    from pipelines.defs.dbt_cli import DBT_EXECUTABLE
    from pipelines.lib.duckdb_plugin import register
    from pipelines.lib.settings import Settings

    settings = Settings.from_env(os.environ, warehouse_dir=warehouse)
    env = {**os.environ, **settings.dbt_env()}
    target = warehouse / "bench-dbt-target"
    subprocess.run(
        [
            DBT_EXECUTABLE,  # dbt of this environment (`python -m dbt.cli.main` warns)
            "compile",
            *dbt_project_args(target),
            # the incremental staging models as a full build compiles them (no `this`)
            "--full-refresh",
            "--quiet",
        ],
        cwd=DBT_PROJECT_DIR,
        env=env,
        check=True,
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
    # DuckDB's settings as the dbt profile gives them to the build (threads, memory limit,
    # insertion order, allocator): the same SQL under the same settings
    con = duckdb.connect(str(db), config=profile_duckdb_settings())
    try:
        register(con, settings.pseudonym_key)  # the same pseudonym() dbt registers
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
        t0, cpu0 = time.monotonic(), resource.getrusage(resource.RUSAGE_SELF)
        for key in order:
            node = models[key]
            con.execute(f"create schema if not exists {node['schema']}")
            kind = "view" if node["config"].get("materialized") == "view" else "table"
            con.execute(
                f"create or replace {kind} {node['schema']}.{node['alias']} as "
                f"{node['compiled_code']}"
            )
        wall, cpu1 = time.monotonic() - t0, resource.getrusage(resource.RUSAGE_SELF)
        cpu = cpu1.ru_utime + cpu1.ru_stime - cpu0.ru_utime - cpu0.ru_stime
        return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}
    finally:
        con.close()


PLAIN_SCRIPT = PROJECT_ROOT / "bench" / "plain_script.py"
SAMPLE = PROJECT_ROOT / "sources" / "sample"
FLOOR_CPU_S = 40


def run_floor(work: Path) -> dict:
    """`talent run` on the bundled sample (nightly job, then the quarterly report), on a fresh
    warehouse: start-up, definitions, dbt, checks and report with almost no data. Unlike the
    runs at scale it stores its run history in a Dagster instance of its own (`dagster.yaml` in
    a fresh `DAGSTER_HOME`), as `make run` does.

    The checkout's dbt parse is reused, as in any installed checkout after its first run (the
    first run of a fresh checkout parses the project once, about 4 CPU s more)."""
    warehouse = work / "floor" / "warehouse"
    shutil.rmtree(warehouse.parent, ignore_errors=True)
    return run_pipeline(
        SAMPLE,
        warehouse,
        work / "floor-run.log",
        work,
        reports_dir=work / "floor" / "reports",
        dagster_home=work / "floor" / "dagster_home",
    )


def dbt_rebuild_cpu_s(work: Path) -> float:
    """CPU seconds of one more dbt build of the floor's warehouse, alone, as a nightly runs it
    (`talent-dbt build`, the run's vars, unit tests left out once passed, the checkout's parse).

    On the bundled sample the models' SQL is a small part of it: the figure is what any rebuild
    of the project costs before the data counts (start-up, manifest, and dbt's own work for each
    of its models and tests), whatever the models do incrementally."""
    from pipelines.defs.dbt_cli import DBT_EXECUTABLE, build_args, seed_parse
    from pipelines.lib.settings import Settings

    env = child_env(work)
    settings = Settings.from_env(
        env, sources_dir=SAMPLE, warehouse_dir=work / "floor" / "warehouse"
    )
    target = work / "floor" / "dbt-target"
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    seed_parse(target)
    cmd = [
        DBT_EXECUTABLE,
        *build_args(settings),
        "--exclude-resource-type",
        "unit_test",
        *dbt_project_args(target),
    ]
    cpu0 = _children_cpu()
    done = subprocess.run(
        cmd,
        cwd=PROJECT_ROOT,
        env={**env, **settings.dbt_env(in_warehouse=True)},
        capture_output=True,
        text=True,
    )
    cpu = _children_cpu() - cpu0
    if done.returncode != 0:
        raise SystemExit(f"dbt build of the floor's warehouse failed:\n{done.stdout[-4000:]}")
    return round(cpu, 2)


def budgets(results: dict) -> dict[str, float]:
    """What the bundled sample costs (when the floor was measured): a whole run, and one dbt
    build alone, the parts of a run that do not grow with the company."""
    out: dict[str, float] = {}
    if results.get("floor_cpu_s") is not None:
        out["sample_run_cpu_s"] = results["floor_cpu_s"]
    if results.get("dbt_rebuild_sample_cpu_s") is not None:
        out["sample_dbt_rebuild_cpu_s"] = results["dbt_rebuild_sample_cpu_s"]
    return out


def run_plain_script(sources: Path, work: Path) -> dict:
    """`bench/plain_script.py` in a child process: wall time and CPU seconds.

    Its marts stay in `<work>/plain_script.duckdb` (tests compare them with the pipeline's).
    """
    out = work / "plain_script.duckdb"
    out.unlink(missing_ok=True)
    cmd = [sys.executable, str(PLAIN_SCRIPT), "--sources", str(sources), "--out", str(out)]
    cpu0 = _children_cpu()
    t0 = time.monotonic()
    subprocess.run(cmd, cwd=PROJECT_ROOT, env=child_env(work), check=True, capture_output=True)
    return {"wall_s": round(time.monotonic() - t0, 2), "cpu_s": round(_children_cpu() - cpu0, 2)}


def targets(results: dict) -> dict[str, dict]:
    """The targets at this size, each with the measured figure and whether it was met (the
    ratios to the plain script and of the nightly to the full run are figures, not targets)."""
    floor = results.get("floor_cpu_s")
    checks = {
        "full_run_under_5_min": (results["full_run_s"], "< 300 s", results["full_run_s"] < 300),
        "peak_rss_at_most_2_5_gb": (
            results["peak_rss_mb"],
            "<= 2500 MB",
            results["peak_rss_mb"] <= 2500,
        ),
    }
    if floor is not None:
        checks[f"sample_run_at_most_{FLOOR_CPU_S}_cpu_s"] = (
            floor,
            f"<= {FLOOR_CPU_S} s",
            floor <= FLOOR_CPU_S,
        )
    return {k: {"measured": m, "target": t, "met": bool(ok)} for k, (m, t, ok) in checks.items()}


def _table(results: dict) -> str:
    runs = ("full", "incremental", "unchanged")
    header = ("phase", "full run (s)", "one-day nightly (s)", "no new files (s)")
    if results.get("floor"):  # the bundled sample beside them: what does not grow with the data
        runs += ("floor",)
        header += ("bundled sample (s)",)
    blank = ("",) * (len(runs) - 1)
    rows = [header]
    for p in PHASES:
        rows.append((p, *(f"{results[r]['phases_s'][p]:.1f}" for r in runs)))
    rows += [
        ("wall (whole process)", *(f"{results[r]['wall_s']:.1f}" for r in runs)),
        ("CPU, process tree (s)", *(f"{results[r]['cpu_s']:.1f}" for r in runs)),
        (
            "load average before run",
            *(f"{results[r]['load_average_before']:.1f}" for r in runs),
        ),
        ("peak RSS, process tree (MB)", *(f"{results[r]['peak_rss_mb']:.0f}" for r in runs)),
        ("dbt SQL alone, one DuckDB session (s)", f"{results['sql_only_s']:.1f}", *blank),
        ("dbt SQL alone, CPU (s)", f"{results['sql_only_cpu_s']:.1f}", *blank),
        ("plain script, CPU (s)", f"{results['plain_script_cpu_s']:.1f}", *blank),
    ]
    if results.get("dbt_rebuild_sample_cpu_s") is not None:
        rows.append(
            (
                "one more dbt build alone, CPU (s)",
                *blank,
                f"{results['dbt_rebuild_sample_cpu_s']:.1f}",
            )
        )
    width = [max(len(r[i]) for r in rows) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)) for r in rows)


def _parse_args(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--employees", type=int, default=50_000)
    ap.add_argument("--years", type=int, default=5)
    # The last day of a quarter: the generated window then starts on a quarter boundary, like
    # the bundled sample, and the held-back day is the last day of the data.
    ap.add_argument(
        "--end-date",
        type=date.fromisoformat,
        default=date(2026, 9, 30),
        help="the held-back 'one more day'",
    )
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--no-floor",
        dest="floor",
        action="store_false",
        help="leave out the run of the bundled sample (the fixed floor)",
    )
    ap.add_argument(
        "--scale",
        action="store_true",
        help="the scale run instead: each of --scale-sizes generated and run end to end, with "
        "the plain script beside it (about 40 minutes); writes `scale_run` into --results",
    )
    ap.add_argument(
        "--scale-sizes",
        type=lambda text: [int(n) for n in text.split(",")],
        default=list(SCALE_SIZES),
        help="employees of each company of the scale run (default 50000,200000,1000000)",
    )
    ap.add_argument("--work", type=Path, default=PROJECT_ROOT / "bench" / "scratch")
    ap.add_argument("--results", type=Path, default=PROJECT_ROOT / "bench" / "results.json")
    return ap.parse_args(argv)


def prepare_company(args: argparse.Namespace) -> tuple[Path, Path, list[Path], float, dict]:
    """Generate the company (unless cached with the same parameters) and hold back its last day.

    Returns (sources, pending, held-back files, generate seconds, parameters).
    """
    from tools.generate import generate_company

    work: Path = args.work
    params = {
        "employees": args.employees,
        "years": args.years,
        "end_date": str(args.end_date),
        "seed": args.seed,
    }
    sources, pending = work / "sources", work / "pending"
    stamp = work / "params.json"
    generate_s = 0.0
    if not stamp.exists() or json.loads(stamp.read_text()) != params:
        shutil.rmtree(work, ignore_errors=True)
        print(f"generating {args.employees:,} employees over {args.years} years ...", flush=True)
        t0 = time.monotonic()
        generate_company(
            sources,
            args.employees,
            args.years,
            args.end_date,
            args.seed,
            daily_from=args.end_date,
            progress=True,
        )
        generate_s = round(time.monotonic() - t0, 1)
        stamp.write_text(json.dumps(params))
        (work / "generate.json").write_text(json.dumps({"generate_s": generate_s}))
    elif (work / "generate.json").exists():
        # the company of an earlier benchmark: the time it took to generate
        generate_s = json.loads((work / "generate.json").read_text())["generate_s"]
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
    if not held:
        raise SystemExit(
            f"no export file of {day} in {sources}: the incremental run would have nothing to "
            f"load. Delete {work} so that the company is generated again with daily files."
        )
    return sources, pending, held, generate_s, params


SCALE_SIZES = (50_000, 200_000, 1_000_000)
# The scale run's targets (2 cores, 24 GB): at the largest size the full run under 15 minutes
# and 6 GB, the one-day nightly under 2 minutes, the generator under 20 minutes; the
# data-proportional cost at most 4 times the plain script's; memory no faster than linear.
SCALE_TARGETS = {"full_wall_s": 900, "peak_rss_mb": 6000, "nightly_wall_s": 120, "generate_s": 1200}


def measure_company(args: argparse.Namespace, employees: int) -> dict:
    """One company of the scale run: generated (or its cached copy), run in full, one day
    more, a night without files, the dbt models' SQL alone, and the plain script on the same
    files."""
    sub = argparse.Namespace(**{**vars(args), "employees": employees})
    sub.work = args.work / f"scale-{employees}"
    sources, pending, held, generate_s, params = prepare_company(sub)
    work = sub.work
    warm_bytecode(work)
    warehouse = work / "warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    print(f"{employees:,}: full run ...", flush=True)
    full = run_pipeline(sources, warehouse, work / "full-run.log", work)
    for f in sorted(pending.rglob("*.csv")):
        f.replace(sources / f.relative_to(pending))
    print(f"{employees:,}: one-day nightly ...", flush=True)
    nightly = run_pipeline(sources, warehouse, work / "incremental-run.log", work, report=False)
    print(f"{employees:,}: nightly without new files ...", flush=True)
    unchanged = run_pipeline(sources, warehouse, work / "unchanged-run.log", work, report=False)
    print(f"{employees:,}: dbt SQL in one DuckDB session ...", flush=True)
    sql_alone = sql_only(warehouse)
    print(f"{employees:,}: plain script ...", flush=True)
    plain = run_plain_script(sources, work)
    gt = json.loads((sources / "ground_truth.json").read_text())
    return {
        "employees": employees,
        "infrastructure_engineers": gt.get("counts", {}).get("infra_engineers"),
        "generate_s": generate_s,
        "full": full,
        "incremental": nightly,
        "unchanged": unchanged,
        "sql_only": sql_alone,
        "plain_script": plain,
        "params": params,
    }


def phase_cpu(run: dict) -> dict[str, float]:
    """A run's CPU seconds by phase: its steps' CPU of the process tree, summed per phase, and
    `outside steps` for the rest of the run's CPU (start-up, loading the definitions, Dagster
    between and after the steps)."""
    out = dict.fromkeys(PHASES, 0.0)
    for step, figures in run.get("steps", {}).items():
        out[phase_of(step)] += figures["cpu_s"]
    out["outside steps"] = run["cpu_s"] - sum(out.values())
    return out


def marginal_by_phase(sizes: dict[int, dict], a: int, b: int) -> dict[str, float] | None:
    """Where the marginal cost ratio from `a` to `b` employees comes from: each phase's CPU
    growth over the plain script's (the parts add up to the ratio), and beside them the growth
    of the dbt models' SQL run alone in one DuckDB session (`dbt SQL alone`: the floor under
    the dbt phase, what any tool running these models pays)."""
    plain = sizes[b]["plain_script"]["cpu_s"] - sizes[a]["plain_script"]["cpu_s"]
    if plain <= 0:
        return None
    small, large = phase_cpu(sizes[a]["full"]), phase_cpu(sizes[b]["full"])
    out = {p: round((large[p] - small[p]) / plain, 2) for p in large}
    if "sql_only" in sizes[a] and "sql_only" in sizes[b]:
        sql = sizes[b]["sql_only"]["cpu_s"] - sizes[a]["sql_only"]["cpu_s"]
        out["dbt SQL alone"] = round(sql / plain, 2)
    return out


def scale_summary(sizes: dict[int, dict]) -> dict:
    """What the scale run shows: the marginal cost against the plain script, memory per
    employee, and the targets at the largest size."""
    ordered = sorted(sizes)
    small, large = ordered[0], ordered[-1]

    def marginal(a: int, b: int) -> float | None:
        plain = sizes[b]["plain_script"]["cpu_s"] - sizes[a]["plain_script"]["cpu_s"]
        full = sizes[b]["full"]["cpu_s"] - sizes[a]["full"]["cpu_s"]
        return round(full / plain, 2) if plain > 0 else None

    out: dict = {
        "memory_mb_per_1000_employees": {
            str(n): round(1000 * sizes[n]["full"]["peak_rss_mb"] / n, 3) for n in ordered
        },
    }
    if 200_000 in sizes and small < 200_000:
        out["marginal_cost_ratio"] = marginal(small, 200_000)
        out["marginal_cost_ratio_by_phase"] = marginal_by_phase(sizes, small, 200_000)
    if len(ordered) > 1:
        out[f"marginal_cost_ratio_{ordered[-2]}_to_{large}"] = marginal(ordered[-2], large)
        out[f"marginal_cost_ratio_{ordered[-2]}_to_{large}_by_phase"] = marginal_by_phase(
            sizes, ordered[-2], large
        )
    biggest = sizes[large]
    # memory per 1,000 more employees between consecutive sizes: linear growth keeps it flat
    per_more = [
        1000 * (sizes[b]["full"]["peak_rss_mb"] - sizes[a]["full"]["peak_rss_mb"]) / (b - a)
        for a, b in zip(ordered, ordered[1:], strict=False)
    ]
    out["memory_mb_per_1000_more_employees"] = [round(m, 3) for m in per_more]
    checks = {
        f"full_run_at_{large}_under_15_min": (biggest["full"]["wall_s"], "< 900 s"),
        f"peak_rss_at_{large}_under_6_gb": (biggest["full"]["peak_rss_mb"], "< 6000 MB"),
        f"one_day_nightly_at_{large}_under_2_min": (biggest["incremental"]["wall_s"], "< 120 s"),
        f"generator_at_{large}_under_20_min": (biggest["generate_s"], "< 1200 s"),
    }
    limits = {
        f"full_run_at_{large}_under_15_min": SCALE_TARGETS["full_wall_s"],
        f"peak_rss_at_{large}_under_6_gb": SCALE_TARGETS["peak_rss_mb"],
        f"one_day_nightly_at_{large}_under_2_min": SCALE_TARGETS["nightly_wall_s"],
        f"generator_at_{large}_under_20_min": SCALE_TARGETS["generate_s"],
    }
    targets = {
        name: {"measured": m, "target": t, "met": bool(m < limits[name])}
        for name, (m, t) in checks.items()
    }
    targets["memory_grows_no_faster_than_linearly"] = {
        "measured": out["memory_mb_per_1000_more_employees"],
        "target": "MB per 1,000 more employees does not rise from size to size (10 % slack)",
        "met": all(b <= 1.1 * a for a, b in zip(per_more, per_more[1:], strict=False)),
    }
    if out.get("marginal_cost_ratio") is not None:
        targets["marginal_cost_ratio_at_most_4"] = {
            "measured": out["marginal_cost_ratio"],
            "target": "<= 4",
            "met": out["marginal_cost_ratio"] <= 4,
        }
    out["targets"] = targets
    return out


def _scale_table(sizes: dict[int, dict]) -> str:
    """Where the time and the memory go at each size: each phase's wall seconds of the full
    run, then the run's CPU, wall and peak memory, and the plain script's CPU."""
    ordered = sorted(sizes)
    rows = [("", *(f"{n:,}" for n in ordered))]
    for p in PHASES:
        rows.append((f"{p} (s)", *(f"{sizes[n]['full']['phases_s'][p]:.0f}" for n in ordered)))
    rows += [
        ("full run, wall (s)", *(f"{sizes[n]['full']['wall_s']:.0f}" for n in ordered)),
        ("full run, CPU (s)", *(f"{sizes[n]['full']['cpu_s']:.0f}" for n in ordered)),
        ("peak RSS (MB)", *(f"{sizes[n]['full']['peak_rss_mb']:.0f}" for n in ordered)),
        (
            "one-day nightly, wall (s)",
            *(f"{sizes[n]['incremental']['wall_s']:.0f}" for n in ordered),
        ),
        (
            "night without files, wall (s)",
            *(f"{sizes[n]['unchanged']['wall_s']:.0f}" for n in ordered),
        ),
        ("plain script, CPU (s)", *(f"{sizes[n]['plain_script']['cpu_s']:.0f}" for n in ordered)),
        ("generator (s)", *(f"{sizes[n]['generate_s']:.0f}" for n in ordered)),
    ]
    if all("sql_only" in sizes[n] for n in ordered):
        rows.append(
            ("dbt SQL alone, CPU (s)", *(f"{sizes[n]['sql_only']['cpu_s']:.0f}" for n in ordered))
        )
    width = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)) for r in rows)


def main_scale(args: argparse.Namespace) -> dict:
    """The scale run: `scale_run` in --results (the rest of the file is kept)."""
    sizes = {n: measure_company(args, n) for n in args.scale_sizes}
    summary = scale_summary(sizes)
    results = json.loads(args.results.read_text()) if args.results.exists() else {}
    results["scale_run"] = {
        "machine": {"cores": os.cpu_count(), "python": platform.python_version()},
        "sizes": {str(n): r for n, r in sizes.items()},
        **summary,
    }
    if args.floor:  # the fixed cost beside them, with the same code
        print("bundled sample on a fresh warehouse (the floor) ...", flush=True)
        floor = run_floor(args.work)
        results["scale_run"]["floor"] = floor
        results["scale_run"]["targets"][f"sample_run_at_most_{FLOOR_CPU_S}_cpu_s"] = {
            "measured": floor["cpu_s"],
            "target": f"<= {FLOOR_CPU_S} s",
            "met": floor["cpu_s"] <= FLOOR_CPU_S,
        }
        summary = results["scale_run"]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    print(_scale_table(sizes))
    for key, value in summary.items():
        if key.startswith("marginal") or key.startswith("memory"):
            print(f"{key}: {value}")
    for name, t in summary["targets"].items():
        print(f"{'met ' if t['met'] else 'MISSED'}  {name}: {t['measured']} (target {t['target']})")
    print(f"wrote {args.results} (scale_run)")
    return results


def _results(sources: Path, params: dict, held_back: int, startup: dict, runs: dict) -> dict:
    """The figures of one `make bench` run, as results.json keeps them: `startup` holds
    generate_s and bytecode_warmup_s, `runs` the measured runs by name (full, incremental,
    unchanged, sql_alone, plain; floor and dbt_rebuild are None with --no-floor)."""
    full, incremental, unchanged = runs["full"], runs["incremental"], runs["unchanged"]
    sql_alone, plain, floor = runs["sql_alone"], runs["plain"], runs["floor"]
    gt = json.loads((sources / "ground_truth.json").read_text())
    return {
        "scale": {
            **params,
            "infrastructure_engineers": gt.get("counts", {}).get("infra_engineers"),
        },
        "machine": {
            "cores": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        **startup,
        "held_back_files": held_back,
        "full_run_s": full["wall_s"],
        "incremental_run_s": incremental["wall_s"],
        "full_run_cpu_s": full["cpu_s"],
        "incremental_run_cpu_s": incremental["cpu_s"],
        # a night on which no export delivered anything (not a target; what such a night costs)
        "unchanged_run_cpu_s": unchanged["cpu_s"],
        "peak_rss_mb": max(full["peak_rss_mb"], incremental["peak_rss_mb"]),
        "sql_only_s": sql_alone["wall_s"],
        "sql_only_cpu_s": sql_alone["cpu_s"],
        "plain_script_s": plain["wall_s"],
        "plain_script_cpu_s": plain["cpu_s"],
        "full_over_plain_script_cpu": round(full["cpu_s"] / plain["cpu_s"], 2),
        "nightly_over_full_cpu": round(incremental["cpu_s"] / full["cpu_s"], 3),
        # `talent run` on the bundled sample, a fresh warehouse (None with --no-floor)
        "floor_cpu_s": floor["cpu_s"] if floor else None,
        # one more dbt build of that warehouse, alone (None with --no-floor)
        "dbt_rebuild_sample_cpu_s": runs["dbt_rebuild"],
        "full": full,
        "incremental": incremental,
        "unchanged": unchanged,
        "floor": floor,
    }


def main(argv: list[str] | None = None) -> dict:
    args = _parse_args(argv)
    if args.scale:
        return main_scale(args)
    work: Path = args.work
    sources, pending, held, generate_s, params = prepare_company(args)
    print("caching bytecode of the heavy modules ...", flush=True)
    warm_s = warm_bytecode(work)
    warehouse = work / "warehouse"
    shutil.rmtree(warehouse, ignore_errors=True)
    print("full run ...", flush=True)
    full = run_pipeline(sources, warehouse, work / "full-run.log", work)
    for f in sorted(pending.rglob("*.csv")):
        dest = sources / f.relative_to(pending)
        f.replace(dest)
    print("one-day nightly ...", flush=True)
    # the nightly job materialises everything but the report (README, Automation); the
    # quarterly report is its own job, so the one-day nightly does not render it
    incremental = run_pipeline(sources, warehouse, work / "incremental-run.log", work, report=False)
    print("nightly without new files ...", flush=True)
    unchanged = run_pipeline(sources, warehouse, work / "unchanged-run.log", work, report=False)
    print("dbt SQL in one DuckDB session ...", flush=True)
    sql_alone = sql_only(warehouse)
    print("plain script ...", flush=True)
    plain = run_plain_script(sources, work)
    floor = dbt_rebuild = None
    if args.floor:
        print("bundled sample on a fresh warehouse (the floor) ...", flush=True)
        floor = run_floor(work)
        print("dbt build of the sample's warehouse, alone ...", flush=True)
        dbt_rebuild = dbt_rebuild_cpu_s(work)

    runs = {
        "full": full,
        "incremental": incremental,
        "unchanged": unchanged,
        "sql_alone": sql_alone,
        "plain": plain,
        "floor": floor,
        "dbt_rebuild": dbt_rebuild,
    }
    startup = {"generate_s": generate_s, "bytecode_warmup_s": warm_s}
    results = _results(sources, params, len(held), startup, runs)
    results["targets"] = targets(results)
    results["budgets"] = budgets(results)
    # the last scale run is a run of its own (`--scale`, most of an hour): kept, as it keeps
    # the rest of the file
    if args.results.exists():
        earlier = json.loads(args.results.read_text())
        if "scale_run" in earlier:
            results["scale_run"] = earlier["scale_run"]
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(results, indent=2) + "\n")
    _print_results(results)
    print(f"wrote {args.results}")
    return results


def _print_results(results: dict) -> None:
    """`make bench`'s figures as it prints them: the table, the targets, the ratios, the
    sample's budgets and where each run peaked."""
    print(_table(results))
    for name, t in results["targets"].items():
        print(f"{'met ' if t['met'] else 'MISSED'}  {name}: {t['measured']} (target {t['target']})")
    print(
        f"full run / plain script: {results['full_over_plain_script_cpu']} x CPU; one-day "
        f"nightly / full run: {results['nightly_over_full_cpu']} (recorded, not targets: "
        "the scale run prices what grows with the data)"
    )
    b = results["budgets"]
    if "sample_dbt_rebuild_cpu_s" in b:
        print(
            f"on the bundled sample a whole run costs {b['sample_run_cpu_s']} CPU s and one "
            f"dbt build alone {b['sample_dbt_rebuild_cpu_s']}"
        )
    for run in ("full", "incremental"):
        where = results[run].get("peak_rss_where") or {}
        procs = ", ".join(f"{name} {mb} MB" for name, mb in where.get("processes_mb", []))
        print(
            f"peak RSS of the {run} run at {where.get('seconds_into_run')} s, after "
            f"'{where.get('last_progress_line', '')}': {procs}"
        )


if __name__ == "__main__":
    main()
