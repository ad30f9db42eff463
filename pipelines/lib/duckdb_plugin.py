"""dbt-duckdb plugin: registers ``pseudonym(varchar) -> varchar`` on every dbt connection.

The key reaches the plugin as its profile configuration (``profiles.yml``:
``config: {pseudonym_key: "{{ env_var('TALENT_PSEUDONYM_KEY') }}"}``), so the SQL models never see
it and it never lands in compiled SQL or logs. This module is loaded inside the dbt subprocess:
it imports DuckDB and the pseudonym function only, never Dagster.
"""

from __future__ import annotations

from typing import Any

from dbt.adapters.duckdb.plugins import BasePlugin
from duckdb import DuckDBPyConnection

from pipelines.lib.pseudonym import pseudonym


class Plugin(BasePlugin):
    """Loaded by dbt-duckdb from ``plugins: [{module: pipelines.lib.duckdb_plugin}]``."""

    def initialize(self, plugin_config: dict[str, Any]) -> None:
        key = plugin_config.get("pseudonym_key") or ""
        if not key:
            raise ValueError(
                "dbt profile: the pseudonym plugin got no key. The pipeline passes "
                "TALENT_PSEUDONYM_KEY to dbt; when running dbt by hand, export it first."
            )
        self._key = key

    def configure_connection(self, conn: DuckDBPyConnection) -> None:
        register(conn, self._key)


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
