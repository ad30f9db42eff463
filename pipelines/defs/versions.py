"""What a run rebuilds: one rule, in Dagster's own terms (code versions and data versions),
decided once, before the run, from the instance's records (`decide`).

Every asset has a **code version**: a hash of the code that computes it and of the settings it
reads (`with_code_versions`, applied once to the whole graph by `build_definitions`). Every
materialisation records a **data version** (Dagster does this): for the raw exports and the
panels the statistics read, a hash of the content (`content_version`; the dbt models say so in
their metadata, `DATA_VERSION_OF`); for every other asset Dagster's own default, the hash of its
code version and its inputs' data versions. Dagster records with each materialisation the code
version and the data versions of the inputs it was computed from, and the UI shows an asset as
stale, with the reason, when either moved on.

The rule:

    an asset is kept when it was materialised before, its code version is the one recorded
    then, every upstream's data version is the one it was computed from, its table (or file)
    is still there, and its blocking checks passed when they were last evaluated.

`decide` applies it to every step, upstream first, before a run starts, and a run computes only
what it selected; a kept asset is not in the run at all (its checks are not planned, so none
ends without a result). A step runs as a whole when any of its assets changed. What an asset
that runs does to those downstream is known before the run for Dagster's default data version
(a new one exactly when its code or an input changed: a table rebuilt only because it was
missing keeps its version) and not for a content version: an asset downstream of one that runs
*waits* (it is decided again once that run has recorded the new content), unless it changed
anyway, when it runs in the same run after it. An asset below a blocking check that did not
pass, outside the run, is held back. The reasons (`StepVerdict.reasons`) go to the run's tags
(`BECAUSE_TAG`), and each step writes its own into the metadata `computed_because`
(`because_of`); `new_data_only` tells dbt that only new raw data is why it builds
(incrementally).

A night is therefore a few runs: ingestion (always: it is what looks at the sources folder)
with the raw checks, then each decision until nothing is left to decide (`talent run` in this
process; the daemon through the run-status sensor `next_nightly_run`). A check step evaluates
a check only when the asset's data version differs from the one the check last evaluated
(`check_is_current`); inside a raw check each delivery's rows are validated once, when the
check first sees the delivery (`pipelines/lib/quality/kept.py`). The report renders whenever it
is asked for.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
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
CODE_CHANGED = "code or settings changed"
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
    "marts__workforce_plan_backtest": ("min_group_size", "assumptions"),
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


def computed_in(entry) -> str | None:
    """The run that computed a materialisation: its own run, or the run a kept one keeps."""
    if entry is None:
        return None
    materialization = entry.asset_materialization
    kept = materialization.metadata.get(KEPT_FROM_RUN) if materialization else None
    return str(getattr(kept, "value", kept)) if kept is not None else entry.run_id


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


# --- the decision before the run ---------------------------------------------------------------

# Run tag carrying the decision to the steps of a run: step (node) name -> why it computes.
BECAUSE_TAG = "talent/computed_because"
# Run tag naming the steps whose only reason is new upstream data (dbt builds incrementally).
NEW_DATA_ONLY_TAG = "talent/new_data_only"
# Asset metadata of an asset whose step reports its data version (its content): its next one
# is known only once it ran
DATA_VERSION_OF = "data_version"
# what holds back an asset whose upstream's next data version is known only once it has run
WAITS_FOR = "waits for the new data version of "


@dataclass(frozen=True)
class Step:
    """One step of the graph as the decision sees it (a Dagster assets definition)."""

    name: str
    keys: frozenset[dg.AssetKey]
    deps: Mapping[dg.AssetKey, frozenset[dg.AssetKey]]
    code_versions: Mapping[dg.AssetKey, str | None]
    content: frozenset[dg.AssetKey] = frozenset()


@dataclass
class Plan:
    """What the next run of the graph computes, decided from the instance's records alone.

    `selection`: the assets to run now (whole steps), each with its changes in `verdicts`;
    `waiting`: assets that may have to run once an upstream in `selection` has its new data
    version (content-versioned: known only after it ran), decided again after that run;
    `blocked`: assets an upstream's failed blocking check holds back (check named); every other
    asset is kept, `computed_in` naming the run that computed it."""

    verdicts: dict[dg.AssetKey, Verdict] = field(default_factory=dict)
    selection: set[dg.AssetKey] = field(default_factory=set)
    waiting: dict[dg.AssetKey, str] = field(default_factory=dict)
    blocked: dict[dg.AssetKey, str] = field(default_factory=dict)
    computed_in: dict[dg.AssetKey, str] = field(default_factory=dict)
    because: dict[str, str] = field(default_factory=dict)
    # steps whose only reason is new upstream data (dbt then builds its staging incrementally)
    new_data_only: set[str] = field(default_factory=set)

    @property
    def kept(self) -> dict[dg.AssetKey, str]:
        """Assets not in this run, each with the run that computed it."""
        out = set(self.verdicts) - self.selection - set(self.waiting) - set(self.blocked)
        return {k: self.computed_in.get(k, "") for k in sorted(out, key=str)}

    def tags(self) -> dict[str, str]:
        """The run's tags that carry the decision to its steps (`because_of`)."""
        if not self.because:
            return {}
        return {
            BECAUSE_TAG: json.dumps(self.because, sort_keys=True),
            NEW_DATA_ONLY_TAG: json.dumps(sorted(self.new_data_only)),
        }


