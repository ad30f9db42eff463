"""Small raw and mart databases for the data-quality tests (no tests here, only builders).

The raw file follows docs/architecture.md "Raw layer": one typed table per export contract
plus the load columns, `manifest` and `quarantine`. Every test starts from `clean_tables()`
(data that satisfies every rule) and plants one defect, so the failing expectation and its
counts are known in advance.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from pipelines.lib.contracts import EXPORTS

DUCKDB_TYPES = {
    "string": "VARCHAR",
    "date": "DATE",
    "timestamp": "TIMESTAMP",
    "integer": "BIGINT",
    "decimal": "DOUBLE",
    "boolean": "BOOLEAN",
    "month": "DATE",
}
PERIOD = "2024-06"

# Personal values planted in the data: none of them may appear in the Data Docs.
NAMES = ["Adaeze", "Bartholomew", "Cordelia", "Dagobert", "Evangeline", "Fitzgerald"]
SURNAMES = ["Okonkwo", "Quigley", "Vasquez", "Lindqvist", "Marchetti", "Thorvaldsen"]
EMAILS = [f"{n.lower()}.{s.lower()}@corp.example" for n, s in zip(NAMES, SURNAMES, strict=True)]


def forbid_great_expectations(mp) -> None:
    """Fail the test if a Great Expectations context is started (`mp`: a MonkeyPatch): for the
    runs that must report kept outcomes without the library."""
    from pipelines.lib.quality import validation

    def refuse(*_args, **_kwargs):
        raise AssertionError("Great Expectations was started, though nothing it checks changed")

    mp.setattr(validation, "_Validator", refuse)


@dataclass(frozen=True)
class FakeSettings:
    """The paths of `pipelines.lib.settings.Settings` the suites read, under a temporary folder."""

    warehouse_dir: Path
    min_group_size: int = 5

    @property
    def raw_db(self) -> Path:
        return self.warehouse_dir / "raw.duckdb"

    @property
    def build_db(self) -> Path:
        return self.warehouse_dir / "build" / "talent.duckdb"

    @property
    def quality_dir(self) -> Path:
        return self.warehouse_dir / "quality"


def clean_tables() -> dict[str, list[dict[str, Any]]]:
    """Six people, their jobs, training, certifications and incidents: every rule holds."""
    ids = [f"E{i:03d}" for i in range(1, 7)]
    employees = [
        {
            "employee_id": ids[i],
            "first_name": NAMES[i],
            "last_name": SURNAMES[i],
            "work_email": EMAILS[i],
            "hire_date": f"202{i % 3}-0{i + 1}-01",
            "original_hire_date": f"202{i % 3}-0{i + 1}-01",
            "termination_date": None,
            "termination_type": None,
            "termination_reason": None,
            "regrettable": None,
        }
        for i in range(6)
    ]
    employees[5].update(
        termination_date="2024-05-31",
        termination_type="Voluntary",
        termination_reason="resignation",
        regrettable=True,
    )
    job_history = [
        {
            "employee_id": ids[i],
            "effective_date": employees[i]["hire_date"],
            "division": "AI Infrastructure",
            "team": "atlas",
            "role_family": "operations_engineer",
            "job_title": "Operations Engineer",
            "skill_level": 1 + i % 5,
            "site": "Berlin",
            "manager_id": ids[0],
            "employment_type": "employee",
            "fte": 1.0,
            "annual_salary_usd": 100000.0 + i,
            "change_reason": "hire",
        }
        for i in range(6)
    ]
    contractor_hours = [
        {
            "engagement_id": "C1",
            "vendor": "Acme",
            "month": "2024-06-01",
            "team": "atlas",
            "hours": 120.5,
            "hourly_rate_usd": 300.0,
        },
    ]
    courses = [
        {
            "course_id": "DLI-1",
            "title": "Fundamentals",
            "provider": "NVIDIA",
            "programme_type": "online",
            "hours": 8.0,
            "cost_usd": 90.0,
            "certification_code": "NCA-AIIO",
        },
    ]
    enrolments = [
        {
            "enrolment_id": f"N{i}",
            "learner_email": EMAILS[i],
            "course_id": "DLI-1",
            "status": "completed",
            "enrolled_on": "2024-01-10",
            "completed_on": "2024-02-10",
            "cost_usd": 90.0,
            "hours_spent": 8.5,
            "score": 88.0,
        }
        for i in range(6)
    ]
    certifications = [
        {
            "attempt_id": f"A{i}",
            "learner_email": EMAILS[i],
            "certification_code": "NCA-AIIO",
            "exam_date": "2024-03-01",
            "result": "pass",
            "score": 80.0,
            "issued_on": "2024-03-01",
            "expires_on": "2026-03-01",
            "exam_fee_usd": 125.0,
        }
        for i in range(6)
    ]
    incidents = [
        {
            "incident_number": f"INC-{i}",
            "title": "GPU node down",
            "service": "scheduler",
            "cluster": "atlas",
            "severity": "sev2",
            "opened_at": f"2024-06-0{i + 1} 10:00:00",
            "acknowledged_at": f"2024-06-0{i + 1} 10:05:00",
            "resolved_at": f"2024-06-0{i + 1} 11:00:00",
            "gpus_affected": 8,
            "downtime_minutes": 55.0,
        }
        for i in range(6)
    ]
    responders = [
        {
            "incident_number": f"INC-{i}",
            "responder_email": EMAILS[i],
            "role": "primary",
            "assigned_at": f"2024-06-0{i + 1} 10:01:00",
        }
        for i in range(6)
    ]
    gpu_fleet = [
        {
            "cluster": "atlas",
            "as_of_date": "2024-06-30",
            "site": "Berlin",
            "gpu_model": "H100",
            "gpu_count": 512,
        },
    ]
    return {
        "employees": employees,
        "job_history": job_history,
        "contractor_hours": contractor_hours,
        "courses": courses,
        "enrolments": enrolments,
        "certifications": certifications,
        "incidents": incidents,
        "responders": responders,
        "gpu_fleet": gpu_fleet,
        "gpu_usage": [
            {
                "record_type": "job",
                "cluster": "atlas",
                "usage_date": "2024-06-01",
                "granularity": "day",
                "job_id": "4711",
                "job_state": "completed",
                "job_started_at": "2024-06-01 08:00:00",
                "job_ended_at": "2024-06-01 10:00:00",
                "job_hours": 2.0,
                "gpus": 8,
                "gpu_hours_available": None,
                "gpu_hours_allocated": 16.0,
                "gpu_hours_busy": None,
                "gpu_hours_lost": 0.0,
                "gpu_utilisation": None,
                "sm_active": None,
                "xid_errors": 0,
            },
        ],
        "capacity_changes": [
            {
                "project_id": "CAP-1",
                "cluster": "atlas",
                "change_type": "expansion",
                "gpus_added": 256,
                "delivered_on": "2024-04-01",
                "accepted_on": "2024-05-15",
                "led_by": EMAILS[0],
                "led_by_name": None,
            },
        ],
        "changes": [
            {
                "change_number": "CHG0001",
                "cluster": "atlas",
                "change_type": "normal",
                "implementer_email": EMAILS[1],
                "implementer_name": None,
                "requested_at": "2024-06-01 09:00:00",
                "planned_start": "2024-06-03 22:00:00",
                "planned_end": "2024-06-03 23:00:00",
                "actual_start": "2024-06-03 22:05:00",
                "actual_end": "2024-06-03 22:50:00",
                "close_code": "successful",
                "caused_incidents": None,
            },
        ],
        # the backfill of the voluntary leaver above (E006, left 2024-05-31)
        "requisitions": [
            {
                "requisition_id": "REQ-0001",
                "replaces_employee_id": ids[5],
                "level": 3,
                "opened_on": "2024-05-01",
                "filled_on": "2024-07-15",
                "hired_employee_id": None,
                "agency_fee_usd": 21000.0,
                "other_hiring_cost_usd": 3000.0,
                "status": "filled",
            },
        ],
    }


def copy_tables(tables: dict[str, list[dict[str, Any]]]) -> dict[str, list[dict[str, Any]]]:
    return copy.deepcopy(tables)


def write_raw(
    path: Path,
    tables: dict[str, list[dict[str, Any]]],
    *,
    quarantined: dict[str, int] | None = None,
    superseded: dict[str, list[dict[str, Any]]] | None = None,
    older: dict[str, list[dict[str, Any]]] | None = None,
    failed: tuple[str, ...] = (),
    type_overrides: dict[tuple[str, str], str] | None = None,
    skip: tuple[str, ...] = (),
) -> None:
    """Write a raw file: one active delivery per export holding `tables[export]`.

    `quarantined`: rows rejected per export (counted in the manifest and the quarantine).
    `superseded`: rows of an earlier delivery of the same period, replaced by `_v2`.
    `older`: rows of an earlier period (the current period wins per natural key).
    `failed`: exports with one unreadable file in the manifest.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    quarantined = quarantined or {}
    type_overrides = type_overrides or {}
    with duckdb.connect(str(path)) as con:
        con.execute(
            "create table manifest (file_id varchar, export varchar, file_name varchar, "
            "source_path varchar, archive_path varchar, period varchar, version integer, "
            "size_bytes bigint, rows_total bigint, rows_loaded bigint, rows_quarantined bigint, "
            "encoding varchar, locale varchar, delimiter varchar, loaded_at timestamp, "
            "status varchar, superseded_by varchar, message varchar)"
        )
        con.execute(
            "create table quarantine (file_id varchar, export varchar, file_name varchar, "
            "line_number bigint, raw_line varchar, reason varchar, quarantined_at timestamp)"
        )
        for name, export in EXPORTS.items():
            if name in skip:
                continue
            cols = [
                f'"{c.name}" {type_overrides.get((name, c.name), DUCKDB_TYPES[c.type])}'
                for c in export.columns
            ]
            cols += [
                "_file_id VARCHAR",
                "_line BIGINT",
                "_period VARCHAR",
                "_version INTEGER",
                "_extra JSON",
            ]
            con.execute(f'create table "{name}" ({", ".join(cols)})')
            deliveries = [
                (
                    f"{name}_{PERIOD}_v2.csv",
                    PERIOD,
                    2,
                    "active",
                    tables.get(name, []),
                    quarantined.get(name, 0),
                ),
            ]
            if superseded and name in superseded:
                deliveries.append(
                    (f"{name}_{PERIOD}.csv", PERIOD, 1, "superseded", superseded[name], 0)
                )
            if older and name in older:
                deliveries.append((f"{name}_2024-01.csv", "2024-01", 1, "active", older[name], 0))
            if name in failed:
                deliveries.append((f"{name}_2024-02.csv", "2024-02", 1, "failed", [], 0))
            for file_name, period, version, status, rows, n_quarantined in deliveries:
                file_id = f"sha-{file_name}"
                con.execute(
                    "insert into manifest values (?, ?, ?, ?, ?, ?, ?, 100, ?, ?, ?, 'utf-8', "
                    "'en', ',', timestamp '2024-07-01 02:00', ?, null, null)",
                    [
                        file_id,
                        name,
                        file_name,
                        f"sources/{file_name}",
                        f"archive/{file_id}",
                        period,
                        version,
                        len(rows) + n_quarantined,
                        len(rows),
                        n_quarantined,
                        status,
                    ],
                )
                for q in range(n_quarantined):
                    con.execute(
                        "insert into quarantine values (?, ?, ?, ?, 'garbled', 'unreadable', "
                        "timestamp '2024-07-01 02:00')",
                        [file_id, name, file_name, 100 + q],
                    )
                if status == "failed":
                    continue
                names = list(export.column_names)
                placeholders = ", ".join("?" for _ in names)
                for line, row in enumerate(rows, start=2):
                    con.execute(
                        f'insert into "{name}" ({", ".join(f"{chr(34)}{n}{chr(34)}" for n in names)}, '
                        f"_file_id, _line, _period, _version) values ({placeholders}, ?, ?, ?, ?)",
                        [row.get(n) for n in names] + [file_id, line, period, version],
                    )


