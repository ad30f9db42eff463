"""What a run rebuilds: one rule, in Dagster's own terms (code versions and data versions).

Every asset has a **code version**: a hash of the code that computes it and of the settings it
reads (`with_code_versions`, applied once to the whole graph by `build_definitions`). Every
materialisation records a **data version** (Dagster does this): for the raw exports and the
panels the statistics read, a hash of the content (`content_version`); for every other asset
Dagster's own default, the hash of its code version and its inputs' data versions. Dagster
records with each materialisation the code version and the data versions of the inputs it was
computed from, and the UI shows an asset as stale, with the reason, when either moved on.

The rule, used the same way by every step that can keep its output (`assess`):

    an asset is kept when it was materialised before, its code version is the one recorded
    then, every upstream's data version is the one it was computed from, its table (or file)
    is still there, and its blocking checks passed when they were last evaluated.

A kept asset is materialised again with its previous data version and the metadata
`kept_from_run` (the run that computed it), so downstream steps see unchanged inputs and keep
too. Its checks are not evaluated again and not reported: the UI shows their last evaluation,
with its run, and the run summary lists them as kept. A check step evaluates a check only when
the asset's data version differs from the one the check last evaluated (`check_is_current`).

Ingestion always runs (it is what looks at the sources folder) and the report always renders
when asked for; everything else follows the rule. The one thing the rule does not decide is
inside a raw check: each delivery's rows are validated once, when the check first sees the
delivery (`pipelines/lib/quality/kept.py`), so a night with one new file validates that file.
"""

from __future__ import annotations

import hashlib
import importlib.util
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from graphlib import TopologicalSorter
from pathlib import Path

import dagster as dg

from pipelines.lib.settings import Settings

# The tag Dagster writes the data version of a materialisation under (shown in the UI).
DATA_VERSION_TAG = "dagster/data_version"
# Metadata of a kept materialisation: the run whose computation it keeps.
KEPT_FROM_RUN = "kept_from_run"
# metadata of what a step computed: why it did (`StepVerdict.because`), beside `kept_from_run`
COMPUTED_BECAUSE = "computed_because"
# How a verdict names an upstream whose data moved on (what lets dbt build incrementally).
NEW_DATA = "new data in "
NEVER_COMPUTED = "never computed"
# Metadata of every check result: the asset's data version the check evaluated.
CHECKED_DATA_VERSION = "checked_data_version"

# The settings each step reads, by its step (node) name: they are part of its code version,
# so changing one rebuilds what reads it (and what depends on that). Ingestion, the source
# deliveries and the docs' vars aside, nothing else reads a setting that changes its output.
SETTINGS_READ: dict[str, tuple[str, ...]] = {
    "warehouse_dbt": (
        "min_group_size",
        "scope_division",
        "source_precedence",
        "pseudonym_key",
        "build_target",
        "build_dsn",
    ),
    "warehouse__dbt_docs": ("min_group_size", "scope_division", "source_precedence"),
    "certification_statistics": ("min_group_size",),
    "marts__operations_effect": ("min_group_size",),
    "programme_career_statistics": ("min_group_size",),
    "marts__programme_costs": ("min_group_size", "assumptions"),
    "roi_tables": ("assumptions",),
    "workforce_plan": ("min_group_size", "assumptions", "fleet_plan"),
    "warehouse__published": ("min_group_size", "publish_dsn", "publish_reader_role"),
    "report__quarterly_talent_report": ("min_group_size", "assumptions"),
}


def source_version(*parts: str) -> str:
    """A short hash of the code in `parts`: Python packages or modules by dotted name (their
    source files, found without importing them) or files and folders of the checkout."""
    digest = hashlib.sha256()
    for part in parts:
        for path in _source_files(part):
            digest.update(path.name.encode())
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]


def _source_files(part: str) -> list[Path]:
    path = Path(part)
    if path.exists():
        return sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    spec = importlib.util.find_spec(part)
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"no module or file {part!r} to version")
    origin = Path(spec.origin)
    if origin.name == "__init__.py":
        return sorted(origin.parent.rglob("*.py"))
    return [origin]


def settings_text(settings: Settings, names: Iterable[str]) -> str:
    """The values of the named settings as one text; the pseudonym key and the assumptions file
    are hashed (the key never appears in Dagster's records)."""
    out = []
    for name in names:
        if name == "pseudonym_key":
            value = hashlib.sha256(settings.pseudonym_key.encode()).hexdigest()[:16]
        elif name == "assumptions":
            path = Path(settings.assumptions_file)
            content = path.read_bytes() if path.exists() else b"(missing)"
            value = hashlib.sha256(content).hexdigest()[:16]
        elif name == "fleet_plan":  # the planning inputs under <sources>/plans/
            digest = hashlib.sha256()
            for path in sorted((Path(settings.sources_dir) / "plans").glob("*")):
                if path.is_file():
                    digest.update(path.name.encode() + path.read_bytes())
            value = digest.hexdigest()[:16]
        else:
            value = str(getattr(settings, name))
        out.append(f"{name}={value}")
    return ";".join(out)


