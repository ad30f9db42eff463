"""The incremental staging models give the rows a full rebuild gives.

Night 1 loads the bundled sample's HRIS and incident exports up to June 2026 and builds the
staging models (the first build of an incremental model is a full one). Night 2 delivers July
to September and re-deliveries (`_v2`) of three earlier files, each with rows left out and one
value changed, and builds again without --full-refresh, as the pipeline does when only raw data
changed. The re-delivered files supersede their first versions, so night 2 must:

- replace the rows of keys a re-delivery changed,
- fall back to an older file's row for an HRIS key the re-delivery left out but an earlier
  monthly file also gave,
- drop the rows of keys no active file gives any more (incidents the re-delivery left out),
- and leave every other row as it was: a row altered in the build file after night 1, of an
  incident nothing touched since, is still altered after night 2 (it was not rebuilt).

Every incremental model, and the responders linked to the people they give, must then equal a --full-refresh build of
the same raw data, row for row (except-all both ways).
"""

from __future__ import annotations

import csv
import io
import shutil
from pathlib import Path

import duckdb
import pytest

from pipelines.lib.ingest import ingest_all
from pipelines.lib.pseudonym import pseudonym
from pipelines.lib.settings import Settings
from tests.conftest import TEST_PSEUDONYM_KEY, dbt_env, run_dbt

SAMPLE = Path(__file__).resolve().parent.parent / "sources" / "sample"
INCREMENTAL = (
    "stg_hris__employees",
    "stg_hris__job_history",
    "stg_incidents__incidents",
)
COMPARED = (*INCREMENTAL, "stg_incidents__responders")
SELECT = ["--select", " ".join(f"+{m}" for m in COMPARED), "--exclude", "test_type:unit"]
NIGHT_1_BEFORE = "2026-07"  # periods before this month arrive on night 1
# an incident of January 2024: no delivery of night 2 touches it
UNTOUCHED_FILE = "incidents_2024-01.csv"


