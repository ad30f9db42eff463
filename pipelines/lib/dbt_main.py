"""`talent-dbt`: dbt itself, whose partial parse survives a warehouse at a new path.

dbt reuses its last parse (`target/partial_parse.msgpack`) only when a hash of the profile's
connection values is unchanged. Those values hold the build and raw files' full paths and the
pseudonym plugin's key, so every warehouse at a new path (a fresh install, each test, each
customer's warehouse beside another) and every key made dbt parse the whole project again:
about 4 CPU s of the sample's 38.

Neither changes what the parse produces. The models reach the build file by its catalog name (the
profile's `database`, which is hashed as before), never by its folder, and the key reaches only
the pseudonym function at run time. So this entry point hashes the same values as dbt with the
folders of the database paths and the key left out. Anything else in the profile (file names,
settings, extensions, vars, target) still forces a full parse, as in plain dbt.

The pipeline runs dbt through this script (`pipelines.defs.dbt_cli.DBT_EXECUTABLE`); it imports
dbt and this module only, never Dagster.
"""

from __future__ import annotations

import pprint
import sys
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any

HIDDEN = "<not part of the parse>"


def placeless(connection_info: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The profile's connection values as dbt hashes them (sorted key/value pairs), with each
    database path reduced to its file name and every plugin's pseudonym key hidden."""
    out = []
    for key, value in connection_info:
        if key == "path" and isinstance(value, str):
            value = PurePath(value).name
        elif key == "attach" and value:
            value = [{**a, "path": PurePath(a["path"]).name} for a in value]
        elif key == "plugins" and value:
            value = [_without_key(p) for p in value]
        out.append((key, value))
    return sorted(out, key=lambda kv: kv[0])


def _without_key(plugin: dict[str, Any]) -> dict[str, Any]:
    config = plugin.get("config") or {}
    if "pseudonym_key" not in config:
        return plugin
    return {**plugin, "config": {**config, "pseudonym_key": HIDDEN}}


def install() -> None:
    """Make dbt's partial-parse check hash the placeless profile instead of the full one."""
    from dbt.contracts.files import FileHash
    from dbt.parser.manifest import ManifestLoader

    build_state_check = getattr(ManifestLoader, "build_manifest_state_check", None)
    if build_state_check is None or getattr(build_state_check, "placeless", False):
        # another dbt-core than uv.lock's: plain dbt, which parses a new path in full
        # (tests/test_dbt_project.py notices)
        return

    def placeless_state_check(self):
        check = build_state_check(self)
        info = placeless(self.root_project.credentials.connection_info())
        check.profile_hash = FileHash.from_contents(pprint.pformat(info))
        return check

    placeless_state_check.placeless = True
    ManifestLoader.build_manifest_state_check = placeless_state_check


def main() -> None:
    from dbt.cli.main import cli

    install()
    sys.exit(cli())


if __name__ == "__main__":
    main()
