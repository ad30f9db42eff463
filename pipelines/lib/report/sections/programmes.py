"""Which training programmes work: participants, time to certify, first-attempt passes, cost per
certification earned, retention, and the comparison with the online path adjusted for who was
sent, ending in what the figures mean for next year's training budget.

Sources (each optional: a missing mart makes its columns say "not available"):

- `programme_outcomes` (the build file's restricted copy when at hand): participants, certified,
  first attempts and passes, voluntary exits within 12 months, summed per programme over tracks
  and cohorts (`entry_level = 'all'` rows);
- `time_to_certify` (cohort `all`): the Kaplan-Meier median months to certify;
- `programme_costs` (`certification_code = 'all'`): fees, engineers' time and senior time, each
  priced with the assumptions the mart names in `priced_with`;
- `programme_comparison`: each programme against online, adjusted; every ratio is printed
  through `status_tag`, so it reads as shown, not shown or not estimable; a comparison that is
  not estimable shows no figure (not even the naive one the restricted copy keeps), and the
  table's note says what data would make it estimable (`data_needed`);
- the seed `training_programme_types.csv`: the domain reference's figures beside this company's.

A participant is one engineer preparing for one certification track, so an engineer preparing
for two tracks counts twice. A programme with fewer participants than the minimum group size
prints `<5` everywhere; a rate about fewer people than that (first attempts, participants
followed 12 months) prints `<5` too.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.report.data import Marts
from pipelines.lib.report.fmt import (
    DASH,
    fig,
    interval,
    missing,
    nice,
    num,
    pct,
    ratio,
    sentence,
    usd,
)
from pipelines.lib.report.sections.base import Data, Section, Table, table, unavailable
from pipelines.lib.report.sections.effects import Effect, read_effect, status_tag
from pipelines.lib.report.suppression import hidden_label, is_small, mask_label

SEED = DBT_PROJECT_DIR / "seeds" / "training_programme_types.csv"
# the order a reader expects: the reference path first, then by cost
ORDER = ("online", "bootcamp", "vendor_partnership", "apprenticeship", "internal")
NAMES = {"vendor_partnership": "Vendor partnership", "unknown": "Not in the catalogue"}
MARTS = ("programme_outcomes", "time_to_certify", "programme_costs", "programme_comparison")

# metric -> (column heading, what a ratio below 1 means, above 1)
COMPARISONS = {
    "time_to_certify_ratio": ("Time to certify", "less time", "more time"),
    "first_pass_odds_ratio": ("First-attempt pass odds", "lower odds", "higher odds"),
    "voluntary_exit_hazard_ratio": ("Voluntary exits", "fewer exits", "more exits"),
}


# the columns each mart must have for the report to read it (the rest are read when present)
REQUIRED = {
    "programme_outcomes": ("programme_type", "participants"),
    "time_to_certify": ("programme_type", "median_months"),
    "programme_costs": ("programme_type", "cost_per_certification_usd"),
    "programme_comparison": ("programme_type", "metric", "estimate"),
    "time_in_level": ("skill_level", "median_months"),
    "level_progression": ("skill_level", "year", "engineers", "promotions"),
    "level_progression_12m": ("skill_level", "window_end", "engineers", "promotions"),
    "salary_bands": ("skill_level", "quarter", "headcount"),
    "promotion_effect": ("metric", "estimate"),
}
# other names a column may have
ALIASES = {
    "level_progression": {"calendar_year": "year"},
    "salary_bands": {"quarter_end": "quarter"},  # the mart is dated by the quarter's last day
}


def usable(marts: Marts, name: str) -> pd.DataFrame | None:
    """The mart when it exists, has rows and the columns the report reads; else None."""
    df = marts.get(name)
    if df is None or df.empty:
        return None
    df = df.rename(columns={k: v for k, v in ALIASES.get(name, {}).items() if v not in df})
    return df if set(REQUIRED.get(name, ())) <= set(df.columns) else None


def unreadable(marts: Marts, names) -> list[str]:
    """Marts present but without the columns the report reads, named with what is missing."""
    out = []
    for name in names:
        df = marts.get(name)
        if df is not None and not df.empty and usable(marts, name) is None:
            lacking = sorted(set(REQUIRED[name]) - set(df.columns))
            out.append(f"{name} (lacks {', '.join(lacking)})")
    return out


def programme_name(p: str) -> str:
    return NAMES.get(p, nice(p))


def value(row: pd.Series | dict, col: str) -> float | None:
    """A number from a mart row, None when the column is absent or the value missing."""
    v = row.get(col) if hasattr(row, "get") else None
    return None if v is None or missing(v) else float(v)


def flag(row: pd.Series | dict, col: str) -> bool:
    v = row.get(col)
    return False if v is None or missing(v) else bool(v)


@dataclass
class Programme:
    code: str
    participants: float | None = None
    certified: float | None = None
    first_attempts: float | None = None
    first_passes: float | None = None
    followed_12m: float | None = None
    exits_12m: float | None = None
    hidden: bool = False
    # time to certify (Kaplan-Meier, cohort 'all')
    median: float | None = None
    median_lo: float | None = None
    median_hi: float | None = None
    median_track: str = ""  # the track the median is of, when the mart has no all-tracks row
    time_hidden: bool = False
    # costs ('all' tracks)
    costs: dict[str, float | None] = field(default_factory=dict)
    cost_hidden: bool = True
    priced_with: str = ""

    @property
    def name(self) -> str:
        return programme_name(self.code)

    @property
    def pass_rate(self) -> float | None:
        if not self.first_attempts or self.first_passes is None:
            return None
        return self.first_passes / self.first_attempts

    @property
    def exit_rate(self) -> float | None:
        if not self.followed_12m or self.exits_12m is None:
            return None
        return self.exits_12m / self.followed_12m

    @property
    def cost_per_certification(self) -> float | None:
        return None if self.cost_hidden else self.costs.get("cost_per_certification_usd")


@dataclass(frozen=True)
class ProgrammeFacts:
    programmes: dict[str, Programme]
    comparisons: dict[tuple[str, str], Effect]  # (programme, metric)
    complete: bool  # outcomes summed from unsuppressed rows


def _order(codes) -> list[str]:
    codes = {str(c) for c in codes if not missing(c)}
    return [c for c in ORDER if c in codes] + sorted(codes - set(ORDER))


def _track_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The all-tracks rows when the mart has them, else every track (summed by the caller)."""
    if "certification_code" in df.columns and (df["certification_code"] == "all").any():
        return df[df["certification_code"] == "all"]
    return df


