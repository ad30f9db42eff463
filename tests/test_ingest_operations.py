"""Operations exports written as the tools write them: Slurm `sacct --parsable2`, a Grafana
table of DCGM exporter metrics, a ServiceNow change_request list, a Jira epics export.

Fixtures in tests/fixtures/vendors/operations/. Planted faults: sacct job 4106 has Elapsed
"two hours" (quarantined), ServiceNow CHG0030005 has type "Urgent" (quarantined), Jira CAP-16
has no GPUs added yet (quarantined: the required count is missing).
"""

from __future__ import annotations

import shutil
from datetime import date, datetime
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.ingest import ingest_all, ingest_export
from pipelines.lib.ingest.profiles import ProfileError, parse_profile
from pipelines.lib.ingest.vendor import duration_hours
from pipelines.lib.settings import Settings

OPS = Path(__file__).parent / "fixtures" / "vendors" / "operations"
SOURCES_YML = """\
service_clusters:
  muc1: dgx-muc-1
  GPU Cluster MUC-1: dgx-muc-1
  GPU Cluster BER-2: dgx-ber-2
"""


def drop(settings: Settings, name: str, folder: str, as_name: str | None = None) -> None:
    (settings.sources_dir / folder).mkdir(exist_ok=True)
    shutil.copyfile(OPS / name, settings.sources_dir / folder / (as_name or name))
    (settings.sources_dir / "sources.yml").write_text(SOURCES_YML, encoding="utf-8")


def query(settings: Settings, sql: str) -> list[tuple]:
    with duckdb.connect(str(settings.raw_db), read_only=True) as con:
        return con.execute(sql).fetchall()


def manifest(settings: Settings) -> list[tuple]:
    return query(
        settings,
        "SELECT export, profile, source_system, rows_total, rows_loaded, rows_quarantined "
        "FROM manifest ORDER BY export, profile",
    )


def test_sacct_jobs_load_with_gpus_hours_and_states(settings):
    drop(settings, "sacct_2024-03.csv", "fleet")
    result = ingest_export(settings, "gpu_usage")
    assert not result.files_failed and not result.unknown_files
    assert manifest(settings) == [("gpu_usage", "slurm-sacct", "Slurm", 7, 6, 1)]
    rows = query(
        settings,
        "SELECT job_id, record_type, cluster, usage_date, job_state, gpus, round(job_hours, 4), "
        "job_started_at, job_ended_at FROM gpu_usage ORDER BY job_id",
    )
    assert rows[0] == (
        "4101",
        "job",
        "dgx-muc-1",  # muc1 through service_clusters
        date(2024, 3, 4),
        "completed",
        8,
        round(26 + 3 / 60 + 4 / 3600, 4),  # 1-02:03:04
        datetime(2024, 3, 4, 8, 0),
        datetime(2024, 3, 5, 10, 3, 4),
    )
    by_id = {r[0]: r for r in rows}
    assert by_id["4102"][4:6] == ("node_fail", 2)
    assert by_id["4103"][4:6] == ("cancelled", 4)  # "CANCELLED by 1234", gres/gpu:a100=4
    # never started: dated by its submission, no start or end, no GPUs allocated
    assert by_id["4104"][3:] == (date(2024, 3, 5), "pending", None, 0.0, None, None)
    assert by_id["4105"][5] is None  # a CPU job: no gres/gpu in AllocTRES
    assert "4106" not in by_id
    (reason,) = query(settings, "SELECT reason FROM quarantine")[0]
    assert "Elapsed" in reason and "two hours" in reason


def test_grafana_dcgm_tables_load_formatted_or_in_epoch_milliseconds(settings):
    drop(settings, "GPU utilisation-data-2024-03-06 10_15_02.csv", "fleet")
    # the period is the date in the name Grafana gives the download
    drop(settings, "dcgm-data-2024-03-07 08_00_00.csv", "fleet")
    ingest_export(settings, "gpu_usage")
    assert {r[1] for r in manifest(settings)} == {"grafana-dcgm"}
    rows = query(
        settings,
        "SELECT cluster, usage_date, granularity, gpu_utilisation, sm_active FROM gpu_usage "
        "WHERE record_type = 'telemetry' ORDER BY cluster, usage_date",
    )
    assert rows == [
        ("dgx-ber-2", date(2024, 3, 4), "day", 55.0, 0.40),
        ("dgx-muc-1", date(2024, 3, 4), "day", 71.5, 0.52),
        ("dgx-muc-1", date(2024, 3, 5), "day", 64.25, 0.47),
        ("dgx-muc-1", date(2024, 3, 6), "day", 80.0, 0.61),  # 1709683200000 ms
    ]


