"""Operations: GPU utilisation, capacity commissioning and change outcomes, by certification.

Three parts, each from its mart (the restricted copy when the build file is at hand; every
figure printed here is suppressed here):

- **Utilisation** (`cluster_utilisation`): the busy and lost shares of available GPU-hours
  over all clusters by month, beside the teams' certified share (a chart of the last 24
  months), and the quarter's cluster-months by the team's certified share. A cluster-month
  whose team has fewer engineers than the minimum group size (or whose share the published
  mart hides) is counted apart, without its share.
- **Commissioning** (`capacity_commissioning`): the projects accepted into production up to
  the quarter's end, by the certified share of those who led them: projects, GPUs added,
  median days to production and median days per 1,000 GPUs. A group of fewer projects than
  the minimum group size is hidden (and one more when only one would be).
- **Change outcomes** (`change_outcomes`): the quarter's changes by the implementer's
  certification status, with the DORA change failure rate and the mean lead time; a status
  any of whose months the mart built from fewer implementers than the minimum is hidden.

The effects (`operations_effect`) print through the certification effects' helpers
(`sections/effects.py`): one status word, tagged, wherever an effect is named. A company that
delivered none of the three exports gets one paragraph naming the exports that would measure
this, and no chart.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date

import pandas as pd
from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import fig, month_label, num, pct, sentence
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Section, Table, months_up_to, table, unavailable
from pipelines.lib.report.sections.effects import (
    Effect,
    effect_sentence,
    effect_status,
    effect_value,
    estimate_text,
    read_effects,
)
from pipelines.lib.report.suppression import is_small, mask_label, shown, suppression_mask

SID, TITLE = "operations", "Operations: GPU utilisation, commissioning and changes"
# part -> (export, what it is, what it measures): the words when it was not delivered
EXPORTS = {
    "utilisation": (
        "gpu_usage",
        "Slurm job accounting (sacct) or a Grafana table of DCGM telemetry per cluster, in fleet/",
        "busy and lost GPU-hours",
    ),
    "commissioning": (
        "capacity_changes",
        "Jira epics of the capacity projects naming who led them, or the contract's own "
        "columns, in changes/",
        "days from hardware delivery to production",
    ),
    "changes": (
        "changes",
        "the ServiceNow change_request list of changes on the clusters, or the contract's own "
        "columns, in changes/",
        "the change failure rate",
    ),
}
SHARE_BANDS = ((0.0, 0.25, "under 25 %"), (0.25, 0.5, "25–50 %"), (0.5, 0.75, "50–75 %"),
               (0.75, 1.01, "75 % and more"))  # fmt: skip
LEAD_GROUPS = {  # certified share of the leads -> group
    "none": "No lead certified",
    "some": "Some leads certified",
    "all": "All leads certified",
    "unlinked": "Leads not linked to an engineer",
    "withheld": "Leads withheld by the published mart",
}
CHANGE_STATUS = {
    "certified": "Certified implementer",
    "not_certified": "Implementer not certified",
    "unlinked": "Implementer not linked to an engineer",
    "all": "All changes",
}
OPS_METRICS = (
    "change_failure_ratio",
    "busy_share_per_10_points",
    "lost_share_per_10_points",
    "commissioning_time_ratio",
)


@dataclass(frozen=True)
class OperationsFacts:
    busy_share: float | None = None  # the quarter, all clusters
    lost_share: float | None = None
    change_failure_rate: float | None = None  # the quarter, all changes
    missing: tuple[str, ...] = ()  # exports not delivered (EXPORTS keys)
    effects: dict[str, Effect] = field(default_factory=dict)


def _present(df: pd.DataFrame | None) -> bool:
    return df is not None and not df.empty


def missing_text(parts: list[str], everything: bool) -> Markup:
    """One short paragraph: which exports would measure what is not measured."""
    if everything:
        names = Markup("; ").join(
            sentence("{export} ({what}: {measures})", export=EXPORTS[p][0], what=EXPORTS[p][1],
                     measures=EXPORTS[p][2])
            for p in parts
        )  # fmt: skip
        return sentence(
            "No operations export was delivered, so GPU utilisation, capacity commissioning and "
            "change outcomes are not measured here and the returns claimed from them stay "
            "assumed. Three exports would measure them (the export contracts describe each): "
            "{names}.",
            names=names,
        )
    return Markup(" ").join(
        sentence("Not measured: {measures}; the {export} export ({what}) would measure it.",
                 measures=EXPORTS[p][2], export=EXPORTS[p][0], what=EXPORTS[p][1])
        for p in parts
    )  # fmt: skip


def _months(df: pd.DataFrame | None) -> pd.DataFrame | None:
    """The mart with `month` as dates, the way `Quarter.months` names months."""
    if df is not None and "month" in df.columns:
        df["month"] = pd.to_datetime(df["month"]).dt.date
    return df


# --- utilisation -------------------------------------------------------------------------------


def _pooled(df: pd.DataFrame, num_col: str, den_col: str) -> float | None:
    den = float(df[den_col].sum())
    return float(df[num_col].sum()) / den if den else None


def utilisation_by_month(util: pd.DataFrame, months: list[date], thr: int) -> dict[str, list]:
    """Busy and lost shares of all clusters' available GPU-hours, and the teams' certified
    share (engineers of all teams that month; hidden under `thr` engineers), per month."""
    out: dict[str, list] = {"busy": [], "lost": [], "certified": []}
    for m in months:
        rows = util[util["month"] == m]
        out["busy"].append(_pooled(rows, "gpu_hours_busy", "gpu_hours_available"))
        out["lost"].append(_pooled(rows, "gpu_hours_lost", "gpu_hours_available"))
        people = float(rows["engineers"].fillna(0).sum())
        out["certified"].append(
            None if is_small(people, thr) or not people else _pooled(
                rows, "certified_engineers", "engineers")
        )  # fmt: skip
    return out


def _band(share: float) -> str:
    return next(label for lo, hi, label in SHARE_BANDS if lo <= share < hi)


def utilisation_rows(util: pd.DataFrame, q: Quarter, thr: int) -> list[list]:
    """The quarter's cluster-months by the team's certified share: cluster-months, GPU-hours
    available, busy and lost share; teams under `thr` engineers in a row of their own."""
    rows = util[util["month"].isin(q.months)].copy()
    hidden = hidden_in_marts(rows.assign(key=list(zip(rows["month"], rows["cluster"],
                                                       strict=True))), "key")  # fmt: skip
    small = [
        is_small(e, thr) or not e or (m, c) in hidden
        for e, m, c in zip(rows["engineers"], rows["month"], rows["cluster"], strict=True)
    ]
    rows["band"] = [
        f"Teams of fewer than {thr} engineers (share withheld)" if s else _band(float(sh))
        for s, sh in zip(small, rows["certified_share"].fillna(0), strict=True)
    ]
    order = [b[2] for b in SHARE_BANDS] + [f"Teams of fewer than {thr} engineers (share withheld)"]
    out = []
    for band in [b for b in order if (rows["band"] == b).any()] + ["All clusters"]:
        total = band == "All clusters"
        g = rows if total else rows[rows["band"] == band]
        busy = pct(_pooled(g, "gpu_hours_busy", "gpu_hours_available"), 1)
        lost = pct(_pooled(g, "gpu_hours_lost", "gpu_hours_available"), 1)
        out.append(
            [
                band,
                num(len(g)),
                num(g["gpu_hours_available"].sum()),
                fig("gpu-busy-share", busy) if total else busy,
                fig("gpu-lost-share", lost) if total else lost,
            ]
        )
    return out


def _utilisation(section: Section, util: pd.DataFrame, q: Quarter, thr: int) -> tuple:
    months = [m for m in months_up_to(q) if (util["month"] == m).any()]
    series = utilisation_by_month(util, months, thr)
    now = util[util["month"].isin(q.months)]
    busy = _pooled(now, "gpu_hours_busy", "gpu_hours_available") if len(now) else None
    lost = _pooled(now, "gpu_hours_lost", "gpu_hours_available") if len(now) else None
    if len(months) >= 2:
        svg = charts.line_chart(
            "operations-utilisation",
            [month_label(m) for m in months],
            {
                "Busy share of GPU-hours": series["busy"],
                "Lost share of GPU-hours": series["lost"],
                "Team engineers certified": series["certified"],
            },
            title="GPU-hours busy and lost, and the teams' certified share, by month",
            alt="Line chart: by month, the share of all clusters' available GPU-hours that was "
            "busy and the share lost to failed jobs, with the share of the clusters' team "
            "engineers holding an active certification.",
        )
        section.charts.append(charts.Chart("operations-utilisation", svg, ""))
    if len(now):
        section.tables.append(
            table(
                f"GPU-hours by the team's certified share, {q.label}",
                ["Team's certified share", "Cluster-months", "GPU-hours available",
                 "Busy share", "Lost share"],
                utilisation_rows(util, q, thr),
                key="operations-utilisation",
                note="Busy: the DCGM utilisation of the available GPU-hours; lost: the "
                "GPU-hours of jobs that ended failed, node failure or out of memory "
                "(marts.cluster_utilisation).",
            )
        )  # fmt: skip
    return busy, lost


# --- commissioning -----------------------------------------------------------------------------


def _lead_group(leads: object, share: object, withheld: bool = False) -> str:
    """The group of a project by the certified share of its leads; `withheld`: the published
    mart hid the leads (the report was given no build file)."""
    if withheld and (pd.isna(leads) or pd.isna(share)):  # type: ignore[arg-type]
        return "withheld"
    if pd.isna(leads) or not float(leads) or pd.isna(share):  # type: ignore[arg-type]
        return "unlinked"
    s = float(share)  # type: ignore[arg-type]
    return "none" if s == 0 else "all" if s >= 1 else "some"


def commissioning_rows(projects: pd.DataFrame, q: Quarter, thr: int) -> list[list]:
    """Projects in production up to the quarter's end, by the certified share of their leads."""
    done = projects[
        projects["accepted_on"].notna()
        & projects["days_to_production"].notna()
        & (pd.to_datetime(projects["accepted_on"]).dt.date <= q.end)
    ].copy()
    withheld = (
        done["suppressed"].fillna(False).astype(bool)
        if "suppressed" in done.columns
        else pd.Series(False, index=done.index)
    )
    done["group"] = [
        _lead_group(n, s, w)
        for n, s, w in zip(done["leads"], done["certified_share_of_leads"], withheld, strict=True)
    ]
    sizes = {g: float((done["group"] == g).sum()) for g in LEAD_GROUPS}
    mask = suppression_mask({g: n for g, n in sizes.items() if n}, thr)
    out = []
    for g in [g for g in LEAD_GROUPS if sizes[g]] + ["total"]:
        rows = done if g == "total" else done[done["group"] == g]
        h = mask.get(g, False)
        out.append(
            [
                "All projects" if g == "total" else LEAD_GROUPS[g],
                shown(len(rows), h, thr),
                shown(float(rows["gpus_added"].sum()), h, thr),
                shown(rows["days_to_production"].median(), h, thr, "{:,.1f}"),
                shown(rows["days_per_1000_gpus"].median(), h, thr),
            ]
        )
    return out