def _outcomes(df: pd.DataFrame, progs: dict[str, Programme], thr: int) -> bool:
    """Sum the outcome counts per programme over tracks and cohorts; returns whether the rows
    are whole (the restricted copy) rather than the published rows with small cohorts hidden."""
    if "entry_level" in df.columns:
        df = df[df["entry_level"].astype(str) == "all"]
    df = _track_rows(df)
    whole = "published_suppressed" in df.columns or not (
        "suppressed" in df.columns and df["suppressed"].fillna(False).astype(bool).any()
    )
    cols = {
        "participants": "participants",
        "certified": "certified",
        "first_attempts": "first_attempts",
        "first_passes": "first_attempt_passes",
        "followed_12m": "followed_12m",
        "exits_12m": "voluntary_exits_12m",
    }
    for code, rows in df.groupby("programme_type"):
        p = progs.setdefault(str(code), Programme(str(code)))
        for attr, col in cols.items():
            if col in rows.columns:
                setattr(p, attr, float(pd.to_numeric(rows[col], errors="coerce").fillna(0).sum()))
    return whole


def _times(df: pd.DataFrame, progs: dict[str, Programme], thr: int) -> None:
    """Median months to certify per programme, cohort 'all': the all-tracks row, else the
    programme's largest visible track (named beside the figure)."""
    if "cohort" in df.columns:
        df = df[df["cohort"].astype(str) == "all"]
    has_all = "certification_code" in df.columns and (df["certification_code"] == "all").any()
    for code, rows in df.groupby("programme_type"):
        p = progs.setdefault(str(code), Programme(str(code)))
        visible = rows[
            ~rows.get("suppressed", pd.Series(False, index=rows.index)).fillna(True).astype(bool)
        ]
        visible = visible[
            [not is_small(value(r, "participants"), thr) for _, r in visible.iterrows()]
        ]
        if has_all:
            visible = visible[visible["certification_code"] == "all"]
        if visible.empty:
            p.time_hidden = True
            continue
        best = visible.sort_values("participants", ascending=False).iloc[0]
        p.median = value(best, "median_months")
        p.median_lo = value(best, "median_ci_low")
        p.median_hi = value(best, "median_ci_high")
        p.median_track = "" if has_all else str(best.get("certification_code", ""))