def test_slurm_and_dcgm_side_by_side_are_two_series(settings):
    drop(settings, "sacct_2024-03.csv", "fleet")
    drop(settings, "GPU utilisation-data-2024-03-06 10_15_02.csv", "fleet")
    ingest_export(settings, "gpu_usage")
    systems = {r[2] for r in manifest(settings)}
    assert systems == {"Slurm", "Prometheus DCGM exporter"}
    counts = dict(query(settings, "SELECT record_type, count(*) FROM gpu_usage GROUP BY 1"))
    assert counts == {"job": 6, "telemetry": 3}
    before = query(settings, "SELECT count(*) FROM gpu_usage")
    ingest_export(settings, "gpu_usage")  # loading the same files again changes nothing
    assert query(settings, "SELECT count(*) FROM gpu_usage") == before


def test_servicenow_change_requests(settings):
    drop(settings, "change_request.csv", "changes")
    ingest_all(settings)
    assert manifest(settings) == [("changes", "servicenow-change", "ServiceNow", 5, 4, 1)]
    rows = query(
        settings,
        "SELECT change_number, cluster, change_type, implementer_name, planned_start, "
        "actual_end, close_code FROM changes ORDER BY change_number",
    )
    assert rows[1] == (
        "CHG0030002",
        "dgx-muc-1",
        "emergency",
        "Alan Turing",
        datetime(2024, 3, 7, 4, 0),
        datetime(2024, 3, 7, 7, 20),
        "unsuccessful",
    )
    assert rows[2][6] == "successful_with_issues"
    assert rows[3][5:] == (None, None)  # scheduled, not implemented yet
    (reason,) = query(settings, "SELECT reason FROM quarantine")[0]
    assert "change_type" in reason and "urgent" in reason.lower()


def test_jira_epics_give_capacity_changes(settings):
    drop(settings, "Jira Capacity.csv", "changes")
    ingest_all(settings)
    assert manifest(settings) == [("capacity_changes", "jira-epics", "Jira", 3, 2, 1)]
    rows = query(
        settings,
        "SELECT project_id, cluster, gpus_added, delivered_on, accepted_on, led_by_name "
        "FROM capacity_changes ORDER BY project_id",
    )
    assert rows == [
        ("CAP-12", "dgx-muc-1", 512, date(2024, 2, 12), date(2024, 3, 26), "Ada Lovelace"),
        ("CAP-15", "dgx-ber-2", 1024, date(2024, 3, 1), None, "Alan Turing"),
    ]
    (reason,) = query(settings, "SELECT reason FROM quarantine")[0]
    assert "gpus_added" in reason


# --- delivered in the usual broken ways --------------------------------------------------------


def _manifest_by_file(settings: Settings) -> dict[str, tuple]:
    return {
        r[0]: r[1:]
        for r in query(
            settings,
            "SELECT file_name, status, rows_loaded, rows_quarantined, message FROM manifest",
        )
    }


def test_the_same_sacct_file_delivered_twice_loads_once(settings):
    drop(settings, "sacct_2024-03.csv", "fleet")
    ingest_export(settings, "gpu_usage")
    # the scheduler's cron job copied the same accounting again under the next month's name
    drop(settings, "sacct_2024-03.csv", "fleet", "sacct_2024-04.csv")
    result = ingest_export(settings, "gpu_usage")
    assert (result.files_loaded, result.rows_loaded) == (0, 0)
    m = _manifest_by_file(settings)
    assert m["sacct_2024-04.csv"][0] == "duplicate"
    assert "same content as sacct_2024-03.csv" in m["sacct_2024-04.csv"][3]
    assert query(settings, "SELECT count(*) FROM gpu_usage") == [(6,)]


