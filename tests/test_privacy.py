"""Personal data over its life, on a warehouse built from the bundled sample: an erasure leaves
no byte of the person anywhere under the warehouse or the Dagster instance and the marts of a
warehouse built without them; a re-delivery after it loads nothing of them; a killed erasure
leaves the old state or the new one and the next run says which; the subject's copy holds
what the exports hold about the person and no one else; retention pseudonymises leavers and
the marts still count them; the archive is encrypted and a missing or wrong key is named.

One person of the sample is chosen from the export files themselves (a manager with
responses, certification attempts and enrolments) and renamed, in this module's copy of the
sample, to names no one else has, so that a search for the name finds only them.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.privacy.crypto import MAGIC, ArchiveCipher, new_key
from pipelines.lib.project_files import SAMPLE_SOURCES
from pipelines.lib.settings import Settings
from tests.conftest import TEST_PSEUDONYM_KEY
from tests.test_incremental import mart_fingerprints

pytestmark = [pytest.mark.slow, pytest.mark.privacy]

ROOT = Path(__file__).resolve().parent.parent
FIRST, LAST = "Zephyrine", "Quillfeather"
ARCHIVE_KEY = new_key()
# the exports and the column that says whose row it is
BY_ID = {"employees": "employee_id", "job_history": "employee_id"}
BY_EMAIL = {"certifications": "learner_email", "enrolments": "learner_email"}
BY_EMAIL_INCIDENTS = {"responders": "responder_email"}
# the operations exports name people as their tools show them, by full name: ServiceNow's
# assigned_to (the change's implementer: the row is theirs) and a Jira capacity epic's assignee
# and leads (a list: the row is the project's)
BY_NAME_CHANGES = {"change_request": ("assigned_to",)}
BY_NAME_CAPACITY = {"Jira Capacity": ("Assignee", "Custom field (Led by)")}


def _rows(path: Path) -> tuple[list[str], list[list[str]], str]:
    text = path.read_text(encoding="utf-8-sig")
    delimiter = (
        ";" if text.split("\n", 1)[0].count(";") > text.split("\n", 1)[0].count(",") else ","
    )
    rows = list(csv.reader(text.splitlines(), delimiter=delimiter))
    return rows[0], rows[1:], delimiter


def _files(sources: Path, export: str) -> list[Path]:
    folder = {"responders": "incidents"}.get(export, "lms" if export in BY_EMAIL else "hris")
    return sorted((sources / folder).glob(f"{export}_*.csv"))


def choose_person(sources: Path) -> dict:
    """The employee with the most responses among those who manage someone, took a
    certification exam and enrolled in a course, read from the export files."""
    people: dict[str, str] = {}
    for path in _files(sources, "employees"):
        header, rows, _ = _rows(path)
        for row in rows:
            people[row[header.index("employee_id")]] = row[header.index("work_email")].lower()
    managers = set()
    for path in _files(sources, "job_history"):
        header, rows, _ = _rows(path)
        managers |= {r[header.index("manager_id")] for r in rows}

    def count(export: str, column: str) -> dict[str, int]:
        found: dict[str, int] = {}
        for path in _files(sources, export):
            header, rows, _ = _rows(path)
            for row in rows:
                email = row[header.index(column)].lower()
                found[email] = found.get(email, 0) + 1
        return found

    certs, enrols = count("certifications", "learner_email"), count("enrolments", "learner_email")
    responses = count("responders", "responder_email")
    candidates = [
        (responses.get(email, 0), pid)
        for pid, email in people.items()
        if pid in managers and certs.get(email) and enrols.get(email)
    ]
    _, pid = max(candidates)
    name = ""
    for path in _files(sources, "employees"):
        header, rows, _ = _rows(path)
        for row in rows:
            if row[header.index("employee_id")] == pid:
                name = f"{row[header.index('first_name')]} {row[header.index('last_name')]}"
    return {"id": pid, "email": people[pid], "name": name, "first": FIRST, "last": LAST}


def write_sources(sources: Path, person: dict, without: bool) -> None:
    """The sample with the person renamed, or (`without`) with none of their rows and their
    id blanked where it names a manager: the exports as they would be without them."""
    shutil.copytree(SAMPLE_SOURCES, sources)
    for export, column in {**BY_ID, **BY_EMAIL, **BY_EMAIL_INCIDENTS}.items():
        key = person["id"] if export in BY_ID else person["email"]
        for path in _files(sources, export):
            header, rows, delimiter = _rows(path)
            at = header.index(column)
            kept = []
            for row in rows:
                if row[at].strip().lower() == key.lower():
                    if without:
                        continue
                    if export == "employees":
                        row[header.index("first_name")] = FIRST
                        row[header.index("last_name")] = LAST
                    if export == "enrolments":  # a line of theirs the quarantine keeps
                        kept.append([*row[:-1], "not a score"])
                if without and "manager_id" in header and row[header.index("manager_id")] == key:
                    row[header.index("manager_id")] = ""
                kept.append(row)
            with open(path, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n")
                writer.writerows([header, *kept])
    write_operations_names(sources, person, without)


def write_operations_names(sources: Path, person: dict, without: bool) -> None:
    """The person renamed in the change and capacity exports as well, or (`without`) their
    change requests left out and their name taken out of the epics' assignee and leads."""
    for prefix, columns in {**BY_NAME_CHANGES, **BY_NAME_CAPACITY}.items():
        for path in sorted((sources / "changes").glob(f"{prefix}_*.csv")):
            header, rows, delimiter = _rows(path)
            quoting = csv.QUOTE_ALL if path.read_text().startswith('"') else csv.QUOTE_MINIMAL
            kept = []
            for row in rows:
                for at in (header.index(c) for c in columns):
                    names = [n.strip() for n in row[at].split(",") if n.strip()]
                    if person["name"] not in names:
                        continue
                    if without and prefix in BY_NAME_CHANGES:
                        row = None
                        break
                    renamed = [] if without else [f"{FIRST} {LAST}"]
                    row[at] = ", ".join(
                        m for n in names for m in (renamed if n == person["name"] else [n])
                    )
                if row is not None:
                    kept.append(row)
            with open(path, "w", newline="", encoding="utf-8") as fh:
                writer = csv.writer(fh, delimiter=delimiter, lineterminator="\n", quoting=quoting)
                writer.writerows([header, *kept])


