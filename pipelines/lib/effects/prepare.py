"""Input checks and normalisation of the two dbt models the estimators read.

``intermediate.int_engineer_months_complete`` (one row per engineer and complete month) and
``intermediate.int_incident_responses_complete`` (one row per incident, with its primary
responder), the complete months of ``int_engineer_months`` and ``int_incident_responses``.
Pandas or Polars frames are accepted; every rejection names the table, row and column.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

ENGINEER_MONTHS = "intermediate.int_engineer_months_complete"
INCIDENT_RESPONSES = "intermediate.int_incident_responses_complete"
ENGINEER_MONTH_COLUMNS = (
    "person_key",
    "month",
    "skill_level",
    "tenure_months",
    "is_certified",
    "first_certified_month",
    "incidents",
    "exposure_months",
    "separated",
    "separation_type",
)
INCIDENT_COLUMNS = ("person_key", "is_certified", "severity", "resolve_minutes", "month")
# Every column the estimators read, required or optional (`fleet_gpus`, and
# `first_preparation_month`: without it the preparation is the 3 months before the first
# certification): the pipeline reads only
# these from the warehouse, so the frames stay small however wide the models grow.
USED_COLUMNS = {
    ENGINEER_MONTHS: (*ENGINEER_MONTH_COLUMNS, "fleet_gpus", "first_preparation_month"),
    INCIDENT_RESPONSES: INCIDENT_COLUMNS,
}


class StatsInputError(ValueError):
    """The input tables cannot be analysed as delivered; the message says where and why."""


# --------------------------------------------------------------------------------------------
# input preparation
# --------------------------------------------------------------------------------------------


def _to_pandas(frame, table: str, copy: bool = True) -> pd.DataFrame:
    """Accept pandas or Polars (the warehouse readers use either); never mutate the caller's.
    `copy=False` for a caller that only reads the frame: the panels' preparation, which would
    otherwise copy 1.2 GB of frames as read at 1,000,000 employees."""
    if isinstance(frame, pd.DataFrame):
        return frame.copy() if copy else frame
    to_pandas = getattr(frame, "to_pandas", None)
    if to_pandas is None:
        raise StatsInputError(
            f"{table}: expected a pandas or Polars data frame, got {type(frame).__name__}."
        )
    return to_pandas()


def shared_strings(values) -> np.ndarray:
    """The values as an object array in which equal strings are one string object.

    The warehouse hands over a new string per row: 4.5 million person keys for 110,000
    engineers at 1,000,000 employees, 545 MB, and every later factorize, take and sort walks
    all of them. Shared, the same values cost a pointer per row; the estimates are unchanged."""
    values = np.asarray(values, dtype=object)
    codes, uniques = pd.factorize(values)
    shared = values.copy()  # a missing value stays as it was
    known = codes >= 0
    shared[known] = np.asarray(uniques, dtype=object)[codes[known]]
    return shared


def normalised_text(values: pd.Series) -> pd.Series:
    """The values stripped and lower-cased as pandas strings, equal values one string object:
    normalising makes a new string per row (at 1,000,000 employees 4.5 million separation
    types and 4.9 million severities, about 0.5 GB kept while the statistics run)."""
    text = values.astype("string").str.strip().str.lower()
    shared = shared_strings(text.to_numpy(dtype=object, na_value=None))
    return pd.Series(pd.array(shared, dtype="string"), index=values.index)


def share_text_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """`shared_strings` for every text (object) column of a frame read from the warehouse, in
    place: the frames stay in memory while the statistics run."""
    for column in frame.select_dtypes(include="object").columns:
        frame[column] = shared_strings(frame[column].to_numpy())
    return frame


def encode_people(*frames: pd.DataFrame) -> None:
    """Replace ``person_key`` in the prepared frames, in place, by the key's position among
    the sorted keys of all of them (int64): the same engineer has the same number in every
    frame, and numbers sort as the keys do, so every grouping, merge and sort gives what the
    strings gave. The fits factorize the engineers dozens of times; on 4.5 million strings
    that was a fifth of the statistics' time at 1,000,000 employees."""
    found = [pd.factorize(f["person_key"].to_numpy(dtype=object)) for f in frames]
    if any((codes < 0).any() for codes, _ in found):
        raise StatsInputError("person_key is missing in a prepared frame")  # prepare drops them
    universe = np.unique(np.concatenate([np.asarray(u, dtype=object) for _, u in found]))
    for f, (codes, uniques) in zip(frames, found, strict=True):
        position = np.searchsorted(universe, np.asarray(uniques, dtype=object))
        f["person_key"] = position.astype(np.int64)[codes]


def _require_columns(df: pd.DataFrame, required: tuple[str, ...], table: str) -> None:
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise StatsInputError(
            f"{table}: missing column(s) {', '.join(missing)}. Rebuild the dbt model so it has "
            f"the columns listed in docs/architecture.md (found: {', '.join(map(str, df.columns))})."
        )


def _first_bad_row(mask: pd.Series) -> int:
    return int(np.flatnonzero(mask.to_numpy())[0]) + 1


def _check_values(df: pd.DataFrame, table: str) -> None:
    """Reject values no analysis can use, naming the first offending row (1-based)."""
    checks = [
        ("person_key", df["person_key"].isna(), "has no person_key; every row needs one"),
        ("month", df["month"].isna(), "has no month"),
    ]
    if "exposure_months" in df:
        exp = pd.to_numeric(df["exposure_months"], errors="coerce")
        checks.append(("exposure_months", exp < 0, "has a negative exposure"))
    if "incidents" in df:
        inc = pd.to_numeric(df["incidents"], errors="coerce")
        checks.append(("incidents", inc < 0, "has a negative incident count"))
    for column, mask, problem in checks:
        mask = mask.fillna(False).astype(bool)
        if mask.any():
            raise StatsInputError(
                f"{table}: row {_first_bad_row(mask)} (of {len(df)}, {int(mask.sum())} such rows) "
                f"{problem} (column {column}). Fix the upstream model before estimating effects."
            )


