"""The minimum group size in figures and in text (`pipelines/lib/small_groups.py`): the
complementary suppression the Python marts and the report share, carried to a fixed point, and
the phrases that name groups of people."""

from __future__ import annotations

import pandas as pd
import pytest

from pipelines.lib.careers.result import suppress
from pipelines.lib.report.suppression import suppression_grid, suppression_mask
from pipelines.lib.small_groups import people_phrase, small_group_mentions

QUARTER_REASON = (
    "complementary: the rows of one quarter add up to a published figure and would give a "
    "hidden row back by subtraction"
)
STATUS_REASON = QUARTER_REASON.replace("one quarter", "one status")

# A staircase of engineers by quarter and status, both lines adding up to published totals
# (the quarter's statuses, the status's quarters). Rows in the mart's order:
#
#            A     B     C     D     E     F     G     H
#   Q1       3     6                 90
#   Q2             8     7                 95
#   Q3                   9    10                 99
#   Q4                        12                       11
#
# Only Q1/A (3 engineers) is below 5. The passes go over the quarter lines, then the status
# lines, and again until nothing changes:
#   round 1  quarter Q1 {A hidden, B 6, E 90}: hide Q1/B (the smallest visible);
#            status B {Q1 hidden, Q2 8}: hide Q2/B
#   round 2  quarter Q2 {B hidden, C 7, F 95}: hide Q2/C; status C {Q2 hidden, Q3 9}: hide Q3/C
#   round 3  quarter Q3 {C hidden, D 10, G 99}: hide Q3/D; status D {Q3 hidden, Q4 12}: hide Q4/D
#   round 4  quarter Q4 {D hidden, H 11}: hide Q4/H; status H has only Q4/H (hidden whole)
#   round 5  no line has a single hidden row: done.
# Two rounds would stop with Q3/C the only hidden row of quarter Q3.
STAIRCASE = [
    ("Q1", "A", 3, None),
    ("Q1", "B", 6, QUARTER_REASON),
    ("Q1", "E", 90, None),
    ("Q2", "B", 8, STATUS_REASON),
    ("Q2", "C", 7, QUARTER_REASON),
    ("Q2", "F", 95, None),
    ("Q3", "C", 9, STATUS_REASON),
    ("Q3", "D", 10, QUARTER_REASON),
    ("Q3", "G", 99, None),
    ("Q4", "D", 12, STATUS_REASON),
    ("Q4", "H", 11, QUARTER_REASON),
]


def _frame(rows) -> pd.DataFrame:
    return pd.DataFrame([r[:3] for r in rows], columns=["quarter", "status", "engineers"]).assign(
        incidents=[10 * (i + 1) for i in range(len(rows))]
    )


def test_suppression_runs_to_a_fixed_point_over_four_rounds():
    out = suppress(
        _frame(STAIRCASE), "engineers", 5, lines=[["quarter"], ["status"]], measures=["incidents"]
    )
    expected_hidden = [r[3] is not None or r[2] < 5 for r in STAIRCASE]
    assert out["suppressed"].tolist() == expected_hidden
    reasons = [None if pd.isna(r) else r for r in out["suppression_reason"]]
    assert reasons == ["fewer than 5 people" if r[2] < 5 else r[3] for r in STAIRCASE]
    assert out.loc[out["suppressed"], ["engineers", "incidents"]].isna().all().all()
    assert out.loc[~out["suppressed"], "engineers"].tolist() == [90, 95, 99]
    # no line has a single hidden row, but the lines of one row (statuses A and H)
    for line in ("quarter", "status"):
        per = out.groupby(line)["suppressed"].agg(["sum", "size"])
        assert ((per["sum"] != 1) | (per["size"] == 1)).all(), line


# Tracks of three programmes adding up to each programme's row, in the mart's order:
#   P1: t1 3 (below 5), t2 0, t3 0  -> no visible row with people to hide beside t1: the line
#       cannot be protected and is hidden whole (t2 and t3 too, reason "whole")
#   P2: t1 2, t2 10, t3 0           -> t2 hidden with t1 (an empty row protects nothing)
#   P3: t1 unknown, t2 12, t3 20    -> an unknown size counts as too small; t2 hidden with it
WHOLE = "the line (programme_type) could not be protected: hidden whole"
COMPLEMENT = (
    "complementary: the rows of one programme_type add up to a published figure and would "
    "give a hidden row back by subtraction"
)
TRACKS = [
    ("P1", "t1", 3, "fewer than 5 people"),
    ("P1", "t2", 0, WHOLE),
    ("P1", "t3", 0, WHOLE),
    ("P2", "t1", 2, "fewer than 5 people"),
    ("P2", "t2", 10, COMPLEMENT),
    ("P2", "t3", 0, None),
    ("P3", "t1", None, "fewer than 5 people"),
    ("P3", "t2", 12, COMPLEMENT),
    ("P3", "t3", 20, None),
]


