"""Shared test fixtures: small raw databases built straight from the export contracts."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest.manifest import RETAINED_NAMES_DDL
from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.settings import Settings
from tools.bench import dbt_project_args

SQL_TYPES = {
    "string": "VARCHAR",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "integer": "BIGINT",
    "decimal": "DOUBLE",
    "boolean": "BOOLEAN",
    "month": "DATE",
}

TEST_PSEUDONYM_KEY = "test-key-for-pseudonyms"
# Tests write export files moments before loading them. The product waits until a file is
# TALENT_SETTLE_SECONDS old (default 30, a half-copied file must not load); the tests that check
# that wait set it themselves. Pipeline runs started as subprocesses inherit this.
os.environ.setdefault("TALENT_SETTLE_SECONDS", "0")


@dataclass
class RawFile:
    """One delivered file as ingestion would have loaded it into raw.duckdb."""

    export: str
    period: str
    rows: list[dict]
    version: int = 1
    status: str = "active"
    file_id: str = field(default="")

    def __post_init__(self) -> None:
        if not self.file_id:
            seed = f"{self.export}|{self.period}|{self.version}|{self.status}|{len(self.rows)}"
            self.file_id = hashlib.sha256(seed.encode()).hexdigest()


def talent_resources(
    *, sources_dir: Path | None = None, warehouse_dir: Path | None = None, **fields
) -> dict[str, object]:
    """`{"talent": TalentResource}` over explicit test settings (the test pseudonym key)."""
    from pipelines.defs.resources import TalentResource

    base = Path(warehouse_dir or sources_dir or ".")
    fields.setdefault("settle_seconds", 0)
    settings = Settings(
        sources_dir=sources_dir or base / "sources",
        warehouse_dir=warehouse_dir or base / "warehouse",
        pseudonym_key=TEST_PSEUDONYM_KEY,
        **fields,
    )
    return {"talent": TalentResource.from_settings(settings)}


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    """Settings over an empty sources folder (hris/ lms/ incidents/ fleet/) and a new warehouse."""
    for folder in ("hris", "lms", "incidents", "fleet"):
        (tmp_path / "sources" / folder).mkdir(parents=True)
    return Settings(
        sources_dir=tmp_path / "sources", warehouse_dir=tmp_path / "warehouse", settle_seconds=0
    )


def raw_table_ddl(export: str) -> str:
    """CREATE TABLE for raw.<export> as docs/architecture.md describes it (contract + lineage)."""
    cols = [f'"{c.name}" {SQL_TYPES[c.type]}' for c in EXPORTS[export].columns]
    cols += [
        "_file_id VARCHAR",
        "_line BIGINT",
        "_period VARCHAR",
        "_version BIGINT",
        "_extra JSON",
    ]
    return f"create table main.{export} ({', '.join(cols)})"


def make_raw_db(path: Path, files: Iterable[RawFile]) -> Path:
    """Write a raw.duckdb with every contract table (empty when no file), manifest, quarantine
    and the (empty) retained names."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as con:
        for export in EXPORTS:
            con.execute(raw_table_ddl(export))
        con.execute(
            "create table main.manifest (file_id VARCHAR, export VARCHAR, file_name VARCHAR, "
            "source_path VARCHAR, archive_path VARCHAR, period VARCHAR, version BIGINT, "
            "size_bytes BIGINT, rows_total BIGINT, rows_loaded BIGINT, rows_quarantined BIGINT, "
            "encoding VARCHAR, locale VARCHAR, delimiter VARCHAR, loaded_at TIMESTAMP, "
            "status VARCHAR, superseded_by VARCHAR, message VARCHAR, profile VARCHAR, "
            "period_source VARCHAR, source_system VARCHAR)"
        )
        con.execute(
            "create table main.quarantine (file_id VARCHAR, export VARCHAR, file_name VARCHAR, "
            "line_number BIGINT, raw_line VARCHAR, reason VARCHAR, quarantined_at TIMESTAMP)"
        )
        con.execute(RETAINED_NAMES_DDL)
        for f in files:
            names = EXPORTS[f.export].column_names
            fname = f"{f.export}_{f.period}" + (f"_v{f.version}" if f.version > 1 else "") + ".csv"
            con.execute(
                "insert into main.manifest (file_id, export, file_name, period, version, "
                "rows_total, rows_loaded, rows_quarantined, status, loaded_at) "
                "values (?, ?, ?, ?, ?, ?, ?, 0, ?, now())",
                [
                    f.file_id,
                    f.export,
                    fname,
                    f.period,
                    f.version,
                    len(f.rows),
                    len(f.rows),
                    f.status,
                ],
            )
            for line, row in enumerate(f.rows, start=2):
                unknown = set(row) - set(names)
                if unknown:
                    raise ValueError(
                        f"{fname} row {line}: columns {sorted(unknown)} are not in the contract"
                    )
                values = [row.get(n) for n in names] + [f.file_id, line, f.period, f.version, None]
                placeholders = ", ".join("?" for _ in values)
                con.execute(f"insert into main.{f.export} values ({placeholders})", values)
    return path


