"""The minimum group size, applied alike to figures and to text.

A group of 1..min_group_size-1 people is not published: not as a count, not as a figure derived
from it, and not in a sentence ("3 engineers", "with 2 incidents before"). This module holds the
three rules every publisher of such groups uses:

- `is_small`: whether a group is too small to show (an unknown size counts as small);
- `protect_lines`: complementary suppression to a fixed point. A line is a set of rows that
  adds up to a published figure; a line with exactly one hidden row would give it back by
  subtraction, so its smallest visible non-empty row is hidden too, and every line is passed
  again until nothing changes (a row hidden for one line can leave another with a single
  hidden row). A line with one hidden row and no visible non-empty row to hide with it cannot
  be protected: it is hidden whole. This is the rule of the dbt macro
  `suppress_small_groups` (dbt_project/macros/suppression.sql);
- `people_phrase` and `small_group_mentions`: how text names a group of people ("fewer than 5
  engineers" below the minimum, the number from it on), and how the publishing guard finds a
  sentence that quotes a small group anyway.

The functions are pure and know nothing of the marts or the report.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

COMPLEMENTARY = "complementary"
WHOLE_LINE = "whole_line"


def is_small(size: float | None, threshold: int) -> bool:
    """A group of 1..threshold-1 people is too small to show. Empty groups say nothing about
    anyone, and an unknown size is treated as small (fail closed)."""
    try:
        if size is None or bool(size != size):  # None or NaN
            return True
    except TypeError:  # pandas.NA: a count the published mart suppressed
        return True
    return 0 < size < threshold


def _positive(size: float | None) -> bool:
    """A row that can protect another: a known size above 0 (an empty row's value is known)."""
    try:
        return size is not None and not bool(size != size) and size > 0
    except TypeError:  # pandas.NA
        return False


def protect_lines(
    sizes: Sequence[float | None],
    lines: Sequence[Sequence[Sequence[int]]],
    hidden: list[bool],
) -> dict[int, tuple[int, str]]:
    """Complementary suppression to a fixed point, in place on ``hidden``.

    ``sizes[i]``: the people of row ``i``. ``lines``: one entry per kind of line (the rows of one
    partition), each a list of its lines, each a list of row positions in the mart's order.
    ``hidden``: the rows hidden so far (primary suppression), updated.

    Every kind of line is passed in order, and the passes repeat until one changes nothing.
    Where a line has exactly one hidden row, its smallest visible row with people in it is
    hidden too (ties: the first in the line's order); where it has none, every row of the line
    is hidden. Returns the rows this hid: row -> (the kind of line, ``COMPLEMENTARY`` or
    ``WHOLE_LINE``), the first reason a row was hidden for.
    """
    why: dict[int, tuple[int, str]] = {}
    changed = True
    while changed:
        changed = False
        for kind, groups in enumerate(lines):
            for rows in groups:
                if sum(hidden[r] for r in rows) != 1:
                    continue
                shown = [r for r in rows if not hidden[r]]
                if not shown:
                    continue
                candidates = [r for r in shown if _positive(sizes[r])]
                if candidates:
                    pick = min(candidates, key=lambda r: sizes[r])  # the first of equals
                    picked, how = [pick], COMPLEMENTARY
                else:
                    picked, how = shown, WHOLE_LINE
                for r in picked:
                    hidden[r] = True
                    why.setdefault(r, (kind, how))
                changed = True
    return why


def whole_line_reason(columns: str) -> str:
    """The suppression reason of a row hidden because its line could not be protected."""
    return f"the line ({columns}) could not be protected: hidden whole"


# --------------------------------------------------------------------------------------------
# groups of people in text
# --------------------------------------------------------------------------------------------


def people_phrase(n: float | None, min_group_size: int, noun: str = "engineers") -> str:
    """How text names a group of ``n`` people: "fewer than 5 engineers" when ``n`` is
    1..min_group_size-1 or unknown, "no engineers" when it is 0, else the number ("1,204
    engineers"). ``noun`` is plural and may carry the rest of the phrase ("engineers who
    certified while observed")."""
    if is_small(n, min_group_size):
        return f"fewer than {min_group_size} {noun}"
    if n == 0:
        return f"no {noun}"
    return f"{int(n):,} {noun}"


NUMBER_WORDS = [
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]
# the nouns a sentence counts people with (singular and plural)
PEOPLE_NOUNS = (
    "engineers?|people|persons?|participants?|employees?|responders?|learners?|leavers?|"
    "apprentices?|members?|engagements?|hires?|contractors?|workers?|individuals?|colleagues?|"
    "students?|trainees?|starters?|joiners?|holders?|candidates?|attendees?|managers?|"
    "staff|respondents?"
)
# a number, at most one word, then a noun of people; the number not part of a larger one, a
# decimal or a name ("1.5", "1,204", "size-1", "k_1")
MENTION = (
    r"(?i)(?:^|[^0-9a-z.,_-])((?:[0-9]+|" + "|".join(NUMBER_WORDS) + r"))\s+"
    r"(?:([a-z-]+)\s+)?(" + PEOPLE_NOUNS + r")\b"
)
_MENTION = re.compile(MENTION)
# words between the number and the noun that make it something other than the group's size
# ("about 3 more engineers": how many are missing; "one per engineer": a grain)
NOT_A_GROUP = frozenset({"more", "fewer", "less", "additional", "extra", "per"})


def _number(word: str) -> int:
    word = word.lower()
    return int(word) if word.isdigit() else NUMBER_WORDS.index(word) + 1


def small_group_mentions(text: str | None, min_group_size: int) -> list[str]:
    """The phrases of ``text`` that quote a group of 1..min_group_size-1 people ("3
    engineers", "two leavers", "1 certified engineer"); "fewer than 5 engineers" and "12
    engineers" are not such phrases."""
    if not text:
        return []
    found = []
    for m in _MENTION.finditer(text):
        between = (m.group(2) or "").lower()
        if between in NOT_A_GROUP:
            continue
        if 0 < _number(m.group(1)) < min_group_size:
            found.append(m.group(0).lstrip(" \t\n(;:,'\"[").strip())
    return found


def mentions_pattern() -> str:
    """`MENTION` for an RE2 engine (DuckDB's `regexp_matches`): a coarse filter of the values
    `small_group_mentions` then reads."""
    return MENTION