def environment(dagster_home: Path, **extra: str) -> dict[str, str]:
    env = {
        **os.environ,
        "TALENT_PSEUDONYM_KEY": TEST_PSEUDONYM_KEY,
        "TALENT_ARCHIVE_KEY": ARCHIVE_KEY,
        "TALENT_SETTLE_SECONDS": "0",
        "DAGSTER_HOME": str(dagster_home),
        **extra,
    }
    for name in ("TALENT_RETENTION_YEARS", "TALENT_FAILPOINT", "TALENT_ARCHIVE_OLD_KEY"):
        if name not in extra:
            env.pop(name, None)
    return env


def talent(*args: str, env: dict[str, str], check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run(
        [sys.executable, "-m", "pipelines.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        start_new_session=True,  # a failpoint kills its process group, not pytest
    )
    if check:
        assert proc.returncode == 0, (
            f"talent {args[0]} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}"
        )
    return proc


def run(sources: Path, warehouse: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    args = ("run", "--sources", str(sources), "--warehouse-dir", str(warehouse), "--skip-report")
    return talent(*args, env=env)


def needles(person: dict) -> list[bytes]:
    return [person["id"].encode(), person["email"].encode(), FIRST.encode(), LAST.encode()]


def found_in(data: bytes, person: dict) -> list[str]:
    low = data.lower()
    return [n.decode() for n in needles(person) if n.lower() in low]


def plaintext(path: Path) -> bytes:
    return ArchiveCipher(ARCHIVE_KEY).read(path)


@pytest.fixture(scope="module")
def world(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("privacy")
    person = choose_person(SAMPLE_SOURCES)
    sources, without = root / "sources", root / "sources-without"
    write_sources(sources, person, without=False)
    write_sources(without, person, without=True)
    warehouse, home = root / "warehouse", root / "dagster"
    env = environment(home)
    run(sources, warehouse, env)
    before = {
        "archive": sorted(
            {
                n
                for p in (warehouse / "archive").rglob("*.csv")
                for n in found_in(plaintext(p), person)
            }
        ),
        "quarantined": _quarantined(warehouse, person),
        "encrypted": all(
            p.read_bytes().startswith(MAGIC) for p in (warehouse / "archive").rglob("*.csv")
        ),
    }
    snapshot = root / "before-erasure"
    shutil.copytree(warehouse, snapshot / "warehouse")
    shutil.copytree(home, snapshot / "dagster")
    erased = talent(
        "erase",
        "--employee-id",
        person["id"],
        "--reference",
        "DSR-2026-001",
        "--by",
        "hr-privacy",
        "--sources",
        str(sources),
        "--warehouse-dir",
        str(warehouse),
        env=env,
    )
    reference = root / "reference"
    run(without, reference, environment(root / "reference-dagster"))
    return {
        "person": person,
        "sources": sources,
        "warehouse": warehouse,
        "home": home,
        "env": env,
        "before": before,
        "snapshot": snapshot,
        "erase_output": erased.stderr,
        "reference": reference,
        "root": root,
    }


def test_the_person_is_in_the_warehouse_before_the_erasure(world):
    # the search below can find them: every needle is in the archive's plaintext before, and
    # the quarantine holds lines of theirs
    assert world["before"]["archive"] == sorted(n.decode() for n in needles(world["person"]))
    assert world["before"]["quarantined"] > 0
    assert world["before"]["encrypted"], "the archive is written encrypted under TALENT_ARCHIVE_KEY"


def test_no_byte_of_the_person_is_left_anywhere(world):
    person, hits = world["person"], []
    for folder in (world["warehouse"], world["home"]):
        for path in folder.rglob("*"):
            if not path.is_file():
                continue
            data = path.read_bytes()
            if data.startswith(MAGIC):
                data = plaintext(path)
            if found_in(data, person):
                hits.append(f"{path}: {found_in(data, person)}")
    assert hits == []


def test_no_database_row_names_the_person(world):
    # DuckDB compresses strings, so the bytes alone could miss a value: ask every text column
    person = world["person"]
    values = [person["id"].lower(), person["email"], FIRST.lower(), LAST.lower()]
    full_name = f"{FIRST} {LAST}".lower()  # also within a list of names (an epic's leads)
    w = world["warehouse"]
    for path in (w / "raw.duckdb", w / "build" / "talent.duckdb", w / "talent.duckdb"):
        with duckdb.connect(str(path), read_only=True) as con:
            columns = con.execute(
                "SELECT schema_name, table_name, column_name FROM duckdb_columns() "
                "WHERE data_type = 'VARCHAR' AND NOT internal"
            ).fetchall()
            for schema, table, column in columns:
                n = con.execute(
                    f'SELECT count(*) FROM "{schema}"."{table}" '
                    f'WHERE list_contains(?, lower(trim("{column}"))) '
                    f'OR contains(lower("{column}"), ?)',
                    [values, full_name],
                ).fetchone()[0]
                assert n == 0, f"{path.name} {schema}.{table}.{column} still holds the person"


def test_marts_equal_a_warehouse_built_without_the_person(world):
    erased = mart_fingerprints(world["warehouse"] / "talent.duckdb")
    reference = mart_fingerprints(world["reference"] / "talent.duckdb")
    assert erased.keys() == reference.keys()
    differing = sorted(t for t in erased if erased[t] != reference[t])
    assert differing == []


def test_the_log_keeps_keyed_hashes_only(world):
    with duckdb.connect(str(world["warehouse"] / "raw.duckdb"), read_only=True) as con:
        rows = con.execute(
            "SELECT reason, reference, requested_by, kind, value_hash FROM erasures"
        ).fetchall()
        manifest = con.execute(
            "SELECT count(*) FROM manifest WHERE archive_sha256 IS NOT NULL "
            "AND archive_sha256 <> file_id"
        ).fetchone()[0]
    assert {(r[0], r[1], r[2]) for r in rows} == {("request", "DSR-2026-001", "hr-privacy")}
    assert {r[3] for r in rows} == {"id", "email", "name"}
    assert all(len(r[4]) == 64 for r in rows)
    # the person is in every employees and job history file they appear in: each of those
    # archive copies was rewritten under a new hash, the delivered hash kept as file_id
    person = world["person"]
    holding = [p for p in world["sources"].rglob("*.csv") if found_in(p.read_bytes(), person)]
    # among them the change requests they implemented and the epics they led
    assert any(p.parent.name == "changes" for p in holding)
    assert manifest == len(holding)


def test_redelivered_files_load_nothing_of_the_person(world, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(world["warehouse"], warehouse)
    sources = tmp_path / "sources"
    shutil.copytree(world["sources"], sources)
    person = world["person"]
    # the same file again under another name, and a new month's file that still holds them
    jobs = _files(sources, "job_history")
    mine = next(p for p in jobs if person["id"].encode() in p.read_bytes())
    shutil.copy(mine, mine.with_name(mine.stem + " (copy).csv"))
    # new content (one more blank line, which holds no record) for a period not delivered yet
    mine.with_name("job_history_2026-10.csv").write_bytes(mine.read_bytes() + b"\n")
    settings = Settings(
        sources,
        warehouse,
        pseudonym_key=TEST_PSEUDONYM_KEY,
        archive_key=ARCHIVE_KEY,
        settle_seconds=0,
    )
    from pipelines.lib.ingest import ingest_export

    result = ingest_export(settings, "job_history")
    header, rows, _ = _rows(mine)
    theirs = sum(r[header.index("employee_id")] == person["id"] for r in rows)
    assert result.files_loaded == 1  # the new month; the renamed copy is the same bytes
    assert result.rows_loaded == len(rows) - theirs
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        assert (
            con.execute(
                "SELECT count(*) FROM job_history WHERE employee_id = ? OR manager_id = ?",
                [person["id"], person["id"]],
            ).fetchone()[0]
            == 0
        )
        (message,) = con.execute(
            "SELECT message FROM manifest WHERE file_name = 'job_history_2026-10.csv'"
        ).fetchone()
    assert f"{theirs} row(s) of people erased on request left out on arrival" in message
    assert not _archive_names_the_person(warehouse, person)


def _quarantined(warehouse: Path, person: dict) -> int:
    with duckdb.connect(str(warehouse / "raw.duckdb"), read_only=True) as con:
        return con.execute(
            "SELECT count(*) FROM quarantine WHERE contains(lower(raw_line), ?)", [person["email"]]
        ).fetchone()[0]


def _kill_at(world, tmp_path, failpoint: str) -> tuple[Path, dict, str]:
    """A copy of the warehouse before the erasure, an erasure of the person killed at
    `failpoint`, then the next run's first step (ingestion, which recovers)."""
    warehouse, home = tmp_path / "warehouse", tmp_path / "dagster"
    shutil.copytree(world["snapshot"] / "warehouse", warehouse)
    shutil.copytree(world["snapshot"] / "dagster", home)
    env = environment(home, TALENT_FAILPOINT=failpoint)
    args = ["erase", "--employee-id", world["person"]["id"], "--reference", "DSR-kill"]
    proc = talent(*args, "--warehouse-dir", str(warehouse), "--no-rebuild", env=env, check=False)
    assert proc.returncode == -signal.SIGKILL
    settings = Settings(
        world["sources"], warehouse, pseudonym_key=TEST_PSEUDONYM_KEY, archive_key=ARCHIVE_KEY
    )
    from pipelines.lib.privacy import apply_at_run

    notes = apply_at_run(settings)["notes"]
    return warehouse, world["person"], " ".join(notes)


def _raw_rows_of(warehouse: Path, person: dict) -> int:
    with duckdb.connect(str(warehouse / "raw.duckdb"), read_only=True) as con:
        return con.execute(
            "SELECT count(*) FROM employees WHERE employee_id = ?", [person["id"]]
        ).fetchone()[0]


def _archive_names_the_person(warehouse: Path, person: dict) -> bool:
    return any(found_in(plaintext(p), person) for p in (warehouse / "archive").rglob("*.csv"))


def test_an_erasure_killed_before_its_commit_leaves_the_old_state(world, tmp_path):
    warehouse, person, said = _kill_at(world, tmp_path, "erase:staged")
    assert "interrupted before it took effect" in said and "DSR-kill" in said
    assert _raw_rows_of(warehouse, person) > 0
    with duckdb.connect(str(warehouse / "raw.duckdb"), read_only=True) as con:
        named = {p for (p,) in con.execute("SELECT archive_path FROM manifest").fetchall()}
    on_disk = {
        p.relative_to(warehouse).as_posix()
        for p in (warehouse / "archive").rglob("*")
        if p.is_file()
    }
    assert on_disk == {p for p in named if p}  # the staged copies are gone, the old ones kept
    assert not (warehouse / "erasure.json").exists()
    assert not (warehouse / "raw.duckdb.erasing").exists()


def test_an_erasure_killed_after_its_commit_is_finished_by_the_next_run(world, tmp_path):
    warehouse, person, said = _kill_at(world, tmp_path, "erase:committed")
    assert "interrupted after it took effect" in said and "DSR-kill" in said
    assert _raw_rows_of(warehouse, person) == 0
    assert not _archive_names_the_person(warehouse, person)
    assert not (warehouse / "build" / "talent.duckdb").exists()  # the next run rebuilds it


def test_the_subject_copy_holds_what_the_exports_hold_and_no_one_else(world, tmp_path):
    # someone still in the warehouse: the sample's second choice is anyone with responses
    sources = world["sources"]
    header, rows, _ = _rows(_files(sources, "employees")[-1])
    other = {
        "id": rows[0][header.index("employee_id")],
        "email": rows[0][header.index("work_email")].lower(),
    }
    out = tmp_path / "copy.json"
    args = ("subject-access", "--employee-id", other["id"], "--out", str(out))
    talent(*args, "--warehouse-dir", str(world["warehouse"]), env=world["env"])
    copy = json.loads(out.read_text())
    for export, column in {**BY_ID, **BY_EMAIL, **BY_EMAIL_INCIDENTS}.items():
        key = other["id"] if export in BY_ID else other["email"]
        expected = sorted(
            (path.name, line)
            for path in _files(sources, export)
            for line, row in enumerate(_rows(path)[1], start=2)
            if row[_rows(path)[0].index(column)].strip().lower() == key.lower()
        )
        got = sorted((r["file_name"], r["line"]) for r in copy[export]["rows"])
        assert got == expected, export
    text = out.read_text().lower()
    everyone = set()
    for path in _files(sources, "employees"):
        h, rs, _ = _rows(path)
        everyone |= {r[h.index("employee_id")].lower() for r in rs}
        everyone |= {r[h.index("work_email")].lower() for r in rs}
    mentioned = {v for v in everyone if f'"{v}"' in text}
    assert mentioned == {other["id"].lower(), other["email"]}


def test_retention_pseudonymises_leavers_and_the_marts_still_count_them(world, tmp_path):
    # a warehouse built with the period set from its first run, over the exports of the
    # reference warehouse (built without it): the policy runs after the first loads, and the
    # exports loaded after it must link the leavers as well
    with duckdb.connect(str(world["reference"] / "raw.duckdb"), read_only=True) as con:
        leavers = con.execute(
            # left well before the period (2.75 years, about 1004 days) and not hired again
            "SELECT employee_id, any_value(lower(work_email)) FROM employees GROUP BY 1 "
            "HAVING max(termination_date) < current_date - INTERVAL 1100 DAY "
            "AND max(hire_date) < max(termination_date)"
        ).fetchall()
    assert len(leavers) > 50, "the period reaches a good part of the sample's history"
    warehouse = tmp_path / "warehouse"
    env = environment(tmp_path / "dagster", TALENT_RETENTION_YEARS="2.75")
    proc = run(world["root"] / "sources-without", warehouse, env)
    assert "leaver(s) pseudonymised" in proc.stderr
    with duckdb.connect(str(warehouse / "raw.duckdb"), read_only=True) as con:
        left = con.execute(
            "SELECT count(*) FROM employees WHERE list_contains(?, employee_id)",
            [[pid for pid, _ in leavers]],
        ).fetchone()[0]
    assert left == 0
    # an e-mail whole (ann.lee@ is also the end of joann.lee@)
    found = re.compile(
        rb"(?<![\w.+-])(" + b"|".join(re.escape(e.encode()) for _, e in leavers) + rb")"
    )
    for path in (warehouse / "archive").rglob("*.csv"):
        assert not found.search(plaintext(path).lower()), path
    # the same marts but for the pseudonyms of the retained people (person_key) and the last
    # digits of the statistics, whose sums run in another order over the new person keys
    assert _marts_without_people(warehouse) == _marts_without_people(world["reference"])


def _marts_without_people(warehouse: Path) -> dict[str, list[str]]:
    """Each mart's rows without `person_key`, floats to 10 significant digits, sorted."""
    out = {}
    with duckdb.connect(str(warehouse / "talent.duckdb"), read_only=True) as con:
        tables = con.execute(
            "SELECT table_name FROM duckdb_tables() WHERE schema_name = 'marts' ORDER BY 1"
        ).fetchall()
        for (table,) in tables:
            cursor = con.execute(f'SELECT * FROM marts."{table}"')
            names = [d[0] for d in cursor.description]
            rows = [
                repr(
                    tuple(
                        f"{v:.10g}" if isinstance(v, float) else v
                        for n, v in zip(names, row, strict=True)
                        if n != "person_key"
                    )
                )
                for row in cursor.fetchall()
            ]
            out[table] = sorted(rows)
    return out


def test_a_missing_or_wrong_archive_key_is_named(world, tmp_path):
    env = environment(world["home"])
    env.pop("TALENT_ARCHIVE_KEY")
    args = ("run", "--sources", str(world["sources"]), "--warehouse-dir", str(world["warehouse"]))
    missing = talent(*args, env=env, check=False)
    assert missing.returncode == 2 and "TALENT_ARCHIVE_KEY is not set" in missing.stderr
    wrong = talent(*args, env={**env, "TALENT_ARCHIVE_KEY": new_key()}, check=False)
    assert wrong.returncode == 2 and "TALENT_ARCHIVE_KEY does not open" in wrong.stderr
    bad = talent(*args, env={**env, "TALENT_ARCHIVE_KEY": "not-a-key"}, check=False)
    assert bad.returncode == 2 and "TALENT_ARCHIVE_KEY is not a Fernet key" in bad.stderr


def test_rotating_the_key_rewrites_every_file_and_the_old_key_stops_working(world, tmp_path):
    warehouse = tmp_path / "warehouse"
    shutil.copytree(world["warehouse"] / "archive", warehouse / "archive")
    fresh = new_key()
    env = {**environment(world["home"]), "TALENT_ARCHIVE_KEY": fresh}
    env["TALENT_ARCHIVE_OLD_KEY"] = ARCHIVE_KEY
    files = sorted((warehouse / "archive").rglob("*.csv"))
    before = {p: plaintext(p) for p in files}
    out = talent("archive", "rotate-key", "--warehouse-dir", str(warehouse), env=env)
    assert f"{len(files)} file(s) now under the new key" in out.stdout
    for path in files:
        assert ArchiveCipher(fresh).read(path) == before[path]
        with pytest.raises(ValueError, match="TALENT_ARCHIVE_KEY does not open"):
            ArchiveCipher(ARCHIVE_KEY).read(path)