def _commissioning(section: Section, projects: pd.DataFrame, q: Quarter, thr: int) -> None:
    rows = commissioning_rows(projects, q, thr)
    if len(rows) <= 1:
        return
    section.tables.append(
        table(
            f"Capacity projects in production up to {q.end:%d %B %Y}, by who led them",
            ["Leads", "Projects", "GPUs added", "Median days to production",
             "Median days per 1,000 GPUs"],
            rows,
            key="operations-commissioning",
            note=f"Days from the hardware's delivery to its acceptance into production "
            f"(marts.capacity_commissioning); certified on the delivery day. A group of fewer "
            f"than {thr} projects is hidden.",
        )
    )  # fmt: skip


# --- changes -----------------------------------------------------------------------------------


def change_rows(co: pd.DataFrame, q: Quarter, thr: int) -> tuple[list[list], float | None]:
    """The quarter's changes by the implementer's status; the all-changes failure rate."""
    rows = co[co["month"].isin(q.months)]
    if rows.empty:
        return [], None
    groups = [s for s in CHANGE_STATUS if s != "all" and (rows["certification_status"] == s).any()]
    hidden = hidden_in_marts(rows, "certification_status")
    sizes = {}
    for s in groups:
        people = rows.loc[rows["certification_status"] == s, "implementers"]
        small = any(is_small(v, thr) for v in people) and s != "unlinked"
        sizes[s] = 1.0 if small else max(float(people.fillna(0).max()), 0.0) or float("inf")
    mask = suppression_mask(sizes, thr, also_hidden=hidden)
    # a month of fewer implementers than the minimum (or hidden in the published mart): the
    # whole line goes, the total with it
    everyone = rows.loc[rows["certification_status"] == "all", "implementers"]
    if any(is_small(v, thr) for v in everyone) or "all" in hidden:
        mask = dict.fromkeys([*groups, "all"], True)
    out, rate = [], None
    for s in [*groups, "all"]:
        g = rows[rows["certification_status"] == s]
        h = mask.get(s, False)
        changes, failed = float(g["changes"].sum()), float(g["failed_changes"].sum())
        cfr = failed / changes if changes else None
        lead = (g["lead_time_mean_hours"] * g["changes"]).sum() / changes if changes else None
        if s == "all" and not h:
            rate = cfr
        out.append(
            [
                CHANGE_STATUS[s],
                shown(changes, h, thr),
                shown(failed, h, thr),
                mask_label(thr) if h else (fig("change-failure-rate", pct(cfr, 1))
                                           if s == "all" else pct(cfr, 1)),
                shown(lead, h, thr, "{:,.0f}"),
            ]
        )  # fmt: skip
    return out, rate


