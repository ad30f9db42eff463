"""The core marts from the export CSVs in one plain DuckDB session: the benchmark's yardstick.

    .venv/bin/python bench/plain_script.py --sources bench/scratch/sources [--out marts.duckdb]

What an analyst would write without the pipeline: read the CSV files of our own export format
(`<folder>/<export>_<period>[_vN].csv`) with DuckDB's reader, keep the current rows (the latest
version of each period; per natural key the latest period), and compute

- `attrition_monthly`: monthly headcount at the start and end of the month, separations and the
  SHRM monthly turnover rate (separations / average headcount, a share 0-1);
- `coverage_monthly`: engineers in scope at the month end, those holding any active
  certification and those holding every certification their role requires;
- `incident_rates`: incidents per 100 engineer-months by certification status.

The definitions are the marts' (`marts.attrition` month / all, `marts.certification_coverage`
all, `marts.incident_rates` by status), so that the benchmark compares like with like;
`tests/test_bench.py` checks that the figures agree. There is no quarantine, no manifest, no
pseudonyms, no checks, no statistics and no report: it is the floor of what the numbers cost.
People are keyed by their employee id (nothing leaves this process but aggregates).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import duckdb

SEEDS = Path(__file__).resolve().parents[1] / "dbt_project" / "seeds"

# export -> (folder, natural key, column types in file order)
EXPORTS: dict[str, tuple[str, tuple[str, ...], dict[str, str]]] = {
    "employees": (
        "hris",
        ("employee_id", "hire_date"),
        {
            "employee_id": "VARCHAR",
            "first_name": "VARCHAR",
            "last_name": "VARCHAR",
            "work_email": "VARCHAR",
            "hire_date": "DATE",
            "original_hire_date": "DATE",
            "termination_date": "DATE",
            "termination_type": "VARCHAR",
            "termination_reason": "VARCHAR",
            "regrettable": "BOOLEAN",
        },
    ),
    "job_history": (
        "hris",
        ("employee_id", "effective_date"),
        {
            "employee_id": "VARCHAR",
            "effective_date": "DATE",
            "division": "VARCHAR",
            "team": "VARCHAR",
            "role_family": "VARCHAR",
            "job_title": "VARCHAR",
            "skill_level": "INTEGER",
            "site": "VARCHAR",
            "manager_id": "VARCHAR",
            "employment_type": "VARCHAR",
            "fte": "DOUBLE",
            "annual_salary_usd": "DOUBLE",
            "change_reason": "VARCHAR",
        },
    ),
    "certifications": (
        "lms",
        ("attempt_id",),
        {
            "attempt_id": "VARCHAR",
            "learner_email": "VARCHAR",
            "certification_code": "VARCHAR",
            "exam_date": "DATE",
            "result": "VARCHAR",
            "score": "DOUBLE",
            "issued_on": "DATE",
            "expires_on": "DATE",
            "exam_fee_usd": "DOUBLE",
        },
    ),
    "incidents": (
        "incidents",
        ("incident_number",),
        {
            "incident_number": "VARCHAR",
            "title": "VARCHAR",
            "service": "VARCHAR",
            "cluster": "VARCHAR",
            "severity": "VARCHAR",
            "opened_at": "TIMESTAMP",
            "acknowledged_at": "TIMESTAMP",
            "resolved_at": "TIMESTAMP",
            "gpus_affected": "BIGINT",
            "downtime_minutes": "DOUBLE",
        },
    ),
    "responders": (
        "incidents",
        ("incident_number", "responder_email", "responder_name"),
        {
            "incident_number": "VARCHAR",
            "responder_email": "VARCHAR",
            "responder_name": "VARCHAR",
            "role": "VARCHAR",
            "assigned_at": "TIMESTAMP",
        },
    ),
    "gpu_fleet": (
        "fleet",
        ("cluster", "as_of_date"),
        {
            "cluster": "VARCHAR",
            "as_of_date": "DATE",
            "site": "VARCHAR",
            "gpu_model": "VARCHAR",
            "gpu_count": "BIGINT",
        },
    ),
}

FILE_NAME = r"_(\d{4}-\d{2}(?:-\d{2})?)(?:_v(\d+))?\.csv$"


def _headers(files: list[Path]) -> dict[tuple[str, ...], list[Path]]:
    """The files grouped by the columns their header line names (a byte order mark skipped)."""
    groups: dict[tuple[str, ...], list[Path]] = {}
    for f in files:
        with f.open(encoding="utf-8-sig", newline="") as fh:
            header = tuple(c.strip() for c in fh.readline().strip().split(","))
        groups.setdefault(header, []).append(f)
    return groups


def _read_sql(header: tuple[str, ...], files: list[Path], columns: dict[str, str]) -> str:
    """One group of files with the same header, typed; a contract column the header lacks is
    NULL (exports add optional columns over time), a column the contract lacks is read as text
    and dropped."""
    names = "[" + ", ".join("'" + str(f).replace("'", "''") + "'" for f in files) + "]"
    typed = "{" + ", ".join(f"'{c}': '{columns.get(c, 'VARCHAR')}'" for c in header) + "}"
    # text is trimmed and an empty text is missing (exports pad values with blanks)
    values = ", ".join(
        f"null::{t} as {c}"
        if c not in header
        else f"nullif(trim({c}), '') as {c}"
        if t == "VARCHAR"
        else c
        for c, t in columns.items()
    )
    return f"""
        select {values}, filename
        from read_csv({names}, header = true, columns = {typed}, filename = true,
                      auto_detect = false, ignore_errors = true)"""


def current_rows_sql(sources: Path, export: str) -> str:
    """Current rows of an export: the latest version of each period, then per natural key the
    row of the latest period. Rows the reader cannot type are left out (ignore_errors).

    A key delivered twice in one file keeps either copy: the exports repeat exact copies only.
    """
    folder, key, columns = EXPORTS[export]
    groups = _headers(sorted((sources / folder).glob(f"{export}_*.csv")))
    read = " union all ".join(_read_sql(h, files, columns) for h, files in groups.items())
    return f"""
    create or replace temp table {export} as
    with rows as (
        select
            * exclude (filename),
            regexp_extract(filename, '{FILE_NAME}', 1) as _period,
            coalesce(try_cast(regexp_extract(filename, '{FILE_NAME}', 2) as integer), 1) as _version,
        from ({read})
    ),
    latest_version as (
        select * from rows
        qualify _version = max(_version) over (partition by _period)
    )
    select * from latest_version
    qualify row_number() over (partition by {", ".join(key)} order by _period desc, _version desc) = 1
    """


PEOPLE_SQL = """
create or replace temp table bounds as
select
    -- the month of the first HRIS delivery (earlier leavers were never delivered)
    (select min(strptime(left(regexp_extract(file, $file_name, 1), 7) || '-01', '%Y-%m-%d'))::date
     from (select file from glob($employees) union all select file from glob($job_history)))
        as first_month,
    last_day(greatest(
        (select max(effective_date) from job_history),
        (select max(greatest(hire_date, coalesce(termination_date, hire_date))) from employees),
        (select max(opened_at)::date from incidents),
        (select max(exam_date) from certifications)
    )) as as_of_date;