def dbt_env(warehouse_dir: Path, **extra: str) -> dict[str, str]:
    """Environment for a dbt subprocess building into warehouse_dir."""
    env = dict(os.environ)
    env.update(
        TALENT_BUILD_DB=str(warehouse_dir / "build" / "talent.duckdb"),
        TALENT_RAW_DB=str(warehouse_dir / "raw.duckdb"),
        TALENT_PSEUDONYM_KEY=TEST_PSEUDONYM_KEY,
        TALENT_MIN_GROUP_SIZE="5",
        TALENT_SCOPE_DIVISION="AI Infrastructure",
    )
    env.update(extra)
    return env


def run_dbt(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    """Run the dbt CLI of this environment inside the project; fail with dbt's own output."""
    dbt = Path(sys.executable).parent / "dbt"
    # Builds write their artefacts next to their warehouse, never into the shared target/
    # that dagster-dbt loads (test workers run in parallel).
    target = Path(env["TALENT_BUILD_DB"]).parent / "dbt-target"
    proc = subprocess.run(
        [str(dbt), *args, *dbt_project_args(target)],
        env=env,
        capture_output=True,
        text=True,
        cwd=DBT_PROJECT_DIR,
    )
    if proc.returncode != 0:
        raise AssertionError(
            f"dbt {' '.join(args)} failed:\n{proc.stdout[-8000:]}\n{proc.stderr[-3000:]}"
        )
    return proc


@pytest.fixture(scope="session")
def dbt_manifest() -> Path:
    """A fresh target/manifest.json for dagster-dbt (parsed once, under a lock shared with
    other test workers)."""
    from pipelines.defs.dbt import ensure_manifest

    manifest = ensure_manifest()
    assert json.loads(manifest.read_text())["nodes"]
    return manifest


def talent_run(
    sources: Path, warehouse: Path, *, env: dict[str, str] | None = None, check: bool = True
) -> subprocess.CompletedProcess:
    """`talent run --skip-report` in a child process, as the nightly runs it.

    The child gets its settings from its own environment (no DAGSTER_HOME: the warehouse's own
    Dagster instance, `<warehouse>/dagster/`) and the test pseudonym key; `env` is the base environment (default: this
    process's). With `check`, a failed run fails the test with the run's output.
    """
    child = {**(os.environ if env is None else env), "TALENT_PSEUDONYM_KEY": TEST_PSEUDONYM_KEY}
    child.pop("DAGSTER_HOME", None)
    child.setdefault("TALENT_REPORTS_DIR", str(warehouse / "reports"))
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipelines.cli",
            "run",
            "--sources",
            str(sources),
            "--warehouse-dir",
            str(warehouse),
            "--skip-report",
        ],
        cwd=Path(__file__).resolve().parent.parent,
        env=child,
        capture_output=True,
        text=True,
    )
    if check:
        assert proc.returncode == 0, (
            f"talent run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-6000:]}"
        )
    return proc


# --- one realistic company for the end-to-end modules --------------------------------------------


