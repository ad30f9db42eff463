"""Operations: crash safety, readers during runs, idempotency and the run lock.

Every test drives `talent run` as a subprocess in its own session (process group), so a
failpoint (`pipelines/lib/failpoints.py`) or the test itself can SIGKILL the whole run — the
Dagster process and its dbt subprocess — the way a killed container dies, without touching
pytest.

One small company is generated once. Its last month (the "tonight's deliveries") is held back:
the warehouse under test first publishes the earlier months, then the held-back files arrive and
the runs that load them are killed at each dangerous point in turn. A reference warehouse, built
from scratch by one undisturbed run over the complete folder, says what the marts must look like
once the crashed warehouse has recovered.

The tests run in file order and share the warehouse; each one continues from the state the
previous one left, as the nights of an operator would.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.contracts import EXPORTS, parse_file_name
from pipelines.lib.publish import TMP_PREFIX
from tests.conftest import TEST_PSEUDONYM_KEY

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[1]
END = date(2026, 9, 30)
HELD_BACK = "2026-09"  # the month delivered after the first publish
SOURCE_FOLDERS = sorted({c.folder for c in EXPORTS.values()})
RUN_TIMEOUT = 1200  # seconds; a hung run fails the test instead of hanging the suite
# the progress line `[  20 s] dbt        warehouse_dbt     started` (dbt's own log goes to a file)
DBT_BUILD_STARTED = "warehouse_dbt"
DBT_BUILD_FINISHED = re.compile(r"warehouse_dbt\s+done")
LOCK_TAKEN = "talent run: "  # printed once the run holds the warehouse lock
PSEUDONYM_KEY = TEST_PSEUDONYM_KEY  # the key the session's company was run with


# --- helpers ---------------------------------------------------------------------------------


@dataclass
class Layout:
    full: Path  # the complete folder (reference run)
    staged: Path  # the folder the warehouse under test reads; the held-back month arrives later
    held_back: list[Path]  # files of the held-back month, relative to a sources folder
    reference_wh: Path
    wh: Path
    dagster_home: Path
    history: dict[str, object] = field(default_factory=dict)  # state handed from test to test


def _env(dagster_home: Path, failpoint: str | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TALENT_")}
    env.update(TALENT_PSEUDONYM_KEY=PSEUDONYM_KEY, DAGSTER_HOME=str(dagster_home))
    env["TALENT_SETTLE_SECONDS"] = "0"  # the company was generated moments ago, completely
    if failpoint:
        env["TALENT_FAILPOINT"] = failpoint
    return env


def _cmd(sources: Path, wh: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pipelines.cli",
        "run",
        "--sources",
        str(sources),
        "--warehouse-dir",
        str(wh),
        "--skip-report",
    ]


def talent_run(layout: Layout, sources: Path, wh: Path, failpoint: str | None = None):
    """One `talent run` to its end (or to its failpoint), output captured."""
    return subprocess.run(
        _cmd(sources, wh),
        env=_env(layout.dagster_home, failpoint),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        start_new_session=True,
    )


class LiveRun:
    """A `talent run` in the background whose merged output is watched line by line."""

    def __init__(self, layout: Layout, sources: Path, wh: Path):
        self.proc = subprocess.Popen(
            _cmd(sources, wh),
            env=_env(layout.dagster_home),
            cwd=REPO,
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._new_line = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            with self._new_line:
                self.lines.append(line)
                self._new_line.notify_all()
        with self._new_line:
            self._new_line.notify_all()

    @property
    def output(self) -> str:
        return "".join(self.lines)

    def wait_for(self, text: str, timeout: float = RUN_TIMEOUT) -> None:
        deadline = time.monotonic() + timeout
        with self._new_line:
            while not any(text in line for line in self.lines):
                left = deadline - time.monotonic()
                if left <= 0 or (self.proc.poll() is not None and not self._reader.is_alive()):
                    raise AssertionError(
                        f"the run never printed {text!r} (exit code {self.proc.poll()}); "
                        f"its output ends:\n{self.output[-4000:]}"
                    )
                self._new_line.wait(min(left, 1.0))

    def kill(self) -> int:
        os.killpg(self.proc.pid, signal.SIGKILL)
        code = self.proc.wait(timeout=60)
        self._reader.join(timeout=60)
        return code


def sha256_file(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# Two runs over the same raw rows agree on every marts value to the last bit: the marts' sums
# of doubles are exact (`exact_sum`) and the statistics sort their inputs, so the order DuckDB
# returns rows in (the build runs with 2 threads) cannot move a float. NaN equals NaN.
def _sort_key(row: tuple) -> tuple:
    return tuple((0, repr(v)) if isinstance(v, float) else (1, repr(v)) for v in row)


def marts_snapshot(con: duckdb.DuckDBPyConnection) -> dict[str, tuple[list[str], list[tuple]]]:
    """Column names and every row of every table in schema `marts`, in a canonical order."""
    names = [
        r[0]
        for r in con.execute(
            "select table_name from duckdb_tables() where schema_name = 'marts' order by 1"
        ).fetchall()
    ]
    out = {}
    for name in names:
        cur = con.execute(f'select * from marts."{name}"')
        out[name] = ([d[0] for d in cur.description], sorted(cur.fetchall(), key=_sort_key))
    return out


def _same_value(a: object, b: object) -> bool:
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a) and math.isnan(b):
        return True
    return a == b


def marts_differences(got: dict, want: dict) -> list[str]:
    """What differs between two marts snapshots: tables, columns, row counts, first value."""
    problems = [f"marts.{t}: missing" for t in sorted(set(want) - set(got))]
    problems += [f"marts.{t}: not in the reference" for t in sorted(set(got) - set(want))]
    for t in sorted(set(got) & set(want)):
        (g_cols, g_rows), (w_cols, w_rows) = got[t], want[t]
        if g_cols != w_cols:
            problems.append(f"marts.{t}: columns {g_cols}, reference {w_cols}")
        elif len(g_rows) != len(w_rows):
            problems.append(f"marts.{t}: {len(g_rows)} rows, reference {len(w_rows)}")
        else:
            diffs = [
                f"marts.{t} row {i} ({g[0]!r:.60}) column {col}: {a!r:.120}, reference {b!r:.120}"
                for i, (g, w) in enumerate(zip(g_rows, w_rows, strict=True))
                for col, a, b in zip(g_cols, g, w, strict=True)
                if not _same_value(a, b)
            ]
            problems += diffs[:3]
    return problems


def published_state(path: Path) -> tuple[str, dict]:
    """(publish_info.run_id, marts snapshot) of a published file, opened read-only."""
    with duckdb.connect(str(path), read_only=True) as con:
        run_id = con.execute("select run_id from main.publish_info").fetchone()[0]
        return run_id, marts_snapshot(con)


def run_id_in_fresh_process(path: Path) -> str:
    """publish_info.run_id as a new analyst session (a new process) sees it.

    A new process, because DuckDB caches open databases per process and path: a connection
    opened while another one in the same process is still open shares its (old) snapshot.
    """
    code = (
        "import duckdb, sys\n"
        "con = duckdb.connect(sys.argv[1], read_only=True)\n"
        "print(con.execute('select run_id from main.publish_info').fetchone()[0])\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return proc.stdout.strip()


def raw_counts(raw_db: Path) -> dict[str, int]:
    """Rows of every raw table, the manifest and the quarantine."""
    with duckdb.connect(str(raw_db), read_only=True) as con:
        return {
            t: con.execute(f'select count(*) from main."{t}"').fetchone()[0]
            for t in [*EXPORTS, "manifest", "quarantine"]
        }


def raw_consistency_problems(raw_db: Path) -> list[str]:
    """Files whose rows in raw (or quarantine) do not match what the manifest recorded."""
    problems = []
    with duckdb.connect(str(raw_db), read_only=True) as con:
        for export in EXPORTS:
            mismatches = con.execute(
                f"""
                with m as (select file_id, sum(rows_loaded) as n from manifest
                           where export = ? group by file_id),
                     r as (select _file_id as file_id, count(*) as n from main."{export}"
                           group by _file_id)
                select coalesce(m.file_id, r.file_id), m.n, r.n
                from m full join r using (file_id)
                where coalesce(m.n, 0) <> coalesce(r.n, 0)
                """,
                [export],
            ).fetchall()
            problems += [
                f"raw.{export}: file {f[:12]} manifest rows_loaded {m}, rows in table {r}"
                for f, m, r in mismatches
            ]
        mismatches = con.execute(
            """
            with m as (select file_id, sum(rows_quarantined) as n from manifest group by file_id),
                 q as (select file_id, count(*) as n from quarantine group by file_id)
            select coalesce(m.file_id, q.file_id), m.n, q.n
            from m full join q using (file_id)
            where coalesce(m.n, 0) <> coalesce(q.n, 0)
            """
        ).fetchall()
        problems += [
            f"quarantine: file {f[:12]} manifest rows_quarantined {m}, rows {q}"
            for f, m, q in mismatches
        ]
    return problems


def manifest_file_names(raw_db: Path) -> set[str]:
    with duckdb.connect(str(raw_db), read_only=True) as con:
        return {r[0] for r in con.execute("select file_name from manifest").fetchall()}


def contract_files(sources: Path) -> set[str]:
    """The delivered files: those named as the contract names them, and the operations and
    recruiting exports the generator writes as the tools write them (listed in its ground
    truth)."""
    truth = json.loads((sources / "ground_truth.json").read_text())
    vendor = {Path(f).name for f in truth["operations"]["files"] + truth["recruiting"]["files"]}
    return {
        p.name
        for folder in SOURCE_FOLDERS
        for p in (sources / folder).glob("*.csv")
        if parse_file_name(p.name) is not None or p.name in vendor
    }


def publishing_leftovers(wh: Path) -> list[str]:
    return sorted(p.name for p in wh.glob(f"{TMP_PREFIX}*"))


def assert_lock_free(wh: Path) -> None:
    """A killed run leaves .run.lock behind, but not its flock: nobody holds it any more."""
    lock = wh / ".run.lock"
    assert lock.exists()
    with open(lock, "a+") as fh:
        try:
            fcntl.flock(fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pytest.fail(
                f"{lock} is still locked after the run was killed: the next run would be refused"
            )
        fcntl.flock(fh, fcntl.LOCK_UN)


def run_record(wh: Path) -> dict:
    return json.loads((wh / "runs" / "last_nightly.json").read_text())


def assert_succeeded(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, f"talent run failed ({proc.returncode}):\n{proc.stderr[-6000:]}"


def assert_killed(proc: subprocess.CompletedProcess, failpoint: str) -> None:
    assert proc.returncode == -signal.SIGKILL, (
        f"the run was meant to die at failpoint {failpoint} but exited with {proc.returncode}:\n"
        f"{proc.stderr[-4000:]}"
    )


# --- fixtures --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def layout(shared_company, tmp_path_factory) -> Layout:
    """The session's company (tests/conftest.py: it carries one unreadable line in tonight's
    responders delivery, under 1 % of the file: a warning, not a blocking failure, so the
    quarantine has rows to account for). Its clean run is the reference warehouse."""
    company = shared_company
    assert company.end_date == END
    root = tmp_path_factory.mktemp("operations")
    full = company.sources  # read only
    staged = root / "sources"
    shutil.copytree(full, staged)
    held_back = []
    for folder in SOURCE_FOLDERS:
        for p in sorted((staged / folder).glob("*.csv")):
            parsed = parse_file_name(p.name)
            if parsed and parsed[1].startswith(HELD_BACK):
                held_back.append(p.relative_to(staged))
                p.unlink()
    assert len(held_back) >= 4, f"the company has too few files for {HELD_BACK}: {held_back}"
    dagster_home = root / "dagster_home"
    dagster_home.mkdir()
    shutil.copy(REPO / "dagster.yaml", dagster_home / "dagster.yaml")  # as `make setup` does
    return Layout(full, staged, held_back, company.warehouse, root / "wh", dagster_home)


@pytest.fixture(scope="module")
def reference(layout: Layout) -> dict:
    """Marts of one undisturbed run, from scratch, over the complete folder (the session's
    clean run of the company, made with the same pseudonym key)."""
    return published_state(layout.reference_wh / "talent.duckdb")[1]


@pytest.fixture(scope="module")
def published_before(layout: Layout) -> dict:
    """The warehouse under test after an undisturbed run over everything but the last month."""
    assert_succeeded(talent_run(layout, layout.staged, layout.wh))
    published = layout.wh / "talent.duckdb"
    run_id, _ = published_state(published)
    # the night's run that published: one of its runs after ingestion
    assert run_id in run_record(layout.wh)["run_ids"]
    # Tonight's deliveries arrive.
    for rel in layout.held_back:
        shutil.copy2(layout.full / rel, layout.staged / rel)
    return {"sha256": sha256_file(published), "run_id": run_id}


# --- tests, in the order an operator's nights would run them --------------------------------


def test_kill_during_ingestion_loads_no_half_file_and_keeps_published_file(
    layout, published_before
):
    before = raw_counts(layout.wh / "raw.duckdb")
    proc = talent_run(layout, layout.staged, layout.wh, failpoint="ingest:before_commit")
    assert_killed(proc, "ingest:before_commit")

    published = layout.wh / "talent.duckdb"
    assert sha256_file(published) == published_before["sha256"]
    assert published_state(published)[0] == published_before["run_id"]
    raw_db = layout.wh / "raw.duckdb"
    assert raw_consistency_problems(raw_db) == []
    # The run died inside the load of a new file: that file is not in the manifest (its
    # transaction was rolled back), so at least one held-back file is still to be loaded.
    missing = {p.name for p in layout.held_back} - manifest_file_names(raw_db)
    assert missing, "every held-back file is in the manifest: the failpoint fired too late"
    after = raw_counts(raw_db)
    assert after["manifest"] - before["manifest"] == len(layout.held_back) - len(missing)
    assert_lock_free(layout.wh)


def test_second_run_is_refused_while_one_holds_the_warehouse_then_kill_during_dbt(
    layout, published_before
):
    run = LiveRun(layout, layout.staged, layout.wh)
    try:
        run.wait_for(LOCK_TAKEN)
        second = talent_run(layout, layout.staged, layout.wh)
        assert second.returncode == 3, second.stderr[-3000:]
        assert "another run is writing to" in second.stderr
        assert str(layout.wh.resolve()) in second.stderr, second.stderr[-3000:]
        assert run.proc.poll() is None, "the first run ended before the second was refused"

        run.wait_for(DBT_BUILD_STARTED)
        time.sleep(2)
        assert run.proc.poll() is None
        assert not DBT_BUILD_FINISHED.search(run.output), "dbt finished before the kill"
    finally:
        code = run.kill()
    assert code == -signal.SIGKILL

    published = layout.wh / "talent.duckdb"
    assert sha256_file(published) == published_before["sha256"]
    raw_db = layout.wh / "raw.duckdb"
    assert raw_consistency_problems(raw_db) == []
    # ingestion finished (committed) before dbt started
    assert manifest_file_names(raw_db) == contract_files(layout.staged)
    assert_lock_free(layout.wh)


def test_kill_before_replace_keeps_published_file(layout, published_before):
    proc = talent_run(layout, layout.staged, layout.wh, failpoint="publish:before_replace")
    assert_killed(proc, "publish:before_replace")
    published = layout.wh / "talent.duckdb"
    assert sha256_file(published) == published_before["sha256"]
    assert published_state(published)[0] == published_before["run_id"]
    assert raw_consistency_problems(layout.wh / "raw.duckdb") == []
    # the complete temporary the kill left behind; the next publish removes it
    layout.history["leftovers"] = publishing_leftovers(layout.wh)
    assert layout.history["leftovers"], "no temporary: the failpoint fired before publishing"
    assert_lock_free(layout.wh)


def test_kill_after_replace_leaves_the_new_complete_file(layout, published_before, reference):
    proc = talent_run(layout, layout.staged, layout.wh, failpoint="publish:after_replace")
    assert_killed(proc, "publish:after_replace")
    published = layout.wh / "talent.duckdb"
    run_id, marts = published_state(published)
    assert run_id != published_before["run_id"]
    assert marts_differences(marts, reference) == []
    # the temporary of the killed before_replace run was removed, this run's was renamed
    assert publishing_leftovers(layout.wh) == []
    assert raw_consistency_problems(layout.wh / "raw.duckdb") == []
    layout.history["after_replace_run_id"] = run_id
    assert_lock_free(layout.wh)


def test_rerun_with_a_reader_attached_is_idempotent_and_not_blocked(layout, reference):
    published = layout.wh / "talent.duckdb"
    raw_db = layout.wh / "raw.duckdb"
    raw_before = raw_counts(raw_db)
    reader = duckdb.connect(str(published), read_only=True)
    try:
        old_run_id = reader.execute("select run_id from main.publish_info").fetchone()[0]
        old_marts = marts_snapshot(reader)

        proc = talent_run(layout, layout.staged, layout.wh)
        assert_succeeded(proc)

        # the reader that stayed connected still reads its own, complete snapshot
        assert reader.execute("select run_id from main.publish_info").fetchone()[0] == old_run_id
        assert marts_differences(marts_snapshot(reader), old_marts) == []
        # a new session sees the file this run published
        new_run_id = run_id_in_fresh_process(published)
        assert new_run_id != old_run_id
        assert new_run_id in run_record(layout.wh)["run_ids"]
    finally:
        reader.close()

    # idempotency: nothing loaded twice, every contract file recorded
    assert raw_counts(raw_db) == raw_before
    assert manifest_file_names(raw_db) == contract_files(layout.staged)
    assert raw_consistency_problems(raw_db) == []
    assert raw_before["quarantine"] >= 1, "the planted unreadable line was not quarantined"
    # recovered: the same marts as the undisturbed run from scratch (statistics deterministic)
    run_id, marts = published_state(published)
    assert run_id == new_run_id
    assert marts_differences(marts, reference) == []
    assert publishing_leftovers(layout.wh) == []
