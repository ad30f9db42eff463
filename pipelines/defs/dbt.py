"""dbt warehouse assets: staging → intermediate → marts, built by one `dbt build`, and the
dbt documentation site.

Thin wiring: keys, groups, code versions and the CLI arguments come from small pure helpers so a
test can pin them; the SQL lives in `dbt_project/`. What is rebuilt follows the project's one
rule (`pipelines/defs/versions.py`): the build runs when a model's code or settings or an input's
data changed, and otherwise keeps the tables (its tests are then not run again).
"""

import contextlib
import hashlib
import shutil
import warnings
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import dagster as dg
from dagster_dbt import DagsterDbtTranslator, DbtCliResource, dbt_assets

from pipelines.defs import versions
from pipelines.defs.dbt_cli import (  # noqa: F401  (re-exported: the project's dbt wiring)
    DBT_EXECUTABLE,
    SOURCE_SUFFIXES,
    build_args,
    dbt_environment,
    dbt_project,
    dbt_resource,
    ensure_manifest,
    manifest_is_stale,
    prepared_manifest,
    project_files,
    seed_parse,
    vars_args,
)
from pipelines.defs.resources import TalentResource
from pipelines.lib import db, targets
from pipelines.lib.settings import Settings

WAREHOUSE_GROUP = "warehouse"
LAYERS = ("staging", "intermediate", "restricted", "marts")
DOCS_KEY = dg.AssetKey(["warehouse", "dbt_docs"])
DOCS_FILES = ("index.html", "manifest.json")
# dbt's target folder of a warehouse's builds: dbt keeps its parse there (partial parsing), so
# a warehouse's nightly builds reuse their own parse.
TARGET_DIR = "dbt-target"


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


@cache
def project_version() -> str:
    """What every node's result depends on besides its own SQL and yml: the macros, the singular
    tests, `dbt_project.yml` and the profile, the DuckDB plugin (`pseudonym()`), and the dbt,
    dbt-duckdb and DuckDB versions."""
    from importlib.metadata import version

    root = Path(dbt_project.project_dir)
    return versions.combined(
        versions.source_version(
            *(str(root / name) for name in ("macros", "tests", "dbt_project.yml", "profiles.yml")),
            "pipelines.lib.duckdb_plugin",
            "pipelines.lib.pseudonym",
        ),
        *(f"{package} {version(package)}" for package in ("dbt-core", "dbt-duckdb", "duckdb")),
    )


def node_code_version(
    props: Mapping[str, Any], default: str | None, root: Path | None = None
) -> str:
    """A model's or seed's code version: dagster-dbt's own (a hash of its SQL, or of the seed's
    file), its yml (descriptions, tests, config) and the project's shared parts."""
    root = root or Path(dbt_project.project_dir)
    patch = (props.get("patch_path") or "").split("://", 1)[-1]
    yml = root / patch if patch else None
    yml_hash = hashlib.sha256(yml.read_bytes()).hexdigest() if yml and yml.is_file() else ""
    return versions.combined(default, yml_hash, project_version())


class WarehouseTranslator(DagsterDbtTranslator):
    """Maps dbt nodes onto the project's asset keys, the `warehouse` group and code versions."""

    def get_asset_spec(self, manifest, unique_id, project) -> dg.AssetSpec:
        spec = super().get_asset_spec(manifest, unique_id, project)
        props = self.get_resource_props(manifest, unique_id)
        key = asset_key_for(props)
        if props["resource_type"] == "source":
            # Sources belong to the ingestion group; only their key matters here.
            return spec.replace_attributes(key=key)
        spec = spec.replace_attributes(
            key=key,
            group_name=WAREHOUSE_GROUP,
            code_version=node_code_version(props, spec.code_version),
        )
        if is_content_versioned(props):  # the decision before a run reads it (versions.py)
            spec = spec.merge_attributes(metadata={versions.DATA_VERSION_OF: "content"})
        return spec


def content_versioned(manifest: Mapping[str, Any]) -> dict[dg.AssetKey, str]:
    """Models whose data version is their content (`meta.dagster.data_version: content`):
    asset key -> schema.table. A Python step that reads only part of a model (the statistics
    read the complete months) depends on such a model, so it keeps its output when that part
    did not change."""
    out = {}
    for node in manifest["nodes"].values():
        if is_content_versioned(node):
            key = asset_key_for(node)
            out[key] = ".".join(key.path)
    return out


