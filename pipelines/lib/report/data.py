"""Read the mart tables the report needs from the published warehouse file, and nothing else.

The report only ever sees aggregated, pseudonymised marts: person-level tables (`dim_employee`,
`identity_match`, anything outside the list below) are never read, so no figure can name a
person. The published marts suppress small groups; the report sums segments into totals and
applies its own suppression to what it prints, so when the pipeline's build file is at hand
its unsuppressed aggregates (schema `restricted`, same tables and columns) are read instead of
the published copies. Files are opened read-only and closed before rendering starts, because a
nightly publish replaces the published file and a held handle would block analysts' read-only
opens elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date
from pathlib import Path

import pandas as pd

from pipelines.lib import db

# Aggregated marts only. Each is optional: a missing one makes its section say "not available".
REPORT_TABLES = (
    "certification_coverage",
    "attrition",
    "incident_rates",
    "certification_effect",
    "certification_event_study",
    "training_spend",
    "incident_downtime",
    "team_composition",
    "level_mix",
    "fleet_size",
    "roi_by_period",
    "roi_summary",
    "source_deliveries",
    "roi_sensitivity",
    # training programmes and careers (issue 27)
    "programme_outcomes",
    "level_progression",
    "level_progression_12m",
    "salary_bands",
    "time_to_certify",
    "programme_comparison",
    "programme_costs",
    "time_in_level",
    "promotion_effect",
    "programme_next_level",
    # operations: the marts of the Operations section, and the effects it shows and the ROI
    # prices efficiency and faster deployment from
    "cluster_utilisation",
    "capacity_commissioning",
    "change_outcomes",
    "operations_effect",
    # the measured replacement cost per voluntary exit (requisitions export)
    "replacement_cost",
    # the workforce plan's budget request and its backtest (issue 55)
    "workforce_plan",
    "workforce_plan_backtest",
    "workforce_plan_rates",
)

# Marts read from the published file even when the build file is at hand. The restricted
# salary_bands holds pay percentiles unrounded and for groups of any size (a group of one is
# that person's pay); the published mart rounds pay to 1,000 USD and withholds it where fewer
# than the minimum group have pay or all earn the same. The report prints pay in aggregate only,
# so it reads the published figures and shows withheld groups as withheld.
PUBLISHED_ONLY = frozenset({"salary_bands"})


# Grain of the report's marts that the analyst-facing file suppresses: the restricted rows are
# matched to their published rows on it, to learn which ones the marts hide.
GRAIN = {
    "certification_coverage": ("month_end", "segment_type", "segment_value"),
    "attrition": ("period_type", "period_start", "segment_type", "segment_value"),
    "incident_rates": ("row_key",),
    "training_spend": ("quarter", "spend_category"),
    "incident_downtime": ("quarter", "certification_status"),
    "team_composition": ("month_end", "team", "role_family"),
    "level_mix": ("month_end", "role_family", "skill_level"),
    # the report sums these over tracks, cohorts and years and suppresses what it prints
    "programme_outcomes": ("programme_type", "certification_code", "cohort_quarter", "entry_level"),
    "level_progression": ("skill_level", "year"),
    "level_progression_12m": ("skill_level", "window_end"),
    "cluster_utilisation": ("month", "cluster"),
    "change_outcomes": ("month", "certification_status"),
}


@dataclass(frozen=True)
class Marts:
    tables: dict[str, pd.DataFrame]
    source: Path

    def get(self, name: str) -> pd.DataFrame | None:
        df = self.tables.get(name)
        return None if df is None else df.copy()

    def has(self, name: str) -> bool:
        return name in self.tables


def load_marts(published_db: Path, restricted_db: Path | None = None) -> Marts:
    """Copy the report's marts into memory (they are small aggregates) and close the file.

    `restricted_db` (the build file, when given and present): its `restricted.<mart>` tables
    replace the published `marts.<mart>` of the same name."""
    published_db = Path(published_db)
    if not published_db.is_file():
        raise FileNotFoundError(
            f"The published warehouse {published_db} does not exist. Run the pipeline "
            "(`talent run`) first, or point --warehouse-dir at the folder holding talent.duckdb."
        )
    tables: dict[str, pd.DataFrame] = {}
    with db.connect(published_db, read_only=True) as con:
        found = con.execute(
            "select table_schema, table_name from information_schema.tables "
            "where table_schema in ('marts', 'main')"
        ).fetchall()
        where = {}
        for schema, name in found:
            if name in REPORT_TABLES and (name not in where or schema == "marts"):
                where[name] = schema
        for name, schema in where.items():
            tables[name] = con.execute(f'select * from "{schema}"."{name}"').df()
    if restricted_db is not None and Path(restricted_db).is_file():
        with db.connect(restricted_db, read_only=True) as con:
            for (name,) in con.execute(
                "select table_name from information_schema.tables "
                "where table_schema = 'restricted' and table_name in (select unnest(?))",
                [[t for t in REPORT_TABLES if t not in PUBLISHED_ONLY]],
            ).fetchall():
                tables[name] = con.execute(_restricted_sql(con, name)).df()
    for df in tables.values():
        for col in ("month_end", "period_start", "quarter"):
            if col in df.columns and df[col].dtype != object:
                df[col] = pd.to_datetime(df[col]).dt.date
            elif col in df.columns:
                df[col] = df[col].map(_as_date)
        if "month_end" in df.columns:
            # Month-end snapshots are keyed by their month's first day inside the report, the way
            # Quarter.months and Quarter.last_month name months.
            df["month"] = df["month_end"].map(
                lambda d: d.replace(day=1) if isinstance(d, date) else d
            )
    return Marts(tables=tables, source=published_db)


def _restricted_sql(con, name: str) -> str:
    """The restricted rows of a mart, with `published_suppressed` (true where the published
    mart of the same build hides the row) when that mart suppresses."""
    flagged = con.execute(
        "select count(*) from duckdb_columns() where schema_name = 'marts' "
        "and table_name = ? and column_name = 'suppressed'",
        [name],
    ).fetchone()[0]
    if not flagged or name not in GRAIN:
        return f'select * from restricted."{name}"'
    for schema in ("restricted", "marts"):
        have = {
            c
            for (c,) in con.execute(
                "select column_name from duckdb_columns() where schema_name = ? and table_name = ?",
                [schema, name],
            ).fetchall()
        }
        if not set(GRAIN[name]) <= have:
            # a mart built before its grain changed: read it whole; the report suppresses
            # what it prints either way
            return f'select * from restricted."{name}"'
    keys = ", ".join(f'"{c}"' for c in GRAIN[name])
    return (
        f'select r.*, coalesce(m.suppressed, true) as published_suppressed from restricted."{name}" '
        f'as r left join (select {keys}, suppressed from marts."{name}") as m using ({keys})'
    )


def hidden_in_marts(df: pd.DataFrame | None, key: str) -> set:
    """Values of `key` on the rows the analyst-facing marts hide (`published_suppressed`);
    empty when the frame did not come from the restricted layer."""
    if df is None or "published_suppressed" not in df.columns:
        return set()
    return set(df.loc[df["published_suppressed"].fillna(True).astype(bool), key])


def coverage_hidden(marts: Marts, month: date, segment_type: str) -> set[str]:
    """Segment values certification_coverage hides on `month` in the analyst-facing marts: a
    total the report builds from another mart (a team, a role family, a level) is the same
    figure, so the report hides it too."""
    cov = marts.get("certification_coverage")
    if cov is None:
        return set()
    rows = cov[(cov["month"] == month) & (cov["segment_type"] == segment_type)]
    return {str(v) for v in hidden_in_marts(rows, "segment_value")}


def _as_date(v: object) -> object:
    if isinstance(v, date) or v is None:
        return v
    try:
        return pd.Timestamp(v).date()
    except (ValueError, TypeError):
        return v


def data_months(marts: Marts) -> tuple[date, date] | None:
    """The first and last month the warehouse covers, from the monthly marts."""
    months: list[date] = []
    cov = marts.get("certification_coverage")
    if cov is not None and len(cov):
        months += [min(cov["month"]), max(cov["month"])]
    att = marts.get("attrition")
    if att is not None and len(att):
        m = att[att["period_type"] == "month"]
        if len(m):
            months += [min(m["period_start"]), max(m["period_start"])]
    return (min(months), max(months)) if months else None


def last_data_month(marts: Marts) -> date | None:
    """The last month the warehouse covers, from the monthly marts."""
    months = data_months(marts)
    return None if months is None else months[1]