def steps_of(defs: dg.Definitions, keys: Iterable[dg.AssetKey]) -> list[Step]:
    """The executable steps of `defs` that compute any of `keys`."""
    wanted = set(keys)
    out = []
    for item in defs.assets or []:
        if not isinstance(item, dg.AssetsDefinition) or not item.is_executable:
            continue
        if not set(item.keys) & wanted:
            continue
        out.append(
            Step(
                name=item.node_def.name,
                keys=frozenset(item.keys),
                deps={k: frozenset(item.asset_deps.get(k, ())) for k in item.keys},
                code_versions=dict(item.code_versions_by_key),
                content=frozenset(
                    k
                    for k, spec in item.specs_by_key.items()
                    if (spec.metadata or {}).get(DATA_VERSION_OF) == "content"
                ),
            )
        )
    return out


def blocking_checks(
    defs: dg.Definitions, every: bool = False
) -> dict[dg.AssetKey, list[dg.AssetCheckKey]]:
    """Each asset's blocking checks (those declared with the asset and the separate ones), or
    with `every` all its checks."""
    out: dict[dg.AssetKey, list[dg.AssetCheckKey]] = {}
    for item in [*(defs.assets or []), *(defs.asset_checks or [])]:
        for spec in getattr(item, "check_specs", None) or []:
            if spec.blocking or every:
                out.setdefault(spec.asset_key, []).append(spec.key)
    return out


def exists_in_warehouse(settings: Settings) -> Callable[[dg.AssetKey], bool]:
    """Whether an asset's table or file is still where it was written: the published file, the
    docs site, or a table of the build file (a mart with a restricted twin only with its twin:
    a build file from before the twins is computed again)."""
    from pipelines.defs.careers import EFFECT_MARTS
    from pipelines.defs.effects import with_restricted_twins

    twinned = (*EFFECT_MARTS, "certification_effect", "operations_effect")
    in_build = with_restricted_twins(tables_in(settings.build_db), twinned)

    def exists(key: dg.AssetKey) -> bool:
        if key == dg.AssetKey(["warehouse", "published"]):
            return settings.published_db.exists()
        if key == dg.AssetKey(["warehouse", "dbt_docs"]):
            return all((settings.docs_dir / n).exists() for n in ("index.html", "manifest.json"))
        return in_build(key)

    return exists


