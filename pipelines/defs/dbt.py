"""dbt warehouse assets: staging → intermediate → marts, built by one `dbt build`.

Thin wiring: keys, groups and the CLI arguments come from small pure helpers so a test can pin
them; the SQL lives in `dbt_project/`.
"""

import contextlib
import hashlib
import json
import os
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from pipelines.defs.dbt_cli import (  # noqa: F401  (re-exported: the project's dbt wiring)
    DBT_EXECUTABLE,
    SOURCE_SUFFIXES,
    ProjectDbtCliResource,
    build_args,
    dbt_environment,
    dbt_project,
    dbt_resource,
    ensure_manifest,
    manifest_is_stale,
    project_files,
)
from pipelines.defs.resources import TalentResource
from pipelines.lib import db, fingerprint, targets
from pipelines.lib.settings import Settings

WAREHOUSE_GROUP = "warehouse"
LAYERS = ("staging", "intermediate", "restricted", "marts")
DOCS_FILES = ("index.html", "manifest.json", "catalog.json")
# Written beside the site: the fingerprint of the project it documents (see docs_fingerprint).
DOCS_FINGERPRINT = ".fingerprint"


def asset_key_for(props: Mapping[str, Any]) -> dg.AssetKey:
    """dbt sources are the ingestion assets `raw/<export>` (and the Python-written marts
    `marts/<name>`); models and seeds are `<layer>/<name>`.

    Keys follow the schema a node is built in (staging, intermediate, restricted, marts), so the Dagster
    graph names the same tables an analyst sees in the build file.
    """
    if props["resource_type"] == "source":
        # the Python-written marts are declared as sources so the docs describe them; they are
        # the statistics and ROI assets marts/<name>
        layer = "marts" if props.get("source_name") == "python_marts" else "raw"
        return dg.AssetKey([layer, props["name"]])
    schema = props.get("schema") or props.get("config", {}).get("schema")
    if schema not in LAYERS:
        raise ValueError(
            f"dbt node {props['unique_id']} builds into schema {schema!r}; put it under "
            f"models/{{{','.join(LAYERS)}}} (or configure +schema) so it gets a layer key."
        )
    # A restricted model is named restricted_<mart> and aliased to the mart's table name, so the
    # key names the table: restricted/<mart>.
    return dg.AssetKey([schema, props.get("alias") or props["name"]])


class WarehouseTranslator(DagsterDbtTranslator):
    """Maps dbt nodes onto the project's asset keys and the `warehouse` group."""

    def get_asset_spec(self, manifest, unique_id, project) -> dg.AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        props = self.get_resource_props(manifest, unique_id)
        key = asset_key_for(props)
        if props["resource_type"] == "source":
            # Sources belong to the ingestion group; only their key matters here.
            return spec.replace_attributes(key=key)
        return spec.replace_attributes(key=key, group_name=WAREHOUSE_GROUP)


def docs_fingerprint(project_dir: Path, build_args: list[str]) -> str:
    """What the docs site is made of: the project's files, the build's vars, the dbt version.

    The site documents models, columns and their types; with the same project and vars the
    catalog is the same, so a nightly run that only brought new rows needs no new site.
    """
    from dbt.version import __version__ as dbt_version

    digest = hashlib.sha256(f"dbt {dbt_version}\n{json.dumps(build_args)}\n".encode())
    for path in project_files(project_dir):
        digest.update(f"{path.relative_to(project_dir)}\n".encode())
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def docs_are_current(docs_dir: Path, fingerprint: str) -> bool:
    stamp = docs_dir / DOCS_FINGERPRINT
    return (
        stamp.exists()
        and stamp.read_text().strip() == fingerprint
        and all((docs_dir / name).exists() for name in DOCS_FILES)
    )


def docs_cache_dir(fingerprint: str) -> Path:
    """Where the project keeps the last docs site it generated (beside its partial parse): a
    fresh warehouse with the same project and vars copies it instead of starting dbt again."""
    return Path(dbt_project.project_dir) / "target" / "docs-site" / fingerprint[:16]


