"""Columns, descriptions and small-group suppression of the programme and career marts, and
the checks of the episodes table the statistics read."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from pipelines.lib.effects.prepare import StatsInputError, _as_bool, _to_pandas
from pipelines.lib.effects.result import EFFECT_COLUMNS, EFFECT_DESCRIPTIONS, Effect
from pipelines.lib.small_groups import WHOLE_LINE, is_small, protect_lines, whole_line_reason

# the episodes the statistics read: as of the end of the last complete month, like the panels
EPISODES = "intermediate.int_programme_episodes_complete"
# the episodes as of the as-of date: what the costs read, the same the outcomes mart counts
EPISODES_TO_DATE = "intermediate.int_programme_episodes"
EPISODE_COLUMNS = (
    "person_key",
    "certification_code",
    "programme_type",
    "first_enrolled_on",
    "cohort_quarter",
    "skill_level_at_entry",
    "tenure_months_at_entry",
    "first_attempt_passed",
    "certified",
    "certified_on",
    "followed_until",
    "months_followed",
    "exit_on",
    "exit_type",
)
# What the costs read besides: the money and time of the episodes to date. The episodes the
# statistics read leave them out (an enrolment's later status rewrites them).
EPISODE_COST_COLUMNS = ("fees_usd", "exam_fees_usd", "training_hours", "apprenticeship")
REFERENCE = "online"
# Programme types compared with online, in the order the rows are published.
PROGRAMMES = ("bootcamp", "vendor_partnership", "apprenticeship", "internal")
UNKNOWN = "unknown"
# a duration of 0 (certified on the day of enrolling) is a day for the parametric model
MIN_DURATION_MONTHS = 1 / 30.4375


def episode_columns(table: str = EPISODES) -> tuple[str, ...]:
    """The columns read from ``table``: the statistics' episodes, or those to date with the
    money and time the costs price."""
    return EPISODE_COLUMNS + (EPISODE_COST_COLUMNS if table == EPISODES_TO_DATE else ())


def prepare_episodes(episodes, table: str = EPISODES) -> pd.DataFrame:
    """Validate and normalise the programme episodes (``table``, named in errors): types,
    booleans, dates; the costs' columns when ``table`` is the episodes to date."""
    df = _to_pandas(episodes, table)
    missing = [c for c in episode_columns(table) if c not in df.columns]
    if missing:
        raise StatsInputError(
            f"{table}: missing column(s) {', '.join(missing)}. Rebuild the dbt model so it "
            "has the columns of its contract (docs/architecture.md, the programme episodes)."
        )
    dup = df.duplicated(["person_key", "certification_code"])
    if dup.any():
        row = int(np.flatnonzero(dup.to_numpy())[0]) + 1
        raise StatsInputError(
            f"{table}: row {row} repeats a (person_key, certification_code) pair "
            f"({int(dup.sum())} duplicates); the grain is one episode per person and track."
        )
    months = pd.to_numeric(df["months_followed"], errors="coerce")
    bad = months.isna() | (months < 0)
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0]) + 1
        raise StatsInputError(
            f"{table}: row {row} (of {len(df)}, {int(bad.sum())} such rows) has no or a "
            "negative months_followed; fix followed_until in the dbt model."
        )
    out = pd.DataFrame(
        {
            "person_key": df["person_key"].astype(str).to_numpy(),
            "certification_code": df["certification_code"].astype(str).to_numpy(),
            "programme_type": df["programme_type"]
            .astype("string")
            .str.strip()
            .str.lower()
            .fillna(UNKNOWN)
            .to_numpy(dtype=object),
            "first_enrolled_on": pd.to_datetime(df["first_enrolled_on"]).to_numpy(),
            "cohort_quarter": pd.to_datetime(df["cohort_quarter"]).to_numpy(),
            "skill_level": pd.to_numeric(df["skill_level_at_entry"], errors="coerce")
            .fillna(0)
            .to_numpy("float64"),
            "tenure": pd.to_numeric(df["tenure_months_at_entry"], errors="coerce").to_numpy(
                "float64"
            ),
            "has_attempt": df["first_attempt_passed"].notna().to_numpy(),
            "first_pass": _as_bool(df["first_attempt_passed"]),
            "certified": _as_bool(df["certified"]),
            "certified_on": pd.to_datetime(df["certified_on"]).to_numpy(),
            "followed_until": pd.to_datetime(df["followed_until"]).to_numpy(),
            "months": months.to_numpy("float64"),
            "exit_on": pd.to_datetime(df["exit_on"]).to_numpy(),
            "exit_type": df["exit_type"].astype("string").str.strip().str.lower().to_numpy(),
        }
    )
    if table == EPISODES_TO_DATE:
        for c in ("fees_usd", "exam_fees_usd", "training_hours"):
            out[c] = pd.to_numeric(df[c], errors="coerce").fillna(0).to_numpy()
        out["apprenticeship"] = _as_bool(df["apprenticeship"])
    # the same order whatever order the warehouse returned the rows in
    return out.sort_values(["person_key", "certification_code"], kind="stable").reset_index(
        drop=True
    )