def _month_index(values: pd.Series) -> pd.Series:
    """Months as integers (year*12 + month-1), so differences are month counts."""
    ts = pd.to_datetime(values)
    return (ts.dt.year * 12 + ts.dt.month - 1).astype("Int64")


def _as_bool(values: pd.Series) -> np.ndarray:
    if values.dtype == object:
        values = values.map(
            lambda v: (
                str(v).strip().lower() in ("true", "1", "t", "yes") if v is not None else False
            )
        )
    return values.fillna(False).astype(bool).to_numpy()


def prepare_engineer_months(engineer_months) -> pd.DataFrame:
    """Validate and normalise ``int_engineer_months`` into the columns the estimators use."""
    df = _to_pandas(engineer_months, ENGINEER_MONTHS, copy=False)  # read, never written
    _require_columns(df, ENGINEER_MONTH_COLUMNS, ENGINEER_MONTHS)
    _check_values(df, ENGINEER_MONTHS)
    dup = df.duplicated(["person_key", "month"])
    if dup.any():
        raise StatsInputError(
            f"{ENGINEER_MONTHS}: row {_first_bad_row(dup)} repeats a (person_key, month) pair "
            f"({int(dup.sum())} duplicates); the grain is one row per engineer and month."
        )
    out = pd.DataFrame(
        {
            "person_key": df["person_key"].astype(str).to_numpy(),
            "t": _month_index(df["month"]).to_numpy(dtype="float64"),
            # An HRIS export without levels (no job history, or a tool without a level
            # column) leaves skill_level unknown for everyone: level 0 is that one category.
            "skill_level": pd.to_numeric(df["skill_level"], errors="coerce")
            .fillna(0)
            .to_numpy("float64"),
            "tenure_months": pd.to_numeric(df["tenure_months"], errors="coerce").to_numpy(
                "float64"
            ),
            "is_certified": _as_bool(df["is_certified"]),
            "first_t": _month_index(df["first_certified_month"]).to_numpy(
                dtype="float64", na_value=np.nan
            ),
            "incidents": pd.to_numeric(df["incidents"], errors="coerce")
            .fillna(0)
            .to_numpy("float64"),
            "exposure": pd.to_numeric(df["exposure_months"], errors="coerce").to_numpy("float64"),
            "separated": _as_bool(df["separated"]),
            "separation_type": normalised_text(df["separation_type"]),
        }
    )
    out["month_start"] = pd.to_datetime(df["month"]).dt.to_period("M").dt.start_time.to_numpy()
    fleet = df["fleet_gpus"] if "fleet_gpus" in df else pd.Series(np.nan, index=df.index)
    out["fleet_gpus"] = pd.to_numeric(fleet, errors="coerce").to_numpy("float64")
    prep = (
        df["first_preparation_month"]
        if "first_preparation_month" in df
        else pd.Series(pd.NaT, index=df.index)
    )
    out["prep_t"] = _month_index(prep).to_numpy(dtype="float64", na_value=np.nan)
    out["voluntary_exit"] = out["separated"] & out["separation_type"].eq("voluntary").fillna(False)
    out["ever_certified"] = ~np.isnan(out["first_t"].to_numpy())
    out["rel"] = out["t"] - out["first_t"]  # NaN for never-certified
    # certified before and not any more: its own group, never a silent control
    out["lapsed"] = (out["rel"] > 0).to_numpy() & ~out["is_certified"].to_numpy()
    # ignore_index: a new RangeIndex without the copy of every column reset_index makes
    return out.sort_values(["person_key", "t"], kind="stable", ignore_index=True)


def prepare_incidents(incident_responses, months: pd.DataFrame) -> tuple[pd.DataFrame, int]:
    """Resolved incidents with a known primary responder, joined to the responder's month
    (level, tenure, first certification). Returns the frame and how many rows were left out."""
    df = _to_pandas(incident_responses, INCIDENT_RESPONSES, copy=False)  # read, never written
    _require_columns(df, INCIDENT_COLUMNS, INCIDENT_RESPONSES)
    minutes = pd.to_numeric(df["resolve_minutes"], errors="coerce")
    inc = pd.DataFrame(
        {
            "person_key": df["person_key"].astype("string"),
            "t": _month_index(df["month"]).to_numpy(dtype="float64", na_value=np.nan),
            "is_certified": _as_bool(df["is_certified"]),
            "severity": normalised_text(df["severity"]),
            "minutes": minutes.to_numpy("float64"),
        }
    )
    total = len(inc)
    usable = inc["person_key"].notna() & inc["t"].notna() & (inc["minutes"] > 0)
    inc = inc[usable.to_numpy()].copy()
    inc["person_key"] = inc["person_key"].astype(str)
    joined = inc.merge(
        months[["person_key", "t", "skill_level", "tenure_months", "first_t", "month_start"]],
        on=["person_key", "t"],
        how="inner",
    )
    known = (joined["skill_level"].notna() & joined["tenure_months"].notna()).to_numpy()
    if not known.all():  # (dropna copies every column even when no row goes)
        joined = joined[known]
    joined["rel"] = joined["t"] - joined["first_t"]
    joined["lapsed"] = (joined["rel"] > 0).to_numpy() & ~joined["is_certified"].to_numpy()
    # every column in the sort: the warehouse returns rows in no promised order, and the
    # estimates' sums must not depend on it (rows equal in every column are interchangeable)
    joined = joined.sort_values(
        list(joined.columns), kind="stable", na_position="last", ignore_index=True
    )
    return joined, total - len(joined)
