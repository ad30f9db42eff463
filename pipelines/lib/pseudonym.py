"""Keyed pseudonyms for people: the only identifier the analyst-facing warehouse carries.

An unkeyed hash of an enumerable employee number can be reversed by hashing every number, so the
pseudonym is an HMAC under a key kept outside the warehouse (ENISA guidance). Sixteen hex
characters (64 bits) keep collisions negligible for any realistic workforce while staying short
enough to read in a table.
"""

from __future__ import annotations

import hashlib
import hmac

PREFIX = "p_"
HEX_CHARS = 16


def pseudonym(value: str | None, key: str) -> str | None:
    """Return ``'p_' + first 16 hex of HMAC-SHA256(key, value)``; None stays None.

    None passes through so that a missing id never turns into a shared pseudonym that would
    silently merge unrelated records.
    """
    if value is None:
        return None
    if not key:
        raise ValueError(
            "The pseudonym key is empty: set TALENT_PSEUDONYM_KEY to a secret before building "
            "the warehouse."
        )
    digest = hmac.new(key.encode("utf-8"), value.encode("utf-8"), hashlib.sha256).hexdigest()
    return PREFIX + digest[:HEX_CHARS]