def test_a_corrected_sacct_redelivery_replaces_the_first(settings):
    drop(settings, "sacct_2024-03.csv", "fleet")
    ingest_export(settings, "gpu_usage")
    # the corrected download: job 4106's Elapsed written as sacct writes it
    text = (OPS / "sacct_2024-03.csv").read_text(encoding="utf-8")
    (settings.sources_dir / "fleet" / "sacct_2024-03.csv").write_text(
        text.replace("|two hours|", "|02:00:00|"), encoding="utf-8"
    )
    result = ingest_export(settings, "gpu_usage")
    assert (result.files_loaded, result.files_superseded) == (1, 1)
    current = query(
        settings,
        "SELECT job_id, job_state, round(job_hours, 4) FROM gpu_usage u JOIN manifest m "
        "ON m.file_id = u._file_id AND m.status = 'active' WHERE job_id = '4106'",
    )
    assert current == [("4106", "failed", 2.0)]
    # the first delivery and its quarantined row stay in history, superseded
    assert query(settings, "SELECT status, count(*) FROM manifest GROUP BY 1 ORDER BY 1") == [
        ("active", 1),
        ("superseded", 1),
    ]


def test_a_servicenow_export_with_a_byte_order_mark_loads_the_same_rows(settings):
    (settings.sources_dir / "changes").mkdir(exist_ok=True)
    data = (OPS / "change_request.csv").read_bytes()
    (settings.sources_dir / "changes" / "change_request.csv").write_bytes(b"\xef\xbb\xbf" + data)
    (settings.sources_dir / "sources.yml").write_text(SOURCES_YML, encoding="utf-8")
    ingest_all(settings)
    assert manifest(settings) == [("changes", "servicenow-change", "ServiceNow", 5, 4, 1)]
    assert query(settings, "SELECT encoding FROM manifest") == [("utf-8-sig",)]
    numbers = query(settings, "SELECT change_number FROM changes ORDER BY 1")
    assert numbers[0] == ("CHG0030001",)  # the mark is not part of the first column's name


def test_a_dcgm_table_saved_in_a_german_locale_loads_the_same_values(settings):
    """Opened and saved again by a German spreadsheet: semicolons, decimal commas, Windows
    code page; a row the exporter left without a value is quarantined with its line."""
    lines = (OPS / "GPU utilisation-data-2024-03-06 10_15_02.csv").read_text().splitlines()
    german = [
        ";".join(
            c if i == 0 or j < 2 else c.replace(".", ",") for j, c in enumerate(line.split(","))
        )
        for i, line in enumerate(lines)
    ]
    german.append('"2024-03-05 00:00:00";"dgx-ber-2";"k. A.";"0,41"')
    (settings.sources_dir / "fleet").mkdir(exist_ok=True)
    path = settings.sources_dir / "fleet" / "GPU utilisation-data-2024-03-06 10_15_02.csv"
    path.write_bytes(("\r\n".join(german) + "\r\n").encode("cp1252"))
    (settings.sources_dir / "sources.yml").write_text(SOURCES_YML, encoding="utf-8")
    ingest_export(settings, "gpu_usage")
    rows = query(
        settings,
        "SELECT cluster, usage_date, gpu_utilisation, sm_active FROM gpu_usage "
        "WHERE record_type = 'telemetry' ORDER BY cluster, usage_date",
    )
    assert rows == [
        ("dgx-ber-2", date(2024, 3, 4), 55.0, 0.40),
        ("dgx-muc-1", date(2024, 3, 4), 71.5, 0.52),
        ("dgx-muc-1", date(2024, 3, 5), 64.25, 0.47),
    ]
    assert query(settings, "SELECT locale, delimiter FROM manifest") == [("de", ";")]
    ((line, reason),) = query(settings, "SELECT line_number, reason FROM quarantine")
    assert line == 5 and "k. A." in reason


@pytest.mark.parametrize(
    ("text", "hours"),
    [("1-02:03:04", 26 + 3 / 60 + 4 / 3600), ("00:45:10", 0.75 + 10 / 3600), ("05:30", 5.5 / 60)],
)
def test_slurm_elapsed_is_read_as_hours(text, hours):
    assert float(duration_hours(text, "column 'Elapsed'")) == pytest.approx(hours, abs=1e-6)