def _cache_docs(docs_dir: Path, cached: Path, fingerprint: str) -> None:
    """Keep the site for the next fresh warehouse; a cache, so a failure (another process
    writing it at the same moment) only costs the next warehouse one docs run."""
    tmp = cached.with_name(f".{cached.name}.{os.getpid()}.tmp")
    try:
        for old in cached.parent.glob("*") if cached.parent.exists() else []:
            if not old.name.startswith("."):  # one site: the latest project
                shutil.rmtree(old, ignore_errors=True)
        publish_docs(docs_dir, tmp)
        (tmp / DOCS_FINGERPRINT).write_text(fingerprint + "\n")
        os.replace(tmp, cached)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)


def publish_docs(target_dir: Path, docs_dir: Path) -> list[Path]:
    """Copy the static dbt docs site (index.html + manifest + catalog) into the docs folder."""
    docs_dir.mkdir(parents=True, exist_ok=True)
    copied = []
    for name in DOCS_FILES:
        src = target_dir / name
        if src.exists():
            shutil.copy2(src, docs_dir / name)
            copied.append(docs_dir / name)
    return copied


@dbt_assets(
    manifest=ensure_manifest(),
    project=dbt_project,
    dagster_dbt_translator=WarehouseTranslator(),
    name="warehouse_dbt",
)
def warehouse_dbt(context: dg.AssetExecutionContext, dbt: DbtCliResource, talent: TalentResource):
    """Runs `dbt build` (models, seeds, tests as asset checks), then regenerates the docs."""
    s = talent.settings
    s.ensure_dirs()
    args = build_args(s)
    # what the project's files, vars and dbt version make: names the docs site and the record
    # of passed unit tests (hashed once per build)
    project = docs_fingerprint(Path(dbt_project.project_dir), args)
    # A whole build whose inputs (raw tables, project, vars, key, versions) are those of the
    # tables in the build file would rebuild the same tables: keep them.
    inputs = None if context.is_subset else warehouse_inputs_fingerprint(s, project)
    if inputs is not None and build_is_current(s, inputs, built_tables(context.assets_def.keys)):
        context.log.info(
            "raw tables, dbt project, vars and pseudonym key unchanged since the last build: "
            "the warehouse tables are kept (dbt not run; its tests passed on these tables)"
        )
        yield from kept_results(context)
        return
    forget_build(s)  # a failed or partial build leaves no fingerprint: the next one runs
    passed = unit_tests_marker(project)
    command = build_command(args, passed)
    skip_unit = command != args
    if skip_unit:
        context.log.info(
            "dbt unit tests passed for this project, vars and dbt/DuckDB versions "
            f"({passed.name}); not run again: they test the SQL on fixed inputs, not the data"
        )
    with dbt_output(context, s):
        targets.prepare_build(s)  # TARGETS: raw tables to PostgreSQL / Spark (lib/targets.py)
        with dbt_environment(s.dbt_env()):
            build = dbt.cli(command, context=context)
        try:
            yield from build.stream()
        except BaseException:
            # each invocation writes its own target folder; keep target/ from growing every night
            shutil.rmtree(build.target_path, ignore_errors=True)
            raise
        targets.collect_build(s)  # TARGETS: what dbt built there, back into the build file
        if not skip_unit and not context.is_subset:
            # the whole build passed, its unit tests with it
            passed.parent.mkdir(parents=True, exist_ok=True)
            passed.touch()
        keep_partial_parse(build.target_path, Path(dbt_project.project_dir) / "target")
        if inputs is not None:
            remember_build(s, inputs)
        try:
            _refresh_docs(context, dbt, s, args, project, build.target_path)
        finally:
            shutil.rmtree(build.target_path, ignore_errors=True)


BUILD_STEP = "warehouse_dbt"


