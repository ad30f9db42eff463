"""`talent-dbt`: the dbt of this environment, which answers `--version` without starting dbt.

dagster-dbt asks its dbt executable `--version` once per process, to tell dbt-core from the
Fusion engine (`DbtCliResource(dbt_executable=...)`); plain `dbt --version` imports all of dbt to
print it (about 2 CPU s of every nightly). This entry point prints the installed dbt-core version
from the package metadata in the form dbt prints it, and runs every other command as the `dbt`
console script does (`dbt.cli.main:cli`).
"""

from __future__ import annotations

import sys
from importlib.metadata import version


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(f"Core:\n  - installed: {version('dbt-core')}")
        return
    from dbt.cli.main import cli

    sys.exit(cli())


if __name__ == "__main__":
    main()
