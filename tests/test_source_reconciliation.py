"""The same people from two and three HR tools: each person counts once, differing values are
resolved by the precedence sources.yml gives (else the latest delivery), the differences are
counted in marts.source_conflicts, and no blocking check fails.

Each tool's export is written as the tool writes it (BambooHR's custom report with US dates,
Personio's German semicolon export with a byte-order mark and decimal commas, Workday's
RaaS CSV with ISO dates) from one list of people: `PEOPLE` is what every tool says, `PLANTED`
what one tool says differently. The expected kept rows and conflict counts are worked out here
from those two tables, independently of the SQL.
"""

from __future__ import annotations

import json
from datetime import date

import duckdb
import pytest

from pipelines.lib.ingest import ingest_export
from pipelines.lib.quality import Severity, run_raw_suites
from pipelines.lib.settings import Settings
from tests.conftest import dbt_env, run_dbt

# the latest hire: every tool's file is dated 2026-03-02 by its data
PERIOD = "2026-03-02"


def _person(i: int) -> dict:
    hired = date(2019 + i % 6, 1 + i % 12, 1 + i)
    if i == 11:
        hired = date.fromisoformat(PERIOD)
    left = i in (4, 8)
    return {
        "employees": {
            "employee_id": f"E{1000 + i}",
            "first_name": f"Name{i}",
            "last_name": f"Surname{i}",
            "work_email": f"name{i}.surname{i}@example.com",
            "hire_date": hired,
            "original_hire_date": hired,
            "termination_date": date(2025, 6, 30) if left else None,
            "termination_type": "voluntary" if left else None,
            "termination_reason": "resignation" if left else None,
            "regrettable": (i == 4) if left else None,
        },
        "job_history": {
            "employee_id": f"E{1000 + i}",
            "effective_date": hired,
            "division": "AI Infrastructure",
            "team": "dgx-muc-1",
            "role_family": "Senior Engineer",
            "job_title": "Senior Engineer",
            "site": "Munich",
            "manager_id": None if i == 0 else "E1000",
            "employment_type": "employee",
            "fte": 1.0,
        },
    }


PEOPLE = [_person(i) for i in range(12)]
# (tool, export, person, column) -> what that tool says instead
PLANTED = {
    ("personio", "job_history", 3, "site"): "Berlin",
    ("personio", "employees", 8, "termination_reason"): "relocation",
    ("bamboohr", "job_history", 7, "job_title"): "Staff Engineer",  # also its role family
    ("bamboohr", "job_history", 7, "role_family"): "Staff Engineer",
    ("bamboohr", "employees", 2, "last_name"): "Surname-Double",
    ("workday", "job_history", 5, "manager_id"): "E1003",
}
# the contract columns each tool's export fills (outside the natural key)
DELIVERS = {
    "bamboohr": {
        "employees": {
            "first_name",
            "last_name",
            "work_email",
            "original_hire_date",
            "termination_date",
            "termination_type",
            "termination_reason",
            "regrettable",
        },
        "job_history": {
            "division",
            "team",
            "role_family",
            "job_title",
            "site",
            "manager_id",
            "employment_type",
        },
    },
    "personio": {
        "employees": {
            "first_name",
            "last_name",
            "work_email",
            "termination_date",
            "termination_type",
            "termination_reason",
        },
        "job_history": {
            "division",
            "team",
            "role_family",
            "job_title",
            "site",
            "employment_type",
            "fte",
        },
    },
    "workday": {
        "employees": {
            "first_name",
            "last_name",
            "work_email",
            "original_hire_date",
            "termination_date",
            "termination_type",
            "termination_reason",
            "regrettable",
        },
        "job_history": {
            "division",
            "team",
            "role_family",
            "job_title",
            "site",
            "manager_id",
            "employment_type",
            "fte",
        },
    },
}
VENDOR = {"bamboohr": "BambooHR", "personio": "Personio", "workday": "Workday"}
FILE = {
    "bamboohr": "Employee Report.csv",
    "personio": "Mitarbeiter_Export.csv",
    "workday": "Worker_Report.csv",
}


def says(tool: str, export: str, i: int, planted: dict) -> dict:
    """What `tool` says of person i in `export` (contract values), `planted` its differences."""
    row = dict(PEOPLE[i][export])
    for (t, e, person, column), value in planted.items():
        if (t, e, person) == (tool, export, i):
            row[column] = value
    return row


def _us(d: date | None) -> str:
    return d.strftime("%m/%d/%Y") if d else ""


def _de(d: date | None) -> str:
    return d.strftime("%d.%m.%Y") if d else ""