def warehouse_inputs_fingerprint(s: Settings, project_fingerprint: str) -> str | None:
    """Everything a whole `dbt build` reads: the raw tables (content: rows of every export, the
    manifest, the quarantine), the project's files, vars and dbt version (`project_fingerprint`),
    the DuckDB and dbt-duckdb versions, the library code (its DuckDB plugin computes the
    pseudonyms) and the pseudonym key (hashed). No model reads the clock or the environment, so
    equal inputs build equal tables. None when there is no raw file yet."""
    from importlib.metadata import version

    import duckdb

    if not s.raw_db.exists():
        return None
    with db.connect(s.raw_db, read_only=True) as con:
        return fingerprint.all_tables_fingerprint(
            con,
            project_fingerprint,
            f"duckdb {duckdb.__version__}, dbt-duckdb {version('dbt-duckdb')}",
            # the DuckDB plugin dbt loads (pseudonym()) is part of the library
            fingerprint.package_source("pipelines.lib"),
            hashlib.sha256(s.pseudonym_key.encode()).hexdigest(),
        )


KEPT_CHECK = (
    "not run again: the table is unchanged since the last whole build, whose blocking tests "
    "all passed"
)


def kept_results(context: dg.AssetExecutionContext) -> Iterator[Any]:
    """What a skipped build reports: every selected asset as kept and, after it, its blocking
    checks (dbt tests of severity error) as passed, which they did on these same tables in the
    build that stored the fingerprint (a whole build succeeds only when they all pass). Tests of
    severity warn are not reported again: their last outcome stays on the asset."""
    checks: dict[dg.AssetKey, list[dg.AssetCheckSpec]] = {}
    for spec in context.assets_def.check_specs:
        if spec.blocking and spec.key in context.selected_asset_check_keys:
            checks.setdefault(spec.asset_key, []).append(spec)
    for key in in_dependency_order(context.assets_def, context.selected_asset_keys):
        yield dg.MaterializeResult(asset_key=key, metadata={"inputs_unchanged": True})
        for spec in checks.get(key, []):
            yield dg.AssetCheckResult(
                asset_key=key,
                check_name=spec.name,
                passed=True,
                metadata={"inputs_unchanged": True, "note": KEPT_CHECK},
            )


def in_dependency_order(assets_def: dg.AssetsDefinition, keys) -> list[dg.AssetKey]:
    """`keys` with every asset after the assets it depends on (Dagster requires a multi-asset
    to yield its assets in that order)."""
    from graphlib import TopologicalSorter

    selected = set(keys)
    graph = {k: assets_def.asset_deps.get(k, set()) & selected for k in selected}
    return list(TopologicalSorter(graph).static_order())


def built_tables(keys) -> list[str]:
    """schema.table of every model and seed behind the dbt asset `keys`: a key names the
    table its node builds (`asset_key_for`)."""
    return sorted(".".join(key.path) for key in keys)


def build_is_current(s: Settings, inputs: str, tables: list[str]) -> bool:
    """True when the build file holds every table in `tables`, built by a whole, successful
    build from inputs with this fingerprint."""
    if not s.build_db.exists():
        return False
    with db.connect(s.build_db, read_only=True) as con:
        return fingerprint.is_current(con, BUILD_STEP, inputs, tables)


def forget_build(s: Settings) -> None:
    """Drop the build's fingerprint before dbt changes any table."""
    if s.build_db.exists():
        with db.connect(s.build_db) as con:
            fingerprint.forget(con, BUILD_STEP)


def remember_build(s: Settings, inputs: str) -> None:
    with db.connect(s.build_db) as con:
        fingerprint.remember(con, BUILD_STEP, inputs)


UNIT_TESTS_PASSED_DIR = "unit-tests-passed"


def unit_tests_marker(project_fingerprint: str) -> Path:
    """Where a build records that the project's dbt unit tests passed.

    Unit tests check a model's SQL against fixed input rows, so their outcome depends on the
    project's files, the vars, and the dbt and DuckDB versions (`project_fingerprint`, from
    `docs_fingerprint`, plus the DuckDB version), never on the warehouse's data:
    after one build in which they passed, later builds of the same project (every nightly, every
    fresh warehouse) leave them out. A changed model, macro, var or version gives another marker,
    and they run again.
    """
    import duckdb

    fingerprint = hashlib.sha256(
        f"{project_fingerprint}\nduckdb {duckdb.__version__}".encode()
    ).hexdigest()
    return Path(dbt_project.project_dir) / "target" / UNIT_TESTS_PASSED_DIR / fingerprint[:16]