def combined(*texts: str | None) -> str:
    """One short code version from several parts."""
    return hashlib.sha256("\n".join(t or "" for t in texts).encode()).hexdigest()[:16]


def with_code_versions(assets: Sequence, settings: Settings) -> list:
    """`assets` with the settings each step reads folded into its code version."""
    out = []
    for item in assets:
        if not isinstance(item, dg.AssetsDefinition) or not item.is_executable:
            out.append(item)
            continue
        names = SETTINGS_READ.get(item.node_def.name, ())
        if not names:
            out.append(item)
            continue
        text = settings_text(settings, names)
        out.append(
            item.map_asset_specs(
                lambda spec, text=text: spec.replace_attributes(
                    code_version=combined(spec.code_version, text)
                )
            )
        )
    return out


def content_version(con, sql: str, *extra: str) -> str:
    """The data version of what `sql` returns: its row count and an order-independent sum of
    row hashes (DuckDB), with `extra` texts. Equal content gives an equal version."""
    ((rows, hashed),) = con.execute(
        f"select count(*), coalesce(sum(hash(t)::hugeint), 0) from ({sql}) as t"
    ).fetchall()
    return combined(f"{rows}:{hashed}", *extra)


def raw_data_version(settings: Settings, export: str) -> str | None:
    """The data version of `raw/<export>`: the deliveries its current rows come from (each
    file's content hash, the hash of its archive copy when an erasure or the retention policy
    rewrote it, status and counts in the manifest; a delivery of content already loaded
    changes nothing) and the warehouse they were loaded into. None before the first load."""
    from pipelines.lib import db

    if not settings.raw_db.exists():
        return None
    with db.connect(settings.raw_db, read_only=True) as con:
        if not con.execute(
            "select count(*) from duckdb_tables() where table_name = 'manifest'"
        ).fetchone()[0]:
            return None
        sql = (
            "select file_id, archive_sha256, status, rows_loaded, rows_quarantined from manifest "
            f"where export = '{export}' and status <> 'duplicate'"
        )
        return content_version(con, sql, str(Path(settings.warehouse_dir).resolve()))


def tables_in(path: Path) -> Callable[[dg.AssetKey], bool]:
    """`exists` for assets that are tables of a DuckDB file, keyed `<schema>/<table>`: the
    file's tables are read once."""
    from pipelines.lib import db

    tables: set[tuple[str, ...]] = set()
    if Path(path).exists():
        with db.connect(path, read_only=True) as con:
            tables = {
                tuple(row)
                for row in con.execute(
                    "select schema_name, table_name from duckdb_tables() union all "
                    "select schema_name, view_name from duckdb_views() where not internal"
                ).fetchall()
            }
    return lambda key: tuple(key.path) in tables