def bamboohr(planted: dict, tool: str = "bamboohr") -> str:
    lines = [
        "Employee #,First Name,Last Name,Work Email,Hire Date,Original Hire Date,"
        "Termination Date,Termination Type,Termination Reason,Termination Regrettable,"
        "Department,Division,Job Title,Location,Employment Status,Supervisor EID"
    ]
    for i in range(len(PEOPLE)):
        e, j = says(tool, "employees", i, planted), says(tool, "job_history", i, planted)
        left = e["termination_date"] is not None
        lines.append(
            ",".join(
                [
                    e["employee_id"],
                    e["first_name"],
                    e["last_name"],
                    e["work_email"],
                    _us(e["hire_date"]),
                    _us(e["original_hire_date"]),
                    _us(e["termination_date"]),
                    "Resignation (Voluntary)" if left else "",
                    e["termination_reason"] or "",
                    ("Regrettable" if e["regrettable"] else "Non-Regrettable") if left else "",
                    j["team"],
                    j["division"],
                    j["job_title"],
                    j["site"],
                    "Full-Time",
                    j["manager_id"] or "",
                ]
            )
        )
    return "\n".join(lines) + "\n"


def personio(planted: dict, tool: str = "personio") -> bytes:
    lines = [
        "ID;Vorname;Nachname;E-Mail;Eintrittsdatum;Austrittsdatum;Kündigungsart;"
        "Kündigungsgrund;Bereich;Abteilung;Position;Standort;Beschäftigungsart;FTE"
    ]
    for i in range(len(PEOPLE)):
        e, j = says(tool, "employees", i, planted), says(tool, "job_history", i, planted)
        left = e["termination_date"] is not None
        lines.append(
            ";".join(
                [
                    e["employee_id"],
                    e["first_name"],
                    e["last_name"],
                    e["work_email"],
                    _de(e["hire_date"]),
                    _de(e["termination_date"]),
                    "Kündigung durch Arbeitnehmer" if left else "",
                    e["termination_reason"] or "",
                    j["division"],
                    j["team"],
                    j["job_title"],
                    j["site"],
                    "Festangestellt",
                    f"{j['fte']:.1f}".replace(".", ","),
                ]
            )
        )
    return ("\ufeff" + "\r\n".join(lines) + "\r\n").encode("utf-8")


def workday(planted: dict, tool: str = "workday") -> str:
    lines = [
        "Employee_ID,Legal_Name_-_First_Name,Legal_Name_-_Last_Name,Email_-_Primary_Work,"
        "Hire_Date,Original_Hire_Date,Termination_Date,Primary_Termination_Category,"
        "Primary_Termination_Reason,Regrettable_Termination,Supervisory_Organization,Division,"
        "Job_Family,Business_Title,Location,Manager_Employee_ID,Worker_Type,FTE"
    ]
    for i in range(len(PEOPLE)):
        e, j = says(tool, "employees", i, planted), says(tool, "job_history", i, planted)
        left = e["termination_date"] is not None
        iso = [d.isoformat() if d else "" for d in (e["hire_date"], e["original_hire_date"])]
        lines.append(
            ",".join(
                [
                    e["employee_id"],
                    e["first_name"],
                    e["last_name"],
                    e["work_email"],
                    *iso,
                    e["termination_date"].isoformat() if left else "",
                    "Terminate Employee > Voluntary" if left else "",
                    e["termination_reason"] or "",
                    ("1" if e["regrettable"] else "0") if left else "",
                    j["team"],
                    j["division"],
                    j["role_family"],
                    j["job_title"],
                    j["site"],
                    j["manager_id"] or "",
                    "Employee",
                    f"{j['fte']:g}",
                ]
            )
        )
    return "\n".join(lines) + "\n"


WRITERS = {"bamboohr": bamboohr, "personio": personio, "workday": workday}


def deliver(root, tools: list[str], planted: dict) -> None:
    for tool in tools:
        data = WRITERS[tool](planted)
        path = root / "sources" / "hris" / FILE[tool]
        path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))


def expected(tools: list[str], order: dict[str, list[str]], rule: str, planted: dict) -> set:
    """The rows of marts.source_conflicts, from the tables above. `order[export]`: the tools in
    the order they win (the first one's row counts); `rule`: how that order was set."""
    rows = set()
    for export, ranked in order.items():
        kept = ranked[0]
        for other in (t for t in tools if t != kept):
            compared = DELIVERS[kept][export] & DELIVERS[other][export]
            per_column: dict[str, int] = {}
            differing = 0
            for i in range(len(PEOPLE)):
                a, b = says(kept, export, i, planted), says(other, export, i, planted)
                diff = [c for c in compared if a[c] != b[c]]
                differing += bool(diff)
                for c in diff:
                    per_column[c] = per_column.get(c, 0) + 1
            pair = (VENDOR[kept], VENDOR[other], rule, len(PEOPLE))
            rows.add((export, "any column", *pair, differing))
            rows |= {(export, c, *pair, n) for c, n in per_column.items()}
    return rows