def test_a_line_that_cannot_be_protected_is_hidden_whole():
    df = pd.DataFrame(
        [r[:3] for r in TRACKS], columns=["programme_type", "track", "participants"]
    ).astype({"participants": "Float64"})
    out = suppress(df, "participants", 5, lines=[["programme_type"]])
    assert out["suppressed"].tolist() == [r[3] is not None for r in TRACKS]
    reasons = [None if pd.isna(r) else r for r in out["suppression_reason"]]
    assert reasons == [r[3] for r in TRACKS]
    assert out["participants"].isna().tolist() == [r[3] is not None for r in TRACKS]


def test_the_report_hides_an_unprotectable_line_whole_too():
    assert suppression_mask({"a": 3, "b": 0, "c": 0}) == {"a": True, "b": True, "c": True}
    # the staircase as a grid of the report: the same cells hidden as in the mart
    grid = {(q, s): n for q, s, n, _ in STAIRCASE}
    hidden = {k for k, v in suppression_grid(grid).items() if v}
    assert hidden == {(q, s) for q, s, n, why in STAIRCASE if why is not None or n < 5}


@pytest.mark.parametrize(
    ("n", "k", "text"),
    [
        (3, 5, "fewer than 5 engineers"),
        (1, 5, "fewer than 5 engineers"),
        (None, 5, "fewer than 5 engineers"),
        (0, 5, "no engineers"),
        (5, 5, "5 engineers"),
        (1204, 5, "1,204 engineers"),
        (7, 10, "fewer than 10 engineers"),
    ],
)
def test_people_phrase_names_a_small_group_by_the_minimum(n, k, text):
    assert people_phrase(n, k, "engineers") == text


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ("1 engineers certified while observed before and after", ["1 engineers"]),
        ("based on 3 engineers (minimum 20)", ["3 engineers"]),
        ("two leavers and One apprentice", ["two leavers", "One apprentice"]),
        ("3 certified engineers", ["3 certified engineers"]),
        ("fewer than 5 engineers, too few to publish", []),
        ("12 engineers and 1,234 participants", []),
        ("about 3 more engineers who certify", []),
        ("a rate of 2.4 people per team; 0.3 engineers", []),
        ("2 incidents before and 8 while certified", []),
        ("rows of 1 to min_group_size-1 people; one row per engineer", []),
        (None, []),
    ],
)
def test_small_group_mentions(text, found):
    assert small_group_mentions(text, 5) == found


def test_an_effect_of_few_engineers_quotes_neither_them_nor_their_incidents():
    from pipelines.lib.effects import incidents, mttr
    from pipelines.lib.effects.result import Effect

    # the example of the published file: one engineer with 2 incidents before and 8 while
    few = {"switchers": 1, "cohorts": 1, "events_before": 2, "events_during": 8}
    e = Effect("incident_rate_ratio", "", "", "")
    assert not incidents._check_minimums(e, few, 5)
    text = f"{e.not_estimable_reason} | {e.data_needed}"
    assert "fewer than 5 engineers certified while observed" in text
    assert small_group_mentions(text, 5) == []
    assert "2 incidents" not in text and "8 while" not in text and "1 distinct" not in text
    # the gap to each minimum would give the counts back (20 - 2 = 18): the minimums instead
    assert "at least 20 incidents of these engineers before they certify" in text
    assert "more" not in e.data_needed
    # from the minimum group size on, the counts are quoted
    many = {"switchers": 12, "cohorts": 4, "events_before": 2, "events_during": 8}
    e = Effect("incident_rate_ratio", "", "", "")
    assert not incidents._check_minimums(e, many, 5)
    assert "12 engineers certified" in e.not_estimable_reason
    assert "with 2 incidents before and 8 while certified" in e.not_estimable_reason
    assert "about 8 more engineers" in e.data_needed
    reason, needed = mttr._minimums({"switchers": 3, "before": 4, "during": 40}, 5)
    assert "fewer than 5 responders" in reason and "4 and 40" not in reason
    assert small_group_mentions(f"{reason} {needed}", 5) == []
