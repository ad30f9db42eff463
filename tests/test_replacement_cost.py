"""The measured replacement cost per voluntary exit (marts.replacement_cost) and the ROI's
attrition line priced with it.

On the shared generated company (600 employees, 2 years, seed 11): the mart is recomputed
independently from the delivered files (the Greenhouse openings report, the HRIS employees and
job history as written) and compared with the generator's realised means (ground_truth.json
`recruiting`); the ROI's attrition line reads price_evidence measured exactly when at least
min_group_size backfills stand behind the price. Without the export (or with too few
backfills) the assumed price stays, tagged assumed.
"""

from __future__ import annotations

import csv
import json
from datetime import date, datetime

import duckdb
import polars as pl
import pytest

from pipelines.lib.roi.assumptions import DEFAULT_ASSUMPTIONS_PATH, load_assumptions
from pipelines.lib.roi.evidence import price_evidence
from pipelines.lib.roi.warehouse import measured_prices

MIN_GROUP = 5
BANDS = {
    1: (75000, 95000),
    2: (95000, 125000),
    3: (125000, 175000),
    4: (175000, 250000),
    5: (250000, 400000),
}  # fmt: skip  (seed-facts.md "Skill levels")


def _us(text: str) -> date | None:
    return datetime.strptime(text, "%m/%d/%Y").date() if text.strip() else None


def _rows(folder, pattern: str) -> list[dict]:
    out = []
    for path in sorted(folder.glob(pattern)):
        with path.open(encoding="utf-8-sig", newline="") as f:
            out += list(csv.DictReader(f))
    return out


def independent(sources) -> dict:
    """The replacement cost recomputed from the files: the filled backfills of voluntary
    leavers, the leaver's last day and level then, the new hire's first day."""
    spells: dict[tuple[str, str], dict] = {}
    for r in _rows(sources / "hris", "employees_*.csv"):  # changed records: the last row wins
        spells[(r["employee_id"].strip(), r["hire_date"].strip())] = r
    jobs: dict[str, list[tuple[str, int]]] = {}
    for r in _rows(sources / "hris", "job_history_*.csv"):
        jobs.setdefault(r["employee_id"].strip(), []).append(
            (r["effective_date"].strip(), int(r["skill_level"]))
        )
    costs = []
    for r in _rows(sources / "recruiting", "Openings Report*.csv"):
        if r["Close Reason"] != "Hire - Backfill":
            continue
        leaver, opened = r["Backfill For (Employee ID)"], _us(r["Open Date"])
        exits = [
            s for (eid, _), s in spells.items()
            if eid == leaver and s["termination_date"].strip()
        ]  # fmt: skip
        s = min(exits, key=lambda s: abs((date.fromisoformat(s["termination_date"]) - opened).days))
        if s["termination_type"].strip().lower() != "voluntary":
            continue
        last = date.fromisoformat(s["termination_date"])
        level = max(j for j in jobs[leaver] if j[0] <= last.isoformat())[1]
        starts = [date.fromisoformat(h) for (eid, h) in spells if eid == r["Hired Employee ID"]]
        first = min((d for d in starts if d >= opened), default=_us(r["Close Date"]))
        pay = sum(BANDS[level]) / 2
        hiring = float(r["Agency Fee"] or 0) + float(r["Other Hiring Cost"] or 0)
        vacancy = max(0, (first - last).days - 1) * pay / 365
        costs.append((hiring, vacancy, pay))
    n = len(costs)
    return {
        "backfills": n,
        "hiring_cost": sum(c[0] for c in costs) / n,
        "vacancy_cost": sum(c[1] for c in costs) / n,
        "measured_total": sum(c[0] + c[1] for c in costs) / n,
        "level_pay": sum(c[2] for c in costs) / n,
    }


@pytest.fixture(scope="module")
def mart(shared_company) -> dict[str, dict]:
    with duckdb.connect(str(shared_company.warehouse / "build" / "talent.duckdb"),
                        read_only=True) as con:  # fmt: skip
        cur = con.execute("select * from restricted.replacement_cost")
        names = [d[0] for d in cur.description]
        rows = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    return {r["component"]: r for r in rows}


