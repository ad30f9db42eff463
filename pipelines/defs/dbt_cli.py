"""dbt's project, the CLI resource that runs it, and the parse that gives Dagster its manifest.

The manifest is prepared, not parsed as a side effect of importing the definitions: `make
setup` prepares it (`ensure_manifest`, again whenever a file of the dbt project changed),
`talent run` prepares it with the run's own profile and vars before it loads the definitions,
and under `dagster dev` the project's preparer does (`TalentDbtPreparer`, a dagster-dbt
`DbtProjectPreparer`, prepared if dev as Dagster's `project_dbt` example prepares its project). The asset
definitions (`pipelines.defs.dbt`) only read it (`prepared_manifest`) and say how to prepare it
when it is missing or older than the project.
"""

import contextlib
import fcntl
import json
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

from dagster_dbt import DbtCliResource, DbtProject, DbtProjectPreparer

from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.settings import Settings


class TalentDbtPreparer(DbtProjectPreparer):
    """Prepares the project with the pipeline's profile and vars (`ensure_manifest`): under
    `dagster dev` when the definitions load, and whenever `prepare` is called."""

    def prepare_if_dev(self, project: DbtProject) -> None:
        if self.using_dagster_dev():
            self.prepare(project)

    def prepare(self, project: DbtProject) -> None:
        ensure_manifest(project=project)


dbt_project = DbtProject(project_dir=DBT_PROJECT_DIR, profiles_dir=DBT_PROJECT_DIR)
# DbtProject takes no preparer of ours (it builds dagster-dbt's own, which parses without the
# pipeline's profile and vars), so the definitions call this one (`prepared_manifest`)
PREPARER = TalentDbtPreparer()


class ManifestNotPrepared(RuntimeError):
    """The dbt manifest is missing or older than the dbt project's files."""


def prepared_manifest(project: DbtProject | None = None) -> Path:
    """The project's manifest, prepared under `dagster dev`; anywhere else it must have been
    prepared before (`make setup`, `talent run`), and its absence is an error with advice."""
    project = project or dbt_project
    PREPARER.prepare_if_dev(project)
    if manifest_is_stale(Path(project.project_dir), Path(project.manifest_path)):
        raise ManifestNotPrepared(
            f"the dbt manifest {project.manifest_path} is missing or older than the dbt "
            f"project in {project.project_dir}: prepare it with `make setup` (or `python -c "
            '"from pipelines.defs.dbt_cli import ensure_manifest; ensure_manifest()"`), then '
            "load the definitions again. `talent run` and `dagster dev` prepare it themselves."
        )
    return Path(project.manifest_path)


def vars_args(settings: Settings) -> list[str]:
    """The privacy and scope knobs the SQL reads, as dbt's `--vars`."""
    return ["--vars", json.dumps(settings.dbt_vars())]


def build_args(settings: Settings, full_refresh: bool = True) -> list[str]:
    """CLI arguments of the build: the privacy and scope vars travel as `--vars`. dbt's unit
    tests check the models' SQL on fixed rows, not the data, so the nightly build leaves them
    out; the test suite runs them (`tests/test_dbt_warehouse.py`). `full_refresh=False` lets
    the incremental staging models add only what new deliveries changed."""
    args = ["build", *vars_args(settings), "--exclude-resource-type", "unit_test"]
    return [*args, "--full-refresh"] if full_refresh else args


# dbt in this environment, by path: cron, systemd and containers start the product with a bare
# PATH on which a plain `dbt` is not found. `talent-dbt` (`pipelines.lib.dbt_command`, installed
# with the project) is that dbt: it answers `--version` without starting dbt, and starts dbt in
# the warehouse folder the pipeline's profile paths are relative to.
DBT_EXECUTABLE = str(Path(sys.executable).parent / "talent-dbt")


@contextlib.contextmanager
def dbt_environment(env: Mapping[str, str]) -> Iterator[None]:
    """The one place the product writes `os.environ`: while dbt starts.

    dbt renders its profile (database paths, the pseudonym plugin's key) from environment
    variables, and dagster-dbt starts dbt with a copy of this process's environment, with no
    parameter for extra variables. So the variables are set around the call that starts the
    subprocess (or, for the docs site, around dbt's in-process `dbtRunner` invocation) and
    restored right after it.
    """
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def dbt_resource(project: DbtProject | None = None) -> DbtCliResource:
    """The dbt of this environment, run in the project (this one by default) with its own
    profile."""
    project = project or dbt_project
    return DbtCliResource(
        project_dir=project,
        profiles_dir=os.fspath(project.profiles_dir or project.project_dir),
        dbt_executable=DBT_EXECUTABLE,
    )