def own_changes(
    key: dg.AssetKey,
    step: Step,
    latest,
    current: Mapping[dg.AssetKey, str | None],
    failed_checks: Mapping[dg.AssetKey, list[str]],
    exists: Callable[[dg.AssetKey], bool],
) -> list[str]:
    """The rule (module docstring) for one asset, from its latest materialisation `latest`."""
    provenance = dg.DataProvenance.from_tags(latest.tags or {}) if latest is not None else None
    if provenance is None:
        return [NEVER_COMPUTED]
    changes = []
    if provenance.code_version != (step.code_versions.get(key) or provenance.code_version):
        changes.append(CODE_CHANGED)
    for dep in sorted(step.deps[key], key=lambda k: k.to_user_string()):
        recorded = provenance.input_data_versions.get(dep)
        if current.get(dep) is not None and (recorded is None or recorded.value != current[dep]):
            changes.append(f"{NEW_DATA}{dep.to_user_string()}")
    changes += [
        f"its check {name} did not pass when last evaluated" for name in failed_checks.get(key, [])
    ]
    if not changes and not exists(key):
        changes.append("its table is missing")
    return changes


def last_evaluations(instance: dg.DagsterInstance, keys: Sequence[dg.AssetCheckKey]) -> dict:
    """check -> (its last finished evaluation, its run id), for the checks evaluated before: the
    latest record of each, or, when that is only planned or skipped, the last evaluation."""
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(list(keys))
    out = {}
    for key, record in latest.items():
        event = record.event.dagster_event if record.event is not None else None
        data = event.event_specific_data if event is not None else None
        found = (data, record.run_id)
        if not isinstance(data, dg.AssetCheckEvaluation):
            found = last_evaluation(instance, key)
        if found[0] is not None:
            out[key] = found
    return out


def failed_blocking_checks(
    instance: dg.DagsterInstance, checks: Mapping[dg.AssetKey, list[dg.AssetCheckKey]]
) -> dict[dg.AssetKey, list[str]]:
    """Each asset's blocking checks whose last evaluation did not pass."""
    out: dict[dg.AssetKey, list[str]] = {}
    found = last_evaluations(instance, [c for keys in checks.values() for c in keys])
    for key, (evaluation, _) in found.items():
        if not evaluation.passed:
            out.setdefault(key.asset_key, []).append(key.name)
    return out


def decide(
    defs: dg.Definitions,
    instance: dg.DagsterInstance,
    keys: Iterable[dg.AssetKey],
    exists: Callable[[dg.AssetKey], bool],
) -> Plan:
    """The run to start now for the assets `keys` (the module docstring's rule), from the
    instance's records: each step runs, waits, is blocked or is kept as a whole."""
    steps = steps_of(defs, keys)
    owner = {k: s for s in steps for k in s.keys}
    graph = {
        s.name: {owner[d].name for k in s.keys for d in s.deps[k] if d in owner} - {s.name}
        for s in steps
    }
    by_name = {s.name: s for s in steps}
    # the assets' own records and those of their upstreams outside the decision (raw/*)
    latest = instance.get_latest_materialization_events(
        {*owner, *(d for s in steps for deps in s.deps.values() for d in deps)}
    )
    current = {k: (e.tags or {}).get(DATA_VERSION_TAG) if e else None for k, e in latest.items()}
    failed = failed_blocking_checks(instance, blocking_checks(defs))
    plan = Plan(computed_in={k: computed_in(latest[k]) for k in owner if latest.get(k)})
    # of a selected asset: its data version "same", "new" or "unknown"
    outcome: dict[dg.AssetKey, str] = {}
    for name in TopologicalSorter(graph).static_order():
        step = by_name[name]
        _decide_step(step, plan, latest, current, failed, exists, outcome)
    return plan


def nightly_keys(defs: dg.Definitions) -> list[dg.AssetKey]:
    """The assets the decision before a run decides: the nightly's, but the raw exports (every
    night ingests) and the report (rendered when asked for)."""
    skip = ("ingestion", "report")
    return [s.key for s in defs.resolve_all_asset_specs() if s.group_name not in skip]


def decide_nightly(settings: Settings, defs: dg.Definitions, instance: dg.DagsterInstance) -> Plan:
    """The next run of a night (`decide` over `nightly_keys`), for `talent run` and for the
    daemon's run-status sensor alike."""
    return decide(defs, instance, nightly_keys(defs), exists_in_warehouse(settings))