create or replace temp table months as
select month, last_day(month) as month_end, datediff('day', month, last_day(month)) + 1 as days
from (
    select unnest(generate_series(first_month, date_trunc('month', as_of_date)::date,
                                  interval 1 month))::date as month
    from bounds
);

create or replace temp table spells as
select
    e.employee_id as person,
    row_number() over (partition by e.employee_id order by e.hire_date) as spell,
    e.hire_date,
    case when e.termination_date <= b.as_of_date then e.termination_date end as termination_date,
    case when e.termination_date <= b.as_of_date
        then coalesce(lower(trim(e.termination_type)), 'other') end as separation_type,
from employees as e cross join bounds as b;

-- in-scope job intervals clipped to employment spells (the first one of a spell starts at hire)
create or replace temp table history as
with jobs as (
    select
        *,
        coalesce(lead(effective_date) over (partition by employee_id order by effective_date) - 1,
                 date '9999-12-31') as job_to,
    from job_history
),
joined as (
    select
        j.employee_id as person,
        s.spell,
        s.hire_date,
        greatest(j.effective_date, s.hire_date) as valid_from,
        least(j.job_to, coalesce(s.termination_date, date '9999-12-31')) as valid_to,
        j.team,
        lower(replace(trim(j.role_family), ' ', '_')) as role_family,
        j.division = $division and lower(trim(j.employment_type)) = 'employee' as in_scope,
    from jobs as j
    inner join spells as s
        on s.person = j.employee_id
        and j.effective_date <= coalesce(s.termination_date, date '9999-12-31')
        and j.job_to >= s.hire_date
)
select
    * replace (
        case when row_number() over (partition by person, spell order by valid_from) = 1
            then hire_date else valid_from end as valid_from
    )
from joined;

-- continuous in-scope stretches (merged across job changes) with how they start and end
create or replace temp table stints as
with flagged as (
    select
        *,
        case when valid_from = lag(valid_to) over (partition by person, spell order by valid_from) + 1
            then 0 else 1 end as new_stint,
    from history where in_scope
),
grouped as (
    select person, any_value(spell) as spell, min(valid_from) as stint_from, max(valid_to) as stint_to
    from (select *, sum(new_stint) over (partition by person order by valid_from
                                         rows unbounded preceding) as stint from flagged)
    group by person, stint
)
select
    g.*,
    g.stint_from = s.hire_date as starts_with_hire,
    s.termination_date is not null and g.stint_to = s.termination_date as ends_with_separation,