def build(
    root, tools_in_runs: list[list[str]], planted: dict, config: str = ""
) -> tuple[Settings, object]:
    for folder in ("hris", "lms", "incidents", "fleet"):
        (root / "sources" / folder).mkdir(parents=True, exist_ok=True)
    (root / "sources" / "sources.yml").write_text(config)
    settings = Settings(sources_dir=root / "sources", warehouse_dir=root / "wh", settle_seconds=0)
    for tools in tools_in_runs:  # one load per list: later lists are later deliveries
        deliver(root, tools, planted)
        for export in ("employees", "job_history"):
            result = ingest_export(settings, export)
            assert not result.files_failed and not result.unknown_files
    run_dbt(
        [
            "build",
            "--select",
            "stg_hris__employees stg_hris__job_history source_conflicts",
            "--vars",
            json.dumps(settings.dbt_vars()),
        ],
        dbt_env(settings.warehouse_dir),
    )
    return settings, duckdb.connect(str(settings.build_db), read_only=True)


def kept_tools(settings: Settings, con, export: str) -> dict[date, str]:
    """The tool each staging row comes from, by the row's date (unique per person)."""
    when = "hire_date" if export == "employees" else "effective_date"
    files = dict(
        duckdb.connect(str(settings.raw_db), read_only=True)
        .execute(f"select file_id, source_system from manifest where export = '{export}'")
        .fetchall()
    )
    model = f"staging.stg_hris__{export}"
    rows = con.execute(f"select {when}, _file_id from {model} order by 1").fetchall()
    return {d: files[f] for d, f in rows}


def conflicts(con) -> set:
    return set(con.execute("select * from marts.source_conflicts").fetchall())


def no_blocking_failure(settings: Settings) -> list[str]:
    return [
        o.message
        for suite in run_raw_suites(settings, ["employees", "job_history"])
        for o in suite.failures
        if o.rule.severity is Severity.ERROR
    ]


@pytest.fixture(scope="module")
def two_alike(tmp_path_factory):
    root = tmp_path_factory.mktemp("two_alike")
    # Personio's export says what BambooHR's says: nothing planted
    settings, con = build(root, [["bamboohr", "personio"]], {})
    yield settings, con
    con.close()


@pytest.fixture(scope="module")
def three_tools(tmp_path_factory):
    root = tmp_path_factory.mktemp("three_tools")
    config = (
        "system_of_record:\n  hris: Workday\n"
        "precedence:\n  employees: [Personio, Workday, BambooHR]\n"
    )
    settings, con = build(root, [["bamboohr", "personio", "workday"]], PLANTED, config)
    yield settings, con
    con.close()


@pytest.fixture(scope="module")
def latest_wins(tmp_path_factory):
    root = tmp_path_factory.mktemp("latest_wins")
    settings, con = build(root, [["bamboohr"], ["personio"]], PLANTED)  # Personio later
    yield settings, con
    con.close()


def test_every_file_is_dated_by_its_data_to_the_same_day(three_tools):
    settings, _ = three_tools
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        periods = con.execute("select distinct period, period_source from manifest").fetchall()
    assert periods == [(PERIOD, "data")]


def test_two_tools_alike_count_each_person_once_and_nothing_blocks(two_alike):
    settings, con = two_alike
    assert no_blocking_failure(settings) == []
    for export in ("employees", "job_history"):
        # each person once, from one file: the latest delivery (Personio's file is loaded after
        # BambooHR's in the same run, by name)
        assert list(kept_tools(settings, con, export).values()) == ["Personio"] * len(PEOPLE)
    both = ("Personio", "BambooHR", "latest delivery", len(PEOPLE), 0)
    assert conflicts(con) == {
        ("employees", "any column", *both),
        ("job_history", "any column", *both),
    }
    two = {"employees": ["personio", "bamboohr"], "job_history": ["personio", "bamboohr"]}
    assert conflicts(con) == expected(["bamboohr", "personio"], two, "latest delivery", {})


