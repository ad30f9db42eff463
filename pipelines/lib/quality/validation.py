"""Run the suites with Great Expectations and turn its results into advice.

Great Expectations is imported inside `run_suites` only: importing it costs seconds, and the
Dagster definitions must load fast. Each call uses an ephemeral context (nothing is stored but
the Data Docs site) and the SUMMARY result format. Sample values of personal columns (e-mails)
are removed from the results before the Data Docs are written, and every sample row is reduced
to its file name and line, so the site can be opened by whoever fixes the exports without
exposing who is in them.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import pandas as pd

from pipelines.lib.quality.frames import (
    LOCATION_COLUMNS,
    Frames,
    MissingTable,
    active_files,
    read_mart_frames,
    read_raw_frames,
)
from pipelines.lib.quality.kept import (
    STORE_FILE,
    OutcomeStore,
    Plan,
    merge,
    rules_fingerprint,
    to_json,
)
from pipelines.lib.quality.rules import (
    MART_SUITES,
    RAW_SUITES,
    Rule,
    Severity,
    rules_for,
)

# Rows named per failing expectation (file and line), in results and Data Docs.
SAMPLE_SIZE = 10
DATA_DOCS_DIR = "data_docs"


@dataclass(frozen=True)
class Outcome:
    """The result of one rule on one run."""

    rule: Rule
    passed: bool
    observed_value: Any = None
    unexpected_count: int | None = None
    unexpected_percent: float | None = None
    element_count: int | None = None
    locations: tuple[str, ...] = ()
    message: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            "expectation": self.rule.name,
            "type": self.rule.expectation,
            "severity": str(self.rule.severity),
            "observed_value": _jsonable(self.observed_value),
            "unexpected_count": self.unexpected_count,
            "unexpected_percent": (
                None if self.unexpected_percent is None else round(self.unexpected_percent, 2)
            ),
            "element_count": self.element_count,
            "where": list(self.locations),
            "advice": self.message,
        }


@dataclass(frozen=True)
class SuiteResult:
    """All outcomes of one suite (`raw.<export>` or `marts.<model>`)."""

    suite: str
    outcomes: tuple[Outcome, ...]
    data_docs: Path | None = field(default=None, compare=False)

    @property
    def asset_key_path(self) -> list[str]:
        return self.suite.split(".", 1)

    @property
    def failures(self) -> tuple[Outcome, ...]:
        return tuple(o for o in self.outcomes if not o.passed)

    @property
    def passed(self) -> bool:
        return not self.failures

    @property
    def severity(self) -> Severity | None:
        """The worst severity among the failures; None when everything passed."""
        if any(o.rule.severity is Severity.ERROR for o in self.failures):
            return Severity.ERROR
        return Severity.WARN if self.failures else None

    def outcome(self, rule_name: str) -> Outcome:
        return next(o for o in self.outcomes if o.rule.name == rule_name)

    def summary(self) -> str:
        if self.passed:
            return f"{self.suite}: all {len(self.outcomes)} expectations met"
        errors = sum(o.rule.severity is Severity.ERROR for o in self.failures)
        return (
            f"{self.suite}: {len(self.failures)} of {len(self.outcomes)} expectations failed "
            f"({errors} ERROR, {len(self.failures) - errors} WARN)"
        )

    def metadata(self) -> dict[str, Any]:
        """JSON-safe metadata: every failing expectation with its observed value and count."""
        return {
            "suite": self.suite,
            "summary": self.summary(),
            "expectations_evaluated": len(self.outcomes),
            "expectations_failed": len(self.failures),
            "failing_expectations": [o.as_dict() for o in self.failures],
            "data_docs": str(self.data_docs) if self.data_docs else None,
        }


def _jsonable(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set):
        return [_jsonable(v) for v in value]
    if isinstance(value, datetime | date | pd.Timestamp):
        return value.isoformat()
    if hasattr(value, "item") and callable(value.item):  # numpy scalars
        try:
            return value.item()
        except (ValueError, TypeError):
            return str(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def _location(entry: dict[str, Any]) -> str:
    if "_file_name" in entry:
        return f"{entry.get('_file_name')} line {entry.get('_line')}"
    return f"column {entry.get('column')}"


def _advice(rule: Rule, result: dict[str, Any], locations: Sequence[str]) -> str:
    """A failure in words that say what is wrong, where, and what to do."""
    target = rule.suite
    what = rule.name.replace("_", " ")
    if rule.batch == "deliveries":
        return (
            f"{target}: {what} failed (observed {result.get('observed_value_text')}). "
            f"{rule.why}. See raw.quarantine and raw.manifest for the files and lines, fix "
            "the export and deliver it again as a new version (_v<N+1>)."
        )
    count = result.get("unexpected_count")
    total = result.get("element_count")
    if count is None or total is None:
        return (
            f"{target}: {what} failed, observed {result.get('observed_value_text')!r}. {rule.why}."
        )
    where = f" e.g. {', '.join(locations)}." if locations else ""
    fix = (
        " Correct the export and deliver the file again as a new version (_v<N+1>)."
        if rule.suite.startswith("raw.")
        else " The model that builds this mart needs a fix."
    )
    return f"{target}: {what} fails for {count} of {total} rows.{where} {rule.why}.{fix}"


def _summarise(rule: Rule, result: dict[str, Any], success: bool, exception: str | None) -> Outcome:
    if exception:
        return Outcome(
            rule,
            False,
            observed_value=exception,
            message=f"{rule.suite}: {rule.name.replace('_', ' ')} could not be evaluated: "
            f"{exception} Check that the table has the column the contract names.",
        )
    locations = tuple(
        _location(e)
        for e in (result.get("partial_unexpected_index_list") or [])
        if isinstance(e, dict) and ("_file_name" in e or "column" in e)
    )[:SAMPLE_SIZE]
    observed = result.get("observed_value")
    if observed is None and result.get("unexpected_count") is not None:
        observed = (
            [] if rule.personal else list(result.get("partial_unexpected_list") or [])[:SAMPLE_SIZE]
        )
    if "partial_missing_list" in result:  # set equality: values too many and missing
        observed = {
            "unexpected": list(result.get("partial_unexpected_list") or []),
            "missing": list(result.get("partial_missing_list") or []),
        }
    if rule.expectation == "ExpectTableColumnsToMatchSet" and not success:
        observed = {"missing": (result.get("details") or {}).get("mismatched", {}).get("missing")}
    text = dict(result)
    text["observed_value_text"] = _jsonable(observed)
    return Outcome(
        rule,
        bool(success),
        observed_value=_jsonable(observed),
        unexpected_count=result.get("unexpected_count"),
        unexpected_percent=result.get("unexpected_percent"),
        element_count=result.get("element_count"),
        locations=locations,
        message="" if success else _advice(rule, text, locations),
    )


def _scrub(result_dict: dict[str, Any], rule: Rule) -> None:
    """Remove personal sample values; keep only file and line of sample rows."""
    if rule.personal:
        for k in ("partial_unexpected_list", "partial_unexpected_counts", "unexpected_list"):
            if k in result_dict:
                result_dict[k] = []
    entries = result_dict.get("partial_unexpected_index_list")
    if entries:
        result_dict["partial_unexpected_index_list"] = [
            {k: v for k, v in e.items() if k in (*LOCATION_COLUMNS, "column")}
            if isinstance(e, dict)
            else e
            for e in entries
        ]


def _result_format(frame: pd.DataFrame) -> dict[str, Any]:
    # No "unexpected index query": for pandas it is a `df.filter(items=[...])` string of every
    # failing row's index in a frame that no longer exists once the check is done (the sample
    # rows name their file and line instead); building it cost about 1 CPU s at 50,000
    # employees.
    fmt: dict[str, Any] = {
        "result_format": "SUMMARY",
        "partial_unexpected_count": SAMPLE_SIZE,
        "return_unexpected_index_query": False,
    }
    if all(c in frame.columns for c in LOCATION_COLUMNS):
        fmt["unexpected_index_column_names"] = list(LOCATION_COLUMNS)
    elif "column" in frame.columns:  # the schema frame: one row per contract column
        fmt["unexpected_index_column_names"] = ["column"]
    return fmt


class _Validator:
    """One ephemeral Great Expectations context for a batch of suites and their Data Docs."""

    def __init__(self, docs_dir: Path | None) -> None:
        import great_expectations as gx
        import great_expectations.expectations as gxe
        from great_expectations.data_context.types.base import (
            DataContextConfig,
            InMemoryStoreBackendDefaults,
            ProgressBarsConfig,
        )
        from great_expectations.expectations.row_conditions import Column

        self.Column = Column

        self.gx, self.gxe = gx, gxe
        # No telemetry: the pipeline runs where outbound traffic is not expected.
        config = DataContextConfig(
            store_backend_defaults=InMemoryStoreBackendDefaults(), analytics_enabled=False
        )
        self.context = gx.get_context(mode="ephemeral", project_config=config)
        self.context.variables.progress_bars = ProgressBarsConfig(globally=False)
        self.docs_dir = docs_dir
        if docs_dir is not None:
            self.context.add_data_docs_site(
                site_name="quality",
                site_config={
                    "class_name": "SiteBuilder",
                    "store_backend": {
                        "class_name": "TupleFilesystemStoreBackend",
                        "base_directory": str(docs_dir),
                    },
                    "site_index_builder": {"class_name": "DefaultSiteIndexBuilder"},
                },
            )

    def validate(self, name: str, frame: pd.DataFrame, rules: Sequence[Rule]) -> list[Outcome]:
        from great_expectations.data_context.types.resource_identifiers import (
            ExpectationSuiteIdentifier,
            ValidationResultIdentifier,
        )

        gx = self.gx
        by_name = {r.name: r for r in rules}
        expectations = []
        for r in rules:
            cls = getattr(self.gxe, r.expectation)
            kwargs = dict(r.kwargs)
            if r.only_where:
                kwargs["row_condition"] = self.Column(r.only_where) == True  # noqa: E712
            expectations.append(cls(**kwargs, meta={"rule": r.name}))
        # The whole suite at once: adding expectations one by one to a stored suite saves it
        # again after each one.
        suite = self.context.suites.add(gx.ExpectationSuite(name=name, expectations=expectations))
        # A data source of its own for each frame, deleted after the run: the library's
        # execution engine (one per data source) caches the frame and every metric computed on
        # it (row masks of each expectation) for its whole life, about 100 MB a part of
        # 200,000 rows; dropping the source frees them, so the checks' memory stays flat while
        # large exports are validated in parts.
        source = self.context.data_sources.add_pandas(f"frame:{name}")
        batch = source.add_dataframe_asset(name).add_batch_definition_whole_dataframe("current")
        vd = self.context.validation_definitions.add(
            gx.ValidationDefinition(name=name, data=batch, suite=suite)
        )
        try:
            res = vd.run(batch_parameters={"dataframe": frame}, result_format=_result_format(frame))
        finally:
            self.context.validation_definitions.delete(name)
            self.context.data_sources.delete(source.name)
        outcomes = []
        for er in res.results:
            rule = by_name[er.expectation_config.meta["rule"]]
            info = er.exception_info or {}
            if "raised_exception" not in info:  # keyed by metric id when metrics failed
                info = next(iter(info.values()), {}) if info else {}
            exception = info.get("exception_message") if info.get("raised_exception") else None
            outcomes.append(_summarise(rule, dict(er.result or {}), er.success, exception))
            scrubbed = dict(er.result or {})
            _scrub(scrubbed, rule)
            er.result = scrubbed
            if exception:
                er.exception_info = {
                    "raised_exception": True,
                    "exception_message": exception,
                    "exception_traceback": None,
                }
        if self.docs_dir is not None:
            key = ValidationResultIdentifier(
                expectation_suite_identifier=ExpectationSuiteIdentifier(name=name),
                run_id=res.meta["run_id"],
                batch_identifier=res.batch_id,
            )
            self.context.validation_results_store.set(key, res)
        order = {r.name: i for i, r in enumerate(rules)}
        return sorted(outcomes, key=lambda o: order[o.rule.name])

    def build_docs(self) -> Path | None:
        if self.docs_dir is None:
            return None
        self.context.build_data_docs(site_names=["quality"])
        return self.docs_dir / "index.html"


def _missing(rules: Iterable[Rule], problem: str) -> tuple[Outcome, ...]:
    """Every rule of a suite whose table is missing: the presence rule fails, the rest too."""
    out = []
    for r in rules:
        msg = problem if r.expectation == "table_exists" else f"not evaluated: {problem}"
        out.append(Outcome(r, False, observed_value="table missing", message=msg))
    return tuple(out)


def _validate_parts(validator, suite: str, parts, rules: Sequence[Rule]) -> list[Outcome]:
    """The row rules over the current rows read in parts (`Frames.row_chunks`), one part in
    memory at a time; each rule's outcomes add up over the parts (`kept.merge`)."""
    found: dict[str, list[dict[str, Any]]] = {}
    for i, read in enumerate(parts, start=1):
        frame = read()
        for o in validator.validate(f"{suite}.part{i}", frame, rules):
            found.setdefault(o.rule.name, []).append(to_json(o))
        del frame
    return [Outcome(r, **merge(r, found[r.name], _advice)) for r in rules if r.name in found]