def _costs(df: pd.DataFrame, progs: dict[str, Programme], thr: int) -> None:
    df = df[df["certification_code"].astype(str) == "all"] if "certification_code" in df else df
    for r in df.to_dict("records"):
        p = progs.setdefault(str(r["programme_type"]), Programme(str(r["programme_type"])))
        p.cost_hidden = flag(r, "suppressed") or is_small(value(r, "participants"), thr)
        p.costs = {
            c: value(r, c)
            for c in ("participants", "certifications_earned", "fees_usd", "exam_fees_usd",
                      "engineer_time_usd", "senior_time_usd", "total_cost_usd",
                      "cost_per_certification_usd", "training_hours")
        }  # fmt: skip
        p.priced_with = "" if missing(r.get("priced_with")) else str(r.get("priced_with"))
        if p.participants is None:  # no outcomes mart: the costs mart counts them too
            p.participants = p.costs["participants"]
            p.certified = p.costs["certifications_earned"]


def _comparisons(df: pd.DataFrame) -> dict[tuple[str, str], Effect]:
    out = {}
    for _, r in df.iterrows():
        if str(r["metric"]) in COMPARISONS:
            out[(str(r["programme_type"]), str(r["metric"]))] = read_effect(r)
    return out


def read_programmes(marts: Marts, thr: int) -> ProgrammeFacts | None:
    if not any(marts.has(m) for m in MARTS):
        return None
    progs: dict[str, Programme] = {}
    whole = True
    out = usable(marts, "programme_outcomes")
    if out is not None:
        whole = _outcomes(out, progs, thr)
    ttc = usable(marts, "time_to_certify")
    if ttc is not None:
        _times(ttc, progs, thr)
    costs = usable(marts, "programme_costs")
    if costs is not None:
        _costs(costs, progs, thr)
    comp = usable(marts, "programme_comparison")
    comparisons = _comparisons(comp) if comp is not None else {}
    for p in progs.values():
        # one group size per programme: hidden in one mart, hidden everywhere
        p.hidden = is_small(p.participants, thr) or (
            p.participants is None and p.cost_hidden and p.time_hidden
        )
        if p.hidden:
            p.cost_hidden = p.time_hidden = True
    ordered = {c: progs[c] for c in _order(progs)}
    return ProgrammeFacts(ordered, comparisons, whole)


# --- the seed's figures ---------------------------------------------------------------------


def seed_figures(path: Path = SEED) -> dict[str, str]:
    """Programme -> the domain reference's figures in a few words (cost per participant,
    duration, the share or discount its description states), from the dbt seed."""
    if not path.is_file():
        return {}
    out = {}
    with path.open(encoding="utf-8") as fh:
        for r in csv.DictReader(fh):
            parts = []
            lo, hi = r.get("cost_min_usd") or "", r.get("cost_max_usd") or ""
            if lo and hi:
                parts.append(f"{usd(float(lo))}–{usd(float(hi))} per participant")
            said = re.search(r"(?:about|discount)\s[^;,()]*?%[^;,()]*", r.get("description") or "")
            if said:
                parts.append(said.group(0).strip().replace("-", "–"))
            if r.get("duration"):
                parts.append(r["duration"].replace("-", "–").replace("; ", ", "))
            out[r["programme_type"]] = "; ".join(parts) or DASH
    return out


# --- printing ---------------------------------------------------------------------------------


def _count(p: Programme, v: float | None, thr: int) -> str:
    return hidden_label(p.participants, thr) if p.hidden else num(v)