def cohort_label(quarter_start: pd.Series) -> pd.Series:
    ts = pd.to_datetime(quarter_start)
    return ts.dt.year.astype(str) + "-Q" + ts.dt.quarter.astype(str)


# --------------------------------------------------------------------------------------------
# small-group suppression (the rule of the dbt marts' `suppress_small_groups`)
# --------------------------------------------------------------------------------------------


def suppress(
    frame: pd.DataFrame,
    size: str,
    min_group_size: int,
    lines: list[list[str]] = (),
    measures: list[str] = (),
    also_hidden: pd.Series | None = None,
    also_reason: str = "",
) -> pd.DataFrame:
    """Rows of 1..min_group_size-1 people (column ``size``; an unknown size counts as small) are
    hidden: ``size`` and every column of ``measures`` NULL, ``suppressed`` true and a
    ``suppression_reason``. A line (rows with equal values in the columns of one entry of
    ``lines``, adding up to a published figure) never has exactly one hidden row: the smallest
    visible non-empty row of the line is hidden too, or, when there is none, the whole line;
    repeated over every line until nothing changes (`small_groups.protect_lines`, the rule of
    the dbt marts). ``also_hidden``: rows hidden in another mart over the same groups (so the
    two never give each other's rows away)."""
    out = frame.copy()
    n = pd.to_numeric(out[size], errors="coerce").to_numpy(dtype=float)
    hidden = [is_small(v, min_group_size) for v in n]
    reason = np.where(hidden, f"fewer than {min_group_size} people", None).astype(object)
    if also_hidden is not None:
        extra = also_hidden.to_numpy(dtype=bool) & ~np.array(hidden, dtype=bool)
        reason[extra] = also_reason
        hidden = [h or bool(x) for h, x in zip(hidden, extra, strict=True)]
    groups = [_line_groups(out, line) for line in lines]
    for row, (kind, how) in protect_lines(list(n), groups, hidden).items():
        columns = ", ".join(lines[kind])
        reason[row] = (
            whole_line_reason(columns)
            if how == WHOLE_LINE
            else f"complementary: the rows of one {columns} add up to a published figure "
            "and would give a hidden row back by subtraction"
        )
    mask = np.array(hidden, dtype=bool)
    for c in [size, *measures]:
        out[c] = out[c].astype("Float64" if out[c].dtype.kind == "f" else out[c].dtype)
        if out[c].dtype.kind in "iub":
            out[c] = out[c].astype("Int64")
        out.loc[mask, c] = None
    out["suppressed"] = mask
    out["suppression_reason"] = pd.Series(reason, index=out.index, dtype="string")
    return out


def _line_groups(frame: pd.DataFrame, line: list[str]) -> list[list[int]]:
    """The row positions of each line (rows with equal values in ``line``), in the frame's
    order, the lines in the order of their first row."""
    keys = ["|".join(map(str, r)) for r in frame[line].itertuples(index=False)]
    groups: dict[str, list[int]] = {}
    for i, key in enumerate(keys):
        groups.setdefault(key, []).append(i)
    return list(groups.values())


def null_small_count(value: int, min_group_size: int):
    """A count of people of 1..min_group_size-1 is not published."""
    return None if 0 < value < min_group_size else int(value)