PARSE_FILE = "partial_parse.msgpack"


def seed_parse(target: Path, project: DbtProject = dbt_project) -> bool:
    """Start a warehouse's dbt target folder from the project's own parse (`ensure_manifest`).

    dbt keeps its parse of the project in the target folder and reuses it while the project's
    files, the vars and the profile's connection are those it was parsed with; it checks all
    of them itself and reparses what differs. A fresh warehouse's folder has no parse, so its
    first dbt command parsed the whole project (about 5 CPU s). The pipeline's profile is the
    same for every warehouse (paths relative to the warehouse folder: `Settings.dbt_env(
    in_warehouse=True)`), so the project's parse serves. Returns whether it copied the file;
    a folder that has a parse of its own keeps it."""
    own, project_parse = target / PARSE_FILE, Path(project.manifest_path).parent / PARSE_FILE
    if own.exists() or not project_parse.exists():
        return False
    target.mkdir(parents=True, exist_ok=True)
    partial = own.with_name(f".{PARSE_FILE}.{os.getpid()}")
    shutil.copyfile(project_parse, partial)
    os.replace(partial, own)
    return True


SOURCE_SUFFIXES = (".sql", ".yml", ".yaml", ".csv")


def manifest_is_stale(project_dir: Path, manifest_path: Path) -> bool:
    """True when the manifest is missing or older than any model, macro, seed or yml file.

    A stale manifest makes Dagster expect tests and models that no longer exist (or miss new
    ones), so definitions would disagree with what `dbt build` actually runs.
    """
    if not manifest_path.exists():
        return True
    built = manifest_path.stat().st_mtime
    return any(p.stat().st_mtime > built for p in project_files(project_dir))


def project_files(project_dir: Path) -> list[Path]:
    """Every file that defines the dbt project: models, macros, seeds, tests, yml."""
    files = [project_dir / "dbt_project.yml", project_dir / "profiles.yml"]
    for folder in ("models", "macros", "seeds", "tests"):
        files += sorted(p for p in (project_dir / folder).rglob("*") if p.suffix in SOURCE_SUFFIXES)
    return [p for p in files if p.exists()]


def ensure_manifest(settings: Settings | None = None, project: DbtProject = dbt_project) -> Path:
    """Prepare the manifest: parse the project when it is missing or older than a project file.

    Called by `make setup`, by `talent run` before it loads the definitions and, under
    `dagster dev`, by `TalentDbtPreparer`; loading the definitions only reads the manifest
    (`prepared_manifest`).

    With the run's `settings` (the CLI passes them before it loads the definitions) the parse
    renders the build's own profile and vars, so the partial-parse file it leaves is the one
    every warehouse's build can start from (`seed_parse`): on a fresh checkout `make run`
    parses the project once, not twice (a full parse is about 5 CPU s).
    """
    if not manifest_is_stale(project.project_dir, project.manifest_path):
        return project.manifest_path
    # Several processes may load the definitions at once (test workers, webserver + daemon):
    # one parses, the others wait and find a fresh manifest.
    lock_path = Path(project.project_dir) / "target" / ".prepare.lock"
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if manifest_is_stale(project.project_dir, project.manifest_path):
            # Parsing opens no database; the profile only has to render. It renders as the
            # pipeline's does, paths relative to the warehouse, with the build's vars (the
            # defaults without settings): the parse left in the project's target folder then
            # serves every warehouse run with those vars (`seed_parse`).
            if settings is None:
                settings = Settings(sources_dir=lock_path.parent, warehouse_dir=lock_path.parent)
            args = ["parse", "--quiet", *vars_args(settings)]
            env = settings.dbt_env(in_warehouse=True)
            env.pop("TALENT_DBT_WORKDIR")  # the warehouse need not exist yet
            with dbt_environment(env):
                invocation = dbt_resource(project).cli(args, target_path=project.target_path)
            invocation.wait()
    return project.manifest_path