def _rate(p: Programme, share: float | None, base: float | None, thr: int) -> str:
    if p.hidden:
        return hidden_label(p.participants, thr)
    if base is not None and is_small(base, thr):
        return mask_label(thr)
    return pct(share) if share is not None else DASH


def _median(p: Programme, thr: int) -> Markup | str:
    if p.time_hidden:
        return mask_label(thr)
    if p.median is None:
        return "not reached" if p.participants else DASH
    text = fig(f"programme-median-{p.code}", num(p.median, 1))
    ci = interval(p.median_lo, p.median_hi, lambda v: num(v, 1))
    track = f", {p.median_track}" if p.median_track else ""
    return sentence("{m} ({ci}{t})", m=text, ci=ci, t=track)


def _outcome_table(f: ProgrammeFacts, thr: int, available: set[str]):
    def na(mart: str, text):
        return text if mart in available else "not available"

    rows = []
    for p in f.programmes.values():
        rows.append(
            [
                p.name,
                na("programme_outcomes", _count(p, p.participants, thr)),
                na("programme_outcomes", _count(p, p.certified, thr)),
                na("time_to_certify", _median(p, thr)),
                na("programme_outcomes", _rate(p, p.pass_rate, p.first_attempts, thr)),
                na("programme_outcomes", _rate(p, p.exit_rate, p.followed_12m, thr)),
            ]
        )
    note = (
        "Participants: one per engineer and certification track prepared for. Median months "
        "to certify from first enrolment (Kaplan-Meier: engineers still preparing or gone "
        "count until then; \u201cnot reached\u201d: fewer than half had certified), with its "
        "95 % interval. Pass rate: first exam attempts passed; voluntary exits within 12 "
        "months of starting, of the participants followed that long."
    )
    if not f.complete:
        note += " Counts are the published rows only: cohorts hidden there are left out."
    return table(
        "Training programmes: participants, time to certify, first-attempt passes, retention",
        ["Programme", "Participants", "Certified", "Median months to certify (95 % CI)",
         "First-attempt pass rate", "Left voluntarily within 12 months"],
        rows, key="programmes", note=note,
    )  # fmt: skip


COST_PARTS = (
    ("fees_usd", "Course fees"),
    ("exam_fees_usd", "Exam fees"),
    ("engineer_time_usd", "Engineers' time"),
    ("senior_time_usd", "Senior time"),
)


def _cost_table(f: ProgrammeFacts, thr: int, seed: dict[str, str]):
    rows, data = [], []
    for p in f.programmes.values():
        if not p.costs and p.cost_hidden:
            continue
        h = p.cost_hidden
        gone = hidden_label(p.participants, thr)
        cells = [gone if h else usd(p.costs.get(c)) for c, _ in COST_PARTS]
        per = p.cost_per_certification
        per_text: Markup | str = gone if h else (
            fig(f"programme-cost-per-cert-{p.code}", usd(per)) if per is not None
            else "none earned"
        )  # fmt: skip
        rows.append([p.name, *cells, per_text, seed.get(p.code, DASH)])
        data.append(
            [p.name]
            + ([None] * 6 if h else [
                None if p.costs.get(c) is None else round(float(p.costs[c]), 2)  # type: ignore[arg-type]
                for c, _ in COST_PARTS
            ] + [p.costs.get("certifications_earned"),
                 None if per is None else round(per, 2)])
            + [bool(h)]
        )  # fmt: skip
    priced = sorted({p.priced_with for p in f.programmes.values() if p.priced_with})
    note = (
        "Cost per certification = (course fees + exam fees + engineers' time + senior time) ÷ "
        "certifications earned; engineers' time is their training hours, senior time the "
        "apprentices' share of a senior's hours (glossary). It is each programme's own cost, "
        "over all its cohorts; the actions and the team composition price a certification at "
        "a different figure, the ROI investment per certification earned (the last 12 months' "
        "whole investment, exam materials and labs included, ÷ the certifications earned in "
        "them)."
    )
    if priced:
        note += " Priced with the assumptions file: " + "; ".join(priced) + "."
    note += " Seed's figures: dbt seed training_programme_types.csv."
    return table(
        "Cost per certification earned, by programme (all tracks), beside the seed's figures",
        ["Programme", *(n for _, n in COST_PARTS), "Per certification earned", "Seed's figures"],
        rows,
        key="programme-costs",
        note=note,
        data=Data(
            ["Programme", *(f"{n} (USD)" for _, n in COST_PARTS),
             "Certifications earned (count)", "Cost per certification earned (USD)",
             "Hidden: fewer than the minimum group size (true/false)"],
            data,
        ),
    )  # fmt: skip


