"""Data-quality asset checks: one Great Expectations suite per raw export and key mart.

Each raw export `raw/<export>` and each key mart `marts/<model>` gets two checks over its one
suite: `quality_suite`, blocking, with severity ERROR, over the ERROR rules (a failure stops
every asset downstream: dbt, statistics, publish, so the analyst-facing warehouse keeps its
previous, checked state), and `quality_warnings`, not blocking, with severity WARN, over the
WARN rules (a failure is shown as a warning and the run continues). So a harmless finding (a
repeated row) never shows as a failed blocking check. The rules and their severities live in
`pipelines/lib/quality/rules.py` (rendered in docs/data-quality.md).

The raw checks share one step and the mart checks another, so that each group writes one Data
Docs site (`<quality_dir>/data_docs/{raw,marts}/index.html`); both can run a subset.
Great Expectations runs in this process. Large exports are read and validated in parts, and
the library's caches are emptied after each part (`pipelines/lib/quality/validation.py`), so the
checks' memory stays flat as the company grows; a child process of their own (once used to hand
that memory back) is no longer needed and would cost a second import of the library.
"""

from collections.abc import Iterator

import dagster as dg

from pipelines.defs.resources import TalentResource
from pipelines.lib.quality.rules import MART_SUITES, RAW_SUITES, Severity

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


def to_check_results(result) -> list[dg.AssetCheckResult]:
    """One `SuiteResult` as its two Dagster check results: `quality_suite` (ERROR rules,
    severity ERROR) and `quality_warnings` (WARN rules, severity WARN)."""
    meta = result.metadata()
    errors = [f for f in meta["failing_expectations"] if f["severity"] == str(Severity.ERROR)]
    warnings = [f for f in meta["failing_expectations"] if f["severity"] != str(Severity.ERROR)]
    return [
        _check_result(result, meta, CHECK_NAME, dg.AssetCheckSeverity.ERROR, errors),
        _check_result(result, meta, WARN_CHECK_NAME, dg.AssetCheckSeverity.WARN, warnings),
    ]


def _check_result(result, meta: dict, name: str, severity, failing: list[dict]):
    rules = "ERROR" if severity == dg.AssetCheckSeverity.ERROR else "WARN"
    metadata: dict[str, object] = {
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


def _selected(context: dg.AssetCheckExecutionContext, suites: tuple[str, ...]) -> list[str]:
    keys = {k.asset_key for k in context.selected_asset_check_keys}
    return [s.split(".", 1)[1] for s in suites if suite_asset_key(s) in keys]


def _emit(context: dg.AssetCheckExecutionContext, results) -> Iterator[dg.AssetCheckResult]:
    """The selected checks of each suite's results (a subset may select one of the two)."""
    selected = set(context.selected_asset_check_keys)
    for result in results:
        context.log.info(result.summary())
        for check in to_check_results(result):
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
    from pipelines.lib.quality.validation import run_raw_suites

    yield from _emit(context, run_raw_suites(talent.settings, _selected(context, RAW_SUITES)))


@dg.multi_asset_check(
    name="mart_quality_suites",
    specs=_specs(MART_SUITES, "the mart in the build file"),
    can_subset=True,
)
def mart_quality_suites(
    context: dg.AssetCheckExecutionContext, talent: TalentResource
) -> Iterator[dg.AssetCheckResult]:
    from pipelines.lib.quality.validation import run_mart_suites

    yield from _emit(context, run_mart_suites(talent.settings, _selected(context, MART_SUITES)))
