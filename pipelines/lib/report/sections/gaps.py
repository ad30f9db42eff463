"""Required-certification gaps by role: who lacks what their role requires, largest gaps first."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from pipelines.lib.report.data import Marts, coverage_hidden
from pipelines.lib.report.fmt import fig, month_label, nice, num, pct, sentence
from pipelines.lib.report.labels import count, label
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Section, table, unavailable
from pipelines.lib.report.suppression import hidden_label, shown, suppression_mask


@dataclass(frozen=True)
class RoleGap:
    role: str
    missing: float
    headcount: float
    codes: str


@dataclass(frozen=True)
class GapFacts:
    gap_people: float
    headcount: float
    largest: list[RoleGap]  # visible roles with a gap, largest first, at most three


def _codes(s: pd.Series) -> str:
    found = {c.strip() for v in s.dropna() for c in str(v).replace(";", ",").split(",")}
    return ", ".join(sorted(c for c in found if c))


def by_role(tc: pd.DataFrame) -> pd.DataFrame:
    return (
        tc.groupby("role_family")
        .agg(
            headcount=("headcount", "sum"),
            template=("template_headcount", "sum"),
            compliant=("required_cert_compliant_headcount", "sum"),
            codes=("required_certification_codes", _codes),
        )
        .reset_index()
        .sort_values("role_family")
    )


def gaps_section(
    marts: Marts, q: Quarter, thr: int, cert_names: dict[str, str] | None = None
) -> tuple[Section, GapFacts | None]:
    """The gaps by role; `cert_names` (code -> name, the certification catalogue) spells out
    the codes the table uses, in the lead above it."""
    sid, title = "gaps", "Required-certification gaps by role"
    tc = marts.get("team_composition")
    if tc is None:
        return unavailable(sid, title, "Not available: the mart team_composition is missing."), None
    cur = tc[tc["month"] == q.last_month]
    if cur.empty:
        why = f"Not available: no team composition for {month_label(q.last_month)}."
        return unavailable(sid, title, why), None
    g = by_role(cur)
    mask = suppression_mask(
        dict(zip(g["role_family"], g["headcount"], strict=True)),
        thr,
        also_hidden=coverage_hidden(marts, q.last_month, "role_family"),
    )
    rows, names, vals, labels = [], [], [], []
    for r in g.itertuples():
        h = mask[r.role_family]
        missing = r.headcount - r.compliant
        share = r.compliant / r.headcount if r.headcount else None
        rows.append(
            [
                nice(r.role_family),
                r.codes or "–",
                shown(r.headcount, h, thr, size=r.headcount),
                shown(r.compliant, h, thr, size=r.headcount),
                hidden_label(r.headcount, thr) if h else fig(f"gap-{r.role_family}", num(missing)),
            ]
        )
        names.append(nice(r.role_family))
        vals.append(None if h or share is None else share)
        labels.append(
            hidden_label(r.headcount, thr) if h else (pct(share) if share is not None else "none")
        )
    tot_h, tot_c = float(g["headcount"].sum()), float(g["compliant"].sum())
    facts = GapFacts(
        gap_people=tot_h - tot_c,
        headcount=tot_h,
        largest=[
            RoleGap(str(r.role_family), float(r.gap), float(r.headcount), r.codes)
            for r in g.assign(gap=g["headcount"] - g["compliant"])
            .sort_values(["gap", "role_family"], ascending=[False, True])
            .itertuples()
            if not mask[r.role_family] and r.gap > 0
        ][:3],
    )
    lead = sentence(
        "{gap}: they lack at least one certification their role requires under the team "
        "template for their cluster's current fleet size ({month}).",
        gap=count("gap-people", facts.gap_people),
        month=month_label(q.last_month),
    )
    t = table(
        f"Role requirements and gaps, {month_label(q.last_month)}",
        ["Role", "Required (current fleet size)", label("headcount").capitalize(),
         "Meet requirements", "Missing ≥1 required"],
        rows,
        total=["All roles", "", fig("headcount", num(tot_h)),
               fig("compliant-headcount", num(tot_c)), fig("gap-people", num(tot_h - tot_c))],
        key="gaps-roles",
    )  # fmt: skip
    codes = sorted({c for v in g["codes"] for c in str(v).split(", ") if c})
    named = [f"{cert_names[c]} ({c})" for c in codes if cert_names and c in cert_names]
    if named:
        lead += sentence(" The certifications required: {n}.", n="; ".join(named))
    return Section(sid, title, True, lead, [], [t]), facts