def effect_key(programme: str, metric: str) -> str:
    return f"{metric}-{programme}"


def comparison_cell(programme: str, e: Effect) -> Markup:
    """`0.62 (0.50–0.77), shown`, or the status alone when it cannot be estimated."""
    tag = status_tag(effect_key(programme, e.metric), e.status)
    if e.status == "not_estimable":
        return tag
    key = effect_key(programme, e.metric)
    return sentence(
        "{est} ({ci}), {tag}",
        est=fig(f"effect-{key}", ratio(e.estimate)),
        ci=fig(f"effect-{key}-ci", interval(e.ci_low, e.ci_high)),
        tag=tag,
    )


def _comparison_table(f: ProgrammeFacts):
    progs = _order({p for p, _ in f.comparisons})
    rows = []
    # programme -> (comparison, data needed) of each comparison too small to tell; the reason in
    # full is the mart's not_estimable_reason
    unknown: dict[str, list[tuple[str, str]]] = {}
    for p in progs:
        cells = []
        for metric in COMPARISONS:
            e = f.comparisons.get((p, metric))
            cells.append(DASH if e is None else comparison_cell(p, e))
            if e is not None and e.status == "not_estimable":
                unknown.setdefault(programme_name(p).lower(), []).append(
                    (COMPARISONS[metric][0].lower(), e.data_needed)
                )
        rows.append([programme_name(p), *cells])
    note = sentence(
        "Each programme against the online path, adjusted for skill level, tenure and track at "
        "entry (who was sent): a ratio of 1 means no difference; time ratio below 1 = "
        "certified in less time, pass odds ratio above 1 = passed the first attempt more "
        "often, exit hazard ratio below 1 = fewer voluntary exits. 95 % intervals in brackets."
    )
    if unknown:
        note += sentence(
            " Too few to tell, so no figure is shown, and what would make each estimable: "
            "{which}. The reasons in full are in marts.programme_comparison "
            "(not_estimable_reason).",
            which="; ".join(_needed(p, held) for p, held in unknown.items()),
        )
    return table(
        "Adjusted comparison with the online path (ratio, 95 % interval, status)",
        ["Programme", *(v[0] for v in COMPARISONS.values())],
        rows,
        key="programme-comparison",
        note=note,
    )


def _needed(programme: str, held: list[tuple[str, str]]) -> str:
    """ "apprenticeship: time to certify and voluntary exits (<data needed>)", comparisons that
    need the same data named together."""
    by_need: dict[str, list[str]] = {}
    for metric, needed in held:
        by_need.setdefault(needed, []).append(metric)
    return f"{programme}: " + "; ".join(
        f"{' and '.join(metrics)} ({needed})" for needed, metrics in by_need.items()
    )


def _shown(f: ProgrammeFacts, metric: str) -> list[tuple[str, Effect]]:
    return [(p, e) for (p, m), e in f.comparisons.items() if m == metric]


def _and(parts: list[Markup]) -> Markup:
    """`a`, `a and b`, `a, b and c`."""
    if len(parts) < 2:
        return Markup("").join(parts)
    return Markup(", ").join(parts[:-1]) + Markup(" and ") + parts[-1]