def latest_data_version(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """The data version of the asset's latest materialisation (or observation); None when
    Dagster has none (never materialised, or an external source such as `raw/manifest`)."""
    record = instance.get_latest_data_version_record(key)
    if record is None:
        return None
    return (record.event_log_entry.tags or {}).get(DATA_VERSION_TAG)


@dataclass(frozen=True)
class Verdict:
    """One asset of a step: kept, or what makes it be computed (`changes`)."""

    key: dg.AssetKey
    changes: tuple[str, ...] = ()
    data_version: str | None = None
    computed_in_run: str | None = None

    @property
    def kept(self) -> bool:
        return not self.changes


@dataclass(frozen=True)
class StepVerdict:
    """A step keeps its outputs only when every asset it computes is kept."""

    verdicts: Mapping[dg.AssetKey, Verdict] = field(default_factory=dict)

    @property
    def kept(self) -> bool:
        return bool(self.verdicts) and all(v.kept for v in self.verdicts.values())

    def reasons(self) -> str:
        """Why the step computes: each change with the first assets it concerns, at most three
        changes ("code or settings changed: marts/a, marts/b (and 3 more); new data in raw/x:
        ..."), or "never computed" when none of them was computed before."""
        by_change: dict[str, list[str]] = {}
        for v in self.verdicts.values():
            for change in v.changes:
                by_change.setdefault(change, []).append(v.key.to_user_string())
        if set(by_change) == {NEVER_COMPUTED}:
            return NEVER_COMPUTED
        parts = [
            f"{change}: {', '.join(keys[:2])}"
            + (f" (and {len(keys) - 2} more)" if keys[2:] else "")
            for change, keys in by_change.items()
        ]
        more = f" (and {len(parts) - 3} more reasons)" if parts[3:] else ""
        return "; ".join(parts[:3]) + more

    def because(self) -> dict[str, str]:
        """Metadata for each output of a step that computes: why it does (`reasons`). The UI
        shows it with the materialisation; the run summary and record name it per step."""
        return {COMPUTED_BECAUSE: self.reasons()}

    def computed_in(self) -> list[str]:
        return sorted({v.computed_in_run for v in self.verdicts.values() if v.computed_in_run})


def assess(
    context: dg.AssetExecutionContext,
    exists: Callable[[dg.AssetKey], bool],
    keys: Iterable[dg.AssetKey] | None = None,
) -> StepVerdict:
    """The rule (module docstring) for each asset of this step (default: the selected ones).

    `exists(key)` says whether the asset's table or file is still where it was written: a
    warehouse folder that was deleted, or a build file replaced by another, is rebuilt even
    when Dagster's records say it is current.
    """
    instance = context.instance
    assets_def = context.assets_def
    code_versions = assets_def.code_versions_by_key
    blocking = {}
    for spec in assets_def.check_specs:
        if spec.blocking:
            blocking.setdefault(spec.asset_key, []).append(spec)
    verdicts = {}
    for key in keys if keys is not None else context.selected_asset_keys:
        provenance = context.get_asset_provenance(key)
        if provenance is None:
            verdicts[key] = Verdict(key, (NEVER_COMPUTED,))
            continue
        changes = []
        if provenance.code_version != (code_versions.get(key) or provenance.code_version):
            changes.append("code or settings changed")
        for dep in sorted(assets_def.asset_deps.get(key, ()), key=lambda k: k.to_user_string()):
            current = latest_data_version(instance, dep)
            recorded = provenance.input_data_versions.get(dep)
            if current is not None and (recorded is None or recorded.value != current):
                changes.append(f"{NEW_DATA}{dep.to_user_string()}")
        for spec in blocking.get(key, []):
            evaluation, _ = last_evaluation(instance, spec.key)
            if evaluation is not None and not evaluation.passed:
                changes.append(f"its check {spec.name} did not pass when last evaluated")
        if not changes and not exists(key):
            changes.append("its table is missing")
        latest = instance.get_latest_materialization_event(key)
        verdicts[key] = Verdict(
            key,
            tuple(changes),
            data_version=latest_data_version(instance, key),
            computed_in_run=_computed_in(latest),
        )
    return StepVerdict(verdicts)


def last_evaluation(instance: dg.DagsterInstance, check_key: dg.AssetCheckKey):
    """(the check's last finished evaluation, its run id), or (None, None). The latest record
    may be this run's own, still planned."""
    history = instance.event_log_storage.get_asset_check_execution_history(check_key, limit=5)
    for record in history:
        event = record.event.dagster_event if record.event is not None else None
        data = event.event_specific_data if event is not None else None
        if isinstance(data, dg.AssetCheckEvaluation):
            return data, record.run_id
    return None, None


def _computed_in(entry) -> str | None:
    """The run that computed a materialisation: its own run, or the run a kept one keeps."""
    if entry is None:
        return None
    materialization = entry.asset_materialization
    kept = materialization.metadata.get(KEPT_FROM_RUN) if materialization else None
    return str(getattr(kept, "value", kept)) if kept is not None else entry.run_id


def kept_results(
    context: dg.AssetExecutionContext, verdict: StepVerdict, note: str
) -> Iterator[dg.MaterializeResult]:
    """What a kept step yields: each asset materialised again with its previous data version,
    in dependency order, naming the run that computed it. No check results: the checks were
    not evaluated in this run."""
    keys = in_dependency_order(context.assets_def, verdict.verdicts)
    for key in keys:
        v = verdict.verdicts[key]
        yield dg.MaterializeResult(
            asset_key=key,
            data_version=dg.DataVersion(v.data_version) if v.data_version else None,
            metadata={KEPT_FROM_RUN: v.computed_in_run or "", "kept": note},
        )


def in_dependency_order(assets_def: dg.AssetsDefinition, keys) -> list[dg.AssetKey]:
    """`keys` with every asset after the assets it depends on (Dagster requires a multi-asset
    to yield its assets in that order)."""
    selected = set(keys)
    graph = {k: assets_def.asset_deps.get(k, set()) & selected for k in selected}
    return list(TopologicalSorter(graph).static_order())


@dataclass(frozen=True)
class CheckVerdict:
    """Whether a check must be evaluated now, and if not, the run that last evaluated it."""

    evaluate: bool
    data_version: str | None
    evaluated_in_run: str | None = None


def check_is_current(
    instance: dg.DagsterInstance, check_key: dg.AssetCheckKey, rules_version: str
) -> CheckVerdict:
    """A check is evaluated again unless its last evaluation passed (or only warned) on the
    asset's current data version with these rules (`rules_version`)."""
    current = latest_data_version(instance, check_key.asset_key)
    evaluation, run_id = last_evaluation(instance, check_key)
    if current is None or evaluation is None:
        return CheckVerdict(True, current)
    meta = {k: getattr(v, "value", v) for k, v in (evaluation.metadata or {}).items()}
    same = meta.get(CHECKED_DATA_VERSION) == current and meta.get("rules_version") == rules_version
    blocked = not evaluation.passed and evaluation.severity == dg.AssetCheckSeverity.ERROR
    if not same or blocked:
        return CheckVerdict(True, current)
    return CheckVerdict(False, current, run_id)