# --------------------------------------------------------------------------------------------
# programme_comparison rows
# --------------------------------------------------------------------------------------------

COMPARISON_COLUMNS = ("programme_type", *EFFECT_COLUMNS)
COMPARISON_METRICS = (
    "time_to_certify_ratio",
    "first_pass_odds_ratio",
    "voluntary_exit_hazard_ratio",
    "incident_rate_ratio",
    "mttr_ratio",
)


def comparison_frame(rows: list[tuple[str, Effect]], min_group_size: int) -> pd.DataFrame:
    records = []
    for programme, effect in rows:
        row = effect.row()
        # counts of people (engineers, and the certifications / exits / promotions they
        # contribute) of 1..k-1 are not published
        row["n_engineers"] = null_small_count(row["n_engineers"], min_group_size)
        row["n_events"] = null_small_count(row["n_events"], min_group_size)
        records.append({"programme_type": programme, **row})
    df = pd.DataFrame(records, columns=list(COMPARISON_COLUMNS))
    return type_effect_columns(df)


def type_effect_columns(df: pd.DataFrame) -> pd.DataFrame:
    floats = [
        "estimate",
        "ci_low",
        "ci_high",
        "pretrend_p",
        "naive_estimate",
        "naive_ci_low",
        "naive_ci_high",
        "robustness_estimate",
        "robustness_ci_low",
        "robustness_ci_high",
    ]
    for c in floats:
        df[c] = df[c].astype("float64")
    for c in ("estimable", "finding", "pretrend_rejected"):
        df[c] = df[c].astype(bool)
    for c in ("n_engineers", "n_events", "n_cohorts"):
        df[c] = df[c].astype("Int64")
    strings = [
        c
        for c in df.columns
        if c
        in (
            "programme_type",
            "metric",
            "not_estimable_reason",
            "data_needed",
            "naive_method",
            "method",
            "comparison",
            "caveats",
            "robustness_method",
        )
    ]
    for c in strings:
        df[c] = df[c].astype("string")
    for c in ("window_start", "window_end"):
        df[c] = pd.to_datetime(df[c]).dt.date
    return df


def finite(x: float) -> bool:
    return x is not None and not (isinstance(x, float) and math.isnan(x)) and np.isfinite(x)


# --------------------------------------------------------------------------------------------
# What the published marts say about themselves (DuckDB comments; rendered into
# dbt_project/models/python/_python_marts.yml by `python -m tools.dbt_sources`).
# --------------------------------------------------------------------------------------------

TIME_TO_CERTIFY_TABLE = (
    "Time from the first enrolment of a programme episode to the certification of its track, "
    "Kaplan-Meier (episodes not certified by the time they leave scope or by the as-of date "
    "are censored). Grain: one row per (programme_type, certification_code, cohort), cohort "
    "'all' or the quarter of the first enrolment ('YYYY-Qn'). Rows of 1..min_group_size-1 "
    "participants are suppressed. Method: docs/statistics.md."
)
TIME_TO_CERTIFY_DESCRIPTIONS = {
    "programme_type": "online, bootcamp, vendor_partnership, apprenticeship, internal or "
    "unknown (a course not in the catalogue)",
    "certification_code": "the certification track the episode prepares for",
    "cohort": "'all' or the quarter of the first enrolment, 'YYYY-Qn'",
    "participants": "episodes (one per engineer and track) in the group; NULL when suppressed",
    "certified": "episodes certified by the end of follow-up; NULL when suppressed",
    "median_months": "Kaplan-Meier median months from first enrolment to certification; NULL "
    "when fewer than half certified within follow-up, or suppressed",
    "q1_months": "months by which a quarter had certified (Kaplan-Meier); NULL when not reached",
    "q3_months": "months by which three quarters had certified (Kaplan-Meier); NULL when not "
    "reached",
    "median_ci_low": "lower end of the 95 % interval of the median (NULL when not reached)",
    "median_ci_high": "upper end of the 95 % interval of the median (NULL when the curve's "
    "upper band does not reach one half)",
    "certified_within_6m_share": "share certified within 6 months of the first enrolment, 1 - "
    "Kaplan-Meier survival at 6 months (0-1); NULL when nobody was followed that long",
    "certified_within_12m_share": "share certified within 12 months (0-1), as above",
    "suppressed": "true when the row's figures are hidden (small group)",
    "suppression_reason": "why the row is hidden: too few people, or complementary",
}

