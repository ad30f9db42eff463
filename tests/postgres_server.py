"""The local PostgreSQL server the `postgres` tests use (`make postgres`; `.ci/run` starts it).

The tests find it through `.postgres/env` of the checkout (written by `make postgres`) or the
same variables in the environment. When it is not running they skip and say how to start it,
except in CI (`CI` set), where a missing server is a failure: `.ci/run` starts one.
Every test works in databases of its own (`fresh_database`), dropped afterwards.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

CHECKOUT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Server:
    port: int
    password: str  # of role talent (publishes, builds, owns the test databases)
    analyst_password: str

    def dsn(self, database: str, role: str = "talent") -> str:
        return f"postgresql://{role}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres", role: str = "talent"):
        import psycopg2

        password = self.password if role == "talent" else self.analyst_password
        con = psycopg2.connect(self.dsn(database, role), password=password, connect_timeout=5)
        con.autocommit = True
        return con

    def env(self) -> dict[str, str]:
        """The environment a child process needs to log in as talent (PGPASSWORD)."""
        return {**os.environ, "PGPASSWORD": self.password}


def _settings() -> dict[str, str]:
    from tools.postgres_server import DEFAULT_DIR, read_env_file

    values = read_env_file(DEFAULT_DIR / "env")
    for name in ("TALENT_PG_PORT", "TALENT_PG_PASSWORD", "TALENT_ANALYST_PASSWORD"):
        if os.environ.get(name):
            values[name] = os.environ[name]
    return values


def find_server() -> tuple[Server | None, str]:
    values = _settings()
    if not values.get("TALENT_PG_PASSWORD"):
        return None, "no .postgres/env and no TALENT_PG_PASSWORD: start it with `make postgres`"
    server = Server(
        int(values.get("TALENT_PG_PORT", "55432")),
        values["TALENT_PG_PASSWORD"],
        values.get("TALENT_ANALYST_PASSWORD", ""),
    )
    try:
        server.connect().close()
    except Exception as exc:  # noqa: BLE001 (any failure to reach it is the reason to skip)
        return None, f"cannot log in on 127.0.0.1:{server.port} ({str(exc).strip()[:200]})"
    return server, ""


@pytest.fixture(scope="session")
def pg() -> Server:
    server, reason = find_server()
    if server is None:
        message = f"the local PostgreSQL server is not running: {reason}"
        if os.environ.get("CI"):
            pytest.fail(message + " (.ci/run starts it: `make postgres`)")
        pytest.skip(message)
    return server


@contextmanager
def fresh_database(server: Server, prefix: str, public_connect: bool = True) -> Iterator[str]:
    """A new database owned by talent; dropped (with its sessions) afterwards."""
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    con = server.connect()
    try:
        con.cursor().execute(f'create database "{name}"')
        if not public_connect:
            con.cursor().execute(f'revoke all on database "{name}" from public')
        yield name
    finally:
        cur = con.cursor()
        cur.execute(
            "select pg_terminate_backend(pid) from pg_stat_activity where datname = %s "
            "and usename = current_user and backend_type = 'client backend'",
            [name],
        )
        cur.execute(f'drop database if exists "{name}"')
        con.close()
