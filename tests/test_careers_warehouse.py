"""Programme episodes, level spells and pay bands of a generated company, recounted in plain
Python from the raw CSV exports (independently of the SQL) and compared with the warehouse that
one clean nightly run built over it (tests/conftest.py, `shared_company`)."""

from __future__ import annotations

import csv
import re
import statistics
from bisect import bisect_right
from collections import Counter, defaultdict
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path

import duckdb
import pytest
import yaml

from pipelines.lib.project_files import DBT_PROJECT_DIR
from pipelines.lib.pseudonym import pseudonym
from tests.conftest import TEST_PSEUDONYM_KEY

pytestmark = pytest.mark.slow

SCOPE = "AI Infrastructure"
MIN_GROUP = 5
FAR = date(9999, 12, 31)
PRIORITY = ("bootcamp", "vendor_partnership", "apprenticeship", "internal", "online")
NEW_MARTS = ("level_progression", "salary_bands", "programme_outcomes")


# --- the raw exports, read the way the contract describes them ------------------------------------


def current_rows(sources: Path, folder: str, export: str, key: tuple[str, ...]) -> list[dict]:
    """Current rows of an export: the latest version of each period's file; per natural key the
    row of the latest period (and, within a file, the last line) wins. Values stripped; empty
    values are None."""
    pattern = re.compile(rf"^{export}_(\d{{4}}-\d{{2}}(?:-\d{{2}})?)(?:_v(\d+))?\.csv$")
    files: dict[str, tuple[int, Path]] = {}
    for path in (sources / folder).glob(f"{export}_*.csv"):
        m = pattern.match(path.name)
        if m:
            version = int(m.group(2) or 1)
            if m.group(1) not in files or files[m.group(1)][0] < version:
                files[m.group(1)] = (version, path)
    latest: dict[tuple, dict] = {}
    for period in sorted(files):
        with files[period][1].open(encoding="utf-8-sig", newline="") as fh:
            for row in csv.DictReader(fh):
                clean = {
                    k: (v.strip() or None) if isinstance(v, str) else v for k, v in row.items()
                }
                latest[tuple(clean[k] for k in key)] = clean
    return list(latest.values())


def periods(sources: Path, folder: str, export: str) -> list[str]:
    return sorted(
        p.name[len(export) + 1 : len(export) + 8]
        for p in (sources / folder).glob(f"{export}_*.csv")
    )


def day(value: str | None) -> date | None:
    return date.fromisoformat(value[:10]) if value else None


def month_end(d: date) -> date:
    nxt = date(d.year + (d.month == 12), d.month % 12 + 1, 1)
    return nxt - timedelta(days=1)


def number(value: str | None) -> float | None:
    return float(value) if value is not None else None


@dataclass
class Interval:
    start: date
    end: date
    spell: int
    in_scope: bool
    level: int | None
    role: str | None
    salary: float | None


@dataclass
class Company:
    as_of: date
    first_month: date
    intervals: dict[str, list[Interval]]  # person_key -> history, sorted
    terminations: dict[tuple[str, int], tuple[date, str]]  # (person_key, spell) -> (day, type)
    email_person: dict[str, str]
    courses: dict[str, dict]
    enrolments: list[dict]
    attempts: list[dict]


