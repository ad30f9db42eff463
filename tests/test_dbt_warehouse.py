"""Builds the warehouse from a small raw database through the Dagster dbt assets and checks
marts against figures computed independently, in plain Python, from the raw rows below."""

from __future__ import annotations

import os
from datetime import date
from pathlib import Path

import dagster as dg
import duckdb
import pytest

from pipelines.lib.pseudonym import pseudonym
from tests.conftest import TEST_PSEUDONYM_KEY, RawFile, make_raw_db, talent_resources

pytestmark = pytest.mark.slow

D = date.fromisoformat
DIV = "AI Infrastructure"


def emp(eid, hire, term=None, ttype=None, regrettable=None, email=None):
    return {
        "employee_id": eid,
        "first_name": f"First{eid}",
        "last_name": f"Last{eid}",
        "work_email": email or f"{eid.lower()}@corp.example",
        "hire_date": D(hire),
        "original_hire_date": None,
        "termination_date": D(term) if term else None,
        "termination_type": ttype,
        "termination_reason": None,
        "regrettable": regrettable,
    }


def job(eid, eff, level=2, role="operations_engineer", team="clu-a", div=DIV, etype="employee"):
    return {
        "employee_id": eid,
        "effective_date": D(eff),
        "division": div,
        "team": team,
        "role_family": role,
        "job_title": "Engineer",
        "skill_level": level,
        "site": "Berlin",
        "manager_id": "E1",
        "employment_type": etype,
        "fte": 1.0,
        "annual_salary_usd": 123456.0,
        "change_reason": "hire",
    }


def cert(aid, email, code, exam, result="pass", issued=None, expires=None):
    return {
        "attempt_id": aid,
        "learner_email": email,
        "certification_code": code,
        "exam_date": D(exam),
        "result": result,
        "score": 80.0,
        "issued_on": D(issued) if issued else (D(exam) if result == "pass" else None),
        "expires_on": D(expires) if expires else None,
        "exam_fee_usd": 125.0,
    }