from grouped as g
inner join spells as s on s.person = g.person and s.spell = g.spell;
"""

CERTIFICATIONS_SQL = """
create or replace temp table emails as
select lower(trim(work_email)) as email, employee_id as person
from employees
where work_email is not null
qualify row_number() over (partition by lower(trim(work_email))
                           order by hire_date desc, employee_id) = 1;

-- validity per (person, code), renewals merged into one interval
create or replace temp table cert_intervals as
with awards as (
    select
        e.person,
        upper(trim(c.certification_code)) as code,
        coalesce(c.issued_on, c.exam_date) as issued_on,
        coalesce(c.expires_on, date '9999-12-31') as expires_on,
    from certifications as c
    inner join emails as e on e.email = lower(trim(c.learner_email))
    where lower(trim(c.result)) = 'pass' and coalesce(c.issued_on, c.exam_date) is not null
),
flagged as (
    select
        *,
        case when issued_on > coalesce(max(expires_on) over (
            partition by person, code order by issued_on, expires_on
            rows between unbounded preceding and 1 preceding) + 1, date '0001-01-01')
        then 1 else 0 end as new_interval,
    from awards
)
select person, code, min(issued_on) as valid_from, max(expires_on) as valid_to
from (select *, sum(new_interval) over (partition by person, code order by issued_on, expires_on
                                        rows unbounded preceding) as n from flagged)
group by person, code, n;
"""

PANEL_SQL = """
create or replace temp table fleet_class as
with fleet as (select * from gpu_fleet),
clusters as (select cluster, min(as_of_date) as first_as_of from fleet group by cluster),
as_of as (
    select m.month, f.cluster, f.gpu_count
    from months as m
    inner join clusters as c on c.first_as_of <= m.month_end
    asof join fleet as f on f.cluster = c.cluster and f.as_of_date <= m.month_end
)
select a.month, a.cluster, k.fleet_size_class
from as_of as a
left join read_csv($classes) as k
    on a.gpu_count >= k.gpu_min and (k.gpu_max is null or a.gpu_count <= k.gpu_max);

-- one row per in-scope engineer and month: exposure, attributes on the last in-scope day
create or replace temp table panel as
with person_months as (
    select
        h.person,
        m.month,
        any_value(m.month_end) as month_end,
        sum(datediff('day', greatest(h.valid_from, m.month), least(h.valid_to, m.month_end)) + 1)
            / any_value(m.days) as exposure,
        max(least(h.valid_to, m.month_end)) as measured_on,
        arg_max(h.team, h.valid_from) as team,
        arg_max(h.role_family, h.valid_from) as role_family,
    from history as h
    inner join months as m on h.valid_from <= m.month_end and h.valid_to >= m.month
    where h.in_scope
    group by h.person, m.month
),
certs as (
    select pm.person, pm.month, list(distinct c.code) as codes
    from person_months as pm
    inner join cert_intervals as c
        on c.person = pm.person and c.valid_from <= pm.measured_on and c.valid_to >= pm.measured_on
    group by pm.person, pm.month
),
first_cert as (
    select person, date_trunc('month', min(valid_from))::date as first_month
    from cert_intervals
    where valid_from <= (select as_of_date from bounds)
    group by person
)
select
    pm.*,
    pm.measured_on = pm.month_end as at_month_end,
    c.codes is not null as certified,
    coalesce(c.codes, []::varchar[]) as codes,
    case
        when c.codes is not null then 'certified'
        when f.first_month is null then 'never_certified'
        when pm.month < f.first_month then 'not_yet_certified'
        else 'lapsed'
    end as status,
    fc.fleet_size_class,
from person_months as pm
left join certs as c on c.person = pm.person and c.month = pm.month
left join first_cert as f on f.person = pm.person
left join fleet_class as fc on fc.cluster = pm.team and fc.month = pm.month;
"""

MARTS_SQL = """
create or replace table attrition_monthly as
with per_person as (
    select
        m.month,
        s.person,
        max(case when s.stint_from < m.month then 1 else 0 end) as in_start,
        max(case when s.stint_to > m.month_end then 1 else 0 end) as in_end,
        count(*) filter (where s.stint_to <= m.month_end and s.ends_with_separation) as separations,
    from months as m
    inner join stints as s on s.stint_from <= m.month_end and s.stint_to >= m.month
    group by m.month, s.person
)
select
    month,
    sum(in_start)::bigint as headcount_start,
    sum(separations)::bigint as separations,
    sum(in_end)::bigint as headcount_end,
    sum(separations) / nullif((sum(in_start) + sum(in_end)) / 2.0, 0) as turnover_rate,