def run_suites(
    suites: Sequence[str],
    read: Any,
    docs_dir: Path | None,
) -> list[SuiteResult]:
    """Validate `suites`; `read(suite) -> Frames` supplies the frames (raises MissingTable)."""
    if docs_dir is not None and docs_dir.exists():
        shutil.rmtree(docs_dir)  # the site shows the latest run only
    validator = _Validator(docs_dir)
    results: list[tuple[str, tuple[Outcome, ...]]] = []
    for suite in suites:
        rules = rules_for(suite)
        try:
            frames: Frames = read(suite)
        except MissingTable as exc:
            results.append((suite, _missing(rules, str(exc))))
            continue
        outcomes: list[Outcome] = []
        for batch, frame in frames.frames.items():
            batch_rules = [r for r in rules if r.batch == batch]
            if batch == "rows" and frames.row_chunks and batch_rules:
                outcomes.extend(_validate_parts(validator, suite, frames.row_chunks, batch_rules))
                continue
            if batch_rules and frame is not None:
                gx_name = suite if batch == "rows" else f"{suite}.{batch}"
                outcomes.extend(validator.validate(gx_name, frame, batch_rules))
        present = [Outcome(r, True) for r in rules if r.batch == "table"]
        results.append((suite, tuple(present + outcomes)))
    index = validator.build_docs()
    return [SuiteResult(s, o, index) for s, o in results]