def test_the_mart_is_the_files_recomputed_and_the_planted_means(shared_company, mart):
    mine = independent(shared_company.sources)
    truth = json.loads((shared_company.sources / "ground_truth.json").read_text())["recruiting"]
    assert mine["backfills"] == truth["filled_voluntary_backfills"] >= MIN_GROUP
    for component in ("hiring_cost", "vacancy_cost", "measured_total", "level_pay"):
        assert mart[component]["backfills"] == mine["backfills"]
        assert mart[component]["amount_usd"] == pytest.approx(mine[component], rel=1e-9)
    # the generator's realised means, planted through the files the warehouse read
    assert mart["hiring_cost"]["amount_usd"] == pytest.approx(truth["mean_hiring_cost_usd"])
    assert mart["vacancy_cost"]["amount_usd"] == pytest.approx(truth["mean_vacancy_cost_usd"])
    assert mart["vacancy_cost"]["mean_days"] == pytest.approx(truth["mean_days_vacant"])
    assert mart["level_pay"]["amount_usd"] == pytest.approx(truth["mean_level_pay_usd"])


def test_the_published_mart_hides_nothing_it_need_not(shared_company, mart):
    with duckdb.connect(str(shared_company.published), read_only=True) as con:
        rows = con.execute(
            "select component, amount_usd, suppressed from marts.replacement_cost"
        ).fetchall()
    assert {c: (a, s) for c, a, s in rows} == {
        c: (pytest.approx(r["amount_usd"]), False) for c, r in mart.items()
    }


def test_the_roi_prices_attrition_at_the_measured_cost(shared_company, mart):
    with duckdb.connect(str(shared_company.warehouse / "build" / "talent.duckdb"),
                        read_only=True) as con:  # fmt: skip
        item, evidence, inputs = con.execute(
            "select item, price_evidence, inputs from marts.roi_summary "
            "where item = 'attrition_cost_avoided'"
        ).fetchone()
    assert evidence == "measured"
    price = mart["measured_total"]["amount_usd"]
    assert f"replacement_cost_usd_per_exit={price:,.6g}" in inputs


def _frame(backfills: int, amount: float | None) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "component": ["hiring_cost", "vacancy_cost", "measured_total"],
            "label": ["Hiring cost: x", "Vacancy: y", "Measured replacement cost"],
            "amount_usd": [amount, amount, None if amount is None else 2 * amount],
            "ci_low_usd": [None, None, None if amount is None else 1.5 * amount],
            "ci_high_usd": [None, None, None if amount is None else 2.5 * amount],
            "backfills": [backfills] * 3,
        }
    )


@pytest.mark.parametrize(
    ("frame", "why"),
    [
        (pl.DataFrame(schema={"component": pl.String, "amount_usd": pl.Float64}), "no export"),
        (_frame(0, None), "an export without a filled backfill"),
        (_frame(MIN_GROUP - 1, 20000.0), "fewer than min_group_size backfills"),
    ],
)
def test_without_enough_backfills_the_price_stays_assumed(frame, why):
    assumed = load_assumptions(DEFAULT_ASSUMPTIONS_PATH)
    out, measured = measured_prices(frame, assumed, MIN_GROUP)
    assert measured == frozenset(), why
    assert out["replacement_cost_usd_per_exit"] == assumed["replacement_cost_usd_per_exit"]
    params = {n: a.base for n, a in out.items()}
    assert price_evidence("attrition_cost_avoided", params, measured) == "assumed"


def test_enough_backfills_measure_the_price_with_its_interval():
    assumed = load_assumptions(DEFAULT_ASSUMPTIONS_PATH)
    out, measured = measured_prices(_frame(MIN_GROUP, 20000.0), assumed, MIN_GROUP)
    a = out["replacement_cost_usd_per_exit"]
    assert measured == {"replacement_cost_usd_per_exit"}
    assert (a.low, a.base, a.high) == (30000.0, 40000.0, 50000.0)
    assert a.source_type == "measured" and "ramp-up is not measured" in a.source
    params = {n: x.base for n, x in out.items()}
    assert price_evidence("attrition_cost_avoided", params, measured) == "measured"


def test_page_one_names_a_measured_price_as_a_lower_bound():
    """Page 1 prices an exit at the measured cost and says what it leaves out; an assumed price
    reads as before."""
    from pipelines.lib.report.sections.roi import RoiFacts
    from pipelines.lib.report.sections.summary import price_text

    assumed = load_assumptions(DEFAULT_ASSUMPTIONS_PATH)
    out, _ = measured_prices(_frame(MIN_GROUP, 20000.0), assumed, MIN_GROUP)
    text = price_text("replacement_cost_usd_per_exit", RoiFacts(assumptions=out))
    assert text.startswith("$40,000 per voluntary exit (hiring and vacancy;")
    assert "ramp-up is not measured and not included, so it is a lower bound" in text
    plain = price_text("replacement_cost_usd_per_exit", RoiFacts(assumptions=assumed))
    assert plain == "$150,000 per voluntary exit"
