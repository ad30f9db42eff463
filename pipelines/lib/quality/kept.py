"""Each delivery is validated once, when it is loaded; its outcomes are kept and reported again.

The row expectations of a raw suite (not null, in set, ranges, a natural key unique within the
delivery) judge the rows of the deliveries that hold them, so a delivery's outcome does not
change while the delivery stays active. The nightly therefore validates only the rows of files
it has not validated before and adds the kept outcomes of the earlier ones: the check still
reports every active delivery, and reads 0.2 % of the rows instead of all of them.

The store (`<quality_dir>/raw_outcomes.json`) keeps, per suite, batches of files validated
together with the outcome of every row rule. A batch is reused only while all its files are
active and the suite's row rules are unchanged; when a file of a batch is superseded (a
corrected re-delivery) or fails, the batch's other files are validated again with the new
ones, so a correction clears the failure it corrects. What this gives up: a defect in a
delivery whose keys a later delivery replaces is still reported (it was true of what was
delivered) until that delivery itself is superseded.

Whether a suite is evaluated at all is the project's one rule (`pipelines/defs/versions.py`):
a night without new files evaluates no suite and starts no Great Expectations.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pipelines.lib.quality.rules import Rule

STORE_FILE = "raw_outcomes.json"
SAMPLE_SIZE = 10


def rules_fingerprint(rules: Iterable[Rule]) -> str:
    """What the row rules test: a changed rule invalidates every kept outcome of its suite."""
    text = json.dumps(
        [
            [r.name, r.expectation, r.kwargs, str(r.severity), r.only_where, r.personal]
            for r in rules
        ],
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass
class Plan:
    """For one suite: the kept batches to report and the files to validate now.

    `validate` None = every current row (nothing is kept for this suite).
    """

    kept: list[dict[str, Any]] = field(default_factory=list)
    validate: list[str] | None = None


class OutcomeStore:
    """The kept row outcomes of the raw suites, by suite and batch of files."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self.data: dict[str, Any] = json.loads(path.read_text())
        except (OSError, ValueError):
            self.data = {}

    def plan(self, suite: str, active: Sequence[str], fingerprint: str) -> Plan:
        """Which kept batches still hold and which active files need validating."""
        entry = self.data.get(suite)
        if not entry or entry.get("rules") != fingerprint:
            return Plan()
        active_set = set(active)
        kept = [b for b in entry["batches"] if set(b["files"]) <= active_set]
        covered = {f for b in kept for f in b["files"]}
        if not kept:
            return Plan()
        return Plan(kept, sorted(active_set - covered))

    def record(
        self, suite: str, fingerprint: str, plan: Plan, files: Sequence[str], outcomes: list
    ) -> None:
        """Keep the batches reused by `plan` and the batch of `files` just validated."""
        batches = list(plan.kept)
        if files:
            batches.append({"files": sorted(files), "outcomes": [to_json(o) for o in outcomes]})
        self.data[suite] = {"rules": fingerprint, "batches": batches}

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(self.data, default=str))
        os.replace(tmp, self.path)


def to_json(outcome: Any) -> dict[str, Any]:
    return {
        "rule": outcome.rule.name,
        "passed": outcome.passed,
        "observed_value": outcome.observed_value,
        "unexpected_count": outcome.unexpected_count,
        "element_count": outcome.element_count,
        "locations": list(outcome.locations),
        "message": outcome.message,
    }


def merge(rule: Rule, parts: Sequence[dict[str, Any]], advice: Any) -> dict[str, Any]:
    """One rule's outcome over several batches: counts add up, the failures are named.

    `advice(rule, result, locations)` words a failure (the validation module's own function).
    """
    failing = [p for p in parts if not p["passed"]]
    counts = [p["unexpected_count"] for p in parts if p["unexpected_count"] is not None]
    elements = [p["element_count"] for p in parts if p["element_count"] is not None]
    unexpected = sum(counts) if counts else None
    total = sum(elements) if elements else None
    locations = tuple(loc for p in failing for loc in p["locations"])[:SAMPLE_SIZE]
    observed = failing[0]["observed_value"] if failing else parts[-1]["observed_value"]
    message = ""
    if len(failing) == 1:
        message = failing[0]["message"]
    elif failing:
        result = {"unexpected_count": unexpected, "element_count": total}
        result["observed_value_text"] = observed
        message = advice(rule, result, locations)
    return {
        "passed": not failing,
        "observed_value": observed,
        "unexpected_count": unexpected,
        "unexpected_percent": (100 * unexpected / total)
        if unexpected is not None and total
        else (0.0 if total else None),
        "element_count": total,
        "locations": locations,
        "message": message,
    }