def run_raw_suites(settings: Any, exports: Sequence[str] | None = None) -> list[SuiteResult]:
    """Validate the current rows of every raw export (or `exports`) in `settings.raw_db`.

    Each delivery's rows are validated once; later runs validate the new deliveries only and
    report the outcomes of the earlier ones with them (`pipelines.lib.quality.kept`). Data Docs
    go to `<quality_dir>/data_docs/raw/index.html` (the rows validated by the run that last
    validated any).
    """
    suites = [f"raw.{e}" for e in exports] if exports is not None else list(RAW_SUITES)
    store = OutcomeStore(Path(settings.quality_dir) / STORE_FILE)
    docs_dir = Path(settings.quality_dir) / DATA_DOCS_DIR / "raw"
    plans: dict[str, tuple[Plan, list[str], str]] = {}

    def read(suite: str) -> Frames:
        export = suite.split(".", 1)[1]
        active = active_files(settings.raw_db, export)
        fingerprint = rules_fingerprint(r for r in rules_for(suite) if r.batch == "rows")
        plan = store.plan(suite, active, fingerprint)
        frames = read_raw_frames(settings.raw_db, export, plan.validate)
        # only a suite whose rows could be read keeps outcomes (a missing table is not kept)
        plans[suite] = (plan, active if plan.validate is None else plan.validate, fingerprint)
        return frames

    results = run_suites(suites, read, docs_dir)
    merged = []
    for result in results:
        if result.suite not in plans:
            merged.append(result)
            continue
        plan, files, fingerprint = plans[result.suite]
        new = [o for o in result.outcomes if o.rule.batch == "rows"]
        store.record(result.suite, fingerprint, plan, files, new)
        merged.append(_with_kept(result, plan))
    store.save()
    return merged