from per_person
group by month
order by month;

create or replace table coverage_monthly as
with requirements as (
    select fleet_size_class, role_family,
           list_transform(string_split(required_certification_codes, ';'), lambda x: upper(trim(x)))
               as required,
    from read_csv($requirements)
)
select
    last_day(p.month) as month_end,
    count(*) as headcount,
    count(*) filter (where p.certified) as any_cert_headcount,
    count(*) filter (where coalesce(list_has_all(p.codes, r.required), true))
        as required_cert_compliant_headcount,
from panel as p
left join requirements as r
    on r.fleet_size_class = p.fleet_size_class and r.role_family = p.role_family
where p.at_month_end
group by p.month
order by p.month;

create or replace table incident_rates as
with names as (
    -- a full name only one person has (tools that list responders by name only)
    select strip_accents(lower(trim(regexp_replace(first_name || ' ' || last_name, '\s+', ' ', 'g'))))
        as name, min(employee_id) as person
    from employees
    where first_name is not null and last_name is not null
    group by 1
    having count(distinct employee_id) = 1
),
primary_responders as (
    select r.incident_number, coalesce(e.person, n.person) as person
    from responders as r
    left join emails as e on e.email = lower(trim(r.responder_email))
    left join names as n
        on n.name = strip_accents(lower(trim(regexp_replace(r.responder_name, '\s+', ' ', 'g'))))
    where lower(trim(r.role)) = 'primary'
    qualify row_number() over (partition by r.incident_number
                               order by r.assigned_at nulls last,
                                        coalesce(e.person, n.person) nulls last,
                                        lower(trim(r.responder_email))) = 1
),
engineer_incidents as (
    select p.person, date_trunc('month', i.opened_at)::date as month, count(*) as incidents
    from incidents as i
    inner join primary_responders as p on p.incident_number = i.incident_number
    inner join history as h
        on h.person = p.person and i.opened_at::date between h.valid_from and h.valid_to
    where h.in_scope
    group by all
),
rows as (
    select p.status, p.person, p.exposure, coalesce(i.incidents, 0) as incidents
    from panel as p
    left join engineer_incidents as i on i.person = p.person and i.month = p.month
)
select
    coalesce(status, 'all') as certification_status,
    count(distinct person) as engineers,
    sum(exposure) as engineer_months,
    sum(incidents)::bigint as incidents,
    100.0 * sum(incidents) / nullif(sum(exposure), 0) as incidents_per_100_engineer_months,
from rows
group by grouping sets ((status), ())
order by certification_status;
"""

MARTS = ("attrition_monthly", "coverage_monthly", "incident_rates")


def run_script(con: duckdb.DuckDBPyConnection, script: str, params: dict[str, str]) -> None:
    """Run the statements of `script` one by one, each with the parameters it names."""
    for statement in script.split(";\n"):
        if statement.strip():
            con.execute(statement, {k: v for k, v in params.items() if f"${k}" in statement})


def compute(
    sources: Path, database: str = ":memory:", *, division: str = "AI Infrastructure"
) -> duckdb.DuckDBPyConnection:
    """Build the three marts from the CSVs under `sources`; returns the open connection."""
    con = duckdb.connect(database)
    for export in EXPORTS:
        con.execute(current_rows_sql(sources, export))
    hris = {e: str(sources / "hris" / f"{e}_*.csv") for e in ("employees", "job_history")}
    params = {
        "division": division,
        "file_name": FILE_NAME,
        "classes": str(SEEDS / "fleet_size_classes.csv"),
        "requirements": str(SEEDS / "team_template_requirements.csv"),
        **hris,
    }
    for script in (PEOPLE_SQL, CERTIFICATIONS_SQL, PANEL_SQL, MARTS_SQL):
        run_script(con, script, params)
    return con


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sources", type=Path, required=True, help="folder of the export CSVs")
    ap.add_argument("--out", default=":memory:", help="DuckDB file to keep the marts in")
    ap.add_argument("--division", default="AI Infrastructure", help="the analysed division")
    args = ap.parse_args(argv)
    t0 = time.process_time()
    con = compute(args.sources, args.out, division=args.division)
    for mart in MARTS:
        rows = con.execute(f"select count(*) from {mart}").fetchone()[0]
        print(f"{mart}: {rows} rows")
    con.close()
    print(f"CPU seconds of this process: {time.process_time() - t0:.2f}")


if __name__ == "__main__":
    main()