COMPARISON_TABLE = (
    "Each training programme against online courses (the reference): adjusted time ratio to "
    "certify, first-attempt pass odds ratio, voluntary exit hazard ratio, and the "
    "within-engineer incident rate and MTTR ratios of engineers whose first certification came "
    "through the programme; naive figures beside. Grain: one row per (programme_type, metric). "
    "A row that is not estimable shows no figure and no interval, naive or adjusted, and says "
    "why and what would make it estimable (restricted.programme_comparison keeps the naive "
    "figure). Method: docs/statistics.md."
)
COMPARISON_DESCRIPTIONS = {
    "programme_type": "bootcamp, vendor_partnership, apprenticeship or internal (online is the "
    "reference)",
    "metric": "time_to_certify_ratio, first_pass_odds_ratio, voluntary_exit_hazard_ratio, "
    "incident_rate_ratio or mttr_ratio",
    **{k: v for k, v in EFFECT_DESCRIPTIONS.items() if k != "metric"},
    "estimate": "adjusted ratio (time to certify: below 1 = faster than online; odds ratio: "
    "above 1 = passes the first attempt more often; hazard ratio: below 1 = fewer voluntary "
    "exits; incident rate / MTTR ratio: certified vs before, within the same engineers); NULL "
    "when not estimable",
    "n_engineers": "engineers in the estimate (programme and reference); NULL when 1 to "
    "min_group_size - 1",
    "n_events": "certifications, first attempts, voluntary exits, incidents or resolved "
    "incidents in the estimate; NULL when 1 to min_group_size - 1",
    "n_cohorts": "distinct months of first certification (incident and MTTR ratios; else 0)",
    "pretrend_p": "p-value of the pre-trend test (incident and MTTR ratios; NULL elsewhere)",
}

COSTS_TABLE = (
    "What preparing for a certification costs, by programme and track: fees, exam fees and the "
    "engineers' and seniors' time, priced with the assumptions file; cost per certification "
    "earned. Grain: one row per (programme_type, certification_code), certification_code "
    "'all' for the programme over every track. Rows of 1..min_group_size-1 participants are "
    "suppressed. Method: docs/statistics.md."
)
COSTS_DESCRIPTIONS = {
    "programme_type": "online, bootcamp, vendor_partnership, apprenticeship, internal or unknown",
    "certification_code": "the track, or 'all' for every track of the programme",
    "participants": "engineers with an episode in the group (distinct people on the 'all' "
    "row); NULL when suppressed",
    "certifications_earned": "episodes certified by the end of follow-up",
    "fees_usd": "course fees charged for the episodes' enrolments (list price when the charge "
    "is empty)",
    "exam_fees_usd": "fees of the episodes' exam attempts",
    "training_hours": "hours spent in the episodes' courses",
    "engineer_time_usd": "training_hours x employee_rate_usd_per_hour",
    "senior_time_usd": "apprenticeship episodes x apprenticeship_months x hours_per_month x "
    "apprenticeship_senior_productivity_loss x senior_rate_usd_per_hour",
    "total_cost_usd": "fees_usd + exam_fees_usd + engineer_time_usd + senior_time_usd",
    "cost_per_certification_usd": "total_cost_usd / certifications_earned; NULL when nothing "
    "was certified",
    "priced_with": "the assumptions (name=base value) that priced the row's time",
    "suppressed": "true when the row's figures are hidden (small group)",
    "suppression_reason": "why the row is hidden: too few people, or complementary",
}

