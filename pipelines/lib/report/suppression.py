"""Small-group suppression for every figure the report prints.

A figure about fewer than `threshold` people is shown as `<threshold` (Culture Amp, Viva
Insights and OMOP use 5); a figure hidden only to protect such a group, about `threshold` people
or more, is shown as `hidden` (`hidden_label`), never as `<threshold`. Hiding one cell is not enough when its row or column total is shown:
the reader subtracts the visible cells from the total and recovers it. So whenever a set of
cells that adds up to a shown total has exactly one hidden cell, the next-smallest visible cell
is hidden too (complementary suppression), or the whole line when no such cell is left. Grids
repeat this over rows and columns until nothing changes, because each new hidden cell can expose
another line. The rule is `pipelines/lib/small_groups.py`'s, shared with the marts.

The functions are pure and know nothing about the report, so they can be tested on their own.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from typing import TypeVar

from pipelines.lib.small_groups import is_small, protect_lines

__all__ = [
    "HIDDEN",
    "hidden_label",
    "is_small",
    "mask_label",
    "shown",
    "suppression_grid",
    "suppression_mask",
]
# what a cell hidden only to protect another reads as: it holds the minimum group size or more,
# so `<5` would state something false about it
HIDDEN = "hidden"

K = TypeVar("K", bound=Hashable)


def suppression_mask(
    sizes: Mapping[K, float | None], threshold: int = 5, also_hidden: Iterable[K] = ()
) -> dict[K, bool]:
    """Which cells of one line (a set of groups whose total is shown) to hide.

    `sizes` maps each cell to the number of people it describes. Returns cell -> hidden.
    Primary: groups smaller than `threshold`, and the cells of `also_hidden` (hidden in another
    publication of the same figures, the analyst-facing marts: hiding at least what they hide
    keeps the two from giving each other's hidden cells away). Complementary: if exactly one
    cell is hidden and another non-empty cell exists, the smallest such cell is hidden as well;
    if none exists, the whole line is hidden (`small_groups.protect_lines`).
    """
    keys = list(sizes)
    return _protected(sizes, [[list(range(len(keys)))]], threshold, set(also_hidden))


def suppression_grid(
    sizes: Mapping[tuple[K, K], float | None], threshold: int = 5
) -> dict[tuple[K, K], bool]:
    """Hide cells of a two-way table (row, column) -> people, with row and column totals shown.

    Primary suppression as in `suppression_mask`; then every row and every column with exactly
    one hidden cell gets its smallest visible non-empty cell hidden too (or, with none, the
    whole row or column), repeated until nothing changes. Missing cells count as empty.
    """
    keys = list(sizes)
    at = {k: i for i, k in enumerate(keys)}
    rows = sorted({r for r, _ in sizes}, key=str)
    cols = sorted({c for _, c in sizes}, key=str)
    by_row = [[at[(r, c)] for c in cols if (r, c) in at] for r in rows]
    by_col = [[at[(r, c)] for r in rows if (r, c) in at] for c in cols]
    return _protected(sizes, [by_row, by_col], threshold, set())


def _protected(sizes: Mapping, lines: list[list[list[int]]], threshold: int, extra: set) -> dict:
    if threshold < 1:
        raise ValueError(f"The minimum group size must be at least 1, got {threshold}.")
    keys = list(sizes)
    values = [sizes[k] for k in keys]
    hidden = [is_small(v, threshold) or k in extra for k, v in zip(keys, values, strict=True)]
    protect_lines(values, lines, hidden)
    return dict(zip(keys, hidden, strict=True))


def mask_label(threshold: int) -> str:
    """What a hidden figure reads as: `<5` for the default threshold."""
    return f"<{threshold}"


def hidden_label(size: float | None, threshold: int) -> str:
    """What a hidden cell about `size` people reads as: `<5` when the group itself is small (or
    its size unknown: fail closed), `hidden` when it holds the minimum or more and is hidden only
    so that a smaller one cannot be recovered from a total (complementary suppression)."""
    return mask_label(threshold) if is_small(size, threshold) else HIDDEN


def shown(
    value: object,
    hidden: bool,
    threshold: int,
    fmt: str = "{:,.0f}",
    size: float | None = None,
) -> str:
    """Format a figure, or its suppression label when hidden (`hidden_label` of `size`, the
    people of the cell's group; unknown reads as `<5`); missing values read as an en dash."""
    if hidden:
        return hidden_label(size, threshold)
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, int | float):
        return fmt.format(value)
    return str(value)