# Seven in-scope employees, one contractor and one person in another division.
EMPLOYEES_HIRE_FILE = [
    emp("E1", "2023-01-01"),
    emp("E2", "2023-01-01"),
    emp("E3", "2023-02-15"),
    emp("E4", "2023-01-01"),
    emp("E5", "2023-01-01"),
    emp("E6", "2023-01-01"),
    emp("E7", "2023-03-01"),
    emp("C1", "2023-01-01"),
    emp("X1", "2023-01-01"),
]
# Changed records: terminations delivered later; E2 leaves and is rehired (new spell).
EMPLOYEES_CHANGES = [
    emp("E2", "2023-01-01", "2023-06-15", "voluntary", True),
    emp("E2", "2023-09-01"),
    emp("E3", "2023-02-15", "2023-12-31", "involuntary", False),
    emp("E6", "2023-01-01", "2024-03-31", "voluntary", False),
]
JOBS = [
    job("E1", "2023-01-01", level=4, role="infrastructure_lead"),
    job("E1", "2023-07-01", level=4, role="infrastructure_lead", team="clu-b"),
    job("E2", "2023-01-01"),
    job("E2", "2023-09-01", level=3),
    job("E3", "2023-02-15"),
    job("E4", "2023-01-01", level=3, role="network_specialist"),
    job("E5", "2023-01-01"),
    job("E6", "2023-01-01"),
    job("E7", "2023-03-01"),
    job("C1", "2023-01-01", etype="contractor"),
    job("X1", "2023-01-01", div="Finance"),
]
CERTS = [
    # E1: associate, renewed before expiry -> one continuous interval
    cert("A1", " E1@Corp.Example ", "NCA-AIIO", "2023-03-10", expires="2024-03-09"),
    cert("A2", "e1@corp.example", "NCA-AIIO", "2024-03-01", expires="2026-03-01"),
    # E4: certified in May 2023, expires end of Nov 2023 (lapses)
    cert("A3", "e4@corp.example", "NCP-AIN", "2023-05-20", expires="2023-11-30"),
    # E5 fails, then passes; no expiry
    cert("A4", "e5@corp.example", "NCA-AIIO", "2023-04-03", result="fail"),
    cert("A5", "e5@corp.example", "NCA-AIIO", "2023-08-03"),
    # unmatched learner
    cert("A6", "stranger@elsewhere.example", "CKA", "2023-04-03"),
    # E7: the one award expiring in the quarter after the as-of date (2024-Q3)
    cert("A7", "e7@corp.example", "CKA", "2024-02-12", expires="2024-08-31"),
]
SUPERSEDED_CERT = [cert("A9", "e7@corp.example", "CKA", "2023-04-01")]  # must be ignored
INCIDENTS = [
    {
        "incident_number": f"I{i}",
        "title": "Disk failure reported by E1",
        "service": "storage",
        "cluster": "clu-a",
        "severity": "sev2",
        "opened_at": f"2023-{m:02d}-10 08:00:00",
        "acknowledged_at": None,
        "resolved_at": f"2023-{m:02d}-10 {8 + h:02d}:00:00",
        "gpus_affected": 4,
        "downtime_minutes": 60.0 * h,
    }
    for i, (m, h) in enumerate([(4, 1), (5, 2), (9, 3), (10, 4)], start=1)
] + [
    {
        "incident_number": "I9",
        "title": None,
        "service": "net",
        "cluster": "clu-b",
        "severity": "sev3",
        "opened_at": "2024-06-10 08:00:00",
        "acknowledged_at": None,
        "resolved_at": None,
        "gpus_affected": 0,
        "downtime_minutes": 0.0,
    },
]
RESPONDERS = [
    {
        "incident_number": "I1",
        "responder_email": "e1@corp.example",
        "role": "primary",
        "assigned_at": None,
    },
    {
        "incident_number": "I1",
        "responder_email": "e4@corp.example",
        "role": "secondary",
        "assigned_at": None,
    },
    {
        "incident_number": "I2",
        "responder_email": "E4@corp.example",
        "role": "primary",
        "assigned_at": None,
    },
    {
        "incident_number": "I3",
        "responder_email": "e7@corp.example",
        "role": "primary",
        "assigned_at": None,
    },
    {
        "incident_number": "I4",
        "responder_email": "ghost@corp.example",
        "role": "primary",
        "assigned_at": None,
    },
]
FLEET = [
    {
        "cluster": "clu-a",
        "as_of_date": D("2023-01-01"),
        "site": "Berlin",
        "gpu_model": "H100",
        "gpu_count": 64,
    },
    {
        "cluster": "clu-a",
        "as_of_date": D("2023-06-01"),
        "site": "Berlin",
        "gpu_model": "H100",
        "gpu_count": 256,
    },
    {
        "cluster": "clu-b",
        "as_of_date": D("2023-01-01"),
        "site": "Berlin",
        "gpu_model": "H100",
        "gpu_count": 2048,
    },
]
COURSES = [
    {
        "course_id": "C-1",
        "title": "Intro",
        "provider": "NVIDIA",
        "programme_type": "online",
        "hours": 8.0,
        "cost_usd": 100.0,
        "certification_code": "NCA-AIIO",
    }
]
ENROLMENTS = [
    {
        "enrolment_id": "N1",
        "learner_email": "e1@corp.example",
        "course_id": "C-1",
        "status": "completed",
        "enrolled_on": D("2023-02-01"),
        "completed_on": D("2023-02-20"),
        "cost_usd": 50.0,
        "hours_spent": None,
        "score": None,
    },
]
CONTRACTORS = [
    {
        "engagement_id": "G1",
        "vendor": "V",
        "month": D("2023-05-01"),
        "team": "clu-a",
        "hours": 10.0,
        "hourly_rate_usd": 300.0,
    },
]

AS_OF = D("2024-06-30")


