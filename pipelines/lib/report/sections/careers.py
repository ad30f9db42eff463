"""Careers: how fast engineers move up the ladder against its time bands, whether certifying is
followed by promotion, and pay against the bands in aggregate only.

Sources (each optional: a missing mart makes its part say "not available"):

- `time_in_level`: the Kaplan-Meier median months in each level until promotion (all years);
- `level_progression_12m` (the build file's restricted copy when at hand): engineers at each
  level, promotions and the share of level stretches outside the band, in the 12 months to the
  report's quarter end; without it (an older warehouse) `level_progression`, one calendar year:
  the last complete one at the report's quarter, else the latest the data hold (year to date);
- `promotion_effect`: the promotion hazard ratio of certified engineers, printed through
  `status_tag` (shown / not shown / not estimable);
- `salary_bands`, always the PUBLISHED mart (pay rounded, withheld for small groups or groups
  without spread): the share below the band's low end and the median compa-ratio by level for
  the report's quarter. No individual figure is ever read or printed.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path

import pandas as pd
from markupsafe import Markup

from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.report.data import Marts, hidden_in_marts
from pipelines.lib.report.fmt import (
    DASH,
    fig,
    interval,
    missing,
    month_label,
    nice,
    num,
    pct,
    ratio,
    sentence,
)
from pipelines.lib.report.labels import count
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.sections.base import Data, Section, Table, table, unavailable
from pipelines.lib.report.sections.effects import Effect, read_effects, status_tag
from pipelines.lib.report.sections.programmes import (
    ORDER,
    flag,
    programme_name,
    unreadable,
    usable,
    value,
)
from pipelines.lib.report.suppression import hidden_label, is_small, suppression_mask

LEVELS_SEED = DBT_PROJECT_DIR / "seeds" / "skill_levels.csv"
MARTS = (
    "time_in_level",
    "level_progression_12m",
    "level_progression",
    "promotion_effect",
    "salary_bands",
)
METRIC = "promotion_hazard_ratio"


def level_names(path: Path = LEVELS_SEED) -> dict[int, str]:
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as fh:
        return {int(r["skill_level"]): r["name"] for r in csv.DictReader(fh) if r.get("name")}


def _band(lo: float | None, hi: float | None) -> str:
    if lo is None:
        return DASH
    return f"{num(lo)}+" if hi is None else f"{num(lo)}–{num(hi)}"


def _year_of(v: object) -> int | None:
    if missing(v):
        return None
    if isinstance(v, date):
        return v.year
    try:
        return int(v)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return pd.Timestamp(v).year  # type: ignore[arg-type]


@dataclass
class Level:
    level: int
    name: str = ""
    band_min: float | None = None
    band_max: float | None = None
    # time in level, Kaplan-Meier until promotion
    median: float | None = None
    q1: float | None = None
    q3: float | None = None
    within_band: float | None = None  # Kaplan-Meier share promoted within the band
    time_hidden: bool = True
    time_engineers: float | None = None
    # the year's progression
    engineers: float | None = None
    promotions: float | None = None
    outside: float | None = None
    hidden: bool = True


@dataclass
class CareerFacts:
    levels: dict[int, Level] = field(default_factory=dict)
    year: int | None = None
    year_to_date: bool = False
    trailing: bool = False  # the 12 months to the quarter's end (level_progression_12m)
    quarter_end: date | None = None
    promotions: float | None = None  # all levels, the year
    engineers: float | None = None  # all levels, the year
    effect: Effect | None = None


def _time_in_level(df: pd.DataFrame, levels: dict[int, Level], thr: int) -> None:
    for r in df.to_dict("records"):
        lv = levels.setdefault(int(r["skill_level"]), Level(int(r["skill_level"])))
        lv.band_min = value(r, "band_min_months") if lv.band_min is None else lv.band_min
        lv.band_max = value(r, "band_max_months") if lv.band_max is None else lv.band_max
        lv.time_engineers = value(r, "engineers")
        lv.time_hidden = flag(r, "suppressed") or is_small(lv.time_engineers, thr)
        if not lv.time_hidden:
            lv.median, lv.q1, lv.q3 = (value(r, c) for c in ("median_months", "q1_months",
                                                             "q3_months"))  # fmt: skip
            lv.within_band = value(r, "promoted_within_band")


def time_cell(lv: Level) -> Markup | str:
    """The Kaplan-Meier quartiles of months in level, as far as they are reached: `18.0
    (12.0–30.0)`; `not reached (a quarter by 25.0)` when fewer than half were promoted but a
    quarter were; `not reached (under a quarter promoted)` when not even a quarter were."""
    one = lambda v: num(v, 1)  # noqa: E731
    if lv.time_engineers == 0:
        return "no engineers"
    if lv.median is None:
        if lv.q1 is None:
            return "not reached (under a quarter promoted)"
        return sentence("not reached (a quarter by {q})", q=fig(f"level-q1-{lv.level}", one(lv.q1)))
    q3 = one(lv.q3) if lv.q3 is not None else "not reached"
    return sentence(
        "{m} ({q1}–{q3})",
        m=fig(f"level-median-{lv.level}", one(lv.median)),
        q1=fig(f"level-q1-{lv.level}", one(lv.q1)) if lv.q1 is not None else DASH,
        q3=q3,
    )


def report_year(years: set[int], q: Quarter) -> tuple[int | None, bool]:
    """The last calendar year complete at the quarter's end, else the latest one the data hold
    up to then (year to date)."""
    complete = q.end.year if q.end.month == 12 else q.end.year - 1
    if complete in years:
        return complete, False
    held = [y for y in years if y <= q.end.year]
    if not held:
        return None, False
    y = max(held)
    return y, y == q.end.year and q.end.month != 12


def trailing_progression(df: pd.DataFrame, f: CareerFacts, q: Quarter, thr: int) -> bool:
    """The 12 months to the quarter's end (`level_progression_12m`); False when the mart holds
    no window ending then."""
    cur = df[pd.to_datetime(df["window_end"]).dt.date == q.end]
    if cur.empty:
        return False
    f.trailing = True
    _levels_of(cur, f, thr)
    return True


def _progression(df: pd.DataFrame, f: CareerFacts, q: Quarter, thr: int) -> None:
    df = df.copy()
    df["_year"] = df["year"].map(_year_of)
    f.year, f.year_to_date = report_year({y for y in df["_year"] if y is not None}, q)
    if f.year is None:
        return
    _levels_of(df[df["_year"] == f.year], f, thr)


def _levels_of(cur: pd.DataFrame, f: CareerFacts, thr: int) -> None:
    """Each level's engineers, promotions and share outside the band in one period, hidden
    with their complement, and the totals of all levels."""
    sizes = {int(r["skill_level"]): value(r, "engineers") for r in cur.to_dict("records")}
    # promotions of all levels are printed as a total: complementary suppression
    mask = suppression_mask(
        sizes, thr, also_hidden={int(v) for v in hidden_in_marts(cur, "skill_level")}
    )
    # a total only from whole rows (the restricted copy), not from rows the marts hid
    whole = "published_suppressed" in cur.columns or not flag_any(cur)
    for r in cur.to_dict("records"):
        lv = f.levels.setdefault(int(r["skill_level"]), Level(int(r["skill_level"])))
        lv.hidden = mask[lv.level]
        lv.engineers, lv.promotions = value(r, "engineers"), value(r, "promotions")
        lv.outside = value(r, "share_outside_band")
    for lv in f.levels.values():  # a level nobody held in the period: none, not hidden
        if lv.level not in sizes:
            lv.hidden, lv.engineers, lv.promotions, lv.outside = False, 0.0, 0.0, None
    if whole:
        f.promotions = float(pd.to_numeric(cur["promotions"], errors="coerce").fillna(0).sum())
        f.engineers = float(pd.to_numeric(cur["engineers"], errors="coerce").fillna(0).sum())


def flag_any(df: pd.DataFrame) -> bool:
    return "suppressed" in df.columns and bool(df["suppressed"].fillna(False).astype(bool).any())


def period_label(f: CareerFacts) -> str:
    """The period of the level figures: `12 months to Sep 2026`, `2025`, `2026 to date`."""
    if f.trailing and f.quarter_end is not None:
        return f"12 months to {month_label(f.quarter_end)}"
    return f"{f.year}{' to date' if f.year_to_date else ''}" if f.year else ""


def _ladder_table(f: CareerFacts, thr: int, have: set[str]) -> Table:
    rows = []
    when = period_label(f)
    for lv in sorted(f.levels.values(), key=lambda lv: lv.level):
        if "time_in_level" not in have:
            median: Markup | str = "not available"
            within: str = "not available"
        elif lv.time_hidden:
            median = within = hidden_label(lv.time_engineers, thr)
        else:
            median = time_cell(lv)
            within = DASH if lv.within_band is None else pct(lv.within_band)
        h = lv.hidden
        if not f.trailing and ("level_progression" not in have or f.year is None):
            year_cells: list = ["not available"] * 4
        else:
            gone = hidden_label(lv.engineers, thr)
            year_cells = [
                gone if h else num(lv.engineers),
                gone if h else num(lv.promotions),
                gone
                if h
                else DASH
                if not lv.engineers
                else pct((lv.promotions or 0) / lv.engineers),
                gone if h else pct(lv.outside),
            ]
        rows.append([f"{lv.level} {lv.name}".strip(), _band(lv.band_min, lv.band_max),
                     median, within, *year_cells])  # fmt: skip
    total = None
    if f.promotions is not None and f.engineers:
        total = ["All levels", "", "", "", num(f.engineers),
                 fig("promotions-12m" if f.trailing else "promotions-year", num(f.promotions)),
                 pct(f.promotions / f.engineers), ""]  # fmt: skip
    return table(
        "Promotion velocity against the ladder's time bands",
        ["Level", "Band (months)", "Median months in level (quartiles)",
         "Promoted within the band", f"Engineers at the level, {when}", f"Promotions, {when}",
         f"Promotion rate, {when}", f"Outside the band, {when}"],
        rows, total=total, key="careers-ladder",
        note="Band: how long the ladder expects a level to take (skill level seed). Median "
        "months in level until promotion, all years (Kaplan-Meier; \u201cnot reached\u201d: "
        "fewer than half were promoted; quartiles: a quarter, three quarters). Promoted within "
        "the band: the Kaplan-Meier share promoted between the band's ends. Outside the band: level stretches promoted faster than "
        "the band's low end or held past its high end, of those whose start is known.",
    )  # fmt: skip


# --- pay against the bands -------------------------------------------------------------------


@dataclass
class PayRow:
    level: int
    group: str
    headcount: float | None
    with_pay: float | None
    low: float | None
    high: float | None
    below: float | None
    above: float | None
    compa: float | None
    hidden: bool
    withheld: bool


def _pay_rows(df: pd.DataFrame, q: Quarter, thr: int) -> list[PayRow]:
    days = pd.to_datetime(df["quarter"]).dt.date  # quarter_end comes from the file as a timestamp
    cur = df[[isinstance(d, date) and q.start <= d <= q.end for d in days]]
    out = []
    for r in cur.to_dict("records"):
        hidden = flag(r, "suppressed") or is_small(value(r, "headcount"), thr)
        withheld = (
            hidden
            or is_small(value(r, "headcount_with_pay"), thr)
            or (value(r, "share_below_band") is None and value(r, "compa_ratio_median") is None)
        )
        out.append(
            PayRow(
                int(r["skill_level"]), str(r.get("role_family", "all")),
                value(r, "headcount"), value(r, "headcount_with_pay"),
                value(r, "band_low_usd"), value(r, "band_high_usd"),
                None if withheld else value(r, "share_below_band"),
                None if withheld else value(r, "share_above_band"),
                None if withheld else value(r, "compa_ratio_median"),
                hidden, withheld,
            )
        )  # fmt: skip
    return out


def _pay_by_level(rows: list[PayRow]) -> list[list]:
    """Per level: the published role-family figures combined, weighted by the engineers with
    pay, over the role families shown (a level's all-roles row when the mart has one)."""
    out = []
    for level in sorted({r.level for r in rows}):
        mine = [r for r in rows if r.level == level]
        own = [r for r in mine if r.group == "all"]
        mine = own or mine
        seen = [r for r in mine if not r.withheld and r.with_pay]
        n = sum(r.with_pay for r in seen)  # type: ignore[misc]
        below = sum((r.below or 0) * r.with_pay for r in seen) / n if n else None  # type: ignore[operator]
        above = sum((r.above or 0) * r.with_pay for r in seen) / n if n else None  # type: ignore[operator]
        compas = sorted(r.compa for r in seen if r.compa is not None)
        out.append([level, mine[0].low, mine[0].high, n, below, above, compas,
                    len(mine) - len(seen), len(mine)])  # fmt: skip
    return out


def below_by_family(rows: list[PayRow], thr: int) -> list[tuple[str, float, float, int, int]]:
    """Per role family: (family, engineers with pay, share below the band's low end, levels
    withheld, levels), over the family's levels whose pay the published mart shows; families
    with fewer than `thr` engineers with pay over those levels are left out (a share of a small
    group)."""
    out = []
    for family in sorted({r.group for r in rows if r.group != "all"}):
        mine = [r for r in rows if r.group == family]
        seen = [r for r in mine if not r.withheld and r.with_pay and r.below is not None]
        n = float(sum(r.with_pay for r in seen))  # type: ignore[misc]
        if is_small(n, thr) or not n:
            continue
        below = sum(r.below * r.with_pay for r in seen) / n  # type: ignore[operator]
        out.append((family, n, below, len(mine) - len(seen), len(mine)))
    return sorted(out, key=lambda t: (-t[2], t[0]))


def _family_table(rows: list[PayRow], thr: int, q: Quarter) -> Table | None:
    fams = below_by_family(rows, thr)
    if not fams:
        return None
    return table(
        f"Pay below the band by role family, {q.label}",
        ["Role family", "Engineers with pay", "Below the band's low end", "Levels withheld"],
        [
            [nice(f), num(n), fig(f"pay-below-band-{f}", pct(b)),
             f"{w} of {k}" if w else "none"]
            for f, n, b, w, k in fams
        ],
        key="careers-pay-family",
        scope="full",  # on screen, collapsed; the printed report keeps its page budget
        note=f"Role families with at least {thr} engineers with pay over the levels shown; a "
        "withheld level is left out of its family's share.",
    )  # fmt: skip


def _k(v: float | None) -> str:
    """A band's end in thousands: $95k."""
    return DASH if v is None else f"${v / 1000:,.0f}k"


def _pay_tables(rows: list[PayRow], names: dict[int, str], thr: int, q: Quarter) -> list[Table]:
    printed = []
    for level, low, high, n, below, above, compas, withheld, groups in _pay_by_level(rows):
        gone = withheld == groups
        compa = (DASH if not compas else ratio(compas[0]) if len(compas) == 1
                 else f"{ratio(compas[0])}–{ratio(compas[-1])}")  # fmt: skip
        printed.append(
            [
                f"{level} {names.get(level, '')}".strip(),
                f"{_k(low)}–{_k(high)}" if high is not None else f"{_k(low)}+",
                "withheld" if gone else num(n),
                "withheld" if gone else fig(f"pay-below-band-{level}", pct(below)),
                "withheld" if gone else pct(above),
                "withheld" if gone else compa,
                f"{withheld} of {groups}" if withheld else "none",
            ]
        )
    groups = any(r.group != "all" for r in rows)
    full_rows, data = [], []
    for r in sorted(rows, key=lambda r: (r.level, r.group)):
        h, w = r.hidden, r.withheld
        full_rows.append(
            [f"{r.level} {names.get(r.level, '')}".strip(), r.group,
             hidden_label(r.headcount, thr) if h else num(r.headcount),
             hidden_label(r.headcount, thr) if h else ("withheld" if w else num(r.with_pay)),
             "withheld" if w else pct(r.below), "withheld" if w else pct(r.above),
             "withheld" if w else ratio(r.compa)]
        )  # fmt: skip
        data.append(
            [r.level, r.group, None if h else r.headcount, None if w else r.with_pay,
             None if w or r.below is None else round(r.below * 100, 1),
             None if w or r.above is None else round(r.above * 100, 1),
             None if w else r.compa, bool(h or w)]
        )  # fmt: skip
    note = (
        "Pay at quarter end against the level's band, aggregates of the published mart only "
        f"(withheld where fewer than {thr} in a group have pay or its middle half earns the same). "
        "Compa-ratio: pay ÷ the band's midpoint, the median of each role family"
        + (", as a range over the role families shown" if groups else "")
        + "; shares weighted by the engineers with pay in the role families shown."
    )
    out = [
        table(
            f"Pay against the level bands, {q.label} (aggregates)",
            ["Level", "Band", "Engineers with pay", "Below the band's low end",
             "Above the band's high end", "Median compa-ratio", "Role families withheld"],
            printed, key="careers-pay", note=note,
        )
    ]  # fmt: skip
    if groups:
        out.append(
            table(
                f"Pay against the level bands by role family, {q.label}",
                ["Level", "Role family", "Engineers", "Engineers with pay", "Below the band",
                 "Above the band", "Median compa-ratio"],
                full_rows, key="careers-pay-all", scope="full",
                data=Data(
                    ["Skill level (value)", "Role family", "Engineers (count)",
                     "Engineers with pay (count)", "Below the band's low end (%)",
                     "Above the band's high end (%)", "Median compa-ratio (value)",
                     "Hidden: fewer than the minimum group size or pay withheld (true/false)"],
                    data,
                ),
            )
        )  # fmt: skip
    return out


# --- each programme's time to the next level -------------------------------------------------


def programme_order(code: object) -> tuple[int, str]:
    return (ORDER.index(str(code)) if str(code) in ORDER else len(ORDER), str(code))


def next_level_table(df: pd.DataFrame, thr: int) -> Table | None:
    """Per programme: engineers, those who moved up, the Kaplan-Meier median months from the
    first enrolment to the next level (the first quartile where the median is not reached) and
    the share up within 12 months (`programme_next_level`)."""
    rows = []
    for r in sorted(df.to_dict("records"), key=lambda r: programme_order(r["programme_type"])):
        code = str(r["programme_type"])
        n = value(r, "engineers")
        if flag(r, "suppressed") or is_small(n, thr):
            rows.append([programme_name(code), hidden_label(n, thr), *[hidden_label(n, thr)] * 3])
            continue
        med, q1 = value(r, "median_months"), value(r, "q1_months")
        if med is not None:
            time: Markup | str = fig(f"next-level-median-{code}", num(med, 1))
        elif q1 is not None:
            time = sentence("not reached (a quarter by {q})", q=num(q1, 1))
        else:
            time = "not reached (under a quarter moved up)"
        share = value(r, "promoted_within_12m_share")
        rows.append([programme_name(code), num(n), num(value(r, "promotions")), time,
                     DASH if share is None else pct(share)])  # fmt: skip
    if not rows:
        return None
    return table(
        "Time to the next level by programme",
        ["Programme", "Engineers", "Moved up a level", "Median months to the next level",
         "Moved up within 12 months"],
        rows, key="careers-next-level",
        note="Kaplan-Meier months from the first enrolment of a track to the next level. Who is "
        "sent where differs by level and tenure: this describes participants, not a "
        "programme's effect.",
    )  # fmt: skip


# --- certification and promotion ------------------------------------------------------------


def promotion_sentence(e: Effect) -> Markup:
    """The promotion hazard ratio through its status: a number only when it is estimable, a
    change in words only when it is shown."""
    tag = status_tag(METRIC, e.status)
    if e.status == "not_estimable":
        return sentence(
            "Certification and promotion ({tag}): {why}; needed: {need}.",
            tag=tag, why=e.not_estimable_reason, need=e.data_needed,
        )  # fmt: skip
    est = sentence(
        "{e} (95 % interval {ci})",
        e=fig(f"effect-{METRIC}", ratio(e.estimate)),
        ci=fig(f"effect-{METRIC}-ci", interval(e.ci_low, e.ci_high)),
    )
    if e.status == "shown":
        more = (e.estimate or 1) >= 1
        text = sentence(
            "Certification and promotion ({tag}): in a given month, certified engineers were "
            "promoted {x} % {how} often than colleagues of the same tenure and level without a "
            "certification: hazard ratio {est}.",
            tag=tag, x=f"{abs((e.estimate or 1) - 1) * 100:.0f}", how="more" if more else "less",
            est=est,
        )  # fmt: skip
    else:
        lo, hi = e.ci_low, e.ci_high
        why = (
            "the 95 % interval includes no difference"
            if lo is not None and hi is not None and lo <= 1 <= hi
            else "the statistics (marts.promotion_effect) do not count it as a finding"
        )
        text = sentence(
            "Certification and promotion ({tag}): hazard ratio {est} against colleagues of the "
            "same tenure and level without a certification, but {why}.",
            tag=tag, est=est, why=why,
        )  # fmt: skip
    if e.n_engineers is not None:
        text += sentence(
            " Based on {n} and {k}.",
            n=count("promotion-model-engineers", e.n_engineers),
            k=count("promotion-model-events", e.n_events),
        )
    if e.naive_estimate is not None:
        text += sentence(
            " A plain comparison of ever against never certified would say {n}.",
            n=fig(f"naive-{METRIC}", ratio(e.naive_estimate)),
        )
    return text + (
        " An association, not proof of cause: what leads someone to certify may also lead to "
        "promotion, and the human resources data do not record it."
    )


def promotion_table(e: Effect) -> Table:
    """The promotion effect in one row: every figure the sentence quotes, with its status."""
    est = (
        sentence(
            "{e} ({ci})",
            e=fig(f"effect-{METRIC}", ratio(e.estimate)),
            ci=fig(f"effect-{METRIC}-ci", interval(e.ci_low, e.ci_high)),
        )
        if e.estimable
        else DASH
    )
    row = [
        "Promotion while certified",
        est,
        status_tag(METRIC, e.status),
        DASH if e.n_engineers is None else fig("promotion-model-engineers", num(e.n_engineers)),
        DASH if e.n_events is None else fig("promotion-model-events", num(e.n_events)),
        DASH if e.naive_estimate is None else fig(f"naive-{METRIC}", ratio(e.naive_estimate)),
    ]
    return table(
        "Certification and promotion: monthly promotion rate, certified against not certified",
        ["Effect", "Hazard ratio (95 % CI)", "Status", "Engineers in the model",
         "Promotions in the model", "Plain comparison"],
        [row], key="careers-promotion", note=promotion_sentence(e),
    )  # fmt: skip


def careers_section(
    marts: Marts, q: Quarter, thr: int, levels_path: Path = LEVELS_SEED
) -> tuple[Section, CareerFacts | None]:
    sid, title = "careers", "Careers: levels, promotions and pay"
    have = {m for m in MARTS if usable(marts, m) is not None}
    if not have:
        why = (
            "Not available: the marts " + ", ".join(MARTS) + " are missing or lack the "
            "columns the report reads."
        )
        return unavailable(sid, title, why), None
    names = level_names(levels_path)
    f = CareerFacts()
    til = usable(marts, "time_in_level")
    if til is not None:
        _time_in_level(til, f.levels, thr)
    f.quarter_end = q.end
    trailing = usable(marts, "level_progression_12m")
    lp = usable(marts, "level_progression")
    if not (trailing is not None and trailing_progression(trailing, f, q, thr)) and lp is not None:
        _progression(lp, f, q, thr)
    for lv in f.levels.values():
        lv.name = names.get(lv.level, "")
    eff = read_effects(usable(marts, "promotion_effect"))
    f.effect = eff.get(METRIC)
    tables: list[Table] = []
    if f.levels:
        tables.append(_ladder_table(f, thr, have))
    sb = usable(marts, "salary_bands")
    pay = _pay_rows(sb, q, thr) if sb is not None else []
    if pay:
        tables += _pay_tables(pay, names, thr, q)
        family = _family_table(pay, thr, q)
        if family is not None:
            tables.append(family)
    notes: list = []
    nl = marts.get("programme_next_level")
    nl_table = next_level_table(nl, thr) if nl is not None and not nl.empty else None
    if nl_table is not None:
        tables.append(nl_table)
    if f.effect is not None:
        tables.append(promotion_table(f.effect))
    bad = unreadable(marts, MARTS)
    # one of the two progression marts is enough: the other is not missing
    either = {"level_progression", "level_progression_12m"}
    skip = either if have & either else set()
    gone = [
        m for m in MARTS
        if m not in have and m not in skip and not any(b.startswith(m) for b in bad)
    ] + bad  # fmt: skip
    if sb is not None and not pay:
        gone.append(f"salary_bands for {q.label}")
    if gone:
        notes.append(f"Not available: {', '.join(gone)}.")
    order = ["careers-ladder", "careers-next-level", "careers-promotion", "careers-pay",
             "careers-pay-family",
             "careers-pay-all"]  # fmt: skip
    section = Section(sid, title, True, _lead(f, thr), [], tables, notes, order=order)
    return section, f


def _lead(f: CareerFacts, thr: int) -> Markup:
    text = Markup("")
    if f.promotions is not None and f.trailing:
        text += sentence(
            "{n} to {when} across the {k} levels.",
            n=count("promotions-12m", f.promotions),
            k=len(f.levels),
            when=month_label(f.quarter_end) if f.quarter_end else "the quarter's end",
        )
    elif f.promotions is not None and f.year is not None:
        text += sentence(
            "{n} {when} across the {k} levels.",
            n=count("promotions-year", f.promotions),
            k=len(f.levels),
            when=f"({f.year} to date)" if f.year_to_date else f"({f.year})",
        )
    timed = [lv for lv in f.levels.values() if lv.median is not None and lv.band_max is not None]
    slow = [lv for lv in timed if lv.median > lv.band_max]  # type: ignore[operator]
    if timed:
        text += sentence(
            " {what}",
            what=sentence(
                "Engineers stayed longer than the ladder's band at level {lv} (median {m} "
                "months in level).",
                lv=", ".join(str(lv.level) for lv in slow),
                m=Markup(", ").join(
                    fig(f"level-median-{lv.level}", num(lv.median, 1)) for lv in slow
                ),
            )
            if slow
            else "At every level with a figure, the median time in level is within the "
            "ladder's band or shorter.",
        )
    return text