def budget_paragraph(f: ProgrammeFacts) -> Markup | None:
    """What the figures mean for next year's training budget: cost per certification and time,
    and only the adjusted differences whose status is shown as reasons to move money."""
    priced = [p for p in f.programmes.values() if p.cost_per_certification]
    text = Markup("")
    if priced:
        cheap = min(priced, key=lambda p: p.cost_per_certification)  # type: ignore[arg-type,return-value]
        dear = max(priced, key=lambda p: p.cost_per_certification)  # type: ignore[arg-type,return-value]
        if cheap is not dear:
            times = dear.cost_per_certification / cheap.cost_per_certification  # type: ignore[operator]
            text += sentence(
                "What it means for next year's training budget: a certification earned through "
                "{cn} cost {cc}, through {dn} {dc}, so the money of one {dn_lower} "
                "certification pays for about {x} through {cn_lower}.",
                cn=cheap.name.lower(),
                cc=fig(f"programme-cost-per-cert-{cheap.code}", usd(cheap.cost_per_certification)),
                dn=dear.name.lower(),
                dc=fig(f"programme-cost-per-cert-{dear.code}", usd(dear.cost_per_certification)),
                dn_lower=dear.name.lower(),
                x=f"{times:.1f}",
                cn_lower=cheap.name.lower(),
            )
        else:
            text += sentence(
                "What it means for next year's training budget: only {n} has a cost per "
                "certification to compare ({c}).",
                n=cheap.name.lower(),
                c=fig(f"programme-cost-per-cert-{cheap.code}", usd(cheap.cost_per_certification)),
            )
    online = f.programmes.get("online")
    base = online.cost_per_certification if online else None
    faster = [(p, e) for p, e in _shown(f, "time_to_certify_ratio") if e.status == "shown"]
    others = [(p, e) for p, e in _shown(f, "time_to_certify_ratio") if e.status != "shown"]
    for p, e in faster:
        down = (e.estimate or 1) < 1
        prog = f.programmes.get(p)
        cost = prog.cost_per_certification if prog else None
        price = (
            sentence(
                " at {c} per certification against online's {o}",
                c=fig(f"programme-cost-per-cert-{p}", usd(cost)),
                o=fig("programme-cost-per-cert-online", usd(base)),
            )
            if cost is not None and base is not None
            else ""
        )
        text += sentence(
            " Adjusted for who was sent, {p} took {x} % {how} to certify than the online "
            "path (time ratio {est}, {tag}){price}: {then}.",
            p=programme_name(p).lower(),
            x=f"{abs((e.estimate or 1) - 1) * 100:.0f}",
            how="less time" if down else "more time",
            est=fig(f"effect-{effect_key(p, e.metric)}", ratio(e.estimate)),
            tag=status_tag(effect_key(p, e.metric), e.status),
            price=price,
            then="worth paying for where a role must be filled soon" if down
            else "speed is no reason to pay for it",
        )  # fmt: skip
    if others:
        text += sentence(
            " The adjusted time to certify of {names} against online gives no reason to move "
            "money: the differences in the first table may come from who was sent, so price "
            "the choice on cost per certification until they can be told apart.",
            names=_and(
                [
                    sentence(
                        "{p} ({tag})",
                        p=programme_name(p).lower(),
                        tag=status_tag(effect_key(p, e.metric), e.status),
                    )
                    for p, e in others
                ]
            ),
        )
    return text or None


@dataclass
class Untracked:
    """A programme whose courses carry no certification track (apprenticeship and internal
    courses, as a rule): it forms no preparation episode, so it is counted from the spend."""

    code: str
    enrolments: float
    completions: float
    spend: float
    hours: float
    most_people: float  # the largest quarter's participants: at least this many people
    hidden: bool

    @property
    def name(self) -> str:
        return programme_name(self.code)


def untracked_programmes(marts: Marts, f: ProgrammeFacts, thr: int) -> list[Untracked]:
    """Programme types of `training_spend` (its enrolments, all quarters) that no episode
    belongs to: the ROI counts their participants and costs, so the section names them too. A
    programme whose largest quarter had fewer than `thr` people is hidden (the count of people
    over all quarters is not published, and may be that small)."""
    spend = marts.get("training_spend")
    if spend is None or spend.empty or "spend_category" not in spend.columns:
        return []
    out = []
    for code, rows in spend.groupby("spend_category"):
        if str(code) not in ORDER or str(code) in f.programmes:
            continue

        def total(col: str, rows=rows) -> float:
            return float(pd.to_numeric(rows.get(col), errors="coerce").fillna(0).sum())

        most = float(pd.to_numeric(rows.get("participants"), errors="coerce").max() or 0)
        if not total("enrolments"):
            continue
        out.append(Untracked(str(code), total("enrolments"), total("completions"),
                             total("spend_usd"), total("training_hours"), most,
                             is_small(most, thr)))  # fmt: skip
    return sorted(out, key=lambda u: ORDER.index(u.code))


