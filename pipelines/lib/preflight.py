"""Checks a run makes before it starts anything heavy: are there exports, can it write?

Each problem is one paragraph of advice naming the folder and what was expected; the command
line prints them and exits with code 2 (README: "Exit codes") within seconds, instead of a
pipeline that runs for a minute on nothing.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from pipelines.lib.contracts import EXPORTS
from pipelines.lib.settings import Settings


def preflight(settings: Settings) -> list[str]:
    """Problems that make a run pointless or impossible; empty when it may start."""
    problems = _warehouse_problems(settings.warehouse_dir)
    if not problems:
        problems += _source_problems(settings)
    if not problems:
        from pipelines.lib.privacy.crypto import archive_problem, cipher_of

        problem = archive_problem(settings.archive_dir, cipher_of(settings))
        problems += [problem] if problem else []
    return problems


def _warehouse_problems(warehouse_dir: Path) -> list[str]:
    try:
        warehouse_dir.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=warehouse_dir, prefix=".write-probe-"):
            pass
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return [
            f"The warehouse folder {warehouse_dir} cannot be written ({reason}). The run keeps "
            "its raw layer, build file and published warehouse there: point --warehouse-dir "
            "(or TALENT_WAREHOUSE_DIR) at a folder this user can write, or fix its permissions."
        ]
    return []


def _source_problems(settings: Settings) -> list[str]:
    from pipelines.lib.ingest.loader import discover_export
    from pipelines.lib.ingest.profiles import load_profiles, load_sources_config

    src = settings.sources_dir
    if not src.is_dir():
        return [
            f"The sources folder {src} does not exist. Point --sources (or TALENT_SOURCES) at "
            "the folder holding the exports: hris/, lms/, incidents/ and fleet/ (see "
            "sources/README.md)."
        ]
    profiles, config = load_profiles(src), load_sources_config(src)
    found = {e: discover_export(src, e, profiles, config) for e in EXPORTS}
    delivered = {e for e, d in found.items() if d.deliveries}
    loaded_before = settings.raw_db.exists()
    if delivered or loaded_before:
        if "employees" in delivered or loaded_before:
            return []
        return [
            f"No employees export in {src / EXPORTS['employees'].folder}: it is the one export "
            "the warehouse needs (every other mart counts people from it). Found: "
            f"{', '.join(sorted(delivered))}. Add the HRIS employee export (any supported "
            "vendor's, under its own name; `talent sources check` shows what is recognised)."
        ]
    from pipelines.lib.ingest.check import stray_files

    others = sorted({name for d in found.values() for name in d.not_loaded})
    stray = stray_files(src)
    if stray:
        return [
            f"No export files in the system folders of {src}, but {len(stray)} at its top: "
            f"{', '.join(stray[:5])}. Exports are read from the folder of their system: move "
            "HRIS exports into hris/, learning exports into lms/, incident exports into "
            "incidents/ and GPU fleet exports into fleet/ (any file name), then run again."
        ]
    seen = (
        f" It holds {len(others)} file(s) that match no export: {', '.join(others[:5])}."
        if others
        else ""
    )
    return [
        f"No export files found in {src}.{seen} Expected CSV or .xlsx exports in "
        f"{', '.join(sorted({e.folder + os.sep for e in EXPORTS.values()}))} (our contract names "
        "such as hris/employees_2026-09.csv, or a vendor's own export such as BambooHR's "
        "'Employee Report.csv'). `talent sources check` lists what each file was recognised as."
    ]
