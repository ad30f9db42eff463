"""Export contracts: the single source of truth for every file the product reads.

Each export type names its folder inside a sources directory, the file-name pattern, its
columns (name, type, required, personal), its natural key and the locales it accepts.
The ingestion, the sample generator, the raw-layer DDL, the data-quality suites and
``sources/README.md`` all read these definitions; nothing else restates them.

File names: ``<export>_<period>[_v<N>].csv`` where ``<period>`` is ``YYYY-MM`` (a monthly
delivery) or ``YYYY-MM-DD`` (a daily delivery). A later delivery for the same export and period
(a higher ``_vN``, or the same name with new content) supersedes the earlier one, which stays in
the manifest as ``superseded``. Across periods, the row of the latest period wins per natural key
("changed records" deliveries): a spell delivered at hire and again at termination keeps the
termination.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Literal

ColumnType = Literal["string", "date", "timestamp", "integer", "decimal", "boolean", "month"]


@dataclass(frozen=True)
class Column:
    name: str
    type: ColumnType
    required: bool = True
    description: str = ""
    # personal data: names, e-mails, salaries. Kept in the restricted raw layer only.
    personal: bool = False
    # allowed values (after trimming and lower-casing) for enumerations
    values: tuple[str, ...] | None = None
    # header spellings seen in other exports (German HRIS, vendor tools), matched case-insensitively
    aliases: tuple[str, ...] = ()
    # dates and timestamps: how far after the load date a value is still plausible (years);
    # values before 1970 or beyond this are quarantined (an incident dated 2099 is a typo)
    years_ahead: int = 1
    # an optional column whose absence from a whole file changes what the file means: the
    # warning the load and `talent sources check` give for a file without it
    absent_warning: str = ""


@dataclass(frozen=True)
class Export:
    name: str  # also the raw table name: raw.<name>
    folder: str  # hris, lms, incidents, fleet, changes, recruiting
    description: str
    columns: tuple[Column, ...]
    key: tuple[str, ...]
    # accepted locales: "en" = comma-separated, decimal point, ISO dates;
    # "de" = semicolon-separated, decimal comma, dd.mm.yyyy dates. Detected per file.
    locales: tuple[str, ...] = ("en",)
    encodings: tuple[str, ...] = ("utf-8", "utf-8-sig")
    # columns whose latest value dates a delivery that carries no period in its file name
    period_columns: tuple[str, ...] = ()
    # optional columns of which every row must set at least one
    require_one_of: tuple[str, ...] = ()
    column_names: tuple[str, ...] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "column_names", tuple(c.name for c in self.columns))

    def column(self, name: str) -> Column:
        return next(c for c in self.columns if c.name == name)

    @property
    def required_columns(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.columns if c.required)


C = Column

TERMINATION_TYPES = ("voluntary", "involuntary", "other")
EMPLOYMENT_TYPES = ("employee", "contractor", "intern")
PROGRAMME_TYPES = ("online", "bootcamp", "apprenticeship", "vendor_partnership", "internal")
ENROLMENT_STATUSES = (
    "assigned",
    "enrolled",
    "in_progress",
    "completed",
    "passed",
    "failed",
    "withdrawn",
    "expired",
    "overdue",
)
EXAM_RESULTS = ("pass", "fail")
SEVERITIES = ("sev1", "sev2", "sev3", "sev4")
RESPONDER_ROLES = ("primary", "secondary", "commander", "observer")
# gpu_usage: what one row is (a scheduler job, telemetry averages, or GPU-hours per period)
USAGE_RECORDS = ("job", "telemetry", "summary")
USAGE_GRANULARITIES = ("day", "month")
# Slurm job states (sacct `State`; "CANCELLED by 123" is read as cancelled)
JOB_STATES = (
    "completed",
    "failed",
    "node_fail",
    "timeout",
    "cancelled",
    "out_of_memory",
    "boot_fail",
    "deadline",
    "preempted",
    "running",
    "pending",
    "requeued",
    "resizing",
    "suspended",
)
CAPACITY_CHANGE_TYPES = ("expansion", "new_cluster")
CHANGE_TYPES = ("standard", "normal", "emergency")
CLOSE_CODES = ("successful", "successful_with_issues", "unsuccessful", "backed_out", "cancelled")
REQUISITION_STATUSES = ("open", "filled", "cancelled")

EXPORTS: dict[str, Export] = {
    e.name: e
    for e in (
        Export(
            name="employees",
            folder="hris",
            description=(
                "Employment spells from the HRIS, one row per person and hire. Delivered as "
                "changed records: a spell appears in the month of hire and again when it ends. "
                "A rehire keeps the employee_id and starts a new spell."
            ),
            key=("employee_id", "hire_date"),
            period_columns=("hire_date", "termination_date"),
            locales=("en", "de"),
            encodings=("utf-8", "utf-8-sig", "cp1252"),
            columns=(
                C(
                    "employee_id",
                    "string",
                    description="HRIS employee number, stable across rehires",
                    aliases=("employeeNumber", "Personalnummer"),
                ),
                C("first_name", "string", personal=True, aliases=("firstName", "Vorname")),
                C("last_name", "string", personal=True, aliases=("lastName", "Nachname")),
                C(
                    "work_email",
                    "string",
                    personal=True,
                    description="work e-mail; links LMS and incident tool",
                    aliases=("workEmail", "E-Mail"),
                ),
                C(
                    "hire_date",
                    "date",
                    description="first day of this employment spell",
                    aliases=("hireDate", "Eintrittsdatum"),
                ),
                C(
                    "original_hire_date",
                    "date",
                    required=False,
                    description="first day of the first spell; differs from hire_date for rehires",
                    aliases=("originalHireDate",),
                ),
                C(
                    "termination_date",
                    "date",
                    required=False,
                    description="last day worked (the person is employed on this date); empty while employed",
                    aliases=("terminationDate", "Austrittsdatum"),
                    absent_warning=(
                        "this export has no termination column: people who left will look "
                        "employed (add the termination date to the export, or deliver the "
                        "leavers in another file)"
                    ),
                ),
                C(
                    "termination_type",
                    "string",
                    required=False,
                    values=TERMINATION_TYPES,
                    description="voluntary, involuntary or other (death, end of fixed term); set when terminated",
                    aliases=("terminationTypeId",),
                ),
                C(
                    "termination_reason",
                    "string",
                    required=False,
                    description="free text reason code (resignation, retirement, layoff, dismissal, ...)",
                    aliases=("terminationReasonId",),
                ),
                C(
                    "regrettable",
                    "boolean",
                    required=False,
                    description="true when the organisation wanted to keep the leaver",
                    aliases=("terminationRegrettableId",),
                ),
            ),
        ),
        Export(
            name="job_history",
            folder="hris",
            description=(
                "Effective-dated job records: each row is the person's position from its "
                "effective_date until the next row. Scope (the infrastructure organisation) is "
                "decided on division."
            ),
            key=("employee_id", "effective_date"),
            period_columns=("effective_date",),
            locales=("en", "de"),
            encodings=("utf-8", "utf-8-sig", "cp1252"),
            columns=(
                C("employee_id", "string", aliases=("employeeNumber", "Personalnummer")),
                C("effective_date", "date", aliases=("date", "Gueltig ab", "Gültig ab")),
                C(
                    "division",
                    "string",
                    description="organisation unit; the pipeline scopes to one (configurable)",
                ),
                C("team", "string"),
                C(
                    "role_family",
                    "string",
                    description="infrastructure lead, architect, senior engineer, operations engineer, network specialist, storage specialist, performance engineer, security specialist; other divisions use their own",
                ),
                C("job_title", "string", required=False, aliases=("jobTitle",)),
                C(
                    "skill_level",
                    "integer",
                    required=False,
                    description="1 Foundation .. 5 Architect (seed-facts levels); HRIS exports rarely carry it",
                ),
                C("site", "string", aliases=("location", "Standort")),
                C("manager_id", "string", required=False, aliases=("reportsToId",)),
                C("employment_type", "string", values=EMPLOYMENT_TYPES),
                C(
                    "fte",
                    "decimal",
                    required=False,
                    description="full-time equivalent, 0 < fte <= 1; empty = not delivered",
                ),
                C(
                    "annual_salary_usd",
                    "decimal",
                    required=False,
                    personal=True,
                    aliases=("payRate", "Jahresgehalt"),
                ),
                C(
                    "change_reason",
                    "string",
                    required=False,
                    description="hire, rehire, promotion, transfer, pay_change",
                ),
            ),
        ),
        Export(
            name="contractor_hours",
            folder="hris",
            description=(
                "External contractor engagements by month (vendor staff, not in the HRIS people "
                "list). Usually delivered by the vendor portal in German locale."
            ),
            key=("engagement_id", "month"),
            period_columns=("month",),
            locales=("en", "de"),
            encodings=("utf-8", "utf-8-sig", "cp1252"),
            columns=(
                C("engagement_id", "string"),
                C("vendor", "string"),
                C("month", "month", description="YYYY-MM (or MM.YYYY in German locale)"),
                C("team", "string"),
                C("hours", "decimal"),
                C("hourly_rate_usd", "decimal"),
            ),
        ),
        Export(
            name="courses",
            folder="lms",
            description="Course catalogue of the LMS.",
            key=("course_id",),
            columns=(
                C("course_id", "string"),
                C("title", "string"),
                C(
                    "provider",
                    "string",
                    description="NVIDIA, Linux Foundation, Red Hat, internal, ...",
                ),
                C("programme_type", "string", values=PROGRAMME_TYPES),
                C("hours", "decimal", description="nominal learning hours"),
                C("cost_usd", "decimal", description="list price per participant"),
                C(
                    "certification_code",
                    "string",
                    required=False,
                    description="the certification exam this course prepares for, if any",
                ),
            ),
        ),
        Export(
            name="enrolments",
            folder="lms",
            description=(
                "Course enrolments and completions, delivered as changed records (a row at "
                "enrolment, again at completion)."
            ),
            key=("enrolment_id",),
            period_columns=("enrolled_on", "completed_on"),
            columns=(
                C("enrolment_id", "string"),
                C("learner_email", "string", personal=True),
                C("course_id", "string"),
                C("status", "string", values=ENROLMENT_STATUSES),
                C("enrolled_on", "date"),
                C("completed_on", "date", required=False),
                C(
                    "cost_usd",
                    "decimal",
                    required=False,
                    description="amount charged for this participant after discounts; empty = list price",
                ),
                C("hours_spent", "decimal", required=False),
                C("score", "decimal", required=False, description="0-100"),
            ),
        ),
        Export(
            name="certifications",
            folder="lms",
            description="Certification exam attempts; a passed attempt is an award with its expiry.",
            key=("attempt_id",),
            period_columns=("exam_date", "issued_on"),
            columns=(
                C("attempt_id", "string"),
                C("learner_email", "string", personal=True),
                C(
                    "certification_code",
                    "string",
                    description="NCA-AIIO, NCP-AII, NCP-AIO, NCP-AIN, CKA, RHCE, ...",
                ),
                C("exam_date", "date"),
                C("result", "string", values=EXAM_RESULTS),
                C("score", "decimal", required=False, description="0-100"),
                C("issued_on", "date", required=False, description="award date; set when passed"),
                C(
                    "expires_on",
                    "date",
                    required=False,
                    description="empty = does not expire",
                    years_ahead=10,
                ),
                C("exam_fee_usd", "decimal", required=False),
            ),
        ),
        Export(
            name="incidents",
            folder="incidents",
            description="Incidents from the on-call tool (PagerDuty-like), changed records.",
            key=("incident_number",),
            period_columns=("opened_at", "resolved_at"),
            columns=(
                C("incident_number", "string"),
                C("title", "string", required=False),
                C("service", "string"),
                C(
                    "cluster",
                    "string",
                    required=False,
                    description="no incident tool exports it: empty = the service stands in",
                ),
                C("severity", "string", values=SEVERITIES),
                C("opened_at", "timestamp"),
                C("acknowledged_at", "timestamp", required=False),
                C("resolved_at", "timestamp", required=False, description="empty while open"),
                C("gpus_affected", "integer", required=False),
                C(
                    "downtime_minutes",
                    "decimal",
                    required=False,
                    description="empty = opened to resolved",
                ),
            ),
        ),
        Export(
            name="responders",
            folder="incidents",
            description=(
                "Who responded to each incident and in which role. Incident tools that list "
                "responders by name only give responder_name: it is linked to the HRIS by the "
                "unique full name (an ambiguous name is never guessed)."
            ),
            key=("incident_number", "responder_email", "responder_name"),
            period_columns=("assigned_at",),
            require_one_of=("responder_email", "responder_name"),
            columns=(
                C("incident_number", "string"),
                C(
                    "responder_email",
                    "string",
                    required=False,
                    personal=True,
                    description="set this or responder_name",
                ),
                C(
                    "responder_name",
                    "string",
                    required=False,
                    personal=True,
                    description="full name as the tool shows it, when it exports no e-mail",
                ),
                C("role", "string", values=RESPONDER_ROLES),
                C("assigned_at", "timestamp", required=False),
            ),
        ),
        Export(
            name="gpu_fleet",
            folder="fleet",
            description="GPU count per cluster, as of a date (one snapshot per cluster and month).",
            key=("cluster", "as_of_date"),
            period_columns=("as_of_date",),
            columns=(
                C("cluster", "string"),
                C("as_of_date", "date"),
                C("site", "string"),
                C("gpu_model", "string", required=False),
                C("gpu_count", "integer"),
            ),
        ),
        Export(
            name="gpu_usage",
            folder="fleet",
            description=(
                "GPU-hours per cluster: a row is one scheduler job (Slurm job accounting; the "
                "warehouse aggregates jobs to cluster-days), the GPU telemetry's averages for a "
                "cluster and day or month (Prometheus/DCGM), or GPU-hours available, allocated, "
                "busy and lost for a cluster and day or month. One file per period."
            ),
            key=("record_type", "cluster", "usage_date", "job_id"),
            period_columns=("usage_date",),
            # a Grafana download opened and saved again by a German spreadsheet
            locales=("en", "de"),
            encodings=("utf-8", "utf-8-sig", "cp1252"),
            columns=(
                C(
                    "record_type",
                    "string",
                    values=USAGE_RECORDS,
                    description="job (one scheduler job), telemetry (utilisation averages) or summary (GPU-hours)",
                ),
                C("cluster", "string", description="the cluster (team) name, as in gpu_fleet"),
                C(
                    "usage_date",
                    "date",
                    description="the day, the first day of the month (granularity month), or the day a job started",
                ),
                C(
                    "granularity",
                    "string",
                    required=False,
                    values=USAGE_GRANULARITIES,
                    description="day or month; empty = day (jobs carry their own start and end)",
                ),
                C(
                    "job_id",
                    "string",
                    required=False,
                    description="scheduler job id; set on job rows only (steps such as 123.batch are not counted)",
                ),
                C("job_state", "string", required=False, values=JOB_STATES),
                C("job_started_at", "timestamp", required=False),
                C("job_ended_at", "timestamp", required=False, description="empty while running"),
                C(
                    "job_hours",
                    "decimal",
                    required=False,
                    description="wall-clock hours the job ran (Slurm Elapsed)",
                ),
                C(
                    "gpus",
                    "integer",
                    required=False,
                    description="GPUs allocated to the job, or the cluster's GPUs the telemetry averaged over",
                ),
                C("gpu_hours_available", "decimal", required=False),
                C(
                    "gpu_hours_allocated",
                    "decimal",
                    required=False,
                    description="allocated to jobs",
                ),
                C(
                    "gpu_hours_busy",
                    "decimal",
                    required=False,
                    description="GPU-hours a kernel was running",
                ),
                C(
                    "gpu_hours_lost",
                    "decimal",
                    required=False,
                    description="GPU-hours lost to nodes down, failed jobs and XID errors",
                ),
                C(
                    "gpu_utilisation",
                    "decimal",
                    required=False,
                    description="mean GPU utilisation in percent, 0-100 (DCGM_FI_DEV_GPU_UTIL)",
                ),
                C(
                    "sm_active",
                    "decimal",
                    required=False,
                    description="mean share of time the SMs were active, 0-1 (DCGM_FI_PROF_SM_ACTIVE)",
                ),
                C("xid_errors", "integer", required=False, description="XID errors counted"),
            ),
        ),
        Export(
            name="capacity_changes",
            folder="changes",
            description=(
                "Capacity expansions and new clusters, one row per project (a Jira epic, a "
                "ServiceNow change request): GPUs added, when the hardware was delivered and "
                "when it was accepted into production, and who led it."
            ),
            key=("project_id",),
            period_columns=("delivered_on", "accepted_on"),
            require_one_of=("led_by", "led_by_name"),
            columns=(
                C("project_id", "string", description="epic key or change number"),
                C("cluster", "string", description="the cluster expanded or built"),
                C(
                    "change_type",
                    "string",
                    required=False,
                    values=CAPACITY_CHANGE_TYPES,
                    description="expansion or new_cluster; empty = expansion",
                ),
                C("gpus_added", "integer"),
                C("delivered_on", "date", required=False, description="hardware delivered on site"),
                C(
                    "accepted_on",
                    "date",
                    required=False,
                    description="accepted into production; empty while commissioning",
                ),
                C(
                    "led_by",
                    "string",
                    required=False,
                    personal=True,
                    description="work e-mails or HRIS employee ids of those who led it, separated by , or ;",
                ),
                C(
                    "led_by_name",
                    "string",
                    required=False,
                    personal=True,
                    description="full names as the tool shows them (linked by unique full name), when it exports no e-mail",
                ),
            ),
        ),
        Export(
            name="changes",
            folder="changes",
            description=(
                "Change requests on the clusters (ServiceNow change_request, Jira Service "
                "Management changes), changed records: who implemented it, planned and actual "
                "window, how it closed and the incidents it caused where the tool links them."
            ),
            key=("change_number",),
            period_columns=("requested_at", "actual_end", "planned_start"),
            require_one_of=("implementer_email", "implementer_name"),
            columns=(
                C("change_number", "string"),
                C("cluster", "string", description="the configuration item (cluster) changed"),
                C("change_type", "string", values=CHANGE_TYPES),
                C("implementer_email", "string", required=False, personal=True),
                C(
                    "implementer_name",
                    "string",
                    required=False,
                    personal=True,
                    description="full name as the tool shows it, when it exports no e-mail",
                ),
                C("requested_at", "timestamp", required=False, description="change opened"),
                C("planned_start", "timestamp", required=False),
                C("planned_end", "timestamp", required=False),
                C("actual_start", "timestamp", required=False),
                C("actual_end", "timestamp", required=False, description="implemented"),
                C(
                    "close_code",
                    "string",
                    required=False,
                    values=CLOSE_CODES,
                    description="empty while open",
                ),
                C(
                    "caused_incidents",
                    "string",
                    required=False,
                    description="incident numbers the tool links as caused by the change, separated by , or ;",
                ),
            ),
        ),
        Export(
            name="requisitions",
            folder="recruiting",
            description=(
                "Requisitions from the applicant-tracking system (Greenhouse openings, Lever "
                "requisitions, Workday Recruiting job requisitions), changed records: one row per "
                "requisition, the person it replaces when it is a backfill, when it was opened and "
                "filled, who was hired and what the hire cost (agency fee, advertising and "
                "assessment). Prices what replacing a leaver costs (marts.replacement_cost)."
            ),
            key=("requisition_id",),
            period_columns=("opened_on", "filled_on"),
            columns=(
                C("requisition_id", "string", description="requisition or opening id"),
                C(
                    "replaces_employee_id",
                    "string",
                    required=False,
                    description="HRIS employee id of the leaver it replaces (a backfill); empty = new headcount",
                ),
                C(
                    "level",
                    "integer",
                    required=False,
                    description="1 Foundation .. 5 Architect (seed-facts levels) of the position; empty = the leaver's level",
                ),
                C("opened_on", "date", description="the day recruiting started"),
                C(
                    "filled_on",
                    "date",
                    required=False,
                    description="the day the requisition was filled (offer accepted); empty while open",
                ),
                C(
                    "hired_employee_id",
                    "string",
                    required=False,
                    description="HRIS employee id of the person hired, once known",
                ),
                C(
                    "agency_fee_usd",
                    "decimal",
                    required=False,
                    description="fee paid to a recruiting agency for this hire; empty or 0 = no agency",
                ),
                C(
                    "other_hiring_cost_usd",
                    "decimal",
                    required=False,
                    description="advertising, assessment and other external cost of the requisition",
                ),
                C("status", "string", values=REQUISITION_STATUSES),
            ),
        ),
    )
}

FILE_NAME = re.compile(
    r"^(?P<export>[a-z_]+?)_(?P<period>\d{4}-\d{2}(?:-\d{2})?)(?:_v(?P<version>\d+))?\.csv$"
)


def parse_file_name(name: str) -> tuple[str, str, int] | None:
    """Return (export, period, version) for a contract file name, or None."""
    m = FILE_NAME.match(name)
    if not m or m["export"] not in EXPORTS:
        return None
    return m["export"], m["period"], int(m["version"] or 1)


def file_name(export: str, period: str, version: int = 1) -> str:
    suffix = f"_v{version}" if version > 1 else ""
    return f"{export}_{period}{suffix}.csv"


# --- planning inputs --------------------------------------------------------------------------
# Files the workforce planner reads (`talent plan`, `marts.workforce_plan`). They are not
# deliveries: no period, no versions, no raw table. Each is read whole and checked row by row
# like an export (a bad row is named by file, line and reason); the planner refuses a file with
# a bad row rather than plan on part of it.

QUARTER = re.compile(r"^(?P<year>\d{4})-?Q(?P<quarter>[1-4])$", re.IGNORECASE)

PLAN_INPUTS: dict[str, Export] = {
    e.name: e
    for e in (
        Export(
            name="fleet_plan",
            folder="plans",
            description=(
                "The GPU fleet the company plans, one row per cluster and quarter: what the "
                "team must be able to run. A cluster's size class (seed fleet_size_classes) "
                "gives its team template; a quarter the plan does not list keeps the cluster's "
                "last planned size, and a cluster absent from every quarter is not planned. "
                "Read from `plans/fleet_plan.csv` (or `.yaml`: a list of rows under `clusters:` "
                "with the same keys)."
            ),
            key=("cluster", "quarter"),
            columns=(
                C(
                    "cluster",
                    "string",
                    description="cluster name; the team that runs it (= team in the marts)",
                ),
                C(
                    "quarter",
                    "string",
                    description="calendar quarter the size is planned for, `YYYY-Qn` (2027-Q1)",
                ),
                C(
                    "planned_gpus",
                    "integer",
                    description="GPUs the cluster is planned to have in that quarter (0 = retired)",
                    aliases=("gpus", "gpu_count"),
                ),
                C("site", "string", required=False, description="site of the cluster"),
                C("note", "string", required=False, description="free text, not used"),
            ),
        ),
    )
}