def is_content_versioned(node: Mapping[str, Any]) -> bool:
    """Whether a dbt node reports its content as its data version (its yml's
    `meta.dagster.data_version: content`)."""
    meta = (node.get("config") or {}).get("meta") or node.get("meta") or {}
    return (meta.get("dagster") or {}).get("data_version") == "content"


@dbt_assets(
    manifest=prepared_manifest(),
    project=dbt_project,
    dagster_dbt_translator=WarehouseTranslator(),
    name="warehouse_dbt",
)
def warehouse_dbt(context: dg.AssetExecutionContext, dbt: DbtCliResource, talent: TalentResource):
    """Runs `dbt build` (seeds, models, data tests as asset checks) when a model's code or
    settings or an input's data changed; otherwise the decision before the run
    (`versions.decide`) leaves it out and the tables stay."""
    s = talent.settings
    s.ensure_dirs()
    # only new raw data lets the incremental staging models add to what they hold
    # (`macros/current_rows.sql`): the rows they keep were built by the same SQL, settings and
    # pseudonym key. Any other reason (or a run without a decision) rebuilds everything.
    full_refresh = not versions.new_data_only(context)
    because = versions.because_of(context)
    context.log.info(
        f"dbt build ({'full refresh' if full_refresh else 'incremental staging'}): "
        f"{because[versions.COMPUTED_BECAUSE]}"
    )
    with dbt_output(context, s):
        targets.prepare_build(s)  # TARGETS: raw tables to PostgreSQL / Spark (lib/targets.py)
        seed_parse(target_dir(s))
        with dbt_environment(s.dbt_env(in_warehouse=True)):
            build = dbt.cli(
                build_args(s, full_refresh=full_refresh),
                context=context,
                target_path=target_dir(s),
            )
        # Each model's and test's result is recorded as dbt reports it, while dbt goes on. The
        # content of a few models is their data version, and DuckDB lets dbt's process alone
        # hold the file while it builds: their results, and those of the models and checks that
        # depend on them, wait until dbt has finished. On another build target every result
        # waits until its tables are back in the build file.
        content = content_versioned(build.manifest)
        waiting = (
            waits_for_build(context.assets_def, content) if s.build_target == "duckdb" else None
        )
        held = []
        try:
            for event in build.stream():
                if waiting is None or holds(event, waiting, context.assets_def):
                    held.append(event)
                else:
                    yield from annotated_outputs(context, [event], s.build_db, {}, because)
        except BaseException:
            yield from held
            raise
        targets.collect_build(s)  # TARGETS: what dbt built there, back into the build file
    yield from annotated_outputs(context, held, s.build_db, content, because)


def waits_for_build(
    assets_def: dg.AssetsDefinition, content: Mapping[dg.AssetKey, str]
) -> set[dg.AssetKey]:
    """The content-versioned models and every model downstream of them in the build: their
    results are recorded after dbt has finished (a multi-asset reports an asset after the assets
    it depends on)."""
    waiting = set(content) & set(assets_def.keys)
    added = True
    while added:
        added = False
        for key, deps in assets_def.asset_deps.items():
            if key not in waiting and deps & waiting:
                waiting.add(key)
                added = True
    return waiting


def holds(event, waiting: set[dg.AssetKey], assets_def: dg.AssetsDefinition) -> bool:
    """Whether a build event waits for the end of the build: the output of a waiting model, or
    a check of one (a check's result names the materialization it checked)."""
    if isinstance(event, dg.Output):
        return assets_def.keys_by_output_name.get(event.output_name) in waiting
    return getattr(event, "asset_key", None) in waiting


def target_dir(s: Settings) -> Path:
    return s.build_db.parent / TARGET_DIR


def annotated_outputs(
    context,
    events,
    build_db: Path,
    tables: Mapping[dg.AssetKey, str],
    because: Mapping[str, str],
):
    """The build's events, each content-versioned model's output with the hash of its content
    as its data version, and every output with `because` (why the build ran) in its metadata."""
    outputs = {
        context.assets_def.get_output_name_for_asset_key(key): table
        for key, table in tables.items()
        if key in context.assets_def.keys
    }
    built = {e.output_name for e in events if isinstance(e, dg.Output)} & set(outputs)
    content = {}
    if built:
        with db.connect(build_db, read_only=True) as con:
            content = {
                name: versions.content_version(con, f"select * from {outputs[name]}")
                for name in built
            }
    for event in events:
        if isinstance(event, dg.Output):
            version = content.get(event.output_name)
            with warnings.catch_warnings():
                # Dagster marks `data_version` beta; said once per model on every build, the
                # warning would reach the operator's terminal (upgrades are pinned and tested)
                warnings.simplefilter("ignore", dg.BetaWarning)
                event = dg.Output(
                    value=event.value,
                    output_name=event.output_name,
                    metadata={**event.metadata, **because},
                    data_version=dg.DataVersion(version) if version else event.data_version,
                )
        yield event


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


