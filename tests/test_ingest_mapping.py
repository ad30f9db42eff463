"""Guided mapping of a tool's export no profile reads, and the vendor nuances around it.

Fixtures: tests/fixtures/vendors/more/ (one file per profile, as the tools write them) and
variants/ (their README lists them). An unknown tool's export is written here in each test:
its columns, and so what a user fills in for each TODO, are the test's planted ground truth.
"""

from __future__ import annotations

import re
import shutil
from datetime import date
from pathlib import Path

import duckdb
import yaml
from typer.testing import CliRunner

from pipelines.cli import app
from pipelines.lib.contracts import EXPORTS
from pipelines.lib.ingest import ingest_all, ingest_export
from pipelines.lib.ingest.check import check_sources, format_report
from pipelines.lib.ingest.mapping import starting_profile
from pipelines.lib.ingest.profiles import load_profiles, parse_profile, recognise
from pipelines.lib.settings import Settings

VENDORS = Path(__file__).parent / "fixtures" / "vendors"
MORE = VENDORS / "more"
VARIANTS = VENDORS / "variants"

# a roster of a tool the project has no profile for: which column holds what is known here
ROSTER = (
    "Staff Number,Forename,Family name,Work email,Start date,Left on,Team,Role,Site,Grade\n"
    "S-17,Ada,Lovelace,ada@example.com,13/04/2021,31/01/2024,dgx-1,Senior Engineer,Munich,P3\n"
    "S-18,Alan,Turing,alan@example.com,01/02/2022,,dgx-1,Architect,Munich,P4\n"
    "S-19,Grace,Hopper,grace@example.com,15/09/2023,,Finance,Controller,Berlin,P2\n"
)
# what a user writes for each TODO, from the file's columns (README: "Your own profiles")
FILLED = {
    "first_name": '{column: "Forename"}',
    "division": '{value: "AI Infrastructure"}',
    "role_family": '{column: "Role"}',
    "employment_type": "{value: employee}",
}


