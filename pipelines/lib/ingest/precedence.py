"""Which tool's row counts when two tools describe the same record for the same period.

Files of one export from two tools are two delivery series: both count, and per natural key
the row of the latest period wins. When the tools' files share that period (a BambooHR and a
Workday export of the same people, both dated 2026-03-02), the staging models keep one row per
key (`dbt_project/macros/current_rows.sql`): identical rows are one row, and when the tools'
contract values differ, the row of the tool that comes first here wins:

1. the order `precedence` of `sources.yml` gives for the export (or its folder), else
2. the tool `system_of_record` names for the export (or its folder), else
3. the latest delivery (the file loaded last).

    # <sources>/sources.yml
    system_of_record:          # per folder (hris, lms, incidents, fleet) or export
      hris: Workday
    precedence:                # a whole order, first wins; overrides system_of_record there
      incidents: [ServiceNow, PagerDuty]

Tools are named as their profile's `vendor` (case does not matter; `talent-metrics` is our
own format). `marts.source_conflicts` counts the differences and how each was resolved. The
resolved order reaches dbt as the var `source_precedence` (`Settings.dbt_vars`), so changing
it rebuilds the staging models in full.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pipelines.lib.contracts import EXPORTS

SYSTEM_OF_RECORD = "system of record"
PRECEDENCE = "precedence"
LATEST_DELIVERY = "latest delivery"


class PrecedenceError(ValueError):
    """A `system_of_record` or `precedence` entry of sources.yml that cannot be read."""


@dataclass(frozen=True)
class Precedence:
    """The tools of one export in the order their rows win, and which setting gave it."""

    tools: tuple[str, ...]  # lower case, first wins
    rule: str  # SYSTEM_OF_RECORD or PRECEDENCE


def _exports_of(key: str, setting: str) -> list[str]:
    if key in EXPORTS:
        return [key]
    folder = [e.name for e in EXPORTS.values() if e.folder == key]
    if not folder:
        known = sorted({e.folder for e in EXPORTS.values()} | set(EXPORTS))
        raise PrecedenceError(
            f"sources.yml: {setting}.{key} names neither a folder nor an export; use one of "
            f"{', '.join(known)}"
        )
    return folder


def _tools(value: object, setting: str, key: str) -> tuple[str, ...]:
    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items or not all(isinstance(t, str) for t in items):
        raise PrecedenceError(
            f"sources.yml: {setting}.{key} is a tool name (its profile's vendor, e.g. Workday)"
            + (" or a list of them, first wins" if setting == "precedence" else "")
        )
    return tuple(t.strip().lower() for t in items)


def parse_precedence(data: Mapping[str, object]) -> dict[str, Precedence]:
    """Export -> its precedence, from the `system_of_record` and `precedence` of sources.yml.

    An export's own entry comes before its folder's; `precedence` before `system_of_record`."""
    found: dict[str, Precedence] = {}
    for setting, rule in (("system_of_record", SYSTEM_OF_RECORD), ("precedence", PRECEDENCE)):
        entries = data.get(setting) or {}
        if not isinstance(entries, Mapping):
            raise PrecedenceError(
                f"sources.yml: {setting} maps a folder or export to "
                f"{'a tool' if rule == SYSTEM_OF_RECORD else 'a list of tools'}"
            )
        # folders first, so that an export's own entry overrides its folder's
        for key in sorted(entries, key=lambda k: str(k) in EXPORTS):
            if setting == "system_of_record" and not isinstance(entries[key], str):
                raise PrecedenceError(
                    f"sources.yml: system_of_record.{key} is one tool; "
                    "an order of several is `precedence`"
                )
            tools = _tools(entries[key], setting, str(key))
            for export in _exports_of(str(key), setting):
                found[export] = Precedence(tools, rule)
    return found


def precedence_var(precedence: Mapping[str, Precedence]) -> dict[str, dict[str, object]]:
    """The dbt var `source_precedence`: export -> {tools: [...], rule: ...}, sorted."""
    return {e: {"tools": list(p.tools), "rule": p.rule} for e, p in sorted(precedence.items())}
