"""Certification coverage against target: the trend, and teams furthest from and closest to it."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, fraction, month_label, num, pct, sentence
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import (
    Section,
    Table,
    extremes,
    months_up_to,
    printed,
    table,
    team_bar_chart,
    team_tables,
    unavailable,
)
from pipelines.lib.report.suppression import mask_label, shown, suppression_mask


@dataclass(frozen=True)
class Snapshot:
    """Month-end coverage of all engineers."""

    headcount: float
    certified: float
    compliant: float
    coverage: float | None  # holds >= 1 active certification
    compliance: float | None  # meets every certification the role requires
    expiring_90d: float


@dataclass(frozen=True)
class CoverageFacts:
    target: float
    now: Snapshot
    prev: Snapshot | None  # end of the previous quarter
    year_ago: Snapshot | None  # end of the same quarter last year
    exam_attempts: float
    exam_passes: float


def _snapshot(allrows: pd.DataFrame, month) -> Snapshot | None:
    if month not in allrows.index:
        return None
    r = allrows.loc[month]
    return Snapshot(
        headcount=float(r["headcount"]),
        certified=float(r["any_cert_headcount"]),
        compliant=float(r["required_cert_compliant_headcount"]),
        coverage=fraction(r["any_cert_share"]),
        compliance=fraction(r["required_cert_compliance_share"]),
        expiring_90d=float(r["expiring_next_90d"]),
    )


def _trend(allrows: pd.DataFrame, q: Quarter, target: float) -> str:
    months = [m for m in months_up_to(q) if m in allrows.index]
    series = {
        "holds ≥1 active certification": [
            fraction(allrows.loc[m, "any_cert_share"]) for m in months
        ],
        "meets all role requirements": [
            fraction(allrows.loc[m, "required_cert_compliance_share"]) for m in months
        ],
    }
    return charts.line_chart(
        "coverage-trend",
        [m.strftime("%b %y") for m in months],
        series,
        title="Share of engineers certified, month end",
        target=target,
        target_label="target (role requirements)",
        ylabel="share of engineers",
    )


def _teams(cov: pd.DataFrame, q: Quarter, thr: int, target: float, total: list) -> tuple:
    teams = cov[(cov["segment_type"] == "team") & (cov["month"] == q.last_month)].sort_values(
        "segment_value"
    )
    mask = suppression_mask(
        dict(zip(teams["segment_value"], teams["headcount"], strict=True)),
        thr,
        also_hidden=hidden_in_marts(teams, "segment_value"),
    )
    rows, names, share = [], [], {}
    for r in teams.itertuples():
        name, h = str(r.segment_value), mask[r.segment_value]
        s = fraction(r.required_cert_compliance_share)
        rows.append(
            [
                name,
                shown(r.headcount, h, thr),
                shown(r.any_cert_headcount, h, thr),
                shown(r.required_cert_compliant_headcount, h, thr),
                mask_label(thr) if h else pct(s),
            ]
        )
        names.append(name)
        share[name] = None if h or s is None else s
    far, near = extremes(names, lambda n: None if share[n] is None else target - share[n])
    picked = printed(names, far, near)
    chart = team_bar_chart(
        "coverage-by-team",
        picked,
        share,
        pct,
        thr,
        percent=True,
        title="Engineers meeting all role requirements, by team"
        + ("" if len(names) <= 10 else ": 5 furthest below and 5 closest to target"),
        xlabel="share of the team's engineers",
        reference=[target] * len(picked),
        reference_label="target",
    )
    tables = team_tables(
        f"Certification by team, {month_label(q.last_month)}",
        ["Team", "Engineers", "Certified", "Meet role requirements", "Share meeting"],
        rows,
        names,
        far,
        near,
        total=total,
        key="coverage-teams",
        far_words="furthest below target",
    )
    return chart, tables


def coverage_section(
    marts: Marts, q: Quarter, thr: int, target: float
) -> tuple[Section, CoverageFacts | None]:
    sid, title = "coverage", "Certification coverage against target"
    cov = marts.get("certification_coverage")
    if cov is None:
        return unavailable(
            sid, title, "Not available: the mart certification_coverage is missing."
        ), None
    allrows = cov[cov["segment_type"] == "all"].set_index("month").sort_index()
    now = _snapshot(allrows, q.last_month)
    if now is None:
        why = f"Not available: no coverage snapshot for {month_label(q.last_month)}."
        return unavailable(sid, title, why), None
    qrows = allrows.loc[[m for m in q.months if m in allrows.index]]
    facts = CoverageFacts(
        target=target,
        now=now,
        prev=_snapshot(allrows, q.previous().last_month),
        year_ago=_snapshot(allrows, q.trailing(5)[0].last_month),
        exam_attempts=float(qrows["exam_attempts"].sum()),
        exam_passes=float(qrows["exam_passes"].sum()),
    )
    total = [
        "All teams",
        num(now.headcount),
        fig("certified-headcount", num(now.certified)),
        fig("compliant-headcount", num(now.compliant)),
        fig("compliance", pct(now.compliance, 1)),
    ]
    chart, tables = _teams(cov, q, thr, target, total)
    roles_known = now.compliance is not None and not pd.isna(now.compliance)
    lead = sentence(
        "At the end of {month}, {cov} of {hc} engineers held at least one active certification"
        + (
            " and {comp} met every certification their role requires (target {target})."
            if roles_known
            else "; whether they meet their roles' requirements is not known, because no "
            "engineer's role was delivered (no job history: see page 1)."
        ),
        month=month_label(q.last_month),
        cov=fig("coverage", pct(now.coverage, 1)),
        hc=fig("headcount", num(now.headcount)),
        **({"comp": fig("compliance", pct(now.compliance, 1))} if roles_known else {}),
        target=pct(target),
    )
    section = Section(sid, title, True, lead, [_trend(allrows, q, target), chart], tables)
    if facts.exam_attempts:
        section.notes.append(
            f"Exams this quarter: {num(facts.exam_attempts)} attempts, {num(facts.exam_passes)} "
            f"passed ({pct(facts.exam_passes / facts.exam_attempts)} pass rate)."
        )
    section.tables.insert(
        0,
        _share_table(facts, q),
    )
    return section, facts


def _share_table(f: CoverageFacts, q: Quarter) -> Table:
    def row(label: str, s: Snapshot | None, key: str = "") -> list:
        if s is None:
            return [label, "–", "–", "–"]
        cov = fig("coverage", pct(s.coverage, 1)) if key else pct(s.coverage, 1)
        return [
            label,
            fig("headcount", num(s.headcount)) if key else num(s.headcount),
            cov,
            pct(s.compliance, 1),
        ]

    return table(
        "All engineers at quarter end",
        ["Quarter end", "Engineers", "Hold ≥1 active certification", "Meet role requirements"],
        [
            row(q.trailing(5)[0].label, f.year_ago),
            row(q.previous().label, f.prev),
            row(q.label, f.now, key="now"),
        ],
        key="coverage-all",
    )
