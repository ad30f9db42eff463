"""Ingestion assets: one `raw/<export>` asset per export contract.

Thin wiring over `pipelines.lib.ingest`: the asset loads new deliveries, reports what it did
as metadata, and fails (after keeping the good files) when a file could not be read.
"""

# No `from __future__ import annotations` here: Dagster inspects the real type of `context`.
import dagster as dg

from pipelines.defs import versions
from pipelines.defs.resources import TalentResource
from pipelines.lib.contracts import EXPORTS, Export
from pipelines.lib.ingest import IngestResult, ingest_export, table_row_count
from pipelines.lib.privacy import apply_at_run
from pipelines.progress import WAIT_PREFIX

# Retries cover transient I/O (a locked DuckDB file, a network share hiccup). Content errors
# raise `dg.Failure(allow_retries=False)`: re-reading a bad file gives the same answer.
INGEST_RETRY = dg.RetryPolicy(max_retries=2, delay=5, backoff=dg.Backoff.EXPONENTIAL)


def result_metadata(result: IngestResult, table_rows: int) -> dict[str, object]:
    """The numbers an operator checks after every load, identical for success and failure."""
    return {
        "files_seen": result.files_seen,
        "files_loaded": result.files_loaded,
        "files_skipped": result.files_skipped,
        "files_superseded": result.files_superseded,
        "files_failed": len(result.files_failed),
        "rows_loaded": result.rows_loaded,
        "rows_quarantined": result.rows_quarantined,
        "quarantine_share": round(result.quarantine_share, 6),
        "table_row_count": table_rows,
        "unknown_files": dg.MetadataValue.json(result.unknown_files),
        "not_loaded": dg.MetadataValue.json(result.not_loaded),
        "recognised": dg.MetadataValue.json(result.recognised),
        # files that load but cannot show something (an HR export without terminations)
        "warnings": dg.MetadataValue.json(result.warnings),
        # loaded re-deliveries holding noticeably fewer rows than what they replaced
        "fewer_rows": dg.MetadataValue.json([{"file": f, "message": m} for f, m in result.shrunk]),
        "failed_files": dg.MetadataValue.json(
            [{"file": f, "message": m} for f, m in result.files_failed]
        ),
    }


def privacy_metadata(privacy: dict[str, object]) -> dict[str, object]:
    """What the privacy step of this load did (`pipelines.lib.privacy.apply_at_run`)."""
    return {
        "privacy_notes": dg.MetadataValue.json(privacy["notes"]),
        "retention_pseudonymised": privacy["pseudonymised"],
        "retention_salaries_removed": privacy["salaries_removed"],
        "retention_policy": privacy["policy"] or "not set",
    }


def failure_description(result: IngestResult) -> str:
    lines = [
        f"{len(result.files_failed)} {result.export} file(s) could not be loaded; the other "
        f"{result.files_loaded} new file(s) were loaded. Fix or replace these deliveries:"
    ]
    lines += [f"- {name}: {message}" for name, message in result.files_failed]
    return "\n".join(lines)


INGEST_CODE_VERSION = versions.source_version("pipelines.lib.ingest", "pipelines.lib.contracts")


def build_ingest_asset(export: Export) -> dg.AssetsDefinition:
    @dg.asset(
        name=export.name,
        key_prefix=["raw"],
        group_name="ingestion",
        description=f"{export.description} Raw rows from `{export.folder}/{export.name}_*.csv`.",
        kinds={"duckdb", "csv"},
        retry_policy=INGEST_RETRY,
        code_version=INGEST_CODE_VERSION,
        metadata={"contract_key": ", ".join(export.key), "folder": export.folder},
    )
    def _asset(context: dg.AssetExecutionContext, talent: TalentResource) -> dg.MaterializeResult:
        s = talent.settings
        result = ingest_export(
            s, export.name, on_wait=lambda text: context.log.warning(WAIT_PREFIX + text)
        )
        privacy = apply_at_run(s)  # an interrupted erasure, the retention policy
        for note in privacy["notes"]:
            context.log.warning(note)
        metadata = result_metadata(result, table_row_count(s, export.name))
        metadata.update(privacy_metadata(privacy))
        for name, reason in result.not_loaded.items():
            context.log.warning(f"{name} was not loaded: {reason}")
        for name, how in result.recognised.items():
            context.log.info(f"{name}: {how}")
        for name, message in result.shrunk:
            context.log.warning(f"{name}: {message}")
        for name, message in result.warnings.items():
            context.log.warning(f"{name}: {message}")
        if result.files_failed:
            raise dg.Failure(
                description=failure_description(result), metadata=metadata, allow_retries=False
            )
        # the deliveries the current rows come from: what the steps downstream depend on
        version = versions.raw_data_version(s, export.name)
        return dg.MaterializeResult(
            metadata=metadata, data_version=dg.DataVersion(version) if version else None
        )

    return _asset


ingest_assets = [build_ingest_asset(e) for e in EXPORTS.values()]
# every raw export: what each night starts with (ingestion is what looks at the sources folder);
# the decision before a run (`versions.decide_nightly`) takes up from there
INGESTION_KEYS = sorted((key for a in ingest_assets for key in a.keys), key=str)