def _with_kept(result: SuiteResult, plan: Plan) -> SuiteResult:
    """The suite's result with the kept row outcomes of earlier deliveries folded in."""
    if not plan.kept:
        return result
    new = {o.rule.name: to_json(o) for o in result.outcomes if o.rule.batch == "rows"}
    outcomes = []
    for rule in rules_for(result.suite):
        if rule.batch != "rows":
            outcomes.extend(o for o in result.outcomes if o.rule.name == rule.name)
            continue
        parts = [o for b in plan.kept for o in b["outcomes"] if o["rule"] == rule.name]
        parts += [new[rule.name]] if rule.name in new else []
        if parts:
            outcomes.append(Outcome(rule, **merge(rule, parts, _advice)))
    return SuiteResult(result.suite, tuple(outcomes), result.data_docs)


def run_mart_suites(settings: Any, models: Sequence[str] | None = None) -> list[SuiteResult]:
    """Validate the key marts (or `models`) in `settings.build_db`, schema marts. Data Docs go
    to `<quality_dir>/data_docs/marts/index.html`."""
    suites = [f"marts.{m}" for m in models] if models is not None else list(MART_SUITES)
    docs_dir = Path(settings.quality_dir) / DATA_DOCS_DIR / "marts"
    return run_suites(
        suites, lambda s: read_mart_frames(settings.build_db, s.split(".", 1)[1]), docs_dir
    )