def read_company(sources: Path, as_of: date) -> Company:
    """The history of every person from the raw employees and job_history exports."""
    employees = current_rows(sources, "hris", "employees", ("employee_id", "hire_date"))
    jobs = current_rows(sources, "hris", "job_history", ("employee_id", "effective_date"))
    hris_periods = periods(sources, "hris", "employees") + periods(sources, "hris", "job_history")
    first_month = date.fromisoformat(min(hris_periods) + "-01")

    key = {
        e: pseudonym(e, TEST_PSEUDONYM_KEY)
        for e in {r["employee_id"] for r in employees} | {r["employee_id"] for r in jobs}
    }
    # an address reused by two employee ids belongs to the most recent hire (then the lower id)
    email_owner: dict[str, tuple[date, str]] = {}
    for r in employees:
        if r["work_email"]:
            email, mine = r["work_email"].lower(), (day(r["hire_date"]), r["employee_id"])
            held = email_owner.get(email)
            if held is None or (mine[0], held[1]) > (held[0], mine[1]):
                email_owner[email] = mine
    email_person = {email: key[eid] for email, (_, eid) in email_owner.items()}

    job_rows = defaultdict(list)
    for r in jobs:
        job_rows[r["employee_id"]].append(r)
    spells = defaultdict(list)
    for r in employees:
        term = day(r["termination_date"])
        if term is not None and term > as_of:
            term = None
        spells[r["employee_id"]].append(
            (day(r["hire_date"]), term, (r["termination_type"] or "other") if term else None)
        )

    intervals: dict[str, list[Interval]] = {}
    terminations = {}
    for eid, person_spells in spells.items():
        records = sorted(job_rows.get(eid, []), key=lambda r: r["effective_date"])
        rows = []
        for number_, (hire, term, ttype) in enumerate(sorted(person_spells), start=1):
            end = term or FAR
            if term:
                terminations[(key[eid], number_)] = (term, ttype)
            first = True
            for i, r in enumerate(records):
                eff = day(r["effective_date"])
                job_to = (
                    day(records[i + 1]["effective_date"]) - timedelta(days=1)
                    if i + 1 < len(records)
                    else FAR
                )
                if eff > end or job_to < hire:
                    continue
                rows.append(
                    Interval(
                        hire if first else max(eff, hire),
                        min(job_to, end),
                        number_,
                        r["division"] == SCOPE
                        and (r["employment_type"] or "").lower() == "employee",
                        int(r["skill_level"]) if r["skill_level"] else None,
                        (r["role_family"] or "").lower().replace(" ", "_") or None,
                        number(r["annual_salary_usd"]),
                    )
                )
                first = False
        intervals[key[eid]] = sorted(rows, key=lambda x: x.start)

    courses = {r["course_id"]: r for r in current_rows(sources, "lms", "courses", ("course_id",))}
    enrolments = current_rows(sources, "lms", "enrolments", ("enrolment_id",))
    attempts = current_rows(sources, "lms", "certifications", ("attempt_id",))
    return Company(
        as_of, first_month, intervals, terminations, email_person, courses, enrolments, attempts
    )


def at(c: Company, person: str, d: date) -> Interval | None:
    rows = c.intervals.get(person, [])
    i = bisect_right([r.start for r in rows], d) - 1
    return rows[i] if i >= 0 and rows[i].end >= d else None


def stint_end(c: Company, person: str, d: date) -> date:
    """Last day of the continuous in-scope stretch holding d (same spell, no gap)."""
    rows = c.intervals[person]
    i = next(k for k, r in enumerate(rows) if r.start <= d <= r.end)
    while (
        i + 1 < len(rows)
        and rows[i + 1].in_scope
        and rows[i + 1].spell == rows[i].spell
        and rows[i + 1].start == rows[i].end + timedelta(days=1)
    ):
        i += 1
    return rows[i].end


# --- the recounts --------------------------------------------------------------------------------


def recount_episodes(c: Company) -> dict[tuple[str, str], dict]:
    """One episode per (person, track): first in-scope enrolment, not while certified."""
    by_track = defaultdict(list)
    for r in c.enrolments:
        person = c.email_person.get((r["learner_email"] or "").lower())
        course = c.courses.get(r["course_id"])
        if person is None or course is None or not course["certification_code"]:
            continue
        programme = (course["programme_type"] or "").lower() or "unknown"
        by_track[(person, course["certification_code"].upper())].append(
            (day(r["enrolled_on"]), programme)
        )
    passes = defaultdict(list)
    for a in c.attempts:
        person = c.email_person.get((a["learner_email"] or "").lower())
        if person and a["result"].lower() == "pass":
            code = a["certification_code"].upper()
            issued = day(a["issued_on"]) or day(a["exam_date"])
            passes[(person, code)].append((day(a["exam_date"]), issued, day(a["expires_on"])))
    episodes = {}
    for (person, code), rows in by_track.items():
        starts = [
            d
            for d, _ in rows
            if d <= c.as_of and (h := at(c, person, d)) is not None and h.in_scope
        ]
        if not starts:
            continue
        start = min(starts)
        if any(i <= start <= (e or FAR) for _, i, e in passes[(person, code)]):
            continue  # a refresher
        end = min(stint_end(c, person, start), c.as_of)
        certified_on = min(
            (x for x, _, _ in passes[(person, code)] if start <= x <= end), default=None
        )
        window = [p for d, p in rows if start <= d < start + timedelta(days=90) and d <= c.as_of]
        programme = min(window, key=lambda p: PRIORITY.index(p) if p in PRIORITY else 99)
        episodes[(person, code)] = {
            "programme_type": programme if programme in PRIORITY else "unknown",
            "first_enrolled_on": start,
            "certified_on": certified_on,
            "followed_until": certified_on or end,
        }
    return episodes


