"""Data-quality asset checks: one Great Expectations suite per raw export and key mart.

Each raw export `raw/<export>` and each key mart `marts/<model>` gets one blocking check named
`quality_suite` that summarises its whole suite. An ERROR-severity failure stops every asset
downstream (dbt, statistics, publish), so the analyst-facing warehouse keeps its previous,
checked state; WARN failures are shown and let the run continue. The rules and their
severities live in `pipelines/lib/quality/rules.py` (rendered in docs/data-quality.md).

The raw checks share one step and the mart checks another, so that each group writes one Data
Docs site (`<quality_dir>/data_docs/{raw,marts}/index.html`); both can run a subset.
The raw checks run Great Expectations in a child process of their own (`in_child`): the memory
of the library and of its pandas frames (about 1 GB for 1.2 M raw rows, which a Python process
keeps after the frames are gone) is returned when the child exits instead of lying under dbt and
the statistics that run next. The mart checks (small frames, after the statistics) import it
here, when they run; loading the definitions never does.
"""

from collections.abc import Iterator

import dagster as dg

from pipelines.defs.resources import TalentResource
from pipelines.lib.quality.rules import MART_SUITES, RAW_SUITES, Severity

CHECK_NAME = "quality_suite"


def suite_asset_key(suite: str) -> dg.AssetKey:
    """`raw.employees` -> AssetKey(["raw", "employees"])."""
    return dg.AssetKey(suite.split(".", 1))


def _specs(suites: tuple[str, ...], what: str) -> list[dg.AssetCheckSpec]:
    return [
        dg.AssetCheckSpec(
            CHECK_NAME,
            asset=suite_asset_key(s),
            blocking=True,
            description=f"Great Expectations suite {s} over {what} (rules: docs/data-quality.md)",
        )
        for s in suites
    ]


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


def to_check_result(result) -> dg.AssetCheckResult:
    """One `SuiteResult` as a Dagster check result (severity = worst failing expectation)."""
    meta = result.metadata()
    metadata: dict[str, object] = {
        "suite": meta["suite"],
        "expectations_evaluated": meta["expectations_evaluated"],
        "expectations_failed": meta["expectations_failed"],
        "failing_expectations": dg.MetadataValue.json(meta["failing_expectations"]),
    }
    if meta["failing_expectations"]:
        metadata["failures"] = dg.MetadataValue.md(_markdown(meta["failing_expectations"]))
        # the advice of the worst failure: an ERROR before any WARN
        failing = meta["failing_expectations"]
        first = next((f for f in failing if f["severity"] == "ERROR"), failing[0])
        metadata["first_failure"] = first["advice"]
    if meta["data_docs"]:
        metadata["data_docs"] = dg.MetadataValue.path(meta["data_docs"])
    return dg.AssetCheckResult(
        asset_key=suite_asset_key(result.suite),
        check_name=CHECK_NAME,
        passed=result.passed,
        severity=(
            dg.AssetCheckSeverity.WARN
            if result.severity is Severity.WARN
            else dg.AssetCheckSeverity.ERROR
        ),
        metadata=metadata,
        description=result.summary(),
    )


def in_child(fn, *args):
    """`fn(*args)` in a fresh Python process (spawned: it inherits no Dagster state)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=1, mp_context=spawn) as pool:
        return pool.submit(fn, *args).result()


def _selected(context: dg.AssetCheckExecutionContext, suites: tuple[str, ...]) -> list[str]:
    keys = {k.asset_key for k in context.selected_asset_check_keys}
    return [s.split(".", 1)[1] for s in suites if suite_asset_key(s) in keys]


@dg.multi_asset_check(
    name="raw_quality_suites",
    specs=_specs(RAW_SUITES, "the current rows of the export and its deliveries"),
    can_subset=True,
)
def raw_quality_suites(
    context: dg.AssetCheckExecutionContext, talent: TalentResource
) -> Iterator[dg.AssetCheckResult]:
    from pipelines.lib.quality.runner import run_raw_suites

    for result in in_child(run_raw_suites, talent.settings, _selected(context, RAW_SUITES)):
        context.log.info(result.summary())
        yield to_check_result(result)


@dg.multi_asset_check(
    name="mart_quality_suites",
    specs=_specs(MART_SUITES, "the mart in the build file"),
    can_subset=True,
)
def mart_quality_suites(
    context: dg.AssetCheckExecutionContext, talent: TalentResource
) -> Iterator[dg.AssetCheckResult]:
    from pipelines.lib.quality.runner import run_mart_suites

    # the marts are small and checked after the statistics: no child (a second import of GX)
    for result in run_mart_suites(talent.settings, _selected(context, MART_SUITES)):
        context.log.info(result.summary())
        yield to_check_result(result)