# Worked out by hand from PLANTED and DELIVERS. employees: Personio first (precedence), compared
# with BambooHR (person 8's reason, person 2's last name) and Workday (person 8's reason).
# job_history: Workday first (system of record), compared with BambooHR (person 7's title and
# role family, person 5's manager) and Personio (person 3's site; Personio exports no manager).
THREE_TOOLS = {
    ("employees", "any column", "Personio", "BambooHR", "precedence", 12, 2),
    ("employees", "termination_reason", "Personio", "BambooHR", "precedence", 12, 1),
    ("employees", "last_name", "Personio", "BambooHR", "precedence", 12, 1),
    ("employees", "any column", "Personio", "Workday", "precedence", 12, 1),
    ("employees", "termination_reason", "Personio", "Workday", "precedence", 12, 1),
    ("job_history", "any column", "Workday", "BambooHR", "system of record", 12, 2),
    ("job_history", "job_title", "Workday", "BambooHR", "system of record", 12, 1),
    ("job_history", "role_family", "Workday", "BambooHR", "system of record", 12, 1),
    ("job_history", "manager_id", "Workday", "BambooHR", "system of record", 12, 1),
    ("job_history", "any column", "Workday", "Personio", "system of record", 12, 1),
    ("job_history", "site", "Workday", "Personio", "system of record", 12, 1),
}


def test_three_tools_resolve_by_precedence_and_count_the_conflicts(three_tools):
    settings, con = three_tools
    assert no_blocking_failure(settings) == []
    assert conflicts(con) == THREE_TOOLS
    tools = ["bamboohr", "personio", "workday"]
    by_rule = [
        ({"employees": ["personio", "workday", "bamboohr"]}, "precedence"),
        ({"job_history": ["workday", "bamboohr", "personio"]}, "system of record"),
    ]
    assert set().union(*(expected(tools, o, r, PLANTED) for o, r in by_rule)) == THREE_TOOLS
    for export, winner in (("employees", "Personio"), ("job_history", "Workday")):
        assert list(kept_tools(settings, con, export).values()) == [winner] * len(PEOPLE)
    # the kept values are the winner's: Workday's manager for person 5, Personio's reason for
    # person 8; BambooHR's title for person 7 and Personio's site for person 3 do not count
    jobs = dict(
        con.execute(
            "select j.effective_date, (j.job_title, j.site, j.manager_key = e.person_key) "
            "from staging.stg_hris__job_history as j, staging.stg_hris__employees as e "
            "where e.hire_date = ?",
            [PEOPLE[3]["employees"]["hire_date"]],  # person 3 is E1003
        ).fetchall()
    )
    at = {i: PEOPLE[i]["job_history"]["effective_date"] for i in (3, 5, 7)}
    assert jobs[at[5]] == ("Senior Engineer", "Munich", True)
    assert jobs[at[7]][:2] == ("Senior Engineer", "Munich")
    assert jobs[at[3]][:2] == ("Senior Engineer", "Munich")
    (reason,) = con.execute(
        "select termination_reason from staging.stg_hris__employees where hire_date = ?",
        [PEOPLE[8]["employees"]["hire_date"]],
    ).fetchone()
    assert reason == "relocation"


def test_without_a_precedence_the_latest_delivery_wins(latest_wins):
    settings, con = latest_wins
    assert no_blocking_failure(settings) == []
    for export in ("employees", "job_history"):
        assert list(kept_tools(settings, con, export).values()) == ["Personio"] * len(PEOPLE)
    # Personio against BambooHR: person 8's reason and person 2's last name; person 3's site
    # and person 7's title and role family (manager: Personio exports none)
    assert conflicts(con) == {
        ("employees", "any column", "Personio", "BambooHR", "latest delivery", 12, 2),
        ("employees", "termination_reason", "Personio", "BambooHR", "latest delivery", 12, 1),
        ("employees", "last_name", "Personio", "BambooHR", "latest delivery", 12, 1),
        ("job_history", "any column", "Personio", "BambooHR", "latest delivery", 12, 2),
        ("job_history", "site", "Personio", "BambooHR", "latest delivery", 12, 1),
        ("job_history", "job_title", "Personio", "BambooHR", "latest delivery", 12, 1),
        ("job_history", "role_family", "Personio", "BambooHR", "latest delivery", 12, 1),
    }
    (site,) = con.execute(
        "select site from staging.stg_hris__job_history where effective_date = ?",
        [PEOPLE[3]["job_history"]["effective_date"]],
    ).fetchone()
    assert site == "Berlin"


def test_precedence_settings_are_checked_with_advice(tmp_path):
    from pipelines.lib.ingest.profiles import ProfileError, load_sources_config

    (tmp_path / "sources.yml").write_text("system_of_record:\n  hr: Workday\n")
    with pytest.raises(ProfileError, match="names neither a folder nor an export"):
        load_sources_config(tmp_path)
    (tmp_path / "sources.yml").write_text("system_of_record:\n  hris: [Workday, Personio]\n")
    with pytest.raises(ProfileError, match="an order of several is `precedence`"):
        load_sources_config(tmp_path)