def recount_level_spells(c: Company) -> list[dict]:
    """In-scope stretches at one level inside [first_month, as_of] and how each ended."""
    spells = []
    for person, rows in c.intervals.items():
        rows = [r for r in rows if r.start <= c.as_of]
        i = 0
        while i < len(rows):
            r = rows[i]
            if not (r.in_scope and r.level is not None):
                i += 1
                continue
            j = i
            while (
                j + 1 < len(rows)
                and rows[j + 1].in_scope
                and rows[j + 1].level == r.level
                and rows[j + 1].spell == r.spell
                and rows[j + 1].start == rows[j].end + timedelta(days=1)
            ):
                j += 1
            end = rows[j].end
            nxt = rows[j + 1] if j + 1 < len(rows) else None
            if (
                nxt is not None
                and nxt.spell == r.spell
                and nxt.start == end + timedelta(days=1)
                and nxt.in_scope
                and nxt.level is not None
            ):
                ended = "up" if nxt.level > r.level else "down"
            elif c.terminations.get((person, r.spell), (None,))[0] == end:
                ended = "exit"
            else:
                ended = "other"
            if end >= c.first_month:
                spells.append(
                    {
                        "person": person,
                        "level": r.level,
                        "level_from": max(r.start, c.first_month),
                        "level_to": min(end, c.as_of),
                        "ended": ended,
                    }
                )
            i = j + 1
    return spells


def quarter_ends(c: Company) -> list[date]:
    ends, d = [], c.first_month
    while d <= c.as_of:
        e = month_end(d)
        if d.month in (3, 6, 9, 12) and e <= c.as_of:
            ends.append(e)
        d = e + timedelta(days=1)
    return ends


# --- fixtures ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def company(shared_company) -> Company:
    return read_company(shared_company.sources, shared_company.end_date)


@pytest.fixture(scope="module")
def build(shared_company):
    con = duckdb.connect(str(shared_company.warehouse / "build" / "talent.duckdb"), read_only=True)
    yield con
    con.close()


@pytest.fixture(scope="module")
def published(shared_company):
    con = duckdb.connect(str(shared_company.published), read_only=True)
    yield con
    con.close()


def rows(con, sql: str) -> list[dict]:
    cur = con.execute(sql)
    names = [d[0] for d in cur.description]
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


# --- tests ---------------------------------------------------------------------------------------


def test_the_window_matches_the_exports(company, build):
    bounds = rows(build, "select first_month, as_of_date from intermediate.int_calendar_bounds")[0]
    assert bounds == {"first_month": company.first_month, "as_of_date": company.as_of}


def test_every_episode_matches_the_recount(company, build):
    expected = recount_episodes(company)
    got = {
        (r["person_key"], r["certification_code"]): {
            k: r[k]
            for k in ("programme_type", "first_enrolled_on", "certified_on", "followed_until")
        }
        for r in rows(build, "select * from intermediate.int_programme_episodes")
    }
    assert len(expected) >= 20, "the company should prepare a few dozen engineers"
    assert got == expected


def test_the_statistics_read_the_episodes_as_of_the_last_complete_month(shared_company, build):
    """int_programme_episodes_complete is the recount with the day before the panel's latest
    month as the as-of date: later enrolments, passes and exits are not known yet, open
    episodes are censored on that day (the statistics' months are the complete ones)."""
    latest = rows(build, "select max(month) as m from intermediate.int_engineer_months")[0]["m"]
    as_of = latest - timedelta(days=1)
    expected = recount_episodes(read_company(shared_company.sources, as_of))
    columns = ("programme_type", "first_enrolled_on", "certified_on", "followed_until")
    got = {
        (r["person_key"], r["certification_code"]): {k: r[k] for k in columns}
        for r in rows(build, "select * from intermediate.int_programme_episodes_complete")
    }
    assert got == expected
    to_date = recount_episodes(read_company(shared_company.sources, shared_company.end_date))
    # the month in progress adds episodes or outcomes the complete table does not have yet
    assert len(expected) < len(to_date) or any(
        to_date[k] != v for k, v in expected.items() if k in to_date
    )
    exits = rows(
        build,
        "select count(*) as n from intermediate.int_programme_episodes_complete "
        f"where exit_on > date '{as_of.isoformat()}'",
    )[0]["n"]
    assert exits == 0


