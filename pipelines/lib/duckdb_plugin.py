"""dbt-duckdb plugin: registers ``pseudonym(varchar) -> varchar`` on every dbt connection.

The key is read once, when dbt opens its connection, from ``pipelines.config.pseudonym_key()``
so the SQL models never see it and it never lands in compiled SQL or logs.
"""

from __future__ import annotations

from dbt.adapters.duckdb.plugins import BasePlugin
from duckdb import DuckDBPyConnection

from pipelines.config import pseudonym_key
from pipelines.lib.pseudonym import pseudonym


class Plugin(BasePlugin):
    """Loaded by dbt-duckdb from ``plugins: [{module: pipelines.lib.duckdb_plugin}]``."""

    def configure_connection(self, conn: DuckDBPyConnection) -> None:
        register(conn, pseudonym_key())


def register(conn: DuckDBPyConnection, key: str) -> None:
    """Register the scalar function on one connection (also used by tests and Python assets).

    DuckDB's default NULL handling returns NULL for a NULL argument without calling Python,
    matching ``pseudonym(None) is None``.
    """

    def _pseudonym(value: str | None) -> str | None:
        return pseudonym(value, key)

    conn.create_function(
        "pseudonym",
        _pseudonym,
        ["VARCHAR"],
        "VARCHAR",
        side_effects=False,
    )
