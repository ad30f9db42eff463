"""dbt-duckdb plugin: registers ``pseudonym(varchar) -> varchar`` on every dbt connection.

The key reaches the plugin as its profile configuration (``profiles.yml``:
``config: {pseudonym_key: "{{ env_var('TALENT_PSEUDONYM_KEY') }}"}``), so the SQL models never see
it and it never lands in compiled SQL or logs. This module is loaded inside the dbt subprocess:
it imports DuckDB and the pseudonym function only, never Dagster.
"""

from __future__ import annotations

import functools
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

    Vectorised (DuckDB hands over Arrow batches of 2,048 values) and memoised per connection:
    an employee id appears in many rows of many models, and the keyed hash of each distinct
    value is computed once (a row-at-a-time Python UDF cost about 2 s per million rows, this
    about 1 s). A NULL stays NULL, matching ``pseudonym(None) is None``.
    """
    import pyarrow as pa

    pseudonym("", key)  # an empty key fails here, with the advice, before any row is read
    one = functools.lru_cache(maxsize=1 << 20)(functools.partial(_keyed, key=key))

    def _pseudonyms(values):  # a pyarrow string array (no annotations: DuckDB evaluates them)
        return pa.array([None if v is None else one(v) for v in values.to_pylist()], pa.string())

    conn.create_function(
        "pseudonym",
        _pseudonyms,
        ["VARCHAR"],
        "VARCHAR",
        type="arrow",
        side_effects=False,
    )


def _keyed(value: str, key: str) -> str:
    return pseudonym(value, key)  # type: ignore[return-value]
