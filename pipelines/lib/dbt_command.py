"""`talent-dbt`: the dbt of this environment, which answers `--version` without starting dbt.

dagster-dbt asks its dbt executable `--version` once per process, to tell dbt-core from the
Fusion engine (`DbtCliResource(dbt_executable=...)`); plain `dbt --version` imports all of dbt to
print it (about 2 CPU s of every nightly). This entry point prints the installed dbt-core version
from the package metadata in the form dbt prints it, and runs every other command as the `dbt`
console script does (`dbt.cli.main:cli`), in the folder `TALENT_DBT_WORKDIR` names when it is
set: the warehouse, to which the pipeline's profile paths are relative
(`Settings.dbt_env(in_warehouse=True)`; dagster-dbt starts dbt in the project folder, and dbt
finds the project and the profile from `DBT_PROJECT_DIR` and `DBT_PROFILES_DIR`). Its garbage
collector runs its young collections less often, as the pipeline's own processes do
(`pipelines.lib.memory.collect_less_often`: about 0.7 CPU s of a build of the bundled sample).
"""

from __future__ import annotations

import os
import sys
from importlib.metadata import version


def main() -> None:
    if sys.argv[1:] == ["--version"]:
        print(f"Core:\n  - installed: {version('dbt-core')}")
        return
    workdir = os.environ.get("TALENT_DBT_WORKDIR")
    if workdir:
        try:
            os.chdir(workdir)
        except OSError as exc:
            sys.exit(
                f"talent-dbt: cannot start dbt in TALENT_DBT_WORKDIR={workdir} ({exc.strerror}): "
                "it must be the warehouse folder the profile's relative paths start from"
            )
    from pipelines.lib.memory import collect_less_often

    collect_less_often()  # before dbt is imported (pipelines/lib/memory.py says why)
    from dbt.cli.main import cli

    sys.exit(cli())


if __name__ == "__main__":
    main()