def read_csv(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        return list(reader.fieldnames or []), list(reader)


def write_csv(path: Path, header: list[str], rows: list[dict[str, str]]) -> None:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=header, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    path.write_text(out.getvalue(), encoding="utf-8")


def period_of(name: str) -> str:
    return name.rsplit("_", 1)[-1].removesuffix(".csv")


def copy_sample(sources: Path, night: int) -> None:
    for folder in ("hris", "incidents"):
        (sources / folder).mkdir(parents=True, exist_ok=True)
        for path in sorted((SAMPLE / folder).glob("*.csv")):
            if path.name.startswith("contractor_hours") or "_v2" in path.name:
                continue
            early = period_of(path.name) < NIGHT_1_BEFORE
            if early == (night == 1):
                shutil.copyfile(path, sources / folder / path.name)


def redeliver(sources: Path, folder: str, name: str, leave_out, change) -> list[dict[str, str]]:
    """Write `<name>_v2.csv`: the first version without the rows `leave_out` picks, with
    `change` applied to the first row kept; returns the rows left out."""
    header, rows = read_csv(SAMPLE / folder / name)
    out = [row for row in rows if not leave_out(row)]
    gone = [row for row in rows if leave_out(row)]
    assert gone and out, name
    change(out[0])
    write_csv(sources / folder / name.replace(".csv", "_v2.csv"), header, out)
    return gone


def keys_in_other_files(folder: str, export: str, name: str, key, before: str = "9999"):
    """The keys the sample's other files of the export give (those of periods before `before`)."""
    keys = set()
    for path in sorted((SAMPLE / folder).glob(f"{export}_*.csv")):
        if "_v2" not in path.name and path.name != name and period_of(path.name) < before:
            keys |= {key(row) for row in read_csv(path)[1]}
    return keys


def swap_service(build_db: Path, incident: str, service: str) -> str:
    """Set one incident's service in the built staging table; returns the value it had."""
    table = "staging.stg_incidents__incidents"
    with duckdb.connect(str(build_db)) as con:
        (before,) = con.execute(
            f"select service from {table} where incident_number = ?", [incident]
        ).fetchone()
        con.execute(
            f"update {table} set service = ? where incident_number = ?", [service, incident]
        )
    return before


def build(warehouse: Path, *extra: str) -> None:
    run_dbt(["build", *SELECT, *extra], dbt_env(warehouse))


@pytest.fixture(scope="module")
def nights(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("dbt_incremental")
    sources, warehouse = root / "sources", root / "wh"
    settings = Settings(sources_dir=sources, warehouse_dir=warehouse, settle_seconds=0)
    build_db = settings.build_db

    copy_sample(sources, night=1)
    ingest_all(settings)
    build(warehouse)
    untouched = read_csv(SAMPLE / "incidents" / UNTOUCHED_FILE)[1][0]["incident_number"]
    service = swap_service(build_db, untouched, "altered after night 1")

    copy_sample(sources, night=2)
    employee_key = lambda row: (row["employee_id"], row["hire_date"])  # noqa: E731
    earlier = keys_in_other_files(
        "hris", "employees", "employees_2026-05.csv", employee_key, before="2026-05"
    )
    fallbacks = [
        employee_key(row)
        for row in redeliver(
            sources,
            "hris",
            "employees_2026-05.csv",
            leave_out=lambda row: employee_key(row) in earlier,
            change=lambda row: row.update(termination_reason="changed by re-delivery"),
        )
    ]
    redeliver(
        sources,
        "hris",
        "job_history_2026-06.csv",
        leave_out=lambda row: row["employee_id"][-1] in "05",
        change=lambda row: row.update(job_title="Changed By Re-delivery"),
    )
    gone_incidents = redeliver(
        sources,
        "incidents",
        "incidents_2026-02.csv",
        leave_out=lambda row: row["incident_number"][-1] == "7",
        change=lambda row: row.update(severity="sev1" if row["severity"] != "sev1" else "sev2"),
    )
    incident = lambda row: row["incident_number"]  # noqa: E731
    elsewhere = keys_in_other_files("incidents", "incidents", "incidents_2026-02.csv", incident)
    gone_incidents = {incident(r) for r in gone_incidents} - elsewhere
    results = ingest_all(settings)
    assert not any(r.files_failed for r in results.values())
    build(warehouse)
    still_altered = swap_service(build_db, untouched, service)

    # the same raw data, every model rebuilt from all rows
    full = root / "full"
    (full / "build").mkdir(parents=True)
    shutil.copyfile(build_db, full / "build" / "talent.duckdb")
    run_dbt(
        ["build", *SELECT, "--full-refresh"],
        dbt_env(full, TALENT_RAW_DB=str(settings.raw_db)),
    )
    return {
        "incremental": build_db,
        "full": full / "build" / "talent.duckdb",
        "still_altered": still_altered,
        "fallbacks": fallbacks,
        "gone_incidents": gone_incidents,
    }


@pytest.mark.parametrize("model", COMPARED)
def test_an_incremental_night_gives_the_rows_a_full_rebuild_gives(nights, model):
    with duckdb.connect(str(nights["incremental"]), read_only=True) as con:
        con.execute(f"attach '{nights['full']}' as full_build (read_only)")
        table = f"staging.{model}"
        rows = con.execute(f"select count(*) from {table}").fetchone()[0]
        assert rows == con.execute(f"select count(*) from full_build.{table}").fetchone()[0]
        for a, b in ((table, f"full_build.{table}"), (f"full_build.{table}", table)):
            extra = con.execute(
                f"select * from (select * from {a} except all select * from {b}) limit 3"
            ).fetchall()
            assert extra == [], f"{a} holds rows {b} does not: {extra}"
        assert rows > 0


def test_a_row_nothing_touched_is_not_built_again(nights):
    assert nights["still_altered"] == "altered after night 1"


def test_a_key_the_re_delivery_left_out_falls_back_or_goes(nights):
    with duckdb.connect(str(nights["incremental"]), read_only=True) as con:
        # an HRIS spell an earlier monthly file also gave: its row comes back from that file
        assert nights["fallbacks"]
        for employee_id, hire_date in nights["fallbacks"]:
            person = pseudonym(employee_id, TEST_PSEUDONYM_KEY)
            assert con.execute(
                "select count(*) from staging.stg_hris__employees "
                "where person_key = ? and hire_date = ?",
                [person, hire_date],
            ).fetchone() == (1,)
        # incidents only the superseded file gave: gone
        assert nights["gone_incidents"]
        assert con.execute(
            "select count(*) from staging.stg_incidents__incidents "
            "where list_contains(?, incident_number)",
            [sorted(nights["gone_incidents"])],
        ).fetchone() == (0,)
