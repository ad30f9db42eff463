"""Recommended actions: what each costs once and every year, the return the evidence supports,
the clusters it concerns (the fleet's largest first), and what changed since last quarter.

With a workforce plan (`sections/plan.py`, `marts.workforce_plan`), page 1's actions are its
budget request, one per quarter (whom to hire, which programmes to start, the cost, the payback
of the training at the measured return), and the renewals due; the request replaces actions 1
and 3 below, which price the gaps without a programme or a timing. Without a plan, three actions follow from the figures, each priced from
this company's own data:

1. **Certify the engineers who miss a required certification, largest clusters first.** One-off:
   from engineers × the ROI investment per certification earned over the last 12 months (one
   each) to every certification their role requires; yearly: their renewals (exam spend per
   attempt, every validity period). Return: the measured return per certified engineer a year ×
   those who hold no certification yet (the measured effects are of holding one).
2. **Book the renewals due in the next 90 days.** One-off: renewals × exam spend per attempt.
   Return: keeps certified engineers certified (the same per-engineer figure).
3. **Fill empty template seats by moving engineers of the same role first; hire only what a
   role lacks overall.** Yearly: those hires' salaries at the middle of the seed's bands. No
   return is measured for it.

The same rules applied to last quarter's figures give the follow-up: each action's figure then
and now, for the same clusters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

import pandas as pd
from markupsafe import Markup

from pipelines.lib.report.data import Marts, coverage_hidden
from pipelines.lib.report.fmt import fig, num, sentence, signed, usd
from pipelines.lib.report.labels import count, label
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Section, Table, table
from pipelines.lib.report.sections.composition import CompositionFacts
from pipelines.lib.report.sections.coverage import CoverageFacts
from pipelines.lib.report.sections.expiring import ExpiringFacts
from pipelines.lib.report.sections.plan import (
    PlanFacts,
    hire_words,
    payback_sentence,
    start_words,
)
from pipelines.lib.report.sections.roi import (
    PER_CERTIFICATION_DEFINITION,
    PER_CERTIFICATION_LABEL,
    RoiFacts,
    investment_per_certification,
)
from pipelines.lib.report.suppression import suppression_mask

SIZE_ORDER = ("large", "medium", "small")
SIZE_WORDS = {"large": "1,000+ GPUs", "medium": "100–1,000 GPUs", "small": "10–100 GPUs"}
SHOWN_CLUSTERS = 3
PAY_IN_COST = "in the cost: the added engineers' pay"
REQUEST_QUARTERS = 4  # quarters of the plan's request on page 1 one by one; the rest in one row


@dataclass(frozen=True)
class Cluster:
    team: str
    gpus: float
    size_class: str
    engineers: float
    missing: float  # missing at least one required certification
    uncertified: float  # holding no certification
    expiring: float
    # certifications they would need at most: each missing engineer times the number of
    # certifications the role requires (the mart says who is compliant, not how many each lacks)
    missing_most: float = 0.0


def clusters(marts: Marts, month, thr: int) -> list[Cluster]:
    """Teams at a month end with their fleet, gaps and renewals, largest fleet first; teams
    hidden as small groups (here or in the analyst-facing marts) are left out."""
    tc, cov = marts.get("team_composition"), marts.get("certification_coverage")
    if tc is None or cov is None:
        return []
    cur = tc[tc["month"] == month]
    teams = cov[(cov["month"] == month) & (cov["segment_type"] == "team")].set_index(
        "segment_value"
    )
    if cur.empty or teams.empty:
        return []
    required = (
        cur["required_certification_codes"].fillna("").astype(str).str.split(";")
        .map(lambda codes: max(1, len([c for c in codes if c.strip()])))
    )  # fmt: skip
    cur = cur.assign(
        most=(cur["headcount"] - cur["required_cert_compliant_headcount"]).clip(lower=0) * required
    )
    t = (
        cur.groupby("team")
        .agg(
            gpus=("gpu_count", "max"),
            size_class=("fleet_size_class", "first"),
            engineers=("headcount", "sum"),
            compliant=("required_cert_compliant_headcount", "sum"),
            most=("most", "sum"),
        )
        .reset_index()
    )
    mask = suppression_mask(
        dict(zip(t["team"], t["engineers"], strict=True)),
        thr,
        also_hidden=coverage_hidden(marts, month, "team"),
    )
    out = []
    for r in t.itertuples():
        if mask[r.team] or r.team not in teams.index:
            continue
        c = teams.loc[r.team]
        out.append(
            Cluster(
                str(r.team),
                0.0 if r.gpus != r.gpus else float(r.gpus),
                str(r.size_class),
                float(r.engineers),
                float(r.engineers - r.compliant),
                float(c["headcount"] - c["any_cert_headcount"]),
                float(c["expiring_next_90d"]),
                float(r.most),
            )
        )
    return sorted(out, key=lambda c: (-c.gpus, c.team))


def in_scope(found: list[Cluster]) -> tuple[str, list[Cluster]]:
    """The largest fleet size class with a gap, and its clusters with a gap."""
    for size in SIZE_ORDER:
        scope = [c for c in found if c.size_class == size and c.missing > 0]
        if scope:
            return size, scope
    return "", []


@dataclass(frozen=True)
class Action:
    key: str
    what: Markup
    concerns: Markup | str
    one_off: float | None
    yearly: float | None
    returns: Markup | str
    yearly_text: str = ""  # printed instead of `yearly` when set
    # the one-off cost when each engineer lacks every certification the role requires (the
    # one-off cost prices one each)
    one_off_most: float | None = None


@dataclass
class ActionFacts:
    actions: list[Action] = field(default_factory=list)
    follow_up: list[list] = field(default_factory=list)
    per_engineer: float | None = None  # measured return per certified engineer a year
    per_certification: float | None = None  # ROI investment per certification earned
    investment_12m: float | None = None  # the ROI's investment of the last 12 months


def _names(cs: list, figure, name=lambda c: c.team) -> str:
    shown = ", ".join(f"{name(c)} ({figure(c)})" for c in cs[:SHOWN_CLUSTERS])
    more = len(cs) - SHOWN_CLUSTERS
    return shown + (f" and {more} more" if more > 0 else "")


def _return_words(per: float | None, n: float, roi: RoiFacts) -> Markup | str:
    if per is None or roi.year is None:
        return "no return measured here"
    if not roi.year.of("measured"):
        return "none: no effect of certification is measured here"
    return sentence(
        "{v} a year, if the measured effects hold for the {n} of them holding none",
        v=usd(per * n),
        n=num(n),
    )


def actions_facts(
    marts: Marts,
    q: Quarter,
    thr: int,
    coverage: CoverageFacts | None,
    expiring: ExpiringFacts | None,
    composition: CompositionFacts | None,
    roi: RoiFacts,
    validity_months: float = 24.0,
    plan: PlanFacts | None = None,
) -> ActionFacts:
    f = ActionFacts()
    year = roi.year
    if year is not None:
        f.investment_12m = year.investment
    if year is not None and coverage is not None:
        f.per_certification = investment_per_certification(roi, coverage.passes_12m)
        if coverage.certified_12m:
            f.per_engineer = year.counted / coverage.certified_12m
    per_attempt = roi.exam_spend_per_attempt
    now = clusters(marts, q.last_month, thr)
    size, scope = in_scope(now)
    if plan is not None and plan.requests:
        f.actions += request_actions(plan)
    if scope and (plan is None or not plan.requests):
        missing = sum(c.missing for c in scope)
        uncert = sum(c.uncertified for c in scope)
        per = f.per_certification
        once = missing * per if per is not None else None
        most = sum(max(c.missing_most, c.missing) for c in scope) * per if per is not None else None
        renew = missing * per_attempt * 12 / validity_months if per_attempt is not None else None
        f.actions.append(
            Action(
                "certify",
                sentence("Certify first the {n}", n=count("scope-missing", missing)),
                (f"the {len(scope)} {size} clusters" if len(scope) > 1 else f"the {size} cluster")
                + f" ({SIZE_WORDS.get(size, size)}): "
                + _names(scope, lambda c: f"{num(c.missing)} of {num(c.engineers)}"),
                once,
                renew,
                _return_words(f.per_engineer, uncert, roi),
                one_off_most=most,
            )
        )
    if expiring is not None and expiring.expiring:
        f.actions.append(_renew_action(f, expiring, now, q, per_attempt, year))
    if composition is not None and composition.short and (plan is None or not plan.requests):
        below = _below_template(marts, q, thr)
        f.actions.append(
            Action(
                "template",
                sentence(
                    "Fill the {s} by moving engineers of the same role; then make the {h}",
                    s=sentence(
                        "{n} {w}",
                        n=fig("seats-short", num(composition.short)),
                        w=label("seats-short"),
                    ),
                    h=sentence(
                        "{n} {w}",
                        n=fig("hires-needed", num(composition.hires)),
                        w=label("hires-needed"),
                    ),
                ),  # fmt: skip
                _names(below, lambda r: signed(r[1]), lambda r: r[0]) if below else "",
                None,
                composition.hire_cost if composition.hires else 0.0,
                "none measured (the template is a reference, not an effect)",
            )
        )
    f.follow_up = _follow_up(marts, q, thr, now, scope, coverage, expiring, composition)
    return f


def _renew_action(f: ActionFacts, expiring, now, q: Quarter, per_attempt, year) -> Action:
    """Book the renewals due in the next 90 days, with the clusters they fall in."""
    due = expiring.expiring
    big = [c for c in now if c.expiring > 0]
    return Action(
        "renew",
        sentence(
            "Book the {n} renewals due by {d}",
            n=fig("expiring", num(due)),
            d=f"{q.end + timedelta(days=90):%d %b %Y}",
        ),
        _names(big, lambda c: num(c.expiring)) if big else "",
        due * per_attempt if per_attempt is not None else None,
        0.0,
        sentence(
            "keeps them certified: up to {v} a year, if each would otherwise hold none",
            v=usd(f.per_engineer * due),
        )
        if f.per_engineer is not None and year is not None and year.of("measured")
        else "keeps certifications active; no return measured here",
    )


def request_actions(plan: PlanFacts) -> list[Action]:
    """The plan's budget request as page 1's actions: the first quarters one by one, the rest
    together; each with its cost and the payback of the training spent to date."""
    first, rest = plan.requests[:REQUEST_QUARTERS], plan.requests[REQUEST_QUARTERS:]
    out = [
        Action(
            f"request-{r.quarter}",
            sentence("{q}: hire {h}; start {s}", q=r.quarter, h=hire_words(r), s=start_words(r)),
            sentence(
                "the fleet plan's templates: {n} seats for engineers holding their track"
                + (", {m} short" if r.shortfall > 0.5 else ""),
                n=num(r.template),
                m=num(r.shortfall),
            ),
            r.cost,
            None,
            payback_sentence(r, plan.measured),
            PAY_IN_COST,
        )
        for r in first
    ]
    if rest:
        last = rest[-1]
        out.append(
            Action(
                "request-later",
                sentence(
                    "{a}–{b}: the rest of the plan (quarter by quarter in the plan section)",
                    a=rest[0].quarter,
                    b=last.quarter,
                ),
                sentence(
                    "{n} seats for engineers holding their track by {q}"
                    + (", {m} short" if last.shortfall > 0.5 else ""),
                    n=num(last.template),
                    q=last.quarter,
                    m=num(last.shortfall),
                ),
                sum(r.cost for r in rest),
                None,
                payback_sentence(last, plan.measured),
                PAY_IN_COST,
            )
        )
    return out


def _below_template(marts: Marts, q: Quarter, thr: int) -> list:
    """(team, engineers − template) of the visible teams below their template, largest first."""
    tc = marts.get("team_composition")
    if tc is None:
        return []
    cur = tc[tc["month"] == q.last_month]
    t = cur.groupby("team").agg(
        gpus=("gpu_count", "max"), hc=("headcount", "sum"), tpl=("template_headcount", "sum")
    )
    mask = suppression_mask(
        t["hc"].to_dict(), thr, also_hidden=coverage_hidden(marts, q.last_month, "team")
    )
    rows = [
        (k, float(r.hc - r.tpl), float(r.gpus if r.gpus == r.gpus else 0)) for k, r in t.iterrows()
    ]
    below = [r for r in rows if r[1] < 0 and not mask[r[0]]]
    return sorted(below, key=lambda r: (-r[2], r[0]))


def _follow_up(marts, q, thr, now, scope, coverage, expiring, composition) -> list[list]:
    """Each action's figure at the end of last quarter and now (the same clusters)."""
    prev = q.previous()
    before = {c.team: c for c in clusters(marts, prev.last_month, thr)}
    rows: list[list] = []
    if scope:
        names = [c.team for c in scope]
        then = [before[n].missing for n in names if n in before]
        rows.append(
            [
                label("scope-missing").capitalize() + " (the same clusters)",
                num(sum(then)) if len(then) == len(names) else "–",
                fig("scope-missing", num(sum(c.missing for c in scope))),
                signed(sum(c.missing for c in scope) - sum(then)) if len(then) == len(names) else "–",
            ]
        )  # fmt: skip
    if coverage is not None:
        was = coverage.prev
        rows.append(
            [
                label("certified-headcount").capitalize(),
                num(was.certified) if was else "–",
                fig("certified-headcount", num(coverage.now.certified)),
                signed(coverage.now.certified - was.certified) if was else "–",
            ]
        )
        rows.append(
            [
                label("gap-people").capitalize(),
                num(was.headcount - was.compliant) if was else "–",
                fig("gap-people", num(coverage.now.headcount - coverage.now.compliant)),
                signed(
                    (coverage.now.headcount - coverage.now.compliant)
                    - (was.headcount - was.compliant)
                )
                if was
                else "–",
            ]
        )
        if expiring is not None:
            rows.append(
                [
                    label("expiring").capitalize(),
                    num(was.expiring_90d) if was else "–",
                    fig("expiring", num(expiring.expiring)),
                    signed(expiring.expiring - was.expiring_90d) if was else "–",
                ]
            )
    if composition is not None:
        from pipelines.lib.report.sections.composition import role_plans

        tc = marts.get("team_composition")
        old = tc[tc["month"] == prev.last_month] if tc is not None else pd.DataFrame()
        plans = role_plans(old, None) if not old.empty else []
        then = sum(p.hires for p in plans) if plans else None
        rows.append(
            [
                label("hires-needed").capitalize(),
                num(then) if then is not None else "–",
                fig("hires-needed", num(composition.hires)),
                signed(composition.hires - then) if then is not None else "–",
            ]
        )
    return rows