def docs_code_version(settings_vars: str = "") -> str:
    """What the documentation site is made of: the project's files and the dbt version."""
    from importlib.metadata import version

    return versions.combined(
        versions.source_version(*(str(p) for p in project_files(Path(dbt_project.project_dir)))),
        f"dbt-core {version('dbt-core')}",
        settings_vars,
    )


@dg.asset(
    key=DOCS_KEY,
    group_name=WAREHOUSE_GROUP,
    kinds={"dbt", "html"},
    code_version=docs_code_version(),
    description=(
        "warehouse/docs/index.html: the dbt documentation site (models, columns, tests, "
        "lineage) as one self-contained page. It documents the project, not the data, so it "
        "is rebuilt only when the project or its vars change."
    ),
)
def dbt_docs(context: dg.AssetExecutionContext, talent: TalentResource):
    """`dbt docs generate` from the project's parse (`ensure_manifest`): no database is opened,
    so it needs no build and runs beside nothing."""
    s = talent.settings
    copied = generate_docs(s)
    context.log.info(f"dbt docs written to {s.docs_dir} ({len(copied)} files)")
    yield dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(str(s.docs_dir / "index.html")),
            **versions.because_of(context),
        }
    )


def generate_docs(s: Settings) -> list[Path]:
    """Render the site into `<warehouse>/docs/`: `--static` gives one self-contained page that
    opens from disk (the plain site fetches its JSON, which browsers refuse over file://);
    `--no-compile --empty-catalog` document the parsed project without opening a database (the
    column descriptions come from the yml files, which document every column).

    It runs as the build does (the build's profile, vars and target folder), from the
    project's parse (`seed_parse`): the parse it leaves there is the one the build reuses.
    Steps run one after another in the run's process, so the two never share the folder at
    the same time.

    dbt runs in this process, through its public `dbtRunner`: dagster-dbt has imported dbt
    here already, so a subprocess would only import it again (2.7 against 1.3 CPU s on the
    bundled sample). dbtRunner's invocations must not overlap; the steps run one at a time, and
    dagster-dbt resets dbt's adapters and event logger before each of its own commands. As no
    database is opened, the profile's paths (relative to the warehouse, where `talent-dbt`
    starts the build) are rendered but never resolved. dbt's own lines stay out of the run's
    output (`--quiet`); its errors are kept for the failure's description."""
    from dbt.cli.main import dbtRunner

    target = target_dir(s)
    target.mkdir(parents=True, exist_ok=True)
    seed_parse(target)
    # `docs generate --no-compile` documents the manifest it finds in the target folder: the
    # project's own parse (`ensure_manifest`), never a build's older one
    shutil.copy2(dbt_project.manifest_path, target / "manifest.json")
    args = ["--quiet", "docs", "generate", "--static", "--no-compile", "--empty-catalog"]
    args += ["--target-path", str(target), "--project-dir", str(dbt_project.project_dir)]
    args += ["--profiles-dir", str(dbt_project.profiles_dir or dbt_project.project_dir)]
    args += vars_args(s)
    errors: list[str] = []

    def keep_errors(event) -> None:
        if event.info.level == "error":
            errors.append(event.info.msg)

    env = {**s.dbt_env(in_warehouse=True), "DBT_SEND_ANONYMOUS_USAGE_STATS": "false"}
    with dbt_environment(env):
        done = dbtRunner(callbacks=[keep_errors]).invoke(args)
    if not done.success:
        said = "; ".join(errors)[-1500:] or repr(done.exception)
        raise dg.Failure(
            description=f"dbt docs generate failed; the warehouse itself is unaffected. "
            f"dbt said: {said}"
        )
    s.docs_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(target / "static_index.html", target / "index.html")
    copied = []
    for name in DOCS_FILES:
        shutil.copy2(target / name, s.docs_dir / name)
        copied.append(s.docs_dir / name)
    return copied
