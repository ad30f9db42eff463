"""The Dagster instance of `dagster.yaml`: Dagster's own, with the event log's SQLite
connections kept open.

`make run`, `make dev` and a deployed daemon keep run history in `$DAGSTER_HOME`. Dagster's
SQLite event log creates an SQLAlchemy engine, opens the database file, runs one statement and
closes everything again for each event it stores, and a nightly stores about 880 (step outputs,
check evaluations, materialisations and their plans): on the bundled sample that was about 5
of 43 CPU s, measured against the same run with an ephemeral instance. Here each database file
gets one engine holding one open connection. Dagster's own lock still lets one thread use the
storage at a time; the tables, the files and the transaction of every event
are Dagster's, so a `$DAGSTER_HOME` written by either reads with the other. Its connections
commit in SQLite's WAL mode without waiting for the disk (synchronous NORMAL): at about 6 ms a
synced commit and some 4,800 commits a nightly of a 600-employee company, the wait was 40 of
the run's 260 s of wall time on a busy disk (cProfile, 4,791 commits); what it risks:
`_wal_commits_without_fsync`.

`dagster.yaml` names `TalentInstance` (`instance_class`), not a storage: Dagster still chooses
the folder (`$DAGSTER_HOME`, or the temporary one a `dagster` command uses without it) and
builds its SQLite event log there; the instance takes that event log's folder for its own.
Any other event log (Postgres, say) is used as configured.

Kept open: the last `MAX_OPEN_FILES` database files used (a run uses two: its own and the
index). The webserver and the daemon read many runs' files over a day; older ones are closed.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from dagster import DagsterInstance
from dagster._core.instance.ref import InstanceRef
from dagster._core.storage.event_log.sqlite.sqlite_event_log import SqliteEventLogStorage
from dagster._core.storage.sql import create_engine
from dagster._core.storage.sqlite import SQLITE_BUSY_TIMEOUT_SECONDS
from sqlalchemy import event
from sqlalchemy.engine import Connection, Engine
from sqlalchemy.pool import QueuePool

MAX_OPEN_FILES = 16


class OpenSqliteEventLogStorage(SqliteEventLogStorage):
    """`SqliteEventLogStorage` with one open connection per database file (see module)."""

    def __init__(self, base_dir: str, inst_data: Any = None) -> None:
        self._engines: OrderedDict[str, Engine] = OrderedDict()
        self._engines_lock = threading.Lock()
        self._tables_found: set[str] = set()
        super().__init__(base_dir, inst_data)

    def engine_for(self, shard: str) -> Engine:
        with self._engines_lock:
            engine = self._engines.pop(shard, None)
            if engine is None:
                engine = create_engine(
                    self.conn_string_for_shard(shard),
                    poolclass=QueuePool,
                    # one connection stays open; Dagster's lock admits one user at a time, so
                    # the overflow (opened and closed like Dagster's own) is only a safeguard
                    pool_size=1,
                    max_overflow=4,
                    connect_args={
                        "timeout": SQLITE_BUSY_TIMEOUT_SECONDS,
                        # returned to the pool, a connection may next serve another thread
                        # (the event log watcher); Dagster's lock serialises them
                        "check_same_thread": False,
                    },
                )
                event.listen(engine, "connect", _wal_commits_without_fsync)
            self._engines[shard] = engine  # most recently used last
            while len(self._engines) > MAX_OPEN_FILES:
                _, oldest = self._engines.popitem(last=False)
                oldest.dispose()
            return engine

    @contextmanager
    def _connect(self, shard: str) -> Iterator[Connection]:  # type: ignore[override]
        # Dagster's `_connect`, with the engine kept instead of created and disposed each time
        with self._db_lock:
            engine = self.engine_for(shard)
            if shard not in self._initialized_dbs:
                self._initdb(engine)
                self._initialized_dbs.add(shard)
            with engine.connect() as conn, conn.begin():
                yield conn

    def has_table(self, table_name: str) -> bool:
        """Dagster's answer, remembered once a table is found: Dagster asks before storing
        each check evaluation and each materialisation's tags, and opens the index database
        afresh to answer. A table, once created, is not dropped while Dagster runs (migrations
        add tables); a missing one is asked about again each time."""
        if table_name in self._tables_found:
            return True
        found = super().has_table(table_name)
        if found:
            self._tables_found.add(table_name)
        return found

    def dispose(self) -> None:
        super().dispose()
        with self._engines_lock:
            while self._engines:
                _, engine = self._engines.popitem()
                engine.dispose()


def _wal_commits_without_fsync(dbapi_connection: Any, _record: Any) -> None:
    """SQLite's recommended setting for a database in WAL mode (Dagster puts its event log in
    WAL mode): a commit is written to the log without waiting for the disk, which is synced
    at each checkpoint. A killed process loses nothing; a power cut or an OS crash can lose the
    last events, never the database's consistency (sqlite.org/pragma.html#pragma_synchronous).
    A lost materialisation only makes the next run compute the asset again."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


class TalentInstance(DagsterInstance):
    """Dagster's instance, with `OpenSqliteEventLogStorage` in place of the SQLite event log
    Dagster built from the configuration (same folder); any other event log unchanged."""

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        """No settings of its own (Dagster asks a custom instance class for them)."""
        return {}

    @classmethod
    def config_defaults(cls, base_dir: str) -> Any:
        """Dagster's defaults: its SQLite storage under `base_dir`."""
        return InstanceRef.config_defaults(base_dir)

    def __init__(self, *args: Any, event_storage: Any = None, **kwargs: Any) -> None:
        if type(event_storage) is SqliteEventLogStorage:
            event_storage = OpenSqliteEventLogStorage(event_storage._base_dir)
        super().__init__(*args, event_storage=event_storage, **kwargs)
