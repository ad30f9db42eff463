"""Data-quality asset checks: one Great Expectations suite per raw export and key mart.

Each raw export `raw/<export>` and each key mart `marts/<model>` gets two checks over its one
suite: `quality_suite`, blocking, with severity ERROR, over the ERROR rules (a failure stops
every asset downstream: dbt, statistics, publish, so the analyst-facing warehouse keeps its
previous, checked state), and `quality_warnings`, not blocking, with severity WARN, over the
WARN rules (a failure is shown as a warning and the run continues). So a harmless finding (a
repeated row) never shows as a failed blocking check. The rules and their severities live in
`pipelines/lib/quality/rules.py` (rendered in docs/data-quality.md).

The raw checks share one step and the mart checks another, so that each group writes one Data
Docs site (`<quality_dir>/data_docs/{raw,marts}/index.html`); both can run a subset. A suite is
evaluated when its asset's data version or its rules changed since it last evaluated, or when
its blocking check did not pass then (`pipelines/defs/versions.py`); otherwise its checks are
not reported in this run (the UI keeps their last evaluation, with its run).
Great Expectations runs in this process. Large exports are read and validated in parts, and
the library's caches are emptied after each part (`pipelines/lib/quality/validation.py`), so the
checks' memory stays flat as the company grows; a child process of their own (once used to hand
that memory back) is no longer needed and would cost a second import of the library.
"""

from collections.abc import Iterator

import dagster as dg

from pipelines.defs import versions
from pipelines.defs.resources import TalentResource
from pipelines.lib.quality.rules import MART_SUITES, RAW_SUITES, Severity, rules_for

CHECK_NAME = "quality_suite"  # ERROR rules: blocking
WARN_CHECK_NAME = "quality_warnings"  # WARN rules: shown, never blocking


def suite_asset_key(suite: str) -> dg.AssetKey:
    """`raw.employees` -> AssetKey(["raw", "employees"])."""
    return dg.AssetKey(suite.split(".", 1))


def _specs(suites: tuple[str, ...], what: str) -> list[dg.AssetCheckSpec]:
    specs = []
    for s in suites:
        specs.append(
            dg.AssetCheckSpec(
                CHECK_NAME,
                asset=suite_asset_key(s),
                blocking=True,
                description=f"Great Expectations suite {s} over {what}: the ERROR rules, which "
                "block everything downstream (rules: docs/data-quality.md)",
            )
        )
        specs.append(
            dg.AssetCheckSpec(
                WARN_CHECK_NAME,
                asset=suite_asset_key(s),
                blocking=False,
                description=f"Great Expectations suite {s} over {what}: the WARN rules, shown as "
                "warnings; the run continues (rules: docs/data-quality.md)",
            )
        )
    return specs


def _markdown(failures: list[dict]) -> str:
    lines = ["| expectation | severity | observed | unexpected | where |", "|---|---|---|---|---|"]
    for f in failures:
        observed = str(f["observed_value"]).replace("|", "\\|")[:120]
        where = ", ".join(f["where"][:3])
        lines.append(
            f"| {f['expectation']} | {f['severity']} | {observed} | "
            f"{f['unexpected_count'] if f['unexpected_count'] is not None else ''} | {where} |"
        )
    return "\n".join(lines)


def rules_version(suite: str) -> str:
    """What a suite's outcome depends on besides the data: its rules, the quality code and the
    Great Expectations version."""
    from importlib.metadata import version

    from pipelines.lib.quality.kept import rules_fingerprint

    return versions.combined(
        rules_fingerprint(rules_for(suite)),
        versions.source_version("pipelines.lib.quality"),
        f"great_expectations {version('great_expectations')}",
    )


def to_check_results(result, checked: dict | None = None) -> list[dg.AssetCheckResult]:
    """One `SuiteResult` as its two Dagster check results: `quality_suite` (ERROR rules,
    severity ERROR) and `quality_warnings` (WARN rules, severity WARN). `checked` (metadata)
    names the data version and rules the suite evaluated."""
    meta = result.metadata()
    errors = [f for f in meta["failing_expectations"] if f["severity"] == str(Severity.ERROR)]
    warnings = [f for f in meta["failing_expectations"] if f["severity"] != str(Severity.ERROR)]
    return [
        _check_result(result, meta, CHECK_NAME, dg.AssetCheckSeverity.ERROR, errors, checked),
        _check_result(result, meta, WARN_CHECK_NAME, dg.AssetCheckSeverity.WARN, warnings, checked),
    ]