def test_a_later_status_of_an_earlier_enrolment_leaves_the_statistics_episodes_alone(
    shared_company, build, tmp_path
):
    """A completion or withdrawal exported after the end of the last complete month rewrites an
    earlier enrolment (status, charge, hours; a withdrawal carries no date). The episodes to
    date change with it; the content of those the statistics read, their data version, does
    not, so such a night keeps the programme statistics."""
    import shutil

    from pipelines.defs.versions import content_version

    build_file = shared_company.warehouse / "build" / "talent.duckdb"
    compiled = next((shared_company.warehouse / "build").glob("*/compiled/*/models/intermediate"))
    sql = {
        name: (compiled / f"{name}.sql").read_text()
        for name in ("int_programme_episodes", "int_programme_episodes_complete")
    }
    latest = rows(build, "select max(month) as m from intermediate.int_engineer_months")[0]["m"]
    as_of = (latest - timedelta(days=1)).isoformat()
    copy = tmp_path / build_file.name  # the same file name: the compiled SQL names its catalog
    shutil.copy(build_file, copy)
    with duckdb.connect(str(copy)) as con:
        before = {name: content_version(con, q) for name, q in sql.items()}
        updated = con.execute(
            "update staging.stg_lms__enrolments set status = 'completed', "
            f"completed_on = date '{as_of}' + 1, charged_usd = coalesce(charged_usd, 0) + 100, "
            "hours_spent = coalesce(hours_spent, 0) + 10 "
            f"where enrolled_on <= date '{as_of}' and status not in ('completed', 'passed')"
        ).fetchone()[0]
        after = {name: content_version(con, q) for name, q in sql.items()}
    assert updated > 0, "the company should have enrolments still open at the month's end"
    assert after["int_programme_episodes"] != before["int_programme_episodes"]
    assert after["int_programme_episodes_complete"] == before["int_programme_episodes_complete"]


def test_episodes_and_certified_per_programme_and_track(company, build):
    """restricted.programme_outcomes ('all' rows summed over cohorts) against the recount."""
    expected_n, expected_cert = Counter(), Counter()
    for (_, code), e in recount_episodes(company).items():
        expected_n[(e["programme_type"], code)] += 1
        expected_cert[(e["programme_type"], code)] += e["certified_on"] is not None
    got = rows(
        build,
        "select programme_type, certification_code, sum(participants) as n, sum(certified) as c "
        "from restricted.programme_outcomes where entry_level = 'all' group by all",
    )
    assert {(r["programme_type"], r["certification_code"]): r["n"] for r in got} == dict(expected_n)
    assert {(r["programme_type"], r["certification_code"]): r["c"] for r in got} == {
        k: expected_cert[k] for k in expected_n
    }
    assert sum(expected_cert.values()) > 0


def test_level_spells_and_promotions_per_level_and_year(company, build):
    spells = recount_level_spells(company)
    got_spells = {
        r["skill_level"]: r["n"]
        for r in rows(
            build, "select skill_level, count(*) as n from intermediate.int_level_spells group by 1"
        )
    }
    assert got_spells == dict(Counter(s["level"] for s in spells))
    promotions = Counter((s["level"], s["level_to"].year) for s in spells if s["ended"] == "up")
    demotions = Counter((s["level"], s["level_to"].year) for s in spells if s["ended"] == "down")
    exits = Counter((s["level"], s["level_to"].year) for s in spells if s["ended"] == "exit")
    progression = rows(build, "select * from restricted.level_progression")
    for kind, expected in (("promotions", promotions), ("demotions", demotions), ("exits", exits)):
        got = {(r["skill_level"], r["year"]): r[kind] for r in progression if r[kind]}
        assert got == dict(expected), kind
    engineers = defaultdict(set)
    for s in spells:
        for year in range(s["level_from"].year, s["level_to"].year + 1):
            engineers[(s["level"], year)].add(s["person"])
    assert {(r["skill_level"], r["year"]): r["engineers"] for r in progression} == {
        k: len(v) for k, v in engineers.items()
    }
    assert sum(promotions.values()) > 0


