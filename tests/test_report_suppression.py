"""Small-group suppression, quarter arithmetic and the report's interval formulas."""

from __future__ import annotations

from datetime import date

import pytest
from statsmodels.stats.proportion import proportion_confint

from pipelines.lib.report.intervals import poisson_rate_interval, wilson_interval
from pipelines.lib.report.quarters import Quarter, latest_complete_quarter_for
from pipelines.lib.report.suppression import (
    is_small,
    mask_label,
    shown,
    suppression_grid,
    suppression_mask,
)


def hidden(mask):
    return {k for k, v in mask.items() if v}


def test_a_single_small_group_takes_the_next_smallest_with_it():
    mask = suppression_mask({"edge": 3, "hpc": 8, "west": 11, "east": 24})
    assert hidden(mask) == {"edge", "hpc"}


def test_two_small_groups_protect_each_other():
    assert hidden(suppression_mask({"a": 2, "b": 4, "c": 30, "d": 9})) == {"a", "b"}


def test_large_groups_stay_visible():
    assert hidden(suppression_mask({"a": 5, "b": 6})) == set()


def test_empty_groups_are_shown_and_never_chosen_as_complement():
    mask = suppression_mask({"none": 0, "tiny": 1, "mid": 7, "big": 50})
    assert hidden(mask) == {"tiny", "mid"}


def test_unknown_size_fails_closed():
    assert is_small(None, 5) and is_small(float("nan"), 5)
    # a count the published mart suppressed reads as pandas.NA from DuckDB
    import pandas as pd

    assert is_small(pd.NA, 5)
    assert hidden(suppression_mask({"x": None, "y": 10, "z": 12})) == {"x", "y"}


def test_ties_pick_the_first_listed_complement():
    assert hidden(suppression_mask({"a": 3, "b": 9, "c": 9})) == {"a", "b"}


def test_threshold_is_configurable():
    sizes = {"a": 6, "b": 9, "c": 20}
    assert hidden(suppression_mask(sizes, threshold=10)) == {"a", "b"}
    assert hidden(suppression_mask(sizes, threshold=3)) == set()
    with pytest.raises(ValueError, match="at least 1"):
        suppression_mask(sizes, threshold=0)


def test_a_lone_group_cannot_be_complemented():
    assert hidden(suppression_mask({"only": 3})) == {"only"}


def test_grid_hides_a_complement_in_row_and_column():
    #          x    y    z
    # a        3   10   12
    # b        7   15   20
    # c        9    6   30
    sizes = {
        ("a", "x"): 3,
        ("a", "y"): 10,
        ("a", "z"): 12,
        ("b", "x"): 7,
        ("b", "y"): 15,
        ("b", "z"): 20,
        ("c", "x"): 9,
        ("c", "y"): 6,
        ("c", "z"): 30,
    }
    h = hidden(suppression_grid(sizes))
    assert ("a", "x") in h
    # every row and column now has zero or at least two hidden cells
    for line in [[(r, c) for c in "xyz"] for r in "abc"] + [[(r, c) for r in "abc"] for c in "xyz"]:
        assert sum(k in h for k in line) != 1, line
    # nothing big was hidden needlessly: (c, z) = 30 is the largest cell and stays visible
    assert ("c", "z") not in h


def test_grid_without_small_cells_hides_nothing():
    assert (
        hidden(suppression_grid({("a", "x"): 5, ("a", "y"): 8, ("b", "x"): 9, ("b", "y"): 7}))
        == set()
    )


def test_labels_show_the_threshold():
    assert mask_label(5) == "<5" and mask_label(10) == "<10"
    assert shown(3, True, 5) == "<5"
    assert shown(1234, False, 5) == "1,234"
    assert shown(None, False, 5) == "–"


@pytest.mark.parametrize(
    ("label", "start", "end"),
    [
        ("2026-Q3", date(2026, 7, 1), date(2026, 9, 30)),
        ("2024q1", date(2024, 1, 1), date(2024, 3, 31)),
        ("2025-Q4", date(2025, 10, 1), date(2025, 12, 31)),
    ],
)
def test_quarter_bounds(label, start, end):
    q = Quarter.parse(label)
    assert (q.start, q.end) == (start, end)


def test_quarter_neighbours_cross_years():
    assert Quarter.parse("2026-Q1").previous().label == "2025-Q4"
    assert Quarter.parse("2025-Q4").next().label == "2026-Q1"
    assert [q.label for q in Quarter.parse("2026-Q2").trailing(4)] == [
        "2025-Q3",
        "2025-Q4",
        "2026-Q1",
        "2026-Q2",
    ]


def test_bad_quarter_label_gives_advice():
    with pytest.raises(ValueError, match="YYYY-Qn"):
        Quarter.parse("2026-07")


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        (date(2026, 9, 1), "2026-Q3"),
        (date(2026, 8, 1), "2026-Q2"),
        (date(2026, 1, 1), "2025-Q4"),
    ],
)
def test_latest_complete_quarter(last, expected):
    assert latest_complete_quarter_for(last).label == expected


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    [
        # Newcombe (1998), Statistics in Medicine 17:857-872, Table I, method 3 (Wilson score)
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_matches_published_values(k, n, low, high):
    p, lo, hi = wilson_interval(k, n)
    assert p == pytest.approx(k / n)
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)
    sm_lo, sm_hi = proportion_confint(k, n, method="wilson")
    assert lo == pytest.approx(sm_lo, abs=1e-9) and hi == pytest.approx(sm_hi, abs=1e-9)


@pytest.mark.parametrize(
    ("k", "low", "high"),
    [
        # exact Poisson limits for a count (e.g. Ulm 1990 / standard tables)
        (0, 0.0, 3.6889),
        (1, 0.0253, 5.5716),
        (10, 4.7954, 18.3904),
    ],
)
def test_poisson_interval_matches_tables(k, low, high):
    rate, lo, hi = poisson_rate_interval(k, 1.0)
    assert rate == k
    assert lo == pytest.approx(low, abs=1e-4) and hi == pytest.approx(high, abs=1e-4)


def test_poisson_rate_scales_with_exposure():
    rate, lo, hi = poisson_rate_interval(10, 200, per=100)
    assert rate == pytest.approx(5.0)
    assert lo == pytest.approx(4.7954 / 2, abs=1e-4) and hi == pytest.approx(18.3904 / 2, abs=1e-4)


def test_cells_hidden_in_the_published_marts_stay_hidden_with_their_complement():
    # 'b' (9 people) is hidden in the analyst-facing mart (as the mart's complement): the
    # report hides it as well, and with 'a' (3) there are two hidden cells, nothing to add
    assert hidden(suppression_mask({"a": 3, "b": 9, "c": 7}, also_hidden={"b"})) == {"a", "b"}
    # one cell hidden only by the marts still gets a complement in the report's line
    assert hidden(suppression_mask({"a": 30, "b": 9, "c": 7}, also_hidden={"b"})) == {"b", "c"}


def test_a_cell_hidden_only_to_protect_another_says_hidden_not_fewer_than_five():
    from pipelines.lib.report.suppression import hidden_label, shown

    sizes = {"a": 3, "b": 26, "c": 40}
    mask = suppression_mask(sizes, 5)
    assert mask == {"a": True, "b": True, "c": False}  # b is a's complement
    labels = {k: shown(v, mask[k], 5, size=v) for k, v in sizes.items()}
    assert labels == {"a": "<5", "b": "hidden", "c": "40"}
    # an unknown size fails closed
    assert hidden_label(None, 5) == "<5"
