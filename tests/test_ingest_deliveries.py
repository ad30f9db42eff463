"""A catalogue of bad deliveries: each is named in the result, nothing loaded before is lost,
and every file's delivered rows = loaded + quarantined."""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path

import duckdb

from pipelines.lib.ingest import ingest_all, ingest_export
from pipelines.lib.ingest.check import files_not_fully_loaded
from pipelines.lib.settings import Settings

FIXTURES = Path(__file__).parent / "fixtures" / "ingest"
FLEET_HEADER = "cluster,as_of_date,site,gpu_model,gpu_count\n"


def query(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return con.execute(sql).fetchall()


def fleet(rows: int, day: str = "2024-03-31") -> str:
    return FLEET_HEADER + "".join(f"c{i},{day},Munich,H100,{8 * (i + 1)}\n" for i in range(rows))


def write(settings: Settings, rel: str, text: str | bytes) -> Path:
    path = settings.sources_dir / rel
    if isinstance(text, str):
        text = text.encode()
    path.write_bytes(text)
    return path


def assert_rows_accounted(settings: Settings) -> None:
    for name, total, loaded, quarantined, status in query(
        settings,
        "SELECT file_name, rows_total, rows_loaded, rows_quarantined, status FROM manifest",
    ):
        if status != "failed":
            assert total == loaded + quarantined, name


def test_nul_byte_quarantines_its_row_not_the_file(settings):
    text = fleet(3).replace("c1,", "c\x001,")
    write(settings, "fleet/gpu_fleet_2024-03.csv", text)
    result = ingest_export(settings, "gpu_fleet")
    assert result.files_failed == [] and (result.rows_loaded, result.rows_quarantined) == (2, 1)
    ((line, reason),) = query(settings, "SELECT line_number, reason FROM quarantine")
    assert line == 3 and "NUL" in reason
    assert_rows_accounted(settings)


def test_header_only_redelivery_does_not_wipe_the_month(settings):
    write(settings, "fleet/gpu_fleet_2024-03.csv", fleet(4))
    ingest_export(settings, "gpu_fleet")
    write(settings, "fleet/gpu_fleet_2024-03_v2.csv", FLEET_HEADER)
    result = ingest_export(settings, "gpu_fleet")
    ((name, message),) = result.files_failed
    assert name == "gpu_fleet_2024-03_v2.csv" and "re-delivery check" in message
    assert "allow_shrink" in message
    assert query(settings, "SELECT file_name FROM manifest WHERE status = 'active'") == [
        ("gpu_fleet_2024-03.csv",)
    ]
    # the explicit flag lets the smaller delivery through
    (settings.sources_dir / "sources.yml").write_text(
        "files:\n  gpu_fleet_2024-03_v3.csv: {allow_shrink: true}\n"
    )
    write(settings, "fleet/gpu_fleet_2024-03_v3.csv", fleet(1))
    result = ingest_export(settings, "gpu_fleet")
    assert result.files_loaded == 1
    assert query(settings, "SELECT file_name FROM manifest WHERE status = 'active'") == [
        ("gpu_fleet_2024-03_v3.csv",)
    ]


def test_shrunken_redelivery_is_blocked_above_the_threshold(settings):
    write(settings, "fleet/gpu_fleet_2024-03.csv", fleet(10))
    ingest_export(settings, "gpu_fleet")
    write(settings, "fleet/gpu_fleet_2024-03_v2.csv", fleet(4))  # 40 % < 50 %
    assert ingest_export(settings, "gpu_fleet").files_failed
    write(settings, "fleet/gpu_fleet_2024-03_v3.csv", fleet(6))  # 60 %: a correction
    result = ingest_export(settings, "gpu_fleet")
    assert result.files_loaded == 1
    # the blocked v2 stays named on every run while it sits in the folder
    assert [name for name, _ in result.files_failed] == ["gpu_fleet_2024-03_v2.csv"]
    assert query(
        settings,
        "SELECT count(*) FROM gpu_fleet g JOIN manifest m ON m.file_id = "
        "g._file_id AND m.status = 'active'",
    ) == [(6,)]


def test_dates_outside_the_plausible_window_are_quarantined(settings):
    text = fleet(2) + "c8,2099-03-31,Munich,H100,8\n" + "c9,1960-01-01,Munich,H100,8\n"
    write(settings, "fleet/gpu_fleet_2024-03.csv", text)
    result = ingest_export(settings, "gpu_fleet")
    assert (result.rows_loaded, result.rows_quarantined) == (2, 2)
    reasons = [r for (r,) in query(settings, "SELECT reason FROM quarantine ORDER BY line_number")]
    assert all("outside the plausible range 1970-01-01" in r for r in reasons)
    assert query(settings, "SELECT max(as_of_date) FROM gpu_fleet")[0][0].year == 2024


def test_same_bytes_as_two_exports_fail_the_second_header_not_duplicate(settings):
    data = (FIXTURES / "employees_bom_crlf.csv").read_bytes()
    write(settings, "hris/employees_2024-01.csv", data)
    write(settings, "hris/job_history_2024-01.csv", data)
    results = ingest_all(settings)
    assert results["employees"].files_loaded == 1
    ((name, message),) = results["job_history"].files_failed
    assert name == "job_history_2024-01.csv" and "lacks required column" in message
    assert "Its header is our employees export's: name the file employees_2024-01.csv" in message
    assert query(settings, "SELECT status FROM manifest WHERE export = 'job_history'") == [
        ("failed",)
    ]


def test_file_still_being_written_is_left_for_the_next_run(settings):
    path = write(settings, "fleet/gpu_fleet_2024-03.csv", fleet(2))
    stop = threading.Event()

    def keep_writing() -> None:
        with path.open("a") as f:
            while not stop.is_set():
                f.write("c,2024-03-31,Munich,H100,8\n")
                f.flush()
                time.sleep(0.05)

    writer = threading.Thread(target=keep_writing)
    writer.start()
    heard: list[str] = []
    waiting = dataclasses.replace(settings, settle_seconds=0.5)  # what the sensor also uses
    try:
        result = ingest_export(waiting, "gpu_fleet", on_wait=heard.append)
    finally:
        stop.set()
        writer.join()
    assert result.files_loaded == 0
    assert "still being written" in result.not_loaded["fleet/gpu_fleet_2024-03.csv"]
    assert len(heard) == 1 and "gpu_fleet_2024-03.csv" in heard[0] and "waiting" in heard[0]
    old = time.time() - 60
    os.utime(path, (old, old))
    assert ingest_export(settings, "gpu_fleet").files_loaded == 1


def test_links_folders_and_temporary_copies_are_named(settings):
    os.symlink(
        settings.sources_dir / "nowhere.csv", settings.sources_dir / "fleet/gpu_fleet_2024-04.csv"
    )
    (settings.sources_dir / "fleet" / "gpu_fleet_2024-05.csv").mkdir()
    write(settings, "fleet/gpu_fleet_2024-06.csv.part", fleet(1))
    write(settings, "fleet/gpu_fleet_2024-03.csv", fleet(2))
    results = ingest_all(settings)
    not_loaded = results["gpu_fleet"].not_loaded
    assert "does not exist" in not_loaded["fleet/gpu_fleet_2024-04.csv"]
    assert "a folder" in not_loaded["fleet/gpu_fleet_2024-05.csv"]
    assert "temporary" in not_loaded["fleet/gpu_fleet_2024-06.csv.part"]
    issues = {i.file for i in files_not_fully_loaded(settings.raw_db, results)}
    assert {
        "fleet/gpu_fleet_2024-04.csv",
        "fleet/gpu_fleet_2024-05.csv",
        "fleet/gpu_fleet_2024-06.csv.part",
    } <= issues
    assert results["gpu_fleet"].files_loaded == 1


def test_truncated_last_row_and_wrong_delimiter_are_named(settings):
    write(settings, "fleet/gpu_fleet_2024-03.csv", fleet(3) + "c9,2024-03-31,Mun")
    # a colon is no delimiter any tool writes (tabs and Slurm's pipes are, and load)
    write(settings, "fleet/gpu_fleet_2024-04.csv", fleet(2, "2024-04-30").replace(",", ":"))
    results = ingest_all(settings)
    issues = {i.file: i for i in files_not_fully_loaded(settings.raw_db, results)}
    assert "truncated" in issues["gpu_fleet_2024-03.csv"].reason
    assert issues["gpu_fleet_2024-03.csv"].quarantined == 1
    assert issues["gpu_fleet_2024-04.csv"].status == "failed"
    assert "lacks required column" in issues["gpu_fleet_2024-04.csv"].reason
    assert_rows_accounted(settings)


def test_sources_check_foresees_blocked_redeliveries_and_unreadable_files(settings):
    from pipelines.lib.ingest.check import check_sources

    write(settings, "fleet/gpu_fleet_2024-03.csv", fleet(4))
    write(settings, "fleet/gpu_fleet_2024-03_v2.csv", FLEET_HEADER)
    write(settings, "lms/Badges.xlsx", b"PK\x03\x04 not a workbook")
    write(settings, "lms/empty.csv", b"")
    by = {f.path: f for f in check_sources(settings.sources_dir).files}
    assert by["fleet/gpu_fleet_2024-03.csv"].status == "loads"
    assert by["fleet/gpu_fleet_2024-03_v2.csv"].status == "blocked"
    assert "allow_shrink" in by["fleet/gpu_fleet_2024-03_v2.csv"].note
    assert by["lms/Badges.xlsx"].status == "unknown" and "workbook" in by["lms/Badges.xlsx"].note
    assert by["lms/empty.csv"].status == "unknown" and "empty" in by["lms/empty.csv"].note
