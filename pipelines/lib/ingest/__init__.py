"""Exactly-once ingestion of export files into the restricted raw layer (`raw.duckdb`)."""

from pipelines.lib.ingest.loader import (
    IngestResult,
    SourcesNotFound,
    discover,
    ingest_all,
    ingest_export,
    rebuild_raw_from_archive,
    table_row_count,
)
from pipelines.lib.ingest.manifest import ensure_raw_schema
from pipelines.lib.ingest.reader import (
    FileError,
    ParsedFile,
    Rejected,
    parse_export_bytes,
    read_export_file,
)

__all__ = [
    "FileError",
    "IngestResult",
    "ParsedFile",
    "Rejected",
    "SourcesNotFound",
    "discover",
    "ensure_raw_schema",
    "ingest_all",
    "ingest_export",
    "parse_export_bytes",
    "read_export_file",
    "rebuild_raw_from_archive",
    "table_row_count",
]
