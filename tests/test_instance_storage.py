"""The Dagster instance of `dagster.yaml` (`pipelines/instance_storage.py`): Dagster's SQLite
files, with the event log's connections kept open instead of opened for every event."""

from __future__ import annotations

import shutil
from pathlib import Path

import dagster as dg
import pytest

from pipelines import instance_storage

REPO = Path(__file__).resolve().parents[1]
STOCK_YAML = "telemetry:\n  enabled: false\n"  # no instance_class: Dagster's own


@dg.asset
def numbers() -> int:
    return 1


@dg.asset_check(asset=numbers)
def numbers_are_positive() -> dg.AssetCheckResult:
    return dg.AssetCheckResult(passed=True)


@dg.asset
def doubled(numbers: int) -> int:
    return 2 * numbers


ASSETS = [numbers, numbers_are_positive, doubled]


@pytest.fixture
def home(tmp_path, monkeypatch) -> Path:
    home = tmp_path / "dagster_home"
    home.mkdir()
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")  # as `make setup` does
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    return home


def _materialize(instance: dg.DagsterInstance) -> str:
    result = dg.materialize(ASSETS, instance=instance)
    assert result.success
    return result.run_id


def test_a_run_opens_each_database_file_once_and_stores_every_event(home, monkeypatch):
    opened: list[str] = []
    real = instance_storage.create_engine

    def counting(url, *args, **kwargs):
        opened.append(str(url))
        return real(url, *args, **kwargs)

    monkeypatch.setattr(instance_storage, "create_engine", counting)
    with dg.DagsterInstance.get() as instance:
        run_id = _materialize(instance)
        events = instance.all_logs(run_id)
        materialized = instance.get_latest_materialization_event(dg.AssetKey("doubled"))
    # Dagster's own storage opens an engine for every event: here, one per file (the run's
    # database and the cross-run index), however many events the run stored
    assert len(events) >= 20
    assert sorted(Path(u).name for u in opened) == sorted([f"{run_id}.db", "index.db"])
    assert materialized is not None and materialized.run_id == run_id
    check = dg.AssetCheckKey(dg.AssetKey("numbers"), "numbers_are_positive")
    assert any(
        e.dagster_event is not None
        and e.dagster_event.event_type == dg.DagsterEventType.ASSET_CHECK_EVALUATION
        and e.dagster_event.event_specific_data.asset_check_key == check
        for e in events
    )


def test_its_files_read_with_dagsters_own_storage_and_back(home):
    with dg.DagsterInstance.get() as instance:
        ours = _materialize(instance)
        ours_events = len(instance.all_logs(ours))
    (home / "dagster.yaml").write_text(STOCK_YAML)
    with dg.DagsterInstance.get() as stock:
        assert len(stock.all_logs(ours)) == ours_events
        theirs = _materialize(stock)
        theirs_events = len(stock.all_logs(theirs))
    shutil.copy(REPO / "dagster.yaml", home / "dagster.yaml")
    with dg.DagsterInstance.get() as instance:
        assert len(instance.all_logs(theirs)) == theirs_events
        assert len(instance.all_logs(ours)) == ours_events
        latest = instance.get_latest_materialization_event(dg.AssetKey("doubled"))
        assert latest is not None and latest.run_id == theirs


def test_only_the_files_used_last_stay_open(tmp_path):
    storage = instance_storage.OpenSqliteEventLogStorage(str(tmp_path))
    shards = [f"run{i}" for i in range(instance_storage.MAX_OPEN_FILES + 4)]
    first = storage.engine_for(shards[0])
    for shard in shards[1:]:
        storage.engine_for(shard)
    storage.engine_for(shards[5])  # used again: now the most recent
    # the 16 used last, least recent first: run0-run3 were closed
    assert list(storage._engines) == [shards[4], *shards[6:], shards[5]]
    assert storage.engine_for(shards[0]) is not first  # opened anew, and run4 closed
    assert list(storage._engines)[0] == shards[6]
    storage.dispose()
    assert not storage._engines


def test_a_table_once_found_is_not_looked_up_again_a_missing_one_is(home, monkeypatch):
    """Dagster asks whether a table exists before storing each check evaluation and each
    materialisation's tags, and opens the index database to answer; the instance answers a
    table it found before from memory, and asks again about one that was missing."""
    asked: list[str] = []
    real = instance_storage.SqliteEventLogStorage.has_table

    def counting(self, table_name: str) -> bool:
        asked.append(table_name)
        return real(self, table_name)

    monkeypatch.setattr(instance_storage.SqliteEventLogStorage, "has_table", counting)
    with dg.DagsterInstance.get() as instance:
        storage = instance.event_log_storage
        assert isinstance(storage, instance_storage.OpenSqliteEventLogStorage)
        for _ in range(2):
            _materialize(instance)
        # two runs' check evaluations and materialisations: each table looked up once
        assert asked and sorted(asked) == sorted(set(asked))
        assert storage.has_table(asked[0])
        assert [storage.has_table("no_such_table") for _ in range(2)] == [False, False]
        assert asked.count("no_such_table") == 2 and asked.count(asked[0]) == 1


def test_commits_go_to_the_wal_without_waiting_for_the_disk(home):
    """Each event's commit syncs nothing but the write-ahead log's checkpoints (synchronous
    NORMAL in WAL mode, as SQLite recommends): a run commits thousands of events, and waiting
    for the disk on each cost more wall time than the run's computing on a busy disk."""
    import sqlalchemy as sa

    with dg.DagsterInstance.get() as instance:
        run_id = _materialize(instance)
        storage = instance.event_log_storage
        assert isinstance(storage, instance_storage.OpenSqliteEventLogStorage)
        for shard in (run_id, "index"):
            with storage.engine_for(shard).connect() as conn:
                assert conn.execute(sa.text("PRAGMA journal_mode")).scalar() == "wal"
                # 1 = NORMAL (2 = FULL, SQLite's default)
                assert conn.execute(sa.text("PRAGMA synchronous")).scalar() == 1
    # Dagster's own storage reads the files as before (the events are all there)
    (home / "dagster.yaml").write_text(STOCK_YAML)
    with dg.DagsterInstance.get() as stock:
        assert stock.get_latest_materialization_event(dg.AssetKey("doubled")).run_id == run_id