def _changes(section: Section, co: pd.DataFrame, q: Quarter, thr: int) -> float | None:
    rows, rate = change_rows(co, q, thr)
    if rows:
        section.tables.append(
            table(
                f"Changes on the clusters by the implementer's certification, {q.label}",
                ["Implementer", "Changes", "Failed", "Change failure rate",
                 "Mean lead time (hours)"],
                rows,
                key="operations-changes",
                note="DORA definitions (marts.change_outcomes): the change failure rate is the "
                "share of deployed changes that closed unsuccessful or backed out or caused an "
                "incident; lead time runs from the change request's opening to its "
                "implementation. Certified on the day the work started.",
            )
        )  # fmt: skip
    return rate


# --- effects and the section -------------------------------------------------------------------


def operations_effects_table(effects: dict[str, Effect], thr: int) -> Table:
    rows = []
    for e in effects.values():
        few = e.n_engineers is not None and 0 < e.n_engineers < thr
        naive = (
            fig(f"naive-{e.metric}", effect_value(e, e.naive_estimate))
            if e.naive_estimate is not None
            else "–"
        )
        rows.append(
            [
                e.label,
                estimate_text(e) if e.estimable and not few else "–",
                effect_status(e),
                naive if not few else mask_label(thr),
            ]
        )
    return table(
        "Estimated effect of a certified team on operations (ratios: 1 = no difference; "
        "shares: percentage points per 10 points of the team certified, 0 = no difference)",
        ["Outcome", "Estimate (95 % CI)", "Status", "Plain comparison"],
        rows,
        key="operations-effects",
        note="How each is estimated (marts.operations_effect, column method; docs/statistics.md): "
        "change failures compare each implementer with their own changes before certifying; the "
        "GPU-hour shares compare each cluster with its own other months and with the other "
        "clusters in the same month, the interval a wild cluster bootstrap, which stays honest "
        "with few clusters; commissioning compares projects across clusters, allowing for the "
        "GPUs added.",
    )