def query(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return con.execute(sql).fetchall()


def run(*args: str):
    return CliRunner().invoke(app, ["sources", *args])


# --- an unknown tool's export -------------------------------------------------------------------


def test_an_unknown_header_says_how_to_map_it(settings):
    roster = settings.sources_dir / "hris" / "Roster.csv"
    roster.write_text(ROSTER)
    result = ingest_export(settings, "employees")
    note = result.not_loaded["hris/Roster.csv"]
    assert result.unknown_files == ["hris/Roster.csv"]
    assert "matches no profile" in note
    # the command to start a profile, for the exports the header most likely holds
    assert f"talent sources init-profile {roster} --export employees --export job_history" in note
    assert str(settings.sources_dir / "profiles") in note
    assert "sources.yml" in note and '"Roster.csv": {profile: <name>}' in note
    assert 'sources/README.md, "Your own profiles and sources.yml"' in note
    assert f"talent sources check {settings.sources_dir}" in note
    readme = (Path(__file__).parents[1] / "sources" / "README.md").read_text(encoding="utf-8")
    assert "### Your own profiles and `sources.yml`" in readme
    assert "talent sources init-profile" in readme


def test_closest_profile_is_the_one_reading_most_of_the_columns_that_matter(settings):
    """A profile that shares one unimportant recognising column of a short list must not be
    named closest over one that reads most of the export's required columns."""
    profiles_dir = settings.sources_dir / "profiles"
    profiles_dir.mkdir()
    (profiles_dir / "decoy.yaml").write_text(
        "name: decoy\nfolder: hris\nrecognise: [Site, Badge colour]\n"
        "outputs:\n  employees:\n    columns:\n"
        "      employee_id: Badge\n      first_name: Badge\n      last_name: Badge\n"
        "      work_email: Badge\n      hire_date: Badge\n"
    )
    header = ROSTER.splitlines()[0].split(",")
    profiles = load_profiles(settings.sources_dir)
    rec = recognise(header, "hris", profiles)
    assert rec.profile is None
    # independently: per profile, the required and key columns whose rule names a header column
    present = {h.casefold() for h in header}

    def reads(profile) -> int:
        best = 0
        for output in profile.outputs:
            export = EXPORTS[output.export]
            cols = set(export.required_columns) | set(export.key)
            rules = [output.rules[c] for c in cols if c in output.rules]
            best = max(best, sum(any(h.casefold() in present for h in r.columns) for r in rules))
        return best

    hris = [p for p in profiles.values() if p.folder == "hris"]
    assert rec.closest is not None and rec.closest.profile.name != "decoy"
    assert reads(rec.closest.profile) == max(reads(p) for p in hris) > reads(profiles["decoy"])


def test_init_profile_maps_what_it_can_and_the_filled_profile_loads_the_file(settings):
    roster = settings.sources_dir / "hris" / "Roster.csv"
    roster.write_text(ROSTER)
    out = run("init-profile", str(roster), "--export", "employees", "--export", "job_history")
    assert out.exit_code == 0, out.output
    target = settings.sources_dir / "profiles" / "roster.yaml"
    assert f"Wrote {target}" in out.output
    # guessed by name and known spellings; the rest named as TODO, and what to do next
    assert 'last_name <- "Family name"' in out.output and 'hire_date <- "Start date"' in out.output
    assert 'employee_id <- "Staff Number"' in out.output
    todo = set(re.findall(r"^    (\w+): TODO \(required", out.output, re.M))
    assert todo == set(FILLED)
    assert "dates read as %d/%m/%Y" in out.output  # 13/04/2021 can only be day/month
    assert f"talent sources check {settings.sources_dir}" in out.output
    text = target.read_text(encoding="utf-8")
    parse_profile(yaml.safe_load(text), "roster.yaml")  # valid as written, TODOs and all
    # as written, the check names what is still missing instead of loading half a mapping
    before = run("check", str(settings.sources_dir))
    assert before.exit_code == 1 and "first_name (from TODO)" in before.output
    # the user fills each TODO line with the column (or constant) that holds the value
    lines = []
    for line in text.splitlines():
        m = re.match(r'\s+(\w+): \{column: "TODO"\}', line)
        lines.append(line.replace('{column: "TODO"}', FILLED[m.group(1)]) if m else line)
    lines = [
        line.replace(
            '# termination_date: {column: "TODO"}', 'termination_date: {column: "Left on"}'
        )
        for line in lines
    ]
    target.write_text("\n".join(lines) + "\n", encoding="utf-8")
    after = run("check", str(settings.sources_dir))
    assert after.exit_code == 0, after.output
    ingest_all(settings)
    rows = query(
        settings,
        "SELECT employee_id, first_name, hire_date, termination_date FROM employees ORDER BY 1",
    )
    assert rows == [
        ("S-17", "Ada", date(2021, 4, 13), date(2024, 1, 31)),
        ("S-18", "Alan", date(2022, 2, 1), None),
        ("S-19", "Grace", date(2023, 9, 15), None),
    ]
    jobs = query(settings, "SELECT division, role_family, employment_type FROM job_history")
    assert ("AI Infrastructure", "Architect", "employee") in jobs and len(jobs) == 3
    assert query(settings, "SELECT count(*) FROM quarantine") == [(0,)]


def test_init_profile_refuses_to_overwrite_and_names_unknown_exports(settings):
    roster = settings.sources_dir / "hris" / "Roster.csv"
    roster.write_text(ROSTER)
    assert run("init-profile", str(roster)).exit_code == 0
    again = run("init-profile", str(roster))
    assert again.exit_code == 1 and "exists" in again.output
    bad = run("init-profile", str(roster), "--export", "staff")
    assert bad.exit_code == 2 and "unknown export staff" in bad.output


def test_a_header_of_unknown_spellings_asks_which_export_it_holds(settings):
    """No column is a spelling the project knows: the advice does not guess an export (the
    guess would be a tie of zeros), it names the folder's exports, and init-profile asks."""
    people = settings.sources_dir / "hris" / "people.csv"
    people.write_text(
        "EEID,Given,Family,Mail Addr,Orig Hire,Term Dt\n1,Ann,Lee,a@x.com,2024-01-02,\n"
    )
    note = ingest_export(settings, "employees").not_loaded["hris/people.csv"]
    assert f"talent sources init-profile {people} --export EXPORT`" in note
    hris = [name for name, export in EXPORTS.items() if export.folder == "hris"]
    assert f"one of {', '.join(hris)};" in note and "employees" in hris
    asked = run("init-profile", str(people))
    assert asked.exit_code == 2 and "name it with --export (one of employees" in asked.output
    assert not (settings.sources_dir / "profiles").exists()


def test_init_profile_finds_a_second_header_row(tmp_path):
    """SuccessFactors' field labels under its system keys: the starting profile skips them."""
    (tmp_path / "hris").mkdir()
    path = tmp_path / "hris" / "Employee Export.csv"
    shutil.copyfile(MORE / "Employee Export.csv", path)
    draft = starting_profile(path, ["employees"])
    assert draft.skip_rows == 1 and "skip_rows: 1" in draft.text
    assert draft.guesses[0].formats == {"date": ["%m/%d/%Y"]}
    assert draft.target == tmp_path / "profiles" / "employee-export.yaml"


# --- skipped header rows and leaver-less exports --------------------------------------------------


def test_successfactors_label_row_is_skipped_and_the_missing_terminations_warned(settings):
    shutil.copyfile(MORE / "Employee Export.csv", settings.sources_dir / "hris" / "export.csv")
    report = check_sources(settings.sources_dir)
    by = {(f.path, f.export): f for f in report.files}
    employees = by[("hris/export.csv", "employees")]
    assert (employees.rows, employees.loadable, employees.quarantined) == (4, 4, 0)
    assert "line 2 (a second header row the tool writes) skipped" in employees.note
    assert len(employees.warnings) == 1
    warning = "this export has no termination column: people who left will look employed"
    assert warning in format_report(report)
    assert not by[("hris/export.csv", "job_history")].warnings
    results = ingest_all(settings)
    assert warning in results["employees"].warnings["hris/export.csv"]
    ((message,),) = query(settings, "SELECT message FROM manifest WHERE export = 'employees'")
    assert warning in message
    assert query(settings, "SELECT count(*) FROM quarantine") == [(0,)]


def test_an_export_with_a_termination_column_is_not_warned(settings):
    shutil.copyfile(MORE / "Worker Report.csv", settings.sources_dir / "hris" / "Worker Report.csv")
    results = ingest_all(settings)
    assert results["employees"].warnings == {}
    # the ADP report's leavers: Voluntary / Involuntary flags
    assert query(
        settings,
        "SELECT employee_id, termination_date, termination_type FROM employees "
        "WHERE termination_date IS NOT NULL ORDER BY 1",
    ) == [
        ("G3ABCD002", date(2024, 3, 31), "voluntary"),
        ("G3ABCD004", date(2024, 6, 14), "involuntary"),
    ]


# --- Moodle's "-" --------------------------------------------------------------------------------


def test_moodle_dash_and_empty_grades_are_no_grade(settings):
    shutil.copyfile(VARIANTS / "Course grades_2024-06.csv", settings.sources_dir / "lms" / "g.csv")
    ingest_all(settings)
    rows = query(
        settings,
        "SELECT enrolment_id, status, score FROM enrolments ORDER BY enrolment_id",
    )
    # Mei on GPU-OPS-101 ("-") and Priya on IB-101 (empty) have not completed
    assert rows == [
        ("GPU-OPS-101:mei.chen@example.com", "in_progress", None),
        ("GPU-OPS-101:priya.raman@example.com", "completed", 88.0),
        ("IB-101:mei.chen@example.com", "completed", 71.5),
        ("IB-101:priya.raman@example.com", "in_progress", None),
    ]
    assert query(settings, "SELECT count(*) FROM quarantine") == [(0,)]


# --- a Personio export under our file name ---------------------------------------------------------


def test_personio_export_under_our_file_name_is_personios(settings):
    shutil.copyfile(
        VARIANTS / "Mitarbeiter_Export_Personio.csv",
        settings.sources_dir / "hris" / "employees_2024-10.csv",
    )
    # our own format with our column names stays ours
    (settings.sources_dir / "hris" / "employees_2024-09.csv").write_text(
        "employee_id,first_name,last_name,work_email,hire_date\n"
        "300,Katherine,Johnson,k.johnson@example.com,2024-01-08\n"
    )
    results = ingest_all(settings)
    assert "Personio" in results["employees"].recognised["hris/employees_2024-10.csv"]
    assert query(
        settings,
        "SELECT file_name, export, source_system, profile, period FROM manifest "
        "ORDER BY file_name, export",
    ) == [
        ("employees_2024-09.csv", "employees", "talent-metrics", None, "2024-09"),
        ("employees_2024-10.csv", "employees", "Personio", "personio-de", "2024-10"),
        ("employees_2024-10.csv", "job_history", "Personio", "personio-de", "2024-10"),
    ]


def test_run_summary_names_the_warned_file(settings):
    """The warning travels from the load result through the asset's metadata into the
    end-of-run summary."""
    from pipelines.defs.ingestion import result_metadata
    from pipelines.execution import RunOutcome
    from pipelines.progress import ExportLoad

    shutil.copyfile(MORE / "Employee Export.csv", settings.sources_dir / "hris" / "export.csv")
    result = ingest_export(settings, "employees")
    meta = {k: getattr(v, "data", v) for k, v in result_metadata(result, 4).items()}
    outcome = RunOutcome(success=True, loads=[ExportLoad.from_metadata("employees", meta)])
    text = outcome.describe()
    assert "Loaded, with a warning (1 file(s)):" in text
    assert "hris/export.csv: this export has no termination column" in text
