"""dbt-duckdb plugin: defines ``pseudonym(varchar) -> varchar`` on every dbt connection.

The profile names the environment variable that holds the key (``profiles.yml``:
``config: {pseudonym_key_env: TALENT_PSEUDONYM_KEY}``) and the plugin reads the key from it, so
the SQL models never see it and it never lands in compiled SQL or logs. The profile holds the
variable's name, not the key: dbt hashes the profile's connection, plugin configuration
included, to decide whether its saved parse of the project still fits, so a key in the profile
made every other key parse the whole project again (and `dbt debug` prints the connection).
This module is loaded inside the dbt subprocess: it imports DuckDB and the pseudonym function
only, never Dagster.
"""

from __future__ import annotations

import hashlib
import os
from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin
from duckdb import DuckDBPyConnection

from pipelines.lib.pseudonym import HEX_CHARS, PREFIX, pseudonym

# HMAC (RFC 2104) over SHA-256: the key padded to the hash's block size, XOR these bytes
_BLOCK, _IPAD, _OPAD = 64, 0x36, 0x5C


class Plugin(BasePlugin):
    """Loaded by dbt-duckdb from ``plugins: [{module: pipelines.lib.duckdb_plugin}]``."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        variable = plugin_config.get("pseudonym_key_env") or ""
        key = os.environ.get(variable, "") if variable else ""
        if not key:
            where = variable or "the variable `pseudonym_key_env` names (the profile names none)"
            raise ValueError(
                f"dbt profile: the pseudonym plugin found no key in {where}. The pipeline "
                "passes TALENT_PSEUDONYM_KEY to dbt; when running dbt by hand, export it first."
            )
        self._key = key

    def configure_connection(self, conn: DuckDBPyConnection) -> None:
        register(conn, self._key)

    def configure_cursor(self, cursor):
        # a cursor is a connection of its own: temporary macros do not carry over
        register(cursor, self._key)
        return cursor


def register(conn: DuckDBPyConnection, key: str) -> None:
    """Define ``pseudonym(value)`` on one connection (also used by tests and Python assets):
    the HMAC of ``lib.pseudonym`` written with DuckDB's own ``sha256``, so the rows never leave
    DuckDB (a vectorised Python function cost about twice the time at a million employees).

    HMAC-SHA256(k, m) = SHA256((k' XOR opad) || SHA256((k' XOR ipad) || m)), k' the key padded
    (or first hashed) to 64 bytes. The macro is temporary: it lives in the connection's memory,
    never in the database file, and dbt does not log it (it is not a model's SQL). A NULL stays
    NULL, matching ``pseudonym(None) is None``.
    """
    pseudonym("", key)  # an empty key fails here, with the advice, before any row is read
    raw = key.encode("utf-8")
    if len(raw) > _BLOCK:
        raw = hashlib.sha256(raw).digest()
    raw = raw.ljust(_BLOCK, b"\0")
    inner = bytes(b ^ _IPAD for b in raw).hex()
    outer = bytes(b ^ _OPAD for b in raw).hex()
    conn.execute(
        "create or replace temporary macro pseudonym(value) as "
        f"'{PREFIX}' || left(sha256(unhex('{outer}') || "
        f"unhex(sha256(unhex('{inner}') || encode(value::varchar)))), {HEX_CHARS})"
    )