def _untracked_table(items: list[Untracked], thr: int) -> Table:
    rows = [
        [u.name] + ([hidden_label(u.most_people, thr)] * 4 if u.hidden else
                    [num(u.enrolments), num(u.completions), usd(u.spend), num(u.hours)])
        for u in items
    ]  # fmt: skip
    return table(
        "Programmes without a certification track: enrolments and costs",
        ["Programme", "Enrolments", "Completions", "Charged", "Training hours"],
        rows,
        key="programmes-untracked",
        scope="full",  # on screen, collapsed; the printed report keeps its page budget
        note="Their courses name no certification, so times to certify, pass rates and the "
        "comparisons do not apply; the investment counts their people and costs. All quarters "
        "(training_spend).",
    )


def programmes_section(
    marts: Marts, thr: int, seed_path: Path = SEED
) -> tuple[Section, ProgrammeFacts | None]:
    sid, title = "programmes", "Which training programmes work"
    f = read_programmes(marts, thr)
    if f is None or not f.programmes and not f.comparisons:
        why = (
            "Not available: the marts "
            + ", ".join(MARTS)
            + " are missing, empty or lack the columns the report reads."
        )
        return unavailable(sid, title, why), None
    available = {m for m in MARTS if usable(marts, m) is not None}
    tables = [_outcome_table(f, thr, available)]
    if "programme_costs" in available:
        tables.append(_cost_table(f, thr, seed_figures(seed_path)))
    if f.comparisons:
        tables.append(_comparison_table(f))
    untracked = untracked_programmes(marts, f, thr)
    if untracked:
        tables.insert(1, _untracked_table(untracked, thr))
    notes: list = []
    bad = unreadable(marts, MARTS)
    missing_marts = [
        m for m in MARTS if m not in available and not any(b.startswith(m) for b in bad)
    ]
    if missing_marts or bad:
        notes.append(f"Not available: the marts {', '.join(missing_marts + bad)}.")
    budget = budget_paragraph(f)
    if budget:
        notes.append(budget)
    lead = _lead(f, thr)
    if untracked:
        lead += sentence(
            " {names} courses carry no certification track: their enrolments and costs are "
            "counted apart.",
            names=" and ".join(u.name for u in untracked),
        )
    return Section(sid, title, True, lead, [], tables, notes), f


def _lead(f: ProgrammeFacts, thr: int) -> Markup:
    shown = [p for p in f.programmes.values() if not p.hidden and p.participants]
    hidden = [p for p in f.programmes.values() if p.hidden]
    text = sentence(
        "Engineers prepared for certifications through {n} kinds of programme{h}.",
        n=len(f.programmes),
        h=sentence(" ({names}: fewer than {thr} participants, hidden)",
                   names=", ".join(p.name.lower() for p in hidden), thr=thr) if hidden else "",
    )  # fmt: skip
    timed = [p for p in shown if p.median is not None and not p.time_hidden]
    # compare medians of the same track only (all tracks when the mart has them)
    tracks = sorted({p.median_track for p in timed}, key=lambda t: -sum(
        p.median_track == t for p in timed))  # fmt: skip
    timed = [p for p in timed if tracks and p.median_track == tracks[0]]
    if len(timed) >= 2:
        fast = min(timed, key=lambda p: p.median)  # type: ignore[arg-type,return-value]
        slow = max(timed, key=lambda p: p.median)  # type: ignore[arg-type,return-value]
        text += sentence(
            " Half of the {fn} participants{t} had certified after {fm} months, of the {sn} "
            "participants after {sm}, before adjusting for who was sent.",
            fn=fast.name.lower(),
            t=f" in {fast.median_track}" if fast.median_track else "",
            fm=fig(f"programme-median-{fast.code}", num(fast.median, 1)),
            sn=slow.name.lower(),
            sm=fig(f"programme-median-{slow.code}", num(slow.median, 1)),
        )
    return text