TIME_IN_LEVEL_TABLE = (
    "Months spent at a skill level until the next promotion (Kaplan-Meier; exits, demotions, "
    "gaps and the end of the data censor), from level spells whose start is seen (a level "
    "change or a hire), against the ladder's time band of the level. Grain: one row per "
    "skill_level. Method: docs/statistics.md."
)
TIME_IN_LEVEL_DESCRIPTIONS = {
    "skill_level": "1 (Foundation) .. 5 (Architect)",
    "engineers": "engineers with a spell at the level whose start is seen; NULL when 1 to "
    "min_group_size - 1",
    "spells": "spells at the level in the estimate (an engineer can return to a level)",
    "promotions": "spells that ended in a promotion",
    "median_months": "Kaplan-Meier median months at the level until promotion; NULL when "
    "fewer than half were promoted within follow-up",
    "q1_months": "months by which a quarter had been promoted; NULL when not reached",
    "q3_months": "months by which three quarters had been promoted; NULL when not reached",
    "promoted_within_band": "Kaplan-Meier share of spells promoted between the band's low and "
    "high end (S(band_min) - S(band_max)); NULL when the band is open-ended, the band outlasts "
    "the longest spell followed, or the group is small",
    "band_min_months": "the ladder's experience_min_months of the level (seed skill_levels)",
    "band_max_months": "the ladder's experience_max_months of the level (NULL: open-ended)",
    "suppressed": "true when the row's figures are hidden (small group)",
    "suppression_reason": "why the row is hidden",
}

PROMOTION_TABLE = (
    "Whether holding a certification is followed by promotion: Cox hazard ratio of promotion "
    "while certified vs not, on the tenure scale at the same skill level; naive figure beside. "
    "Grain: one row (metric promotion_hazard_ratio). When not estimable it shows no figure, "
    "naive or adjusted (restricted.promotion_effect keeps the naive one). Method: "
    "docs/statistics.md."
)
PROMOTION_DESCRIPTIONS = {
    **EFFECT_DESCRIPTIONS,
    "metric": "promotion_hazard_ratio",
    "estimate": "hazard ratio of promotion while certified vs not (above 1 = promoted sooner); "
    "NULL when not estimable",
    "n_engineers": "engineers in the estimate; NULL when 1 to min_group_size - 1",
    "n_events": "promotions in the estimate; NULL when 1 to min_group_size - 1",
    "n_cohorts": "distinct months in which the engineers in certified time first certified",
    "pretrend_p": "not used (NULL)",
    "pretrend_rejected": "not used (false)",
}

NEXT_LEVEL_TABLE = (
    "Each programme's time to the next level: Kaplan-Meier months from an episode's first "
    "enrolment to the first month at a higher skill level than the one held that month (the "
    "last month the engineer is seen censors); episodes starting at the top level or in a "
    "month the panel does not hold are left out. Who is sent to which programme differs by "
    "level and tenure: a description, not an effect. Grain: one row per programme_type. "
    "Method: docs/statistics.md."
)
NEXT_LEVEL_DESCRIPTIONS = {
    "programme_type": "online, bootcamp, vendor_partnership, apprenticeship, internal",
    "episodes": "episodes in the estimate (one per engineer and certification track)",
    "engineers": "distinct engineers of those episodes; NULL when 1 to min_group_size - 1",
    "promotions": "episodes followed by a move to a higher level",
    "median_months": "Kaplan-Meier median months to the next level; NULL when fewer than "
    "half moved up within follow-up",
    "q1_months": "months by which a quarter had moved up; NULL when not reached",
    "promoted_within_12m_share": "Kaplan-Meier share that moved up within 12 months; NULL "
    "when nobody was followed that long",
    "suppressed": "true when the row's figures are hidden (small group)",
    "suppression_reason": "why the row is hidden",
}

MART_DESCRIPTIONS = {
    "time_to_certify": (TIME_TO_CERTIFY_TABLE, TIME_TO_CERTIFY_DESCRIPTIONS),
    "programme_next_level": (NEXT_LEVEL_TABLE, NEXT_LEVEL_DESCRIPTIONS),
    "programme_comparison": (COMPARISON_TABLE, COMPARISON_DESCRIPTIONS),
    "programme_costs": (COSTS_TABLE, COSTS_DESCRIPTIONS),
    "time_in_level": (TIME_IN_LEVEL_TABLE, TIME_IN_LEVEL_DESCRIPTIONS),
    "promotion_effect": (PROMOTION_TABLE, PROMOTION_DESCRIPTIONS),
}