def _check_result(result, meta: dict, name: str, severity, failing: list[dict], checked=None):
    rules = "ERROR" if severity == dg.AssetCheckSeverity.ERROR else "WARN"
    metadata: dict[str, object] = {
        **(checked or {}),
        "suite": meta["suite"],
        "expectations_evaluated": meta["expectations_evaluated"],
        "expectations_failed": len(failing),
        "failing_expectations": dg.MetadataValue.json(failing),
    }
    if failing:
        metadata["failures"] = dg.MetadataValue.md(_markdown(failing))
        metadata["first_failure"] = failing[0]["advice"]
    if meta["data_docs"]:
        metadata["data_docs"] = dg.MetadataValue.path(meta["data_docs"])
    return dg.AssetCheckResult(
        asset_key=suite_asset_key(result.suite),
        check_name=name,
        passed=not failing,
        severity=severity,
        metadata=metadata,
        description=(
            f"{result.suite}: {len(failing)} {rules} expectation(s) failed"
            if failing
            else f"{result.suite}: every {rules} expectation met ({result.summary()})"
        ),
    )


def _due(context: dg.AssetCheckExecutionContext, suites: tuple[str, ...]) -> dict[str, dict]:
    """The selected suites to evaluate now, each with the metadata its results carry (the data
    version and rules evaluated); the others are logged as kept with the run that evaluated
    them."""
    selected = set(context.selected_asset_check_keys)
    due = {}
    for suite in suites:
        key = suite_asset_key(suite)
        checks = [
            dg.AssetCheckKey(key, name)
            for name in (CHECK_NAME, WARN_CHECK_NAME)
            if dg.AssetCheckKey(key, name) in selected
        ]
        if not checks:
            continue
        rules = rules_version(suite)
        found = [versions.check_is_current(context.instance, c, rules) for c in checks]
        if any(f.evaluate for f in found):
            due[suite.split(".", 1)[1]] = {
                versions.CHECKED_DATA_VERSION: found[0].data_version or "",
                "rules_version": rules,
            }
        else:
            context.log.info(
                f"{suite}: data and rules unchanged since run {found[0].evaluated_in_run}, "
                "whose evaluation stands (not evaluated again)"
            )
    return due


def _emit(
    context: dg.AssetCheckExecutionContext, results, checked: dict[str, dict]
) -> Iterator[dg.AssetCheckResult]:
    """The selected checks of each suite's results (a subset may select one of the two)."""
    selected = set(context.selected_asset_check_keys)
    for result in results:
        context.log.info(result.summary())
        for check in to_check_results(result, checked.get(result.suite.split(".", 1)[1])):
            if dg.AssetCheckKey(check.asset_key, check.check_name) in selected:
                yield check


@dg.multi_asset_check(
    name="raw_quality_suites",
    specs=_specs(RAW_SUITES, "the current rows of the export and its deliveries"),
    can_subset=True,
)
def raw_quality_suites(
    context: dg.AssetCheckExecutionContext, talent: TalentResource
) -> Iterator[dg.AssetCheckResult]:
    due = _due(context, RAW_SUITES)
    if not due:
        return
    from pipelines.lib.memory import give_back
    from pipelines.lib.quality.validation import run_raw_suites

    give_back()  # what the ingest steps before it left behind (pipelines/lib/memory.py)
    results = run_raw_suites(talent.settings, list(due))
    give_back()  # and what the checks of every new row left
    yield from _emit(context, results, due)


@dg.multi_asset_check(
    name="mart_quality_suites",
    specs=_specs(MART_SUITES, "the mart in the build file"),
    can_subset=True,
)
def mart_quality_suites(
    context: dg.AssetCheckExecutionContext, talent: TalentResource
) -> Iterator[dg.AssetCheckResult]:
    due = _due(context, MART_SUITES)
    if not due:
        return
    from pipelines.lib.quality.validation import run_mart_suites

    yield from _emit(context, run_mart_suites(talent.settings, list(due)), due)
