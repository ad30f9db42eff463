-- One row: the first month and the as-of date the warehouse covers.
-- first_month = the month of the first HRIS delivery: history before it only holds the people
-- who survived until then (leavers before it were never delivered), so attrition there would
-- be biased. A vendor report (manifest.profile set) is a full snapshot that includes leavers,
-- so it bounds nothing: the history starts at the first hire. as_of_date = var `as_of_date`
-- when set, else the end of the month of the latest dated record.
with deliveries as (
    select min((left(period, 7) || '-01')::date) as first_delivery
    from {{ source('raw', 'manifest') }}
    where
        status = 'active'
        and export in ('employees', 'job_history')
        and profile is null
),

dated as (
    select
        max(effective_date) as d,
        min(effective_date) as first_d
    from {{ ref('stg_hris__job_history') }}
    union all
    select
        max(greatest(hire_date, coalesce(termination_date, hire_date))),
        min(hire_date)
    from {{ ref('stg_hris__employees') }}
    union all
    select
        max(opened_at)::date,
        null
    from {{ ref('stg_incidents__incidents') }}
    union all
    select
        max(exam_date),
        null
    from {{ ref('stg_lms__certifications') }}
),

final as (
    select
        date_trunc('month', coalesce({{ any_value_of('deliveries.first_delivery') }}, min(dated.first_d)))::date as first_month,
        {% if var('as_of_date') %}date '{{ var("as_of_date") }}'{% else %}{{ month_end_of('max(dated.d)') }}{% endif %} as as_of_date
    from dated
    cross join deliveries
)

select * from final