def write_marts(path: Path, tables: dict[str, str]) -> None:
    """Create schema marts in a build file with one table per `name -> SELECT`."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with duckdb.connect(str(path)) as con:
        con.execute("create schema if not exists marts")
        for name, select in tables.items():
            con.execute(f"create or replace table marts.{name} as {select}")


CLEAN_MARTS = {
    "certification_coverage": """
        select * from (values
            (date '2024-06-30', 'all', 'all', 20, 10, 8, 0.5, 0.4, 2, 10, 8, 0.8),
            (date '2024-06-30', 'team', 'atlas', 12, 6, 6, 0.5, 0.5, 0, 6, 5, 0.8333)
        ) t(month_end, segment_type, segment_value, headcount, any_cert_headcount,
            required_cert_compliant_headcount, any_cert_share, required_cert_compliance_share,
            expiring_next_90d,
            exam_attempts, exam_passes, exam_pass_rate)""",
    "attrition": """
        select * from (values
            ('month', date '2024-06-01', 'all', 'all', 20, 1, 2, 1.0, 0.0, 19, 19.5,
             0.1026, 0.1026, 0.8, 0.9, true),
            ('month', date '2024-06-01', 'team', 'orion', 3, 0, 1, 1.0, 0.0, 2, 2.5,
             0.4, 0.4, 1.2, null, false),
            ('quarter', date '2024-04-01', 'level', '3', 8, 2, 1, 1.0, 0.0, 9, 8.5,
             0.1176, 0.1176, 0.47, null, true)
        ) t(period_type, period_start, segment_type, segment_value, headcount_start, hires,
            separations, voluntary_separations, involuntary_separations, headcount_end,
            average_headcount, turnover_rate, voluntary_turnover_rate, annualized_turnover_rate,
            rolling_12m_retention, group_size_ok)""",
    "incident_rates": """
        select * from (values
            ('status|all|certified|', 'status', null, 'certified', null, 10, 100.0, 7, 7.0, 42.0, 50.0, 7),
            ('event_time||certified|-1', 'event_time', null, 'certified', -1, 5, 5.0, 1, 20.0, 30.0, 30.0, 1)
        ) t(row_key, breakdown, quarter, certification_status, relative_month, engineers,
            engineer_months, incidents, incidents_per_100_engineer_months, mttr_median_minutes,
            mttr_mean_minutes, resolved_incidents)""",
    "certification_effect": """
        select * from (values
            ('incident_rate_ratio', 0.7, 0.55, 0.9),
            ('mttr_ratio', 0.8, 0.7, 0.95),
            ('attrition_hazard_ratio', 0.6, 0.4, 0.9)
        ) t(metric, estimate, ci_low, ci_high)""",
}
