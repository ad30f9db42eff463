"""Each raw delivery is validated once: later runs read only the new deliveries' rows and still
report the outcomes of the earlier ones; a corrected re-delivery clears what it corrects.

The yardstick is a validation from scratch (an empty quality folder) of the same raw file: where
the deliveries hold different keys, the kept and the fresh outcomes must agree.
"""

from __future__ import annotations

import json
import shutil

import duckdb
from test_quality_data import FakeSettings, clean_tables, write_raw

from pipelines.lib.quality import run_raw_suites
from pipelines.lib.quality.kept import STORE_FILE

COMPARED = ("passed", "unexpected_count", "element_count", "locations")


def _incidents(first: int, n: int, **change) -> list[dict]:
    row = clean_tables()["incidents"][0]
    return [dict(row, incident_number=f"INC-{first + i}", **change) for i in range(n)]


def _deliver(raw_db, file_name: str, period: str, version: int, rows: list[dict]) -> str:
    """Add an active incidents delivery to the raw file (a copy of the manifest row of the
    first one, with its own id, name, period and version)."""
    file_id = f"sha-{file_name}"
    with duckdb.connect(str(raw_db)) as con:
        con.execute(
            "insert into manifest select * replace (? as file_id, ? as file_name, ? as period, "
            "? as version, ? as rows_loaded, ? as rows_total) from manifest "
            "where export = 'incidents' limit 1",
            [file_id, file_name, period, version, len(rows), len(rows)],
        )
        for line, row in enumerate(rows, start=2):
            names = list(row)
            con.execute(
                f"insert into incidents ({', '.join(names)}, _file_id, _line, _period, _version) "
                f"values ({', '.join('?' for _ in names)}, ?, ?, ?, ?)",
                [row[n] for n in names] + [file_id, line, period, version],
            )
    return file_id


def _supersede(raw_db, file_id: str) -> None:
    with duckdb.connect(str(raw_db)) as con:
        con.execute("update manifest set status = 'superseded' where file_id = ?", [file_id])


def _outcomes(settings) -> dict[str, tuple]:
    (result,) = run_raw_suites(settings, ["incidents"])
    return {o.rule.name: tuple(getattr(o, k) for k in COMPARED) for o in result.outcomes}


def _from_scratch(settings, tmp_path) -> dict[str, tuple]:
    fresh = FakeSettings(tmp_path / "fresh")
    shutil.rmtree(fresh.warehouse_dir, ignore_errors=True)
    fresh.raw_db.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy(settings.raw_db, fresh.raw_db)
    return _outcomes(fresh)


def _batches(settings) -> list[list[str]]:
    store = json.loads((settings.quality_dir / STORE_FILE).read_text())
    return [b["files"] for b in store["raw.incidents"]["batches"]]


def test_a_new_delivery_is_validated_alone_and_reported_with_the_earlier_ones(tmp_path):
    settings = FakeSettings(tmp_path / "wh")
    write_raw(settings.raw_db, {**clean_tables(), "incidents": _incidents(0, 4)})
    first = _outcomes(settings)
    assert first["downtime_minutes_in_range"][:3] == (True, 0, 4)

    # a later day brings three incidents, one with a negative downtime
    bad = _incidents(10, 3)
    bad[1]["downtime_minutes"] = -5.0
    day = _deliver(settings.raw_db, "incidents_2024-06-30.csv", "2024-06-30", 1, bad)
    second = _outcomes(settings)
    # only the new file was read this time; the first batch's outcomes were kept
    assert _batches(settings) == [["sha-incidents_2024-06_v2.csv"], [day]]
    assert second["downtime_minutes_in_range"] == (
        False,
        1,
        7,
        ("incidents_2024-06-30.csv line 3",),
    )
    assert second == _from_scratch(settings, tmp_path)

    # nothing new: the same outcomes, from the store alone
    assert _outcomes(settings) == second

    # a corrected re-delivery of the day replaces the bad one: the failure is gone
    _supersede(settings.raw_db, day)
    _deliver(settings.raw_db, "incidents_2024-06-30_v2.csv", "2024-06-30", 2, _incidents(10, 3))
    third = _outcomes(settings)
    assert third["downtime_minutes_in_range"][:3] == (True, 0, 7)
    assert third == _from_scratch(settings, tmp_path)