def build_command(args: list[str], unit_tests_passed: Path) -> list[str]:
    """The build's arguments, leaving out the unit tests once they have passed (see
    `unit_tests_marker`); the data tests always run."""
    return args + (["--exclude-resource-type", "unit_test"] if unit_tests_passed.exists() else [])


def keep_partial_parse(build_target: Path, project_target: Path) -> bool:
    """Keep the build's parse for the next build (dagster-dbt seeds each build's target folder
    with `target/partial_parse.msgpack`).

    The file left by `ensure_manifest` was parsed with placeholder paths and no vars, so every
    build reparsed the whole project ("config vars, config profile ... have changed"). The
    build's own file matches the next nightly's profile and vars; dbt checks both and reparses
    in full when they differ, so a file from another warehouse only costs that parse.
    """
    src = build_target / "partial_parse.msgpack"
    if not src.exists():
        return False
    project_target.mkdir(parents=True, exist_ok=True)
    tmp = project_target / f".partial_parse.{os.getpid()}.tmp"
    shutil.copy2(src, tmp)
    os.replace(tmp, project_target / "partial_parse.msgpack")
    return True


VERBOSE_TAG = "talent/verbose"


@contextlib.contextmanager
def dbt_output(context: dg.AssetExecutionContext, settings: Settings) -> Iterator[None]:
    """dbt's own log lines go to `<warehouse>/runs/dbt.log`, not to the terminal.

    dagster-dbt echoes every dbt event on standard output (600 lines a night); the run's summary
    says where the file is. A run tagged `talent/verbose` (`talent run --verbose`) keeps them
    on the terminal.
    """
    if context.run.tags.get(VERBOSE_TAG) == "1":
        yield
        return
    settings.runs_dir.mkdir(parents=True, exist_ok=True)
    path = settings.runs_dir / "dbt.log"
    with open(path, "w", encoding="utf-8") as fh, contextlib.redirect_stdout(fh):
        yield
    context.log.info(f"dbt's log: {path}")


def _refresh_docs(
    context: dg.AssetExecutionContext,
    dbt: DbtCliResource,
    s: Settings,
    args: list[str],
    fingerprint: str,
    target_path: Path,
) -> None:
    """Regenerate the docs site unless it already documents this project and these vars
    (`fingerprint`: `docs_fingerprint` of the project and `args`)."""
    if docs_are_current(s.docs_dir, fingerprint):
        context.log.info(
            f"dbt docs in {s.docs_dir} already describe this project and vars; not regenerated"
        )
        return
    cached = docs_cache_dir(fingerprint)
    if docs_are_current(cached, fingerprint):
        # another warehouse built from the same project and vars has the same site
        publish_docs(cached, s.docs_dir)
        (s.docs_dir / DOCS_FINGERPRINT).write_text(fingerprint + "\n")
        context.log.info(f"dbt docs copied to {s.docs_dir} (same project and vars as {cached})")
        return
    # --static: one self-contained index.html that opens from disk (the plain site fetches
    # manifest.json and catalog.json, which browsers refuse over file://). --no-compile in the
    # build's target folder: the docs reuse the manifest the build just compiled instead of
    # compiling every model and test a second time. The build's --vars too: with other vars
    # dbt would not reuse the build's parse and would parse the whole project again.
    with dbt_environment(s.dbt_env()):
        docs = dbt.cli(
            ["docs", "generate", "--static", "--no-compile", *args[1:]],
            manifest=dbt_project.manifest_path,
            target_path=target_path,
            raise_on_error=False,
        )
    docs.wait()
    if not docs.is_successful():
        context.log.warning("dbt docs generate failed; the warehouse itself was built.")
        return
    static = docs.target_path / "static_index.html"
    if static.exists():
        shutil.copy2(static, docs.target_path / "index.html")
    copied = publish_docs(docs.target_path, s.docs_dir)
    (s.docs_dir / DOCS_FINGERPRINT).write_text(fingerprint + "\n")
    _cache_docs(s.docs_dir, cached, fingerprint)
    context.log.info(f"dbt docs written to {s.docs_dir} ({len(copied)} files)")
