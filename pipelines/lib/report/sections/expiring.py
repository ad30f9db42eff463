"""Certifications expiring in the 90 days after the quarter: the renewals to plan and budget."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, month_label, num, sentence
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import (
    EXTREMES,
    Section,
    team_bar_chart,
    team_tables,
    unavailable,
)
from pipelines.lib.report.suppression import shown, suppression_mask


@dataclass(frozen=True)
class ExpiringFacts:
    expiring: float
    most: list[tuple[str, float]]  # visible teams with the most expiring, at most three


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
    rows, names, count = [], [], {}
    for r in teams.itertuples():
        name, h = str(r.segment_value), mask[r.segment_value]
        rows.append([name, shown(r.expiring_next_90d, h, thr)])
        names.append(name)
        count[name] = None if h else float(r.expiring_next_90d)
    total = float(allrow["expiring_next_90d"].iloc[0])
    ranked = sorted((n for n in names if count[n]), key=lambda n: (-count[n], n))  # type: ignore[operator]
    most = ranked[: 2 * EXTREMES]
    picked = names if len(names) <= 2 * EXTREMES else most
    out_charts = []
    if any(count[n] for n in picked):
        title = f"Active certifications expiring in the 90 days after {q.end:%d %b %Y}"
        out_charts.append(
            team_bar_chart(
                "expiring-by-team",
                picked,
                count,
                num,
                thr,
                title=title + ("" if picked is names else f": the {len(most)} teams with most"),
                xlabel="certifications expiring",
            )
        )
    tables = team_tables(
        "Expiring certifications by team",
        ["Team", "Expiring"],
        rows,
        names,
        most,
        [],
        total=["All teams", fig("expiring", num(total))],
        key="expiring-teams",
        far_words="with most expiring",
    )
    if picked is not names:  # the chart shows the printed teams; the table is the full list
        tables = [t for t in tables if t.scope == "full"]
    facts = ExpiringFacts(total, [(n, count[n]) for n in ranked[:3]])  # type: ignore[misc]
    lead = sentence(
        "{n} active certifications expire between {a} and {b} unless renewed{most}. Plan the "
        "renewal exams and their budget now.",
        n=fig("expiring", num(total)),
        a=f"{q.end + timedelta(days=1):%d %b}",
        b=f"{q.end + timedelta(days=90):%d %b %Y}",
        most="; most in " + ", ".join(f"{t} ({num(c)})" for t, c in facts.most)
        if facts.most
        else "",
    )
    return Section(sid, title, True, lead, out_charts, tables), facts