def test_changed_rules_or_a_superseded_file_validate_the_batch_again(tmp_path):
    settings = FakeSettings(tmp_path / "wh")
    write_raw(settings.raw_db, {**clean_tables(), "incidents": _incidents(0, 2)})
    _outcomes(settings)
    store_path = settings.quality_dir / STORE_FILE
    store = json.loads(store_path.read_text())
    store["raw.incidents"]["rules"] = "another rule set"
    store["raw.incidents"]["batches"][0]["outcomes"] = []
    store_path.write_text(json.dumps(store))
    # the stored outcomes belong to other rules: everything is validated again
    outcomes = _outcomes(settings)
    assert outcomes["downtime_minutes_in_range"][:3] == (True, 0, 2)
    assert json.loads(store_path.read_text())["raw.incidents"]["rules"] != "another rule set"


def test_large_exports_are_validated_in_parts_with_the_same_outcomes(tmp_path, monkeypatch):
    """Above `CHUNK_ROWS` raw rows an export's current rows are read and validated in parts
    split by the key's hash (memory stays flat); every count, and a key repeated in a file, come
    out as in one frame. Locations are compared as sets: the parts name them in their own order."""
    from pipelines.lib.quality import frames

    settings = FakeSettings(tmp_path / "wh")
    rows = _incidents(0, 40)
    rows[3]["downtime_minutes"] = -5.0
    rows[17]["severity"] = None
    rows[30] = dict(rows[29], downtime_minutes=1.0)  # one incident twice, told two ways
    write_raw(settings.raw_db, {**clean_tables(), "incidents": rows})
    whole = _from_scratch(settings, tmp_path / "a")
    monkeypatch.setattr(frames, "CHUNK_ROWS", 9)
    assert frames.partition_columns("raw.incidents") == ["incident_number"]
    read = frames.read_raw_frames(settings.raw_db, "incidents")
    assert len(read.row_chunks) == 5 and read.frames["rows"] is None
    frames_read = [part() for part in read.row_chunks]
    assert sum(len(f) for f in frames_read) == 40
    for f in frames_read:  # each part in file and line order, as stored
        located = list(zip(f["_file_name"], f["_line"], strict=True))
        assert located == sorted(located)
    parts = _from_scratch(settings, tmp_path / "b")
    assert {k: v[:3] for k, v in parts.items()} == {k: v[:3] for k, v in whole.items()}
    assert {k: set(v[3]) for k, v in parts.items()} == {k: set(v[3]) for k, v in whole.items()}
    # the defects are there to be found: the repeated incident, the bad range, the missing value
    assert whole["natural_key_unique"][:2] == (False, 2)
    assert whole["downtime_minutes_in_range"][:2] == (False, 1)
    assert whole["severity_not_null"][:2] == (False, 1)
    # a night's small delivery beside the large one is read in one piece
    day = _deliver(settings.raw_db, "incidents_2024-07-01.csv", "2024-07-01", 1, _incidents(90, 3))
    assert frames.read_raw_frames(settings.raw_db, "incidents", [day]).row_chunks == ()
    assert len(frames.read_raw_frames(settings.raw_db, "incidents").row_chunks) == 5


def test_a_validated_frame_is_not_kept_by_great_expectations(tmp_path):
    """The library caches each batch and its metrics for the life of its context; the runner
    empties them after every part, so a run holds one part's rows at a time."""
    import gc
    import weakref

    from pipelines.lib.quality import validation
    from pipelines.lib.quality.frames import read_raw_frames
    from pipelines.lib.quality.rules import rules_for

    settings = FakeSettings(tmp_path / "wh")
    write_raw(settings.raw_db, {**clean_tables(), "incidents": _incidents(0, 30)})
    frame = read_raw_frames(settings.raw_db, "incidents").frames["rows"]
    validator = validation._Validator(None)
    rules = [r for r in rules_for("raw.incidents") if r.batch == "rows"]
    assert all(o.passed for o in validator.validate("raw.incidents", frame, rules))
    alive = weakref.ref(frame)
    del frame
    gc.collect()
    assert alive() is None
