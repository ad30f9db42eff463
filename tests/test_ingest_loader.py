"""Loading a sources folder into raw.duckdb exactly once: manifest, supersede, failures, rebuild."""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest import (
    SourcesNotFound,
    ensure_raw_schema,
    ingest_all,
    ingest_export,
    rebuild_raw_from_archive,
)
from pipelines.lib.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
TABLES = [*EXPORTS, "manifest", "quarantine"]


def deliver(settings: Settings, fixture: str, folder: str, name: str) -> str:
    """Copy a fixture into the sources folder under a contract name; return its sha256."""
    target = settings.sources_dir / folder / name
    shutil.copyfile(FIXTURES / fixture, target)
    return hashlib.sha256(target.read_bytes()).hexdigest()


def query(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return con.execute(sql).fetchall()


def snapshot(settings: Settings) -> dict[str, list[tuple]]:
    """Every row of every raw table, sorted: the whole observable state."""
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return {t: sorted(con.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr) for t in TABLES}


def manifest(settings: Settings) -> dict[str, tuple]:
    rows = query(
        settings,
        "SELECT file_name, status, superseded_by, file_id, rows_loaded, "
        "rows_quarantined, message FROM manifest",
    )
    return {r[0]: r[1:] for r in rows}


def test_loads_typed_rows_and_quarantines_bad_rows(settings):
    file_id = deliver(settings, "incidents_garbage.csv", "incidents", "incidents_2024-03.csv")
    result = ingest_export(settings, "incidents")
    assert (
        result.files_seen,
        result.files_loaded,
        result.rows_loaded,
        result.rows_quarantined,
    ) == (1, 1, 3, 4)
    assert result.quarantine_share == pytest.approx(4 / 7)
    rows = query(
        settings,
        "SELECT incident_number, _line, _file_id, _period, _version FROM incidents ORDER BY _line",
    )
    assert rows == [
        ("INC-1", 2, file_id, "2024-03", 1),
        ("INC-2", 3, file_id, "2024-03", 1),
        ("INC-7", 10, file_id, "2024-03", 1),
    ]
    quarantined = query(
        settings, "SELECT line_number, file_name, export FROM quarantine ORDER BY 1"
    )
    assert quarantined == [(n, "incidents_2024-03.csv", "incidents") for n in (5, 6, 8, 9)]
    ((status, by, fid, n_ok, n_bad, _),) = manifest(settings).values()
    assert (status, by, fid, n_ok, n_bad) == ("active", None, file_id, 3, 4)
    archived = settings.warehouse_dir / "archive" / "incidents" / f"{file_id}.csv"
    assert archived.read_bytes() == (FIXTURES / "incidents_garbage.csv").read_bytes()


def test_second_run_over_the_same_folder_changes_no_row_anywhere(settings):
    deliver(settings, "employees_bom_crlf.csv", "hris", "employees_2024-01.csv")
    deliver(settings, "employees_missing_column.csv", "hris", "employees_2024-02.csv")
    deliver(settings, "job_history_de.csv", "hris", "job_history_2024-01.csv")
    deliver(settings, "incidents_garbage.csv", "incidents", "incidents_2024-03.csv")
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03_v2.csv")
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-04.csv")  # same bytes
    ingest_all(settings)
    before = snapshot(settings)
    assert {t: len(rows) for t, rows in before.items() if rows} == {
        "employees": 3,
        "job_history": 3,
        "incidents": 3,
        "gpu_fleet": 5,
        "manifest": 7,
        "quarantine": 4,
    }
    again = ingest_all(settings)
    assert snapshot(settings) == before
    assert again["gpu_fleet"].files_loaded == 0 and again["gpu_fleet"].files_skipped == 3
    assert again["incidents"].rows_loaded == 0


def test_same_content_under_another_name_is_a_duplicate_and_loads_nothing(settings):
    first = deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    second = deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-04.csv")
    result = ingest_export(settings, "gpu_fleet")
    assert first == second
    assert (result.files_loaded, result.files_skipped, result.rows_loaded) == (0, 2, 0)
    m = manifest(settings)
    assert m["gpu_fleet_2024-04.csv"][0] == "duplicate"
    assert "same content as gpu_fleet_2024-03.csv" in m["gpu_fleet_2024-04.csv"][5]
    assert query(settings, "SELECT count(*) FROM gpu_fleet") == [(2,)]


def test_corrected_v2_supersedes_v1_which_stays_in_history(settings):
    v1 = deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    v2 = deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03_v2.csv")
    result = ingest_export(settings, "gpu_fleet")
    assert (result.files_loaded, result.files_superseded) == (1, 1)
    m = manifest(settings)
    assert m["gpu_fleet_2024-03.csv"][:2] == ("superseded", v2)
    assert m["gpu_fleet_2024-03_v2.csv"][:2] == ("active", None)
    # history keeps both deliveries; the current view (rows of active files) only v2
    assert query(settings, "SELECT _version, count(*) FROM gpu_fleet GROUP BY 1 ORDER BY 1") == [
        (1, 2),
        (2, 3),
    ]
    current = query(
        settings,
        """
        SELECT cluster, gpu_count FROM gpu_fleet f
        JOIN manifest m ON m.file_id = f._file_id AND m.status = 'active' ORDER BY cluster""",
    )
    assert current == [("dgx-ber-2", 64), ("dgx-fra-3", 32), ("dgx-muc-1", 512)]
    assert v1 != v2


def test_files_are_processed_in_version_order_whatever_their_arrival(settings):
    v2 = deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03_v2.csv")
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    m = manifest(settings)
    assert m["gpu_fleet_2024-03.csv"][:2] == ("superseded", v2)
    assert m["gpu_fleet_2024-03_v2.csv"][0] == "active"


def test_a_lower_version_arriving_late_is_kept_as_superseded(settings):
    v2 = deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03_v2.csv")
    ingest_export(settings, "gpu_fleet")
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    m = manifest(settings)
    assert m["gpu_fleet_2024-03.csv"][:2] == ("superseded", v2)
    assert m["gpu_fleet_2024-03_v2.csv"][:2] == ("active", None)


def test_new_content_under_the_same_name_supersedes_the_old(settings):
    old = deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    new = deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    rows = query(settings, "SELECT file_id, status, superseded_by FROM manifest ORDER BY loaded_at")
    assert rows == [(old, "superseded", new), (new, "active", None)]


def test_load_stamps_grow_in_load_order_when_the_clock_is_set_back(settings):
    """The incremental staging models find the files loaded since their last build by the
    stamp: a clock set back must not stamp a new file earlier than one loaded before."""
    first = deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    with duckdb.connect(str(settings.raw_db)) as con:
        # as if the first file had been loaded by a clock a day ahead of the machine's now
        con.execute(
            "UPDATE manifest SET loaded_at = loaded_at + INTERVAL 1 DAY WHERE file_id = ?", [first]
        )
    second = deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-04.csv")
    ingest_export(settings, "gpu_fleet")
    stamps = dict(query(settings, "SELECT file_id, loaded_at FROM manifest"))
    assert second != first and stamps[second] > stamps[first]


def test_bad_file_is_recorded_as_failed_and_never_blocks_good_files(settings):
    good = deliver(settings, "employees_bom_crlf.csv", "hris", "employees_2024-01.csv")
    ingest_export(settings, "employees")
    before = snapshot(settings)
    # a broken correction of the same month must not replace the good delivery
    deliver(settings, "employees_missing_column.csv", "hris", "employees_2024-01_v2.csv")
    deliver(settings, "employees_truncated_header.csv", "hris", "employees_2024-02.csv")
    deliver(settings, "employees_bom_crlf.csv", "hris", "employees_2024-03.csv")
    result = ingest_export(settings, "employees")
    assert [f for f, _ in result.files_failed] == [
        "employees_2024-01_v2.csv",
        "employees_2024-02.csv",
    ]
    assert "hire_date" in result.files_failed[0][1]
    m = manifest(settings)
    assert m["employees_2024-01.csv"][:3] == ("active", None, good)
    assert m["employees_2024-01_v2.csv"][0] == "failed"
    assert "employees_2024-01_v2.csv" in m["employees_2024-01_v2.csv"][5]
    after = snapshot(settings)
    assert after["employees"] == before["employees"]  # nothing lost, nothing added
    # a re-run still reports the bad files (they are still there) but changes nothing
    again = ingest_export(settings, "employees")
    assert len(again.files_failed) == 2
    assert snapshot(settings) == after


def test_utf8_only_export_delivered_in_windows_1252_fails_with_advice(settings):
    deliver(settings, "certifications_cp1252.csv", "lms", "certifications_2024-02.csv")
    result = ingest_export(settings, "certifications")
    ((name, message),) = result.files_failed
    assert name == "certifications_2024-02.csv" and "export the file again as UTF-8" in message


def test_files_matching_no_contract_are_reported_not_dropped(settings):
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    deliver(settings, "employees_bom_crlf.csv", "fleet", "employees_2024-01.csv")  # wrong folder
    deliver(settings, "incidents_garbage.csv", "fleet", "notes.csv")
    result = ingest_export(settings, "gpu_fleet")
    assert result.unknown_files == ["fleet/employees_2024-01.csv", "fleet/notes.csv"]
    assert "matches no profile" in result.not_loaded["fleet/notes.csv"]
    assert result.files_seen == 1


def test_our_own_format_under_another_name_is_recognised_from_its_header(settings):
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu-fleet March.csv")
    result = ingest_export(settings, "gpu_fleet")
    assert result.unknown_files == [] and result.files_seen == 2
    assert "contract-gpu-fleet" in result.recognised["fleet/gpu-fleet March.csv"]
    # the same bytes under two names: loaded once, the second recorded as a duplicate
    assert result.files_loaded == 1 and result.files_skipped == 1


def test_missing_sources_folder_says_what_to_do(tmp_path):
    s = Settings(sources_dir=tmp_path / "nope", warehouse_dir=tmp_path / "w")
    with pytest.raises(SourcesNotFound, match="TALENT_SOURCES"):
        ingest_export(s, "employees")


def test_connection_is_closed_after_loading(settings):
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    # a read-only open in the same process fails while a read-write connection is still open
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        assert con.execute("SELECT count(*) FROM gpu_fleet").fetchone() == (2,)


MIXED_DELIVERY = [
    ("employees_bom_crlf.csv", "hris", "employees_2024-01.csv"),
    ("employees_missing_column.csv", "hris", "employees_2024-02.csv"),
    ("employees_bom_crlf.csv", "hris", "employees_2024-03.csv"),  # same bytes: a duplicate
    ("incidents_garbage.csv", "incidents", "incidents_2024-03.csv"),
    ("incidents_truncated.csv", "incidents", "incidents_2024-04.csv"),
    ("gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv"),
    ("gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03_v2.csv"),
]


def _rows_and_outcomes(settings: Settings) -> dict[str, list[tuple]]:
    """Rows of every table without the load times and paths (which differ by warehouse)."""
    out = {}
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        for t in EXPORTS:
            out[t] = sorted(con.execute(f'SELECT * FROM "{t}"').fetchall(), key=repr)
        out["quarantine"] = sorted(
            con.execute("SELECT * EXCLUDE (quarantined_at) FROM quarantine").fetchall(), key=repr
        )
        out["manifest"] = sorted(
            con.execute(
                "SELECT file_name, status, superseded_by, rows_loaded, rows_quarantined, "
                "replace(message, ?, '') FROM manifest",
                [str(settings.sources_dir)],
            ).fetchall(),
            key=repr,
        )
    return out


def test_files_typed_one_batch_at_a_time_load_the_same_rows(settings, tmp_path, monkeypatch):
    """A batch of at most one row types each file alone: every row, rejected row and file
    outcome must equal the load that types each export's files together."""
    from pipelines.lib.ingest import loader

    for fixture, folder, name in MIXED_DELIVERY:
        deliver(settings, fixture, folder, name)
    ingest_all(settings)
    together = _rows_and_outcomes(settings)

    calls = []
    monkeypatch.setattr(loader, "TYPE_BATCH_ROWS", 1)
    typed = loader.type_split_files
    monkeypatch.setattr(
        loader, "type_split_files", lambda files, con: calls.append(len(files)) or typed(files, con)
    )
    one_by_one = Settings(
        sources_dir=settings.sources_dir,
        warehouse_dir=tmp_path / "one_by_one",
        settle_seconds=0,
    )
    ingest_all(one_by_one)
    assert calls and max(calls) == 1  # every readable file was typed in a batch of its own
    assert _rows_and_outcomes(one_by_one) == together
    assert together["manifest"] and together["quarantine"]


def test_an_archive_copy_removed_during_the_run_is_read_again_from_the_delivery(
    settings, tmp_path, monkeypatch
):
    """Between planning (hash, archive copy) and typing, someone empties `archive/`: a delivery
    that still holds the same bytes loads as if nothing happened; one that changed fails with
    its name and reason, and its new bytes load on the next run."""
    from pipelines.lib.ingest import loader

    for fixture, folder, name in MIXED_DELIVERY:
        deliver(settings, fixture, folder, name)
    undisturbed = Settings(
        sources_dir=settings.sources_dir, warehouse_dir=tmp_path / "undisturbed", settle_seconds=0
    )
    ingest_all(undisturbed)

    plan = loader.plan_deliveries
    changed = settings.sources_dir / "fleet" / "gpu_fleet_2024-03_v2.csv"

    def plan_then_disturb(con, s, deliveries, result, config=None):
        plans = plan(con, s, deliveries, result, config)
        for p in plans:  # the copies this export's load is about to read
            (s.warehouse_dir / p.archive_path).unlink(missing_ok=True)
        if any(p.delivery.path == changed for p in plans):
            changed.write_bytes((FIXTURES / "gpu_fleet_v1.csv").read_bytes() + b"\n")
        return plans

    monkeypatch.setattr(loader, "plan_deliveries", plan_then_disturb)
    ingest_all(settings)
    got, expected = manifest(settings), manifest(undisturbed)
    assert got["gpu_fleet_2024-03_v2.csv"][0] == "failed"
    message = got["gpu_fleet_2024-03_v2.csv"][-1]
    assert "gpu_fleet_2024-03_v2.csv" in message and "changed" in message, message
    # the failed v2 supersedes nothing: v1 still counts; every other file as undisturbed
    assert got["gpu_fleet_2024-03.csv"][:2] == ("active", None)
    others = {k: v for k, v in got.items() if not k.startswith("gpu_fleet")}
    assert others == {k: v for k, v in expected.items() if not k.startswith("gpu_fleet")}
    assert len(others) == len(expected) - 2
    # the archive holds every loaded file again: a rebuild from it needs no sources
    for status, archive_path in query(settings, "SELECT status, archive_path FROM manifest"):
        assert status == "failed" or (settings.warehouse_dir / archive_path).is_file()

    monkeypatch.setattr(loader, "plan_deliveries", plan)
    ingest_all(settings)  # the changed file is a new delivery now
    assert manifest(settings)["gpu_fleet_2024-03_v2.csv"][0] == "active"


def test_rebuild_from_archive_gives_the_same_rows(settings):
    deliver(settings, "employees_bom_crlf.csv", "hris", "employees_2024-01.csv")
    deliver(settings, "employees_missing_column.csv", "hris", "employees_2024-02.csv")
    deliver(settings, "job_history_de.csv", "hris", "job_history_2024-01.csv")
    deliver(settings, "contractor_hours_de.csv", "hris", "contractor_hours_2024-03.csv")
    deliver(settings, "incidents_garbage.csv", "incidents", "incidents_2024-03.csv")
    deliver(settings, "incidents_truncated.csv", "incidents", "incidents_2024-04.csv")
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03_v2.csv")
    ingest_all(settings)
    original = snapshot(settings)
    shutil.rmtree(settings.sources_dir)  # the archive alone must be enough
    with duckdb.connect(str(settings.raw_db)) as con:
        con.execute("DELETE FROM incidents")  # damage the raw layer
    counts = rebuild_raw_from_archive(settings)
    assert snapshot(settings) == original
    assert counts["incidents"] == 4 and counts["gpu_fleet"] == 5


def test_rebuild_refuses_to_start_when_an_archive_file_is_missing(settings):
    file_id = deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    ingest_export(settings, "gpu_fleet")
    before = snapshot(settings)
    (settings.archive_dir / "gpu_fleet" / f"{file_id}.csv").unlink()
    with pytest.raises(FileNotFoundError, match="gpu_fleet_2024-03.csv"):
        rebuild_raw_from_archive(settings)
    assert snapshot(settings) == before


def test_raw_schema_types_follow_the_contract(tmp_path):
    with duckdb.connect(str(tmp_path / "raw.duckdb")) as con:
        ensure_raw_schema(con)
        ensure_raw_schema(con)  # idempotent
        types = dict(
            con.execute(
                "SELECT column_name, data_type FROM information_schema.columns "
                "WHERE table_name = 'contractor_hours'"
            ).fetchall()
        )
    assert types == {
        "engagement_id": "VARCHAR",
        "vendor": "VARCHAR",
        "month": "DATE",
        "team": "VARCHAR",
        "hours": "DOUBLE",
        "hourly_rate_usd": "DOUBLE",
        "_file_id": "VARCHAR",
        "_line": "BIGINT",
        "_period": "VARCHAR",
        "_version": "BIGINT",
        "_extra": "JSON",
    }


CRASH_SCRIPT = """
import sys
from pathlib import Path
from pipelines.lib.settings import Settings
from pipelines.lib.ingest import ingest_export
s = Settings(sources_dir=Path(sys.argv[1]), warehouse_dir=Path(sys.argv[2]), settle_seconds=0)
ingest_export(s, "gpu_fleet")
"""


def test_a_crash_inside_the_load_transaction_leaves_nothing_half_loaded(settings, tmp_path):
    deliver(settings, "gpu_fleet_v1.csv", "fleet", "gpu_fleet_2024-03.csv")
    deliver(settings, "gpu_fleet_v2.csv", "fleet", "gpu_fleet_2024-03_v2.csv")
    env = {**os.environ, "TALENT_FAILPOINT": "ingest:before_commit"}
    # a new process group: the failpoint kills its whole group, which must not be pytest's
    proc = subprocess.run(
        [
            sys.executable,
            "-c",
            CRASH_SCRIPT,
            str(settings.sources_dir),
            str(settings.warehouse_dir),
        ],
        env=env,
        start_new_session=True,
        capture_output=True,
        timeout=120,
    )
    assert proc.returncode == -signal.SIGKILL
    assert query(settings, "SELECT count(*) FROM manifest") == [(0,)]
    assert query(settings, "SELECT count(*) FROM gpu_fleet") == [(0,)]
    result = ingest_export(settings, "gpu_fleet")  # the next run loads everything once
    assert (result.files_loaded, result.rows_loaded) == (2, 5)
    assert sorted(manifest(settings).values())[0][0] == "active"
    assert query(settings, "SELECT _version, count(*) FROM gpu_fleet GROUP BY 1 ORDER BY 1") == [
        (1, 2),
        (2, 3),
    ]


def test_files_hashed_two_at_a_time_come_back_in_order_with_their_own_hash(tmp_path):
    """Every file is read and hashed once, its bytes and hash stay with it, and the order of
    the deliveries is kept (an odd count leaves a last file alone)."""
    from types import SimpleNamespace

    from pipelines.lib.ingest.loader import HASH_THREADS, read_and_hashed

    paths = []
    for i in range(2 * HASH_THREADS + 1):
        path = tmp_path / f"employees_2024-{i + 1:02d}.csv"
        path.write_bytes(f"employee_id\n{i}\n".encode() * (i + 1) * 1000)
        paths.append(path)
    deliveries = [SimpleNamespace(path=p) for p in reversed(paths)]
    got = list(read_and_hashed(deliveries))
    assert [d.path for d, _ in got] == list(reversed(paths))
    for delivery, (data, file_id) in got:
        assert data == delivery.path.read_bytes()
        assert file_id == hashlib.sha256(delivery.path.read_bytes()).hexdigest()