def test_extract_needs_a_value_group():
    spec = {
        "name": "x",
        "vendor": "X",
        "title": "X",
        "folder": "fleet",
        "recognise": ["JobID"],
        "outputs": {"gpu_usage": {"columns": {"gpus": {"column": "T", "extract": "gpu=(\\d+)"}}}},
    }
    with pytest.raises(ProfileError, match="group named value"):
        parse_profile(spec, "x.yaml")


# --- through dbt staging ---------------------------------------------------------------------

OWN_CAPACITY = (
    "project_id,cluster,change_type,gpus_added,delivered_on,accepted_on,led_by\n"
    "EXP-7,dgx-ber-2,new_cluster,256,2024-01-10,2024-02-20,101; BARBARA.LISKOV@example.com\n"
)


@pytest.fixture(scope="module")
def staged(tmp_path_factory) -> duckdb.DuckDBPyConnection:
    """BambooHR people, the operations fixtures and an own-format capacity file, staged."""
    root = tmp_path_factory.mktemp("ops_wh")
    for folder in ("hris", "lms", "incidents", "fleet", "changes"):
        (root / "sources" / folder).mkdir(parents=True)
    vendors = OPS.parent
    shutil.copyfile(
        vendors / "Employee Report.csv", root / "sources" / "hris" / "Employee Report.csv"
    )
    for name, folder in [
        ("sacct_2024-03.csv", "fleet"),
        ("GPU utilisation-data-2024-03-06 10_15_02.csv", "fleet"),
        ("change_request.csv", "changes"),
        ("Jira Capacity.csv", "changes"),
    ]:
        shutil.copyfile(OPS / name, root / "sources" / folder / name)
    (root / "sources" / "changes" / "capacity_changes_2024-02.csv").write_text(OWN_CAPACITY)
    (root / "sources" / "sources.yml").write_text(SOURCES_YML, encoding="utf-8")
    settings = Settings(sources_dir=root / "sources", warehouse_dir=root / "wh", settle_seconds=0)
    results = ingest_all(settings)
    assert not any(r.files_failed or r.unknown_files for r in results.values())
    from tests.conftest import dbt_env, run_dbt

    run_dbt(
        [
            "build",
            "--select",
            "+stg_fleet__gpu_usage +stg_changes__changes +stg_changes__capacity_leads",
        ],
        dbt_env(settings.warehouse_dir),
    )
    con = duckdb.connect(str(settings.build_db), read_only=True)
    yield con
    con.close()


def test_staging_drops_job_steps(staged):
    jobs = staged.execute(
        "SELECT job_id FROM staging.stg_fleet__gpu_usage WHERE record_type = 'job' ORDER BY 1"
    ).fetchall()
    assert [j for (j,) in jobs] == ["4101", "4102", "4103", "4104", "4105"]


def test_implementers_are_linked_by_unique_full_name(staged):
    rows = dict(
        staged.execute(
            "SELECT change_number, link_method FROM staging.stg_changes__changes"
        ).fetchall()
    )
    # Ada Lovelace and Alan Turing are employees; Jana Müller is not in the HRIS export
    assert rows == {
        "CHG0030001": "name",
        "CHG0030002": "name",
        "CHG0030003": "name",
        "CHG0030004": "unmatched",
    }
    names = staged.execute("SELECT * FROM staging.stg_changes__changes").df().columns
    assert "implementer_name" not in names and "implementer_email" not in names


def test_capacity_leads_link_by_id_e_mail_and_name(staged):
    rows = staged.execute(
        "SELECT project_id, link_method, person_key IS NOT NULL FROM "
        "staging.stg_changes__capacity_leads ORDER BY 1, 2"
    ).fetchall()
    assert rows == [
        ("CAP-12", "name", True),
        ("CAP-15", "name", True),
        ("EXP-7", "email", True),  # BARBARA.LISKOV@example.com, case aside
        ("EXP-7", "employee_id", True),  # 101
    ]
