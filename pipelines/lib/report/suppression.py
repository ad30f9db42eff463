"""Small-group suppression for every figure the report prints.

A figure about fewer than `threshold` people is shown as `<threshold` (Culture Amp, Viva
Insights and OMOP use 5). Hiding one cell is not enough when its row or column total is shown:
the reader subtracts the visible cells from the total and recovers it. So whenever a set of
cells that adds up to a shown total has exactly one hidden cell, the next-smallest visible cell
is hidden too (complementary suppression). Grids repeat this over rows and columns until
nothing changes, because each new hidden cell can expose another line.

The functions are pure and know nothing about the report, so they can be tested on their own.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

K = TypeVar("K", bound=Hashable)


def is_small(size: float | None, threshold: int) -> bool:
    """A group of 1..threshold-1 people is too small to show. Empty groups say nothing about
    anyone, and an unknown size is treated as small (fail closed)."""
    try:
        if size is None or bool(size != size):  # None or NaN
            return True
    except TypeError:  # pandas.NA: a count the published mart suppressed
        return True
    return 0 < size < threshold


def _complete(
    sizes: Mapping[K, float | None], hidden: set[K], candidates: Sequence[K] | None = None
) -> K | None:
    """The cell to hide next so that a line with a single hidden cell gets a second one: the
    smallest visible non-empty cell (ties broken by the order given); an empty cell would not
    protect anything because its value is known to be 0 anyway."""
    keys = list(candidates if candidates is not None else sizes.keys())
    visible = [k for k in keys if k not in hidden and (sizes[k] or 0) > 0]
    if not visible:
        return None
    return min(visible, key=lambda k: (sizes[k], keys.index(k)))


def suppression_mask(
    sizes: Mapping[K, float | None], threshold: int = 5, also_hidden: Iterable[K] = ()
) -> dict[K, bool]:
    """Which cells of one line (a set of groups whose total is shown) to hide.

    `sizes` maps each cell to the number of people it describes. Returns cell -> hidden.
    Primary: groups smaller than `threshold`, and the cells of `also_hidden` (hidden in another
    publication of the same figures, the analyst-facing marts: hiding at least what they hide
    keeps the two from giving each other's hidden cells away). Complementary: if exactly one
    cell is hidden and another non-empty cell exists, the smallest such cell is hidden as well.
    """
    if threshold < 1:
        raise ValueError(f"The minimum group size must be at least 1, got {threshold}.")
    extra = set(also_hidden)
    hidden = {k for k, v in sizes.items() if is_small(v, threshold) or k in extra}
    if len(hidden) == 1:
        extra = _complete(sizes, hidden)
        if extra is not None:
            hidden.add(extra)
    return {k: k in hidden for k in sizes}


def suppression_grid(
    sizes: Mapping[tuple[K, K], float | None], threshold: int = 5
) -> dict[tuple[K, K], bool]:
    """Hide cells of a two-way table (row, column) -> people, with row and column totals shown.

    Primary suppression as in `suppression_mask`; then every row and every column with exactly
    one hidden cell gets its smallest visible non-empty cell hidden too, repeated until stable.
    Missing cells count as empty.
    """
    if threshold < 1:
        raise ValueError(f"The minimum group size must be at least 1, got {threshold}.")
    hidden = {k for k, v in sizes.items() if is_small(v, threshold)}
    rows = sorted({r for r, _ in sizes}, key=str)
    cols = sorted({c for _, c in sizes}, key=str)
    changed = True
    while changed:
        changed = False
        for line in [[(r, c) for c in cols] for r in rows] + [[(r, c) for r in rows] for c in cols]:
            cells = [k for k in line if k in sizes]
            if sum(k in hidden for k in cells) == 1:
                extra = _complete(sizes, hidden, cells)
                if extra is not None:
                    hidden.add(extra)
                    changed = True
    return {k: k in hidden for k in sizes}


def mask_label(threshold: int) -> str:
    """What a hidden figure reads as: `<5` for the default threshold."""
    return f"<{threshold}"


def shown(value: object, hidden: bool, threshold: int, fmt: str = "{:,.0f}") -> str:
    """Format a figure, or its suppression label when hidden; missing values read as an en dash."""
    if hidden:
        return mask_label(threshold)
    if value is None or (isinstance(value, float) and value != value):
        return "–"
    if isinstance(value, int | float):
        return fmt.format(value)
    return str(value)
