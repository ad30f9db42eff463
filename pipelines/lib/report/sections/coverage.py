"""Certification coverage: the trend, and the teams furthest from and closest to the target (or,
without a target, the lowest and highest), each with its size beside its share."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, fraction, month_label, num, pct, sentence
from pipelines.lib.report.labels import count, label
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import (
    Data,
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
from pipelines.lib.report.suppression import hidden_label, shown, suppression_mask
from pipelines.lib.roi.assumptions import Target


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
    target: Target | None
    now: Snapshot
    prev: Snapshot | None  # end of the previous quarter
    year_ago: Snapshot | None  # end of the same quarter last year
    exam_attempts: float
    exam_passes: float
    passes_12m: float  # certifications earned in the four quarters ending with this one
    certified_12m: float | None  # certified engineers, mean of the 12 month-end snapshots


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


def target_words(t: Target | None, show=pct) -> str:
    """`target 80 % (set by VP Infrastructure)` or `no target set`."""
    if t is None:
        return "no target set"
    word = "at least" if t.higher_is_better else "at most"
    return f"target {word} {show(t.value)}, set by {t.owner}"


def _trend(allrows: pd.DataFrame, q: Quarter, target: Target | None) -> charts.Chart:
    months = [m for m in months_up_to(q) if m in allrows.index]
    series = {
        "holds ≥1 active certification": [
            fraction(allrows.loc[m, "any_cert_share"]) for m in months
        ],
        "meets all role requirements": [
            fraction(allrows.loc[m, "required_cert_compliance_share"]) for m in months
        ],
    }
    first, last = (month_label(months[0]), month_label(months[-1])) if months else ("", "")
    svg = charts.line_chart(
        "coverage-trend",
        [m.strftime("%b %y") for m in months],
        series,
        title="Share of engineers certified, month end",
        alt=f"Line chart: share of engineers holding at least one active certification and "
        f"share meeting every certification their role requires, each month end from {first} "
        f"to {last}.",
        target=target.value if target else None,
        target_label=f"target ({target.owner})" if target else "target",
        ylabel="share of engineers",
    )
    return charts.Chart("coverage-trend", svg)


def _team_rows(teams: pd.DataFrame, thr: int) -> tuple:
    """Each team's printed cells, its appendix row, and its share and sizes for the chart (a
    small team hidden with its complement)."""
    mask = suppression_mask(
        dict(zip(teams["segment_value"], teams["headcount"], strict=True)),
        thr,
        also_hidden=hidden_in_marts(teams, "segment_value"),
    )
    rows, names, share, size, data = [], [], {}, {}, []
    for r in teams.itertuples():
        name, h = str(r.segment_value), mask[r.segment_value]
        s = fraction(r.required_cert_compliance_share)
        rows.append(
            [
                name,
                shown(r.headcount, h, thr, size=r.headcount),
                shown(r.any_cert_headcount, h, thr, size=r.headcount),
                shown(r.required_cert_compliant_headcount, h, thr, size=r.headcount),
                hidden_label(r.headcount, thr) if h else pct(s),
            ]
        )
        data.append(
            [name]
            + (
                [None] * 4
                if h
                else [
                    int(r.headcount),
                    int(r.any_cert_headcount),
                    int(r.required_cert_compliant_headcount),
                    None if s is None else round(s * 100, 1),
                ]
            )
            + [bool(h)]
        )
        names.append(name)
        share[name] = None if h or s is None else s
        size[name] = (float(r.required_cert_compliant_headcount), float(r.headcount))
    return rows, names, share, size, data


def _teams(cov: pd.DataFrame, q: Quarter, thr: int, target: Target | None, total: list) -> tuple:
    teams = cov[(cov["segment_type"] == "team") & (cov["month"] == q.last_month)].sort_values(
        "segment_value"
    )
    rows, names, share, size, data = _team_rows(teams, thr)
    goal = target.value if target else None
    # without a target, the lowest and the highest; with one, the furthest below and the closest
    far, near = extremes(names, lambda n: None if share[n] is None else (goal or 1.0) - share[n])
    picked = printed(names, far, near)
    words = "furthest below target" if target else "lowest"
    chart = team_bar_chart(
        "coverage-by-team",
        picked,
        share,
        lambda n, v: f"{pct(v)} ({num(size[n][0])} of {num(size[n][1])})",
        thr,
        percent=True,
        title="Engineers meeting all role requirements, by team"
        + (
            ""
            if len(names) <= 10
            else f": the 5 {words} and 5 {'closest' if target else 'highest'}"
        ),
        alt=f"Bar chart: share of each team's engineers meeting all role requirements at the end "
        f"of {month_label(q.last_month)}, {len(picked)} of {len(names)} teams, each with the "
        "number meeting them and the team's size.",
        xlabel="share of the team's engineers (meeting ÷ engineers in the team)",
        reference=[goal] * len(picked) if goal is not None else None,
        reference_label="target",
    )
    tables = team_tables(
        f"Certification by team, {month_label(q.last_month)}",
        [
            "Team",
            "Engineers at quarter end",
            "Certified",
            "Meet role requirements",
            "Share meeting",
        ],
        rows,
        names,
        far,
        near,
        total=total,
        key="coverage-teams",
        far_words=words,
        printed_table=False,
        data=Data(
            [
                "Team",
                "Engineers at quarter end (count)",
                "Certified engineers (count)",
                "Meeting role requirements (count)",
                "Share meeting role requirements (%)",
                "Hidden: fewer than the minimum group size (true/false)",
            ],
            data,
        ),
    )
    return charts.Chart("coverage-by-team", chart), tables


def coverage_section(
    marts: Marts, q: Quarter, thr: int, target: Target | None
) -> tuple[Section, CoverageFacts | None]:
    sid, title = "coverage", "Certification coverage"
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
    year = [m for qq in q.trailing(4) for m in qq.months if m in allrows.index]
    facts = CoverageFacts(
        target=target,
        now=now,
        prev=_snapshot(allrows, q.previous().last_month),
        year_ago=_snapshot(allrows, q.trailing(5)[0].last_month),
        exam_attempts=float(qrows["exam_attempts"].sum()),
        exam_passes=float(qrows["exam_passes"].sum()),
        passes_12m=float(allrows.loc[year, "exam_passes"].sum()) if year else 0.0,
        certified_12m=float(allrows.loc[year, "any_cert_headcount"].mean()) if year else None,
    )
    total = [
        "All teams",
        fig("headcount", num(now.headcount)),
        fig("certified-headcount", num(now.certified)),
        fig("compliant-headcount", num(now.compliant)),
        fig("compliance", pct(now.compliance, 1)),
    ]
    team_chart, tables = _teams(cov, q, thr, target, total)
    roles_known = now.compliance is not None and not pd.isna(now.compliance)
    lead = sentence(
        "Of the {hc} ({month}), {cert} ({cov}) held at least one active certification",
        hc=count("headcount", now.headcount),
        month=month_label(q.last_month),
        cert=fig("certified-headcount", num(now.certified)),
        cov=fig("coverage", pct(now.coverage, 1)),
    )
    if roles_known:
        lead += sentence(
            " and {comp} ({share}) met every certification their role requires; {target}.",
            comp=fig("compliant-headcount", num(now.compliant)),
            share=fig("compliance", pct(now.compliance, 1)),
            target=target_words(target),
        )
    else:
        lead += sentence(
            "; whether they meet their roles' requirements is not known, because no engineer's "
            "role was delivered (no job history: see page 1)."
        )
    section = Section(sid, title, True, lead, [_trend(allrows, q, target), team_chart], tables)
    if facts.exam_attempts:
        section.notes.append(
            f"Exams this quarter: {num(facts.exam_attempts)} attempts, {num(facts.exam_passes)} "
            f"passed ({pct(facts.exam_passes / facts.exam_attempts)} pass rate)."
        )
    section.tables.insert(0, _share_table(facts, q))
    return section, facts


def _share_table(f: CoverageFacts, q: Quarter) -> Table:
    def row(label_: str, s: Snapshot | None, now: bool = False) -> list:
        if s is None:
            return [label_, "–", "–", "–"]
        return [
            label_,
            fig("headcount", num(s.headcount)) if now else num(s.headcount),
            fig("coverage", pct(s.coverage, 1)) if now else pct(s.coverage, 1),
            fig("compliance", pct(s.compliance, 1)) if now else pct(s.compliance, 1),
        ]

    return table(
        "All engineers at quarter end",
        ["Quarter", label("headcount").capitalize(), "Hold ≥1 active certification",
         "Meet role requirements"],
        [
            row(q.trailing(5)[0].label, f.year_ago),
            row(q.previous().label, f.prev),
            row(q.label, f.now, now=True),
        ],
        key="coverage-all",
    )  # fmt: skip