@dataclass(frozen=True)
class Company:
    """A generated company and the warehouse of one clean nightly run over it (no report).

    Shared by every module (and every test worker) that needs a realistic warehouse: never
    write into it; copy what a test changes (`shutil.copytree`)."""

    sources: Path
    warehouse: Path
    employees: int
    years: int
    end_date: object
    seed: int
    # planted in the responders delivery of the last month: one line that is not a record,
    # so that the quarantine has a row to account for (a warning, not a blocking failure)
    unreadable_line: bytes = b"this line is not a responder record"

    @property
    def published(self) -> Path:
        return self.warehouse / "talent.duckdb"


def built_once(tmp_path_factory, name: str, build) -> Path:
    """`<shared>/<name>/`, filled by `build(folder)` once per test session.

    Test workers are separate processes, each with its own session fixtures: the first worker
    to ask builds under a lock, the others wait and reuse the folder. Never write into it."""
    import fcntl

    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder = shared / name
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (shared / f"{name}.built").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            build(folder)
            (shared / f"{name}.built").touch()
    return folder


@pytest.fixture(scope="session")
def shared_company(tmp_path_factory) -> Company:
    """600 employees x 2 years to 2026-09-30, seed 11, and one clean `talent run` over it."""
    from datetime import date

    from tools.generate import generate_company

    def build(root: Path) -> None:
        made = company_in(root)
        generate_company(
            made.sources, made.employees, made.years, made.end_date, made.seed, progress=False
        )
        last = made.end_date.strftime("%Y-%m")
        responders = made.sources / "incidents" / f"responders_{last}.csv"
        data = responders.read_bytes()
        newline = b"\r\n" if data.endswith(b"\r\n") else b"\n"
        responders.write_bytes(data + made.unreadable_line + newline)
        talent_run(made.sources, made.warehouse)

    def company_in(root: Path) -> Company:
        return Company(root / "sources", root / "warehouse", 600, 2, date(2026, 9, 30), 11)

    return company_in(built_once(tmp_path_factory, "company-600", build))


# The shared company's quarterly report, rendered once per session (HTML, PDF and appendix) as
# the pipeline renders it: the published marts with the build file's restricted aggregates. The
# modules that read the report of the shared company read this one (each render costs about half
# a minute). Never write into it.
@pytest.fixture(scope="session")
def shared_report(shared_company, tmp_path_factory) -> dict:
    """{"quarter", "html" (path), "pdf", "pages", "sections", "charts", "headlines", "text"}."""
    from pipelines.lib.report import latest_complete_quarter, render_report

    published = shared_company.published

    def build(root: Path) -> None:
        result = render_report(
            published,
            latest_complete_quarter(published),
            root / "reports",
            restricted_db=shared_company.warehouse / "build" / "talent.duckdb",
        )
        result = {**result, "appendix": [str(p) for p in result["appendix"]]}
        result = {k: str(v) if isinstance(v, Path) else v for k, v in result.items()}
        (root / "result.json").write_text(json.dumps(result))

    root = built_once(tmp_path_factory, "company-600-report", build)
    result = json.loads((root / "result.json").read_text())
    for key in ("html", "pdf"):
        result[key] = Path(result[key])
    result["appendix"] = [Path(p) for p in result["appendix"]]
    result["text"] = result["html"].read_text(encoding="utf-8")
    return result


# Companies generated with the project's generator (`python -m tools generate` flags) and run
# once per session by whichever module asks first: a company where certification changes nothing,
# a small young one where most effects cannot be estimated, and a larger, older one (levels and
# teams of every size, complementary suppression between large groups). Modules that read them:
# tests/test_report_consistency.py (the report's consistency checks) and tests/test_companies.py
# (the scan for small groups).
GENERATED = {
    "null-world": ["--employees", "250", "--years", "2", "--seed", "4101",
                   "--incident-rate-ratio", "1", "--mttr-ratio", "1",
                   "--attrition-hazard-ratio", "1"],
    "small-young": ["--employees", "150", "--years", "1", "--seed", "4202",
                    "--proneness-selection", "2"],
    "large-old": ["--employees", "1500", "--years", "3", "--seed", "4303"],
}  # fmt: skip