def operations_section(marts: Marts, q: Quarter, thr: int) -> tuple[Section, OperationsFacts]:
    util, projects, co = (
        _months(marts.get("cluster_utilisation")),
        marts.get("capacity_commissioning"),
        _months(marts.get("change_outcomes")),
    )
    have = {"utilisation": _present(util), "commissioning": _present(projects),
            "changes": _present(co)}  # fmt: skip
    missing = tuple(p for p, ok in have.items() if not ok)
    eff = marts.get("operations_effect")
    effects = {m: e for m, e in read_effects(eff).items() if m in OPS_METRICS}
    if not any(have.values()):
        lead = missing_text(list(EXPORTS), everything=True)
        return unavailable(SID, TITLE, str(lead)), OperationsFacts(missing=missing)
    section = Section(SID, TITLE)
    busy = lost = rate = None
    if have["utilisation"]:
        busy, lost = _utilisation(section, util, q, thr)  # type: ignore[arg-type]
    if have["commissioning"]:
        _commissioning(section, projects, q, thr)  # type: ignore[arg-type]
    if have["changes"]:
        rate = _changes(section, co, q, thr)  # type: ignore[arg-type]
    # an effect whose export is missing is not printed: the paragraph says what would give it
    needs = {"change_failure_ratio": "changes", "busy_share_per_10_points": "utilisation",
             "lost_share_per_10_points": "utilisation", "commissioning_time_ratio": "commissioning"}  # fmt: skip
    shown_effects = {m: e for m, e in effects.items() if have[needs[m]]}
    if shown_effects:
        section.tables.append(operations_effects_table(shown_effects, thr))
    parts: list[Markup] = []
    if busy is not None:
        parts.append(
            sentence(
                "In {q}, {busy} of the clusters' available GPU-hours were busy and {lost} were "
                "lost to failed jobs.",
                q=q.label,
                busy=fig("gpu-busy-share", pct(busy, 1)),
                lost=fig("gpu-lost-share", pct(lost, 1)),
            )
        )
    if rate is not None:
        parts.append(
            sentence(
                "The change failure rate (DORA) was {rate}.",
                rate=fig("change-failure-rate", pct(rate, 1)),
            )
        )
    parts += [effect_sentence(e) for e in shown_effects.values()]
    if missing:
        parts.append(missing_text(list(missing), everything=False))
    section.lead = Markup(" ").join(parts)
    return section, OperationsFacts(busy, lost, rate, missing, shown_effects)