def test_promotions_in_the_12_months_to_each_quarter_end(company, build):
    """marts.level_progression_12m recounted from the raw exports' level spells: a spell counts
    in a window it overlaps, its promotion in the window that holds its last day."""
    spells = recount_level_spells(company)
    got = {
        (r["skill_level"], r["window_end"]): r
        for r in rows(build, "select * from restricted.level_progression_12m")
    }
    expected_engineers, expected_promotions = defaultdict(set), Counter()
    for end in quarter_ends(company):
        start = max(company.first_month, date(end.year - (end.month < 12), end.month % 12 + 1, 1))
        for s in spells:
            if s["level_from"] <= end and s["level_to"] >= start:
                expected_engineers[(s["level"], end)].add(s["person"])
                if s["ended"] == "up" and start <= s["level_to"] <= end:
                    expected_promotions[(s["level"], end)] += 1
    assert {k: r["engineers"] for k, r in got.items() if k[1] in set(quarter_ends(company))} == {
        k: len(v) for k, v in expected_engineers.items()
    }
    ends = set(quarter_ends(company))
    assert {k: r["promotions"] for k, r in got.items() if r["promotions"] and k[1] in ends} == {
        k: n for k, n in expected_promotions.items() if n
    }
    assert sum(expected_promotions.values()) > 0


def test_pay_median_and_share_below_band_per_quarter_level_and_role(company, build):
    with (DBT_PROJECT_DIR / "seeds" / "skill_levels.csv").open() as fh:
        bands = {int(r["skill_level"]): float(r["salary_min_usd"]) for r in csv.DictReader(fh)}
    pay = defaultdict(list)
    heads = Counter()
    for q in quarter_ends(company):
        for person in company.intervals:
            h = at(company, person, q)
            if h is None or not h.in_scope or h.level is None:
                continue
            heads[(q, h.level, h.role or "unknown")] += 1
            if h.salary is not None:
                pay[(q, h.level, h.role or "unknown")].append(h.salary)
    got = {
        (r["quarter_end"], r["skill_level"], r["role_family"]): r
        for r in rows(build, "select * from restricted.salary_bands")
    }
    assert {k: r["headcount"] for k, r in got.items()} == dict(heads)
    for k, values in pay.items():
        assert got[k]["pay_median_usd"] == pytest.approx(statistics.median(values)), k
        below = sum(v < bands[k[1]] for v in values) / len(values)
        assert got[k]["share_below_band"] == pytest.approx(below), k
    assert len(pay) > 10


def test_published_marts_hide_small_groups_and_the_pay_of_few(published, build, company):
    k = MIN_GROUP
    for mart, size in (
        ("programme_outcomes", "participants"),
        ("level_progression", "engineers"),
        ("level_progression_12m", "engineers"),
        ("salary_bands", "headcount"),
    ):
        small = published.execute(
            f"select count(*) from marts.{mart} where {size} between 1 and {k - 1}"
        ).fetchone()[0]
        assert small == 0, mart
        hidden = rows(
            published,
            f"select * from marts.{mart} where suppressed",
        )
        assert all(r[size] is None for r in hidden), mart
    shown_pay = rows(published, "select * from marts.salary_bands where pay_median_usd is not null")
    detail = {
        (r["quarter_end"], r["skill_level"], r["role_family"]): r
        for r in rows(build, "select * from restricted.salary_bands")
    }
    for r in shown_pay:
        d = detail[(r["quarter_end"], r["skill_level"], r["role_family"])]
        assert d["headcount_with_pay"] >= k and not d["pay_without_spread"], r
        assert r["pay_median_usd"] % 1000 == 0
        # the middle half never earns one rounded amount where pay is shown
        assert r["pay_p25_usd"] != r["pay_p75_usd"], r
        assert abs(r["pay_median_usd"] - d["pay_median_usd"]) <= 500
    few = [key for key, d in detail.items() if d["headcount_with_pay"] < k]
    published_pay = {
        (r["quarter_end"], r["skill_level"], r["role_family"]): r["pay_median_usd"]
        for r in rows(published, "select * from marts.salary_bands")
    }
    assert few and all(published_pay[key] is None for key in few)
    # no column of the published marts is named like pay of a person
    columns = [
        c
        for (c,) in published.execute(
            "select column_name from duckdb_columns() where schema_name = 'marts' "
            "and table_name in (select unnest(?))",
            [list(NEW_MARTS)],
        ).fetchall()
    ]
    assert columns and not [c for c in columns if re.search("salary|e_?mail|name", c)]


def test_every_new_mart_column_is_described(published):
    for mart in NEW_MARTS:
        model = yaml.safe_load((DBT_PROJECT_DIR / "models" / "marts" / f"{mart}.yml").read_text())
        described = {c["name"]: c["description"] for c in model["models"][0]["columns"]}
        comments = dict(
            published.execute(
                "select column_name, comment from duckdb_columns() "
                "where schema_name = 'marts' and table_name = ?",
                [mart],
            ).fetchall()
        )
        assert comments, mart
        assert set(comments) == set(described), mart
        assert all(comments[c] == described[c] and described[c] for c in comments), mart