def generated_warehouse(tmp_path_factory, name: str) -> Path:
    """The warehouse of one clean nightly over the GENERATED company `name` (end 2026-06-30),
    built once per session. Never write into it."""

    def build(root: Path) -> None:
        sources = root / "sources"
        subprocess.run(
            [sys.executable, "-m", "tools", "generate", "--out", str(sources), "--end-date",
             "2026-06-30", "--quiet", *GENERATED[name]],
            check=True, cwd=Path(__file__).resolve().parent.parent,
        )  # fmt: skip
        talent_run(sources, root / "warehouse")

    return built_once(tmp_path_factory, f"generated-{name}", build) / "warehouse"


BENCH_EMPLOYEES, BENCH_YEARS = 300, 1
EARLIER_SCALE_RUN = {"sizes": {"50000": {"employees": 50000}}, "marginal_cost_ratio": 9.9}


@pytest.fixture(scope="session")
def bench_run(tmp_path_factory) -> tuple[dict, Path]:
    """`python -m tools.bench` at a tiny scale, once per session (tests/test_bench.py checks
    the harness, tests/test_incremental.py its one-day nightly); returns (results.json, work
    folder)."""
    from tools import bench

    def build(work: Path) -> None:
        # an earlier scale run's record, which the run must keep (tests/test_bench.py)
        (work / "results.json").write_text(json.dumps({"scale_run": EARLIER_SCALE_RUN}))
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv("TALENT_PSEUDONYM_KEY", TEST_PSEUDONYM_KEY)
            bench.main(
                [
                    "--employees",
                    str(BENCH_EMPLOYEES),
                    "--years",
                    str(BENCH_YEARS),
                    "--work",
                    str(work / "work"),
                    "--results",
                    str(work / "results.json"),
                    # the bundled sample's run is the same harness (run_pipeline) on other
                    # sources; the end-to-end tests of the sample run it already
                    "--no-floor",
                ]
            )

    work = built_once(tmp_path_factory, "bench", build)
    return json.loads((work / "results.json").read_text()), work / "work"


# The slowest modules first (measured: end-to-end runs of a few minutes each), so that with two
# workers taking whole modules (`--dist loadfile`) neither is left with a long one at the end.
# test_incremental reads the smoke bench that test_bench builds, so it comes later than that.
SLOW_MODULES_FIRST = (
    "test_bench.py",
    "test_operations.py",
    "test_effects_e2e.py",
    "test_blocking.py",
    "test_dbt_warehouse.py",
    "test_incremental.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {name: i for i, name in enumerate(SLOW_MODULES_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))


# The slowest tests and modules of the run and their share of all the tests' time (setup, call and teardown
# added up: a module's shared pipeline run is charged to its first test), printed at the end of
# every run, so that the suite's cost stays in sight.
SLOWEST_SHOWN = 20


def pytest_terminal_summary(terminalreporter) -> None:
    spent: dict[str, float] = {}
    for reports in terminalreporter.stats.values():
        for report in reports:
            if getattr(report, "when", None) in ("setup", "call", "teardown"):
                spent[report.nodeid] = spent.get(report.nodeid, 0.0) + report.duration
    total = sum(spent.values())
    if not total:
        return
    slowest = sorted(spent.items(), key=lambda item: item[1], reverse=True)[:SLOWEST_SHOWN]
    share = sum(seconds for _, seconds in slowest) / total
    terminalreporter.write_sep(
        "=",
        f"slowest {len(slowest)} tests: {share:.0%} of {total:,.0f} s of test time "
        f"({len(spent)} tests)",
    )
    for nodeid, seconds in slowest:
        terminalreporter.write_line(f"{seconds:8.1f} s  {seconds / total:5.1%}  {nodeid}")
    modules: dict[str, float] = {}
    for nodeid, seconds in spent.items():
        module = nodeid.split("::", 1)[0]
        modules[module] = modules.get(module, 0.0) + seconds
    heaviest = sorted(modules.items(), key=lambda item: item[1], reverse=True)[:SLOWEST_SHOWN]
    terminalreporter.write_sep("=", f"heaviest {len(heaviest)} modules")
    for module, seconds in heaviest:
        terminalreporter.write_line(f"{seconds:8.1f} s  {seconds / total:5.1%}  {module}")
