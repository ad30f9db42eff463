"""Personal data over its whole life: erasure on request (`erase.py`), retention
(`retention.py`), a subject's copy (`access.py`), rows of erased people left out on arrival
(`screen.py`) and the archive encrypted at rest (`crypto.py`). docs/architecture.md, "Personal
data over its life", describes how they fit together."""

from __future__ import annotations

from pipelines.lib.settings import Settings


def apply_at_run(settings: Settings) -> dict[str, object]:
    """What every run does with what it loaded: finish or undo an erasure that was killed and
    apply the retention policy (each raw asset calls it after its load; the first call does
    the work). Returns what the run summary shows: `notes` (an interrupted erasure), the
    people `pseudonymised` and `salaries_removed`, and the `policy` in words (None: unset)."""
    from pipelines.lib.privacy.erase import recover
    from pipelines.lib.privacy.retention import apply_retention, policy_of

    said: list[str] = []
    recover(settings, said.append)
    policy = policy_of(settings)
    done = apply_retention(settings)
    return {
        "notes": said,
        "pseudonymised": done.pseudonymised,
        "salaries_removed": done.salaries_removed,
        "policy": policy.describe(),
    }