def run_unit_tests(wh: Path) -> str:
    """`dbt test --select test_type:unit` against the warehouse just built, in the build's own
    target folder (its parse is reused); what dbt printed."""
    import subprocess

    from pipelines.defs.dbt import DBT_EXECUTABLE, dbt_project, target_dir, vars_args

    settings = talent_resources(warehouse_dir=wh)["talent"].settings
    done = subprocess.run(
        [DBT_EXECUTABLE, "test", "--select", "test_type:unit", *vars_args(settings)]
        + ["--project-dir", str(dbt_project.project_dir), "--profiles-dir"]
        + [str(dbt_project.project_dir), "--target-path", str(target_dir(settings))],
        env={**os.environ, **settings.dbt_env()},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def warehouse(tmp_path_factory):
    wh = tmp_path_factory.mktemp("wh")
    make_raw_db(
        wh / "raw.duckdb",
        [
            RawFile("employees", "2023-01", EMPLOYEES_HIRE_FILE),
            RawFile("employees", "2024-04", EMPLOYEES_CHANGES),
            RawFile("job_history", "2023-09", JOBS),
            RawFile("certifications", "2024-03", CERTS),
            RawFile("certifications", "2023-04", SUPERSEDED_CERT, status="superseded"),
            RawFile("incidents", "2024-06", INCIDENTS),
            RawFile("responders", "2024-06", RESPONDERS),
            RawFile("gpu_fleet", "2023-06", FLEET),
            RawFile("courses", "2023-01", COURSES),
            RawFile("enrolments", "2023-02", ENROLMENTS),
            RawFile("contractor_hours", "2023-05", CONTRACTORS),
        ],
    )
    from pipelines.defs import dbt as dbt_defs

    result = dg.materialize(
        [dbt_defs.warehouse_dbt, dbt_defs.dbt_docs],
        resources={"dbt": dbt_defs.dbt_resource(), **talent_resources(warehouse_dir=wh)},
        raise_on_error=False,
    )
    failed_checks = [
        f"{e.asset_key.to_user_string()}:{e.check_name}"
        for e in result.get_asset_check_evaluations()
        if not e.passed
    ]
    assert result.success and not failed_checks, (
        f"dbt build failed; failing checks: {failed_checks}"
    )
    # every dbt test became an asset check and was evaluated
    assert len(result.get_asset_check_evaluations()) == len(
        list(dbt_defs.warehouse_dbt.check_specs)
    )
    (wh.parent / "unit-tests.log").write_text(run_unit_tests(wh))
    con = duckdb.connect(str(wh / "build" / "talent.duckdb"), read_only=True)
    yield wh, con
    con.close()


def test_the_dbt_unit_tests_pass_on_the_built_warehouse(warehouse):
    """The nightly build leaves dbt's unit tests out (they test the SQL on fixed rows, not the
    data); the module's fixture ran them against the tables it built."""
    wh, _ = warehouse
    out = (wh.parent / "unit-tests.log").read_text()
    passed = [line for line in out.splitlines() if " PASS " in line and "::" in line]
    assert len(passed) >= 6 and "ERROR=0" in out, out[-3000:]


@pytest.fixture(scope="module")
def built(warehouse):
    return warehouse[1]


def test_every_dbt_test_ran_as_an_asset_check_and_docs_were_written(warehouse):
    wh, _ = warehouse
    for name in ("index.html", "manifest.json"):
        assert (wh / "docs" / name).is_file(), name
    # one self-contained page that documents every mart
    page = (wh / "docs" / "index.html").read_text()
    assert "certification_coverage" in page and "int_engineer_months_complete" in page


def test_every_mart_and_column_carries_its_description_as_a_comment(built):
    """The yml descriptions reach the file (persist_docs); publishing copies them."""
    import yaml

    from pipelines.lib.project_files import DBT_PROJECT_DIR

    for yml in sorted((DBT_PROJECT_DIR / "models" / "marts").glob("*.yml")):
        model = yaml.safe_load(yml.read_text())["models"][0]
        comment = built.execute(
            "select comment from duckdb_tables() where schema_name = 'marts' and table_name = ?",
            [model["name"]],
        ).fetchone()
        assert comment and comment[0] == model["description"], model["name"]
        comments = dict(
            built.execute(
                "select column_name, comment from duckdb_columns() "
                "where schema_name = 'marts' and table_name = ?",
                [model["name"]],
            ).fetchall()
        )
        missing = sorted(c for c, text in comments.items() if not text)
        assert not missing, f"marts.{model['name']}: columns without a comment: {missing}"
        for column in model["columns"]:
            assert comments[column["name"]] == column["description"], column["name"]


def spells():
    """Current spells per person from the raw rows: later delivery wins per (id, hire date)."""
    latest = {}
    for row in EMPLOYEES_HIRE_FILE + EMPLOYEES_CHANGES:
        latest[(row["employee_id"], row["hire_date"])] = row
    return [r for r in latest.values() if r["employee_id"].startswith("E")]


def month_range(start: date, end: date):
    y, m = start.year, start.month
    while date(y, m, 1) <= end:
        yield date(y, m, 1)
        y, m = (y + 1, 1) if m == 12 else (y, m + 1)


def month_end(m: date) -> date:
    nxt = date(m.year + (m.month == 12), m.month % 12 + 1, 1)
    return date.fromordinal(nxt.toordinal() - 1)


def expected_attrition(m: date):
    """SHRM counts for one month, all in-scope employees (no transfers in this data)."""
    end = month_end(m)
    start = headcount_end = hires = seps = 0
    for s in spells():
        h, t = s["hire_date"], s["termination_date"] or date.max
        start += h < m <= t
        headcount_end += h <= end < t
        hires += m <= h <= end
        seps += m <= t <= end
    return start, hires, seps, headcount_end


def test_attrition_matches_raw_counts_every_month(built):
    rows = built.execute(
        "select period_start, headcount_start, hires, separations, headcount_end, turnover_rate "
        "from marts.attrition where period_type = 'month' and segment_type = 'all' order by 1"
    ).fetchall()
    assert rows[0][0] == date(2023, 1, 1)
    assert rows[-1][0] == date(2024, 6, 1)
    for m, *counts, rate in rows:
        start, hires, seps, end = expected_attrition(m)
        assert tuple(counts) == (start, hires, seps, end), m
        assert rate == pytest.approx(seps / ((start + end) / 2)), m


def test_rehire_counts_one_separation_and_one_hire(built):
    jun, sep = (
        built.execute(
            "select separations, voluntary_separations, regrettable_separations, hires "
            "from marts.attrition where period_type = 'month' and segment_type = 'all' "
            f"and period_start = date '{d}'"
        ).fetchone()
        for d in ("2023-06-01", "2023-09-01")
    )
    assert jun == (1, 1, 1, 0)
    assert sep == (0, 0, 0, 1)


def test_coverage_for_a_month_matches_raw(built):
    # end of June 2023: employed E1, E4, E5, E6, E7 (E2 left 15 June, E3 employed)
    employed = [
        s["employee_id"]
        for s in spells()
        if s["hire_date"] <= D("2023-06-30") <= (s["termination_date"] or date.max)
    ]
    certified = {
        c["learner_email"].strip().lower().split("@")[0].upper()
        for c in CERTS
        if c["result"] == "pass"
        and c["issued_on"] <= D("2023-06-30")
        and (c["expires_on"] is None or c["expires_on"] >= D("2023-06-30"))
    }
    row = built.execute(
        "select headcount, any_cert_headcount, any_cert_share from marts.certification_coverage "
        "where month_end = date '2023-06-30' and segment_type = 'all'"
    ).fetchone()
    expected_certified = len(certified & set(employed))
    assert row[0] == len(employed) == 6
    assert row[1] == expected_certified == 2
    assert row[2] == pytest.approx(expected_certified / len(employed))


def test_lapsed_and_renewed_certifications(built):
    def certified(person, month):
        return built.execute(
            "select is_certified from intermediate.int_engineer_months where person_key = ? and month = ?",
            [pseudonym(person, TEST_PSEUDONYM_KEY), D(month)],
        ).fetchone()[0]

    assert not certified("E4", "2023-04-01")
    assert certified("E4", "2023-05-01")
    assert certified("E4", "2023-11-01")  # expires 30 November: still valid on that day
    assert not certified("E4", "2023-12-01")
    assert certified("E1", "2024-03-01")  # renewal issued before expiry: no gap


def test_identity_match_counts_unmatched(built):
    rows = dict(
        built.execute("select source, (records, matched) from marts.identity_match").fetchall()
    )
    assert rows["lms_certifications"] == (7, 6)  # superseded file ignored
    assert rows["incident_responders"] == (5, 4)


def test_incident_downtime_by_status(built):
    rows = {
        (q, s): (n, minutes)
        for q, s, n, minutes in built.execute(
            "select quarter, certification_status, incidents, downtime_minutes "
            "from restricted.incident_downtime"
        ).fetchall()
    }
    # Q2: I1 by E1 (certified since 10 March), I2 by E4 opened 10 May, ten days before E4's
    # award; Q3: I3 by E7 (never certified); Q4: I4 by an address no HRIS person has.
    assert rows[(D("2023-04-01"), "certified")] == (1, 60.0)
    assert rows[(D("2023-04-01"), "not_certified")] == (1, 120.0)
    assert rows[(D("2023-07-01"), "not_certified")] == (1, 180.0)
    assert rows[(D("2023-10-01"), "unmatched")] == (1, 240.0)
    # published: every linked row comes from one responder and is suppressed; the unmatched
    # incident is linked to nobody and stays
    published = {
        (q, st): (n, hidden, why)
        for q, st, n, hidden, why in built.execute(
            "select quarter, certification_status, incidents, suppressed, suppression_reason "
            "from marts.incident_downtime"
        ).fetchall()
    }
    assert published[(D("2023-04-01"), "certified")] == (None, True, "fewer than 5 people")
    assert published[(D("2023-07-01"), "not_certified")] == (None, True, "fewer than 5 people")
    assert published[(D("2023-10-01"), "unmatched")] == (1, False, None)


def test_no_personal_data_in_marts(built):
    personal = set()
    for rows in (EMPLOYEES_HIRE_FILE, EMPLOYEES_CHANGES, CERTS, ENROLMENTS, RESPONDERS):
        for r in rows:
            for k in ("first_name", "last_name", "work_email", "learner_email", "responder_email"):
                if r.get(k):
                    personal.add(str(r[k]).strip().lower())
    personal |= {"123456", "123456.0"}
    personal |= {r["employee_id"].lower() for r in EMPLOYEES_HIRE_FILE}
    tables = built.execute(
        "select table_name from information_schema.tables where table_schema = 'marts'"
    ).fetchall()
    assert len(tables) >= 14
    for (table,) in tables:
        cols = [c[0] for c in built.execute(f"describe marts.{table}").fetchall()]
        assert not {
            "first_name",
            "last_name",
            "work_email",
            "annual_salary_usd",
            "employee_id",
        } & set(cols)
        for col in cols:
            values = built.execute(
                f'select distinct lower(trim("{col}"::varchar)) from marts.{table}'
            ).fetchall()
            leaked = {v for (v,) in values if v is not None} & personal
            assert not leaked, f"marts.{table}.{col} holds personal values {sorted(leaked)[:3]}"


def _published(warehouse, tmp_path) -> Path:
    """The analyst-facing file publishing makes of this build (publishing only reads it)."""
    from pipelines.lib.publish import publish

    wh, _ = warehouse
    published = tmp_path / "talent.duckdb"
    publish(wh / "build" / "talent.duckdb", published, min_group_size=5)
    return published


def readme_query(heading: str) -> str:
    """The first ```sql block under `heading` in README.md, as analysts would paste it."""
    text = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    section = text.split(heading, 1)[1]
    return section.split("```sql", 1)[1].split("```", 1)[0]


def test_readme_query_lists_the_certifications_expiring_next_quarter(warehouse, tmp_path):
    # as of 2024-06-30 the next quarter is 2024-Q3; of the planted awards only A7 (E7, CKA,
    # expires 31 August 2024) ends in it (E1's renewal runs to 2026, E4's lapsed in 2023)
    expected = [
        (c["certification_code"], c["expires_on"])
        for c in CERTS
        if c["expires_on"] and D("2024-07-01") <= c["expires_on"] <= D("2024-09-30")
    ]
    assert expected == [("CKA", D("2024-08-31"))]
    query = readme_query("### Which certifications expire next quarter?")
    with duckdb.connect(str(_published(warehouse, tmp_path)), read_only=True) as con:
        rows = con.execute(query).fetchall()
    assert rows == [("CKA", 1, D("2024-08-31"), D("2024-06-02"))]


def test_publishing_refuses_the_build_once_suppression_is_broken(warehouse, tmp_path):
    import shutil

    from pipelines.lib.publish import PublishError, publish

    wh, _ = warehouse
    build = tmp_path / "build.duckdb"
    shutil.copy(wh / "build" / "talent.duckdb", build)
    publish(build, tmp_path / "ok.duckdb", min_group_size=5)  # as built: publishable
    with duckdb.connect(str(build)) as con:
        # undo the suppression of the teams: their restricted headcounts (1-3 people) show again
        changed = con.execute(
            "update marts.certification_coverage as m set headcount = r.headcount "
            "from restricted.certification_coverage as r where m.suppressed "
            "and r.month_end = m.month_end and r.segment_type = m.segment_type "
            "and r.segment_value = m.segment_value and r.headcount between 1 and 4"
        ).fetchone()[0]
    assert changed > 0
    with pytest.raises(PublishError, match=r"certification_coverage\.headcount: \d+ row"):
        publish(build, tmp_path / "broken.duckdb", min_group_size=5)
    assert not (tmp_path / "broken.duckdb").exists()


def test_published_marts_show_no_group_smaller_than_the_minimum(warehouse, tmp_path):
    """Every people count of every published table is NULL, 0 or at least 5; dim_employee is
    5-anonymous over the attributes it keeps; nothing of schema restricted is published."""
    from pipelines.lib.publish import GROUP_SIZE_COLUMNS

    with duckdb.connect(str(_published(warehouse, tmp_path)), read_only=True) as con:
        cols = con.execute(
            "select table_name, column_name from duckdb_columns() where schema_name = 'marts' "
            "and column_name in (select unnest(?))",
            [list(GROUP_SIZE_COLUMNS)],
        ).fetchall()
        small = {
            (t, c): con.execute(
                f'select count(*) from marts."{t}" where "{c}" between 1 and 4'
            ).fetchone()[0]
            for t, c in cols
        }
        classes = con.execute(
            "select min(n) from (select count(*) as n from marts.dim_employee "
            "group by role_family, skill_level, first_hire_year, is_active)"
        ).fetchone()[0]
        dim_cols = [r[0] for r in con.execute("describe marts.dim_employee").fetchall()]
        schemas = {r[0] for r in con.execute("select schema_name from duckdb_tables()").fetchall()}
        hidden = con.execute(
            "select count(*) from marts.certification_coverage where suppressed"
        ).fetchone()[0]
    assert len(cols) >= 8 and not any(small.values()), small
    assert hidden > 0  # the fixture's teams of 1-3 people are there to be hidden
    assert classes >= 5
    assert dim_cols == ["person_key", "role_family", "skill_level", "first_hire_year", "is_active"]
    assert "restricted" not in schemas


def test_docs_site_opens_on_the_overview_and_describes_the_python_marts(warehouse):
    """The generated site carries the project overview and the statistics and ROI marts, with
    the column descriptions those assets attach as DuckDB comments (one source of text)."""
    import json

    from pipelines.lib.careers.result import MART_DESCRIPTIONS
    from pipelines.lib.effects import result
    from pipelines.lib.roi.warehouse import COLUMN_COMMENTS

    wh, _ = warehouse
    manifest = json.loads((wh / "docs" / "manifest.json").read_text())
    overview = manifest["docs"]["doc.talent_metrics.__overview__"]["block_contents"]
    for phrase in ("## Flow", "## Grain of each mart", "## Privacy rules", "restricted"):
        assert phrase in overview, phrase
    sources = {
        s["name"]: s for s in manifest["sources"].values() if s["source_name"] == "python_marts"
    }
    assert set(sources) == {
        "certification_effect",
        "certification_event_study",
        "operations_effect",
        "source_deliveries",
        "workforce_plan",
        "workforce_plan_rates",
        "workforce_plan_backtest",
    } | set(COLUMN_COMMENTS) | set(MART_DESCRIPTIONS)
    effect = sources["certification_effect"]
    assert effect["description"] == result.EFFECT_TABLE
    assert {c: v["description"] for c, v in effect["columns"].items()} == (
        result.CERTIFICATION_EFFECT_DESCRIPTIONS
    )
    roi = sources["roi_by_period"]["columns"]
    assert {c: v["description"] for c, v in roi.items()} == COLUMN_COMMENTS["roi_by_period"]
    outcomes = sources["time_to_certify"]
    assert (
        outcomes["description"],
        {c: v["description"] for c, v in outcomes["columns"].items()},
    ) == (MART_DESCRIPTIONS["time_to_certify"])