def _money(v: float | None) -> str:
    return "not priced" if v is None else ("–" if v == 0 else usd(v))


def _once(a: Action, f: ActionFacts) -> Markup | str:
    """A one-off cost, and what it is in years of training investment when that is known."""
    if a.one_off is None or not a.one_off or not f.investment_12m:
        return _money(a.one_off)
    return sentence(
        "{v} ({x} times a year's investment)",
        v=usd(a.one_off),
        x=f"{a.one_off / f.investment_12m:.1f}",
    )


def _one_off(a: Action) -> str:
    """`$1,517,000 to $3,270,000`: one certification per engineer to every one the role requires."""
    if a.one_off is None or a.one_off_most is None or a.one_off_most <= a.one_off + 0.5:
        return _money(a.one_off)
    return f"{usd(a.one_off)} to {usd(a.one_off_most)}"


def action_rows(f: ActionFacts) -> list[list]:
    return [
        [a.what, a.concerns, _one_off(a), a.yearly_text or _money(a.yearly), a.returns]
        for a in f.actions
    ]


def actions_table(f: ActionFacts, q: Quarter) -> Table | None:
    """The actions as page 1 prints them."""
    if not f.actions:
        return None
    if any(a.key.startswith("request-") for a in f.actions):
        return table(
            f"Budget request by quarter, and the renewals due, {q.label}",
            ["Request", "Target (or clusters, largest fleet first)", "Cost",
             "Pay added every year", "Payback or return the evidence supports"],
            action_rows(f),
            key="actions",
        )  # fmt: skip
    return table(
        f"Recommended actions, {q.label}",
        ["Action", "Clusters (largest fleet first)", "One-off cost", "Yearly cost",
         "Return the evidence supports"],
        action_rows(f),
        key="actions",
    )  # fmt: skip


