"""The company's measured rates, its team today and the fleet plan's demand, from the build file.

Each measured `Rate` names its table and window; where a table has no usable row for a rate the
domain's figure of `rates.domain_rates` stays, under its own name (`Rates.notes` lists them).

- exits per quarter by level and certification status: `restricted.attrition` quarter rows
  (separations and transfers out of the average headcount) by level, scaled by the certified
  and the uncertified rate against the overall rate (the mart does not cross the two);
- promotions per quarter by level: `restricted.level_progression` (promotions of the
  engineer-quarters the year covers);
- median months to certify by programme and track: `marts.time_to_certify` (cohort `all`: the
  Kaplan-Meier median and its interval, or the median a Weibull through the 12-month share gives
  when fewer than half certified);
- cost per start: `marts.programme_costs` (total cost / participants);
- pay by level: `restricted.salary_bands` at the last quarter end (groups of at least
  `min_group_size` with pay; median weighted by headcount, p25..p75 as the interval);
- the team today by role, level and certifications of the role's track held:
  `intermediate.int_engineer_months` at the last month (active at its end); a prerequisite
  counts as held when a certification requiring it is (`model.held_in_track`);
- demand: the fleet plan's GPUs through the seed `fleet_size_classes` to the team templates
  (`team_template_requirements`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, timedelta

import numpy as np

from pipelines.lib.plan.fleet import FleetRow, PlanInputError
from pipelines.lib.plan.model import Layout, Role, held_in_track, track
from pipelines.lib.plan.rates import (
    LEVELS,
    WEIBULL_SHAPE,
    Rate,
    Rates,
    _seed,
    domain_rates,
    share_rate,
    window_text,
)

WINDOW_QUARTERS = 8  # quarters of attrition measured back from the as-of date
COST_SPREAD = 0.25  # programme_costs gives no interval: +-25 % around the measured cost


# --- quarters ---------------------------------------------------------------------------------


def quarter_of(day: date) -> str:
    return f"{day.year}-Q{(day.month - 1) // 3 + 1}"


def quarter_start(label: str) -> date:
    year, q = label.split("-Q")
    return date(int(year), 3 * int(q) - 2, 1)


def quarter_end(label: str) -> date:
    start = quarter_start(label)
    nxt = date(start.year + (start.month + 3 > 12), (start.month + 2) % 12 + 1, 1)
    return nxt - timedelta(days=1)


def next_quarters(label: str, n: int) -> list[str]:
    year, q = (int(p) for p in label.split("-Q"))
    out = []
    for _ in range(n):
        year, q = (year + 1, 1) if q == 4 else (year, q + 1)
        out.append(f"{year}-Q{q}")
    return out


def last_month(con) -> date:
    """The last month of the engineer panel (its first day)."""
    row = con.execute("select max(month) from intermediate.int_engineer_months").fetchone()
    if not row or row[0] is None:
        raise PlanInputError(
            "intermediate.int_engineer_months is empty: run the warehouse (talent run) over "
            "the HR exports before planning."
        )
    return row[0]


def month_end(month: date) -> date:
    return (date(month.year + month.month // 12, month.month % 12 + 1, 1)) - timedelta(days=1)


# --- the measured rates -----------------------------------------------------------------------


def _exit_rates(con, as_of: date, rates: Rates) -> None:
    first = as_of - timedelta(days=WINDOW_QUARTERS * 92)
    rows = con.execute(
        """
        select segment_type, segment_value, sum(separations + transfers_out),
               sum(average_headcount), min(period_start), max(period_start)
        from restricted.attrition
        where period_type = 'quarter' and period_start > ? and period_start + interval 3 month
              <= ? + interval 1 day
          and segment_type in ('all', 'level', 'certification_status')
        group by all
        """,
        [first, as_of],
    ).fetchall()
    got = {(r[0], r[1]): r for r in rows}
    overall = got.get(("all", "all"))
    if not overall or not overall[3]:
        rates.notes.append("restricted.attrition has no quarter in the window: exits are domain")
        return
    base = overall[2] / overall[3]
    for lvl in LEVELS:
        row = got.get(("level", str(lvl)))
        if not row or not row[3]:
            continue
        window = window_text(row[4], quarter_end(quarter_of(row[5])))
        for cert in (False, True):
            status = got.get(("certification_status", "certified" if cert else "not_certified"))
            ratio = status[2] / status[3] / base if status and status[3] and base else 1.0
            rate = share_rate(
                f"exit per quarter, level {lvl}, {'certified' if cert else 'not certified'}",
                min(row[2] * ratio, row[3]),
                row[3],
                "restricted.attrition (quarter rows by level x certified/uncertified over all)",
                window,
            )
            rates.exit[(lvl, cert)] = rate


def _promotion_rates(con, as_of: date, rates: Rates) -> None:
    rows = con.execute(
        """
        select skill_level, sum(promotions + skips), sum(engineers * (date_diff('month',
               covered_from, covered_to) + 1) / 3.0), min(covered_from), max(covered_to)
        from restricted.level_progression where covered_to <= ? group by all
        """,
        [as_of],
    ).fetchall()
    for lvl, events, exposure, start, end in rows:
        if lvl in rates.promote and lvl < max(LEVELS) and exposure:
            rates.promote[lvl] = share_rate(
                f"promotion per quarter, level {lvl}",
                float(events),
                float(exposure),
                "restricted.level_progression (promotions of engineer-quarters)",
                window_text(start, end),
            )


def _median_from_share(share: float, months: float) -> float:
    """The Weibull median (shape WEIBULL_SHAPE) when `share` certify within `months`."""
    scale = months / (-math.log(1 - min(share, 0.999))) ** (1 / WEIBULL_SHAPE)
    return scale * math.log(2) ** (1 / WEIBULL_SHAPE)


def _time_rates(con, rates: Rates, window: str) -> None:
    rows = con.execute(
        """
        select programme_type, certification_code, median_months, median_ci_low,
               median_ci_high, certified_within_12m_share, participants
        from marts.time_to_certify where cohort = 'all' and not suppressed
        """
    ).fetchall()
    apply_time_rows(rows, rates, window, "marts.time_to_certify (cohort all")


def apply_time_rows(rows, rates: Rates, window: str, table: str) -> None:
    """(programme, code, median, its interval, 12-month share, participants) rows as the
    median months to certify; `table` opens the source text."""
    for prog, code, median, lo, hi, share12, n in rows:
        key = (prog, code)
        if key not in rates.median_months:
            continue
        source = f"{table}, {n} participants"
        if median is not None and not math.isnan(median):
            lo = lo if lo is not None and not math.isnan(lo) else median * 0.75
            hi = hi if hi is not None and not math.isnan(hi) else median * 2
            source += ", Kaplan-Meier median and its interval)"
        elif share12 is not None and math.isfinite(share12) and share12 > 0:
            median = _median_from_share(share12, 12.0)
            lo, hi = median * 0.75, median * 1.5
            source += ", median of a Weibull through the 12-month share, +-25 %/50 %)"
        else:
            continue
        rates.median_months[key] = Rate(
            f"median months to certify {code}, {prog}", median, lo, hi, source, window
        )


def _cost_rates(con, rates: Rates, window: str) -> None:
    rows = con.execute(
        """
        select programme_type, certification_code, total_cost_usd / participants, participants
        from marts.programme_costs
        where not suppressed and certification_code <> 'all' and participants > 0
        """
    ).fetchall()
    apply_cost_rows(rows, rates, window, "marts.programme_costs")


def apply_cost_rows(rows, rates: Rates, window: str, table: str) -> None:
    """(programme, code, cost per participant, participants) rows as the cost per start."""
    for prog, code, cost, n in rows:
        # no measured cost (NaN): the domain's figure stays
        if (prog, code) in rates.cost_per_start and cost is not None and math.isfinite(cost):
            rates.cost_per_start[(prog, code)] = Rate(
                f"cost per start, {prog} {code}",
                cost,
                cost * (1 - COST_SPREAD),
                cost * (1 + COST_SPREAD),
                f"{table} (total cost / {n} participants; +-25 %)",
                window,
            )


def _salary_rates(con, as_of: date, min_group: int, rates: Rates) -> None:
    rows = con.execute(
        """
        with last as (select max(quarter_end) as q from restricted.salary_bands
                      where quarter_end <= ?)
        select skill_level, sum(pay_median_usd * headcount_with_pay) / sum(headcount_with_pay),
               sum(pay_p25_usd * headcount_with_pay) / sum(headcount_with_pay),
               sum(pay_p75_usd * headcount_with_pay) / sum(headcount_with_pay),
               sum(headcount_with_pay), max(quarter_end)
        from restricted.salary_bands, last
        where quarter_end = last.q and headcount_with_pay >= ?
        group by all
        """,
        [as_of, min_group],
    ).fetchall()
    for lvl, median, p25, p75, n, end in rows:
        if lvl in rates.salary:
            rates.salary[lvl] = Rate(
                f"pay per year, level {lvl}",
                median,
                p25,
                p75,
                f"restricted.salary_bands ({int(n)} engineers with pay; median, p25..p75)",
                window_text(end, end),
            )


def _whole_window(con) -> str:
    row = con.execute(
        "select min(first_enrolled_on), max(followed_until) from intermediate.int_programme_episodes"
    ).fetchone()
    return window_text(row[0], row[1]) if row and row[0] else ""


def read_rates(
    con,
    codes: list[str],
    as_of: date,
    assumptions: dict | None = None,
    min_group: int = 5,
    programme_rates=None,
) -> Rates:
    """The domain's rates with each one the warehouse measures replaced by the measurement.

    `programme_rates(con, rates)`, when given, measures the times to certify and the costs per
    start instead of the marts (the backtest measures them as they were known on a past day)."""
    rates = domain_rates(codes, assumptions)
    _exit_rates(con, as_of, rates)
    _promotion_rates(con, as_of, rates)
    if programme_rates is None:
        window = _whole_window(con)
        _time_rates(con, rates, window)
        _cost_rates(con, rates, window)
    else:
        programme_rates(con, rates)
    _salary_rates(con, as_of, min_group, rates)
    domain = [r.name for r in rates.all() if not r.measured]
    if domain:
        rates.notes.append(
            f"{len(domain)} of {len(rates.all())} rates are the domain's or an estimate (no "
            "data in the warehouse): see the rates table"
        )
    return rates


# --- the team today and the demand ------------------------------------------------------------


@dataclass(frozen=True)
class Demand:
    roles: tuple[Role, ...]
    quarters: list[str]
    headcount: np.ndarray  # [R, T] template headcount summed over the planned clusters
    clusters: dict[str, list[tuple[str, int, str]]]  # quarter -> (cluster, GPUs, size class)


def _size_class(gpus: int, classes: list[dict[str, str]]) -> str | None:
    if gpus <= 0:
        return None  # retired
    for c in classes:
        high = int(c["gpu_max"]) if c["gpu_max"] else None
        if gpus >= int(c["gpu_min"]) and (high is None or gpus <= high):
            return c["fleet_size_class"]
    return None


def fleet_by_quarter(rows: list[FleetRow], quarters: list[str]) -> dict[str, dict[str, int]]:
    """Planned GPUs per cluster in each quarter: a quarter not listed keeps the last size."""
    out: dict[str, dict[str, int]] = {q: {} for q in quarters}
    for cluster in sorted({r.cluster for r in rows}):
        sizes = sorted((r.quarter, r.planned_gpus) for r in rows if r.cluster == cluster)
        for q in quarters:
            before = [g for label, g in sizes if label <= q]
            if before:
                out[q][cluster] = before[-1]
    return out


def demand_from_fleet(rows: list[FleetRow], quarters: list[str]) -> Demand:
    """The templates' headcount per role family and quarter; each role's band and track are
    the union over the size classes it is needed in (every engineer of the role holds all)."""
    planned = [r.quarter for r in rows]
    if not any(q <= max(planned) for q in quarters) or max(planned) < quarters[0]:
        raise PlanInputError(
            f"the fleet plan ends in {max(planned)}, before the first quarter to plan "
            f"({quarters[0]}): add the planned GPUs for {quarters[0]}..{quarters[-1]}."
        )
    classes = _seed("fleet_size_classes")
    templates = _seed("team_template_requirements")
    fleet = fleet_by_quarter(rows, quarters)
    need: dict[str, np.ndarray] = {}
    band: dict[str, tuple[int, int]] = {}
    codes: dict[str, list[str]] = {}
    clusters: dict[str, list[tuple[str, int, str]]] = {q: [] for q in quarters}
    for t, q in enumerate(quarters):
        for cluster, gpus in fleet[q].items():
            size = _size_class(gpus, classes)
            if size is None:
                continue
            clusters[q].append((cluster, gpus, size))
            for tpl in templates:
                if tpl["fleet_size_class"] != size or int(tpl["headcount"]) <= 0:
                    continue
                role = tpl["role_family"]
                need.setdefault(role, np.zeros(len(quarters)))[t] += int(tpl["headcount"])
                lo, hi = int(tpl["level_min"]), int(tpl["level_max"])
                old = band.get(role, (lo, hi))
                band[role] = (min(old[0], lo), max(old[1], hi))
                for code in tpl["required_certification_codes"].split(";"):
                    if code and code not in codes.setdefault(role, []):
                        codes[role].append(code)
    names = sorted(need)
    roles = tuple(Role(n, band[n], track(tuple(codes[n]))) for n in names)
    return Demand(roles, quarters, np.array([need[n] for n in names]), clusters)


def read_team(con, layout: Layout, month: date) -> tuple[np.ndarray, np.ndarray]:
    """(idle0 [R, L, G+1] people by role, level and track certifications held, head [R, L])."""
    idle0 = np.zeros((len(layout.roles), len(LEVELS), layout.stages + 1))
    names = [role.name for role in layout.roles]
    rows = con.execute(
        """
        select role_family, skill_level, coalesce(active_certification_codes, []), count(*)
        from intermediate.int_engineer_months
        where month = ? and active_at_month_end and skill_level between 1 and 5
          and role_family in (select unnest(?::varchar[]))
        group by all
        """,
        [month, names],
    ).fetchall()
    for role_family, lvl, codes, n in rows:
        r = names.index(role_family)
        idle0[r, lvl - 1, held_in_track(codes, layout.roles[r].track)] += n
    return idle0, idle0.sum(2)