def _decide_step(step: Step, plan: Plan, latest, current, failed, exists, outcome) -> None:
    """Decide one step after every step upstream of it (`decide`): blocked when an upstream
    not in this run failed a blocking check; waiting when an upstream is still undecided, or
    when its only reason would be an upstream of this run whose next version is not known yet;
    run when any of its assets changed; else kept."""
    verdicts, undecided, unknown, blocked = {}, {}, {}, {}
    for key in step.keys:
        changes = own_changes(key, step, latest.get(key), current, failed, exists)
        for dep in sorted(step.deps[key] - step.keys, key=str):
            name = dep.to_user_string()
            if dep in plan.waiting or dep in plan.blocked:
                undecided.setdefault(key, f"{WAITS_FOR}{name}")
            elif dep not in plan.selection and failed.get(dep):
                blocked.setdefault(key, f"held back: {name}'s check {failed[dep][0]} did not pass")
            elif outcome.get(dep) == "new" and changes[:1] != [NEVER_COMPUTED]:
                changes += [f"{NEW_DATA}{name}"] if f"{NEW_DATA}{name}" not in changes else []
            elif outcome.get(dep) == "unknown":
                unknown.setdefault(key, f"{WAITS_FOR}{name}")
        verdicts[key] = Verdict(key, tuple(changes), current.get(key), plan.computed_in.get(key))
    plan.verdicts.update(verdicts)
    runs = any(v.changes for v in verdicts.values())
    if blocked:
        plan.blocked.update(dict.fromkeys(step.keys, next(iter(blocked.values()))))
    elif undecided or (unknown and not runs):
        plan.waiting.update(dict.fromkeys(step.keys, next(iter({**unknown, **undecided}.values()))))
    elif runs:
        plan.selection |= step.keys
        plan.because[step.name] = StepVerdict(verdicts).reasons()
        changes = [c for v in verdicts.values() for c in v.changes]
        if all(c.startswith(NEW_DATA) for c in changes):
            plan.new_data_only.add(step.name)
        _predict(step, latest, verdicts, outcome, plan)


def moves(changes: Iterable[str]) -> bool:
    """Whether these changes give an asset with Dagster's default data version a new one."""
    return any(c in (NEVER_COMPUTED, CODE_CHANGED) or c.startswith(NEW_DATA) for c in changes)


def _predict(step: Step, latest, verdicts, outcome, plan: Plan) -> None:
    """The data version each asset of a step that runs will have, as far as it is known before
    it runs: "unknown" for an asset that reports its own (its content: known once it ran);
    "new" when its code or an input changed (its version hashes them) or it was never
    computed; "unknown" when an input of this run is; else "same" (Dagster's default version,
    the hash of its code version and its inputs' versions, comes out as before: a table rebuilt
    only because it was missing)."""
    internal = {k: step.deps[k] & step.keys for k in step.keys}
    for key in TopologicalSorter(internal).static_order():
        entry = latest.get(key)
        provenance = dg.DataProvenance.from_tags(entry.tags or {}) if entry is not None else None
        ins = {outcome.get(d) for d in step.deps[key] if d in plan.selection}
        changes = verdicts[key].changes
        if key in step.content:
            outcome[key] = "unknown"
        elif provenance is None or "new" in ins or moves(changes):
            outcome[key] = "new"
        elif "unknown" in ins:
            outcome[key] = "unknown"
        else:
            outcome[key] = "same"


def because_of(context: dg.AssetExecutionContext) -> dict[str, str]:
    """The metadata `computed_because` of what this step computes: the reason the decision
    before the run gave (`decide`), or, for a run started without one (the UI's Materialize),
    that it was asked for."""
    decided = json.loads(context.run.tags.get(BECAUSE_TAG) or "{}")
    return {COMPUTED_BECAUSE: decided.get(context.op_def.name) or "asked for"}


def new_data_only(context: dg.AssetExecutionContext) -> bool:
    """Whether the decision before the run found only new upstream data for this step."""
    return context.op_def.name in json.loads(context.run.tags.get(NEW_DATA_ONLY_TAG) or "[]")
