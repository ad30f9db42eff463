"""Certifications expiring in the 90 days after the quarter: the renewals to plan and budget."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, month_label, num, sentence
from pipelines.lib.report.labels import count
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import (
    EXTREMES,
    Data,
    Section,
    team_tables,
    unavailable,
)
from pipelines.lib.report.suppression import shown, suppression_mask


@dataclass(frozen=True)
class ExpiringFacts:
    expiring: float
    by_team: dict[str, float]  # visible teams with at least one expiring


def expiring_section(marts: Marts, q: Quarter, thr: int) -> tuple[Section, ExpiringFacts | None]:
    sid, title = "expiring", f"Certifications expiring in {q.next().label}"
    cov = marts.get("certification_coverage")
    if cov is None:
        why = "Not available: the mart certification_coverage is missing."
        return unavailable(sid, title, why), None
    snap = cov[cov["month"] == q.last_month]
    teams = snap[snap["segment_type"] == "team"].sort_values("segment_value")
    allrow = snap[snap["segment_type"] == "all"]
    if teams.empty or allrow.empty:
        why = f"Not available: no snapshot for {month_label(q.last_month)}."
        return unavailable(sid, title, why), None
    mask = suppression_mask(
        dict(zip(teams["segment_value"], teams["headcount"], strict=True)),
        thr,
        also_hidden=hidden_in_marts(teams, "segment_value"),
    )
    rows, names, n, size, data = [], [], {}, {}, []
    for r in teams.itertuples():
        name, h = str(r.segment_value), mask[r.segment_value]
        rows.append(
            [
                name,
                shown(r.headcount, h, thr, size=r.headcount),
                shown(r.expiring_next_90d, h, thr, size=r.headcount),
            ]
        )
        data.append(
            [
                name,
                None if h else int(r.headcount),
                None if h else int(r.expiring_next_90d),
                bool(h),
            ]
        )
        names.append(name)
        n[name] = None if h else float(r.expiring_next_90d)
        size[name] = float(r.headcount)
    total = float(allrow["expiring_next_90d"].iloc[0])
    ranked = sorted((t for t in names if n[t]), key=lambda t: (-n[t], t))  # type: ignore[operator]
    picked = ranked[: 2 * EXTREMES]  # the printed teams, for the team tables
    out_charts: list = []
    tables = team_tables(
        "Expiring certifications by team",
        ["Team", "Engineers at quarter end", "Expiring"],
        rows,
        names,
        picked,
        [],
        total=["All teams", "", fig("expiring", num(total))],
        key="expiring-teams",
        far_words="with most expiring",
        printed_table=False,
        data=Data(
            [
                "Team",
                "Engineers at quarter end (count)",
                "Certifications expiring in the next 90 days (count)",
                "Hidden: fewer than the minimum group size (true/false)",
            ],
            data,
        ),
    )
    facts = ExpiringFacts(total, {t: n[t] for t in ranked})  # type: ignore[misc]
    lead = sentence(
        "{n} (between {a} and {b}) unless renewed{most}.",
        n=count("expiring", total),
        a=f"{q.end + timedelta(days=1):%d %b}",
        b=f"{q.end + timedelta(days=90):%d %b %Y}",
        most="; most in "
        + ", ".join(f"{t} ({num(n[t])}; team of {num(size[t])})" for t in ranked[:5])
        + (f" and {len(ranked) - 5} more teams" if len(ranked) > 5 else "")
        if ranked
        else "",
    )
    return Section(sid, title, True, lead, out_charts, tables), facts