def actions_section(f: ActionFacts, q: Quarter, roi: RoiFacts) -> Section:
    """The follow-up of last quarter and how the actions on page 1 are priced."""
    section = Section(
        "actions", "Since last quarter, outside benchmarks, and how the actions are priced"
    )
    per = (
        sentence(
            "A certification costs about {c} ({label}: {definition}); the measured return per "
            "certified engineer is about {r} a year "
            "(the return counted over the last 12 months ÷ the certified engineers on average "
            "over them). ",
            c=usd(f.per_certification),
            label=PER_CERTIFICATION_LABEL,
            definition=PER_CERTIFICATION_DEFINITION,
            r=usd(f.per_engineer),
        )
        if f.per_certification is not None and f.per_engineer is not None
        else ""
    )
    if any(a.key == "certify" for a in f.actions):
        per = sentence(
            "{per}Certifying is priced from one certification per engineer missing a required "
            "one to every certification their role requires (the data say who meets the role's "
            "requirements, not how many each lacks). ",
            per=per,
        )
    if any(a.key.startswith("request-") for a in f.actions):
        per = sentence(
            "Page 1's budget request is the workforce plan's (the next section): hires and "
            "programme starts priced at the company's measured costs, paid back at the measured "
            "return per certified engineer only. {per}",
            per=per,
        )
    section.lead = sentence(
        "{per}Renewals are priced at the exam spend per attempt of the last 12 months and recur "
        "every certification's validity; hires at the middle of the seed's salary bands for the "
        "role. The table repeats each action's figure at the end of last quarter, for the same "
        "clusters, so the effect of last quarter's actions can be followed.",
        per=per,
    )
    if f.follow_up:
        section.tables.append(
            table(
                f"Since last quarter: the same figures at the end of {q.previous().label} and now",
                ["Figure", q.previous().label, q.label, "Change"],
                f.follow_up,
                key="follow-up",
            )
        )
    return section
