{{ config(alias='certification_coverage') }}

-- Certification coverage per month and segment: the state on the month's last day (month_end).
with panel as (
    select * from {{ ref('int_engineer_months') }}
    where active_at_month_end
),

spells as (
    select * from {{ ref('int_employment_spells') }}
),

attempts as (
    select * from {{ ref('stg_lms__certifications') }}
),

requirements as (
    select
        fleet_size_class,
        role_family,
        {{ split_codes('required_certification_codes') }} as required_codes
    from {{ ref('team_template_requirements') }}
),

-- With no fleet export the fleet size is unknown: a role then needs what it needs at every size.
required_codes_by_size as (
    select
        role_family,
        fleet_size_class,
        {{ unnest_list('required_codes') }} as certification_code
    from requirements
),

codes_at_every_size as (
    select
        role_family,
        certification_code
    from required_codes_by_size
    group by role_family, certification_code
    having count(distinct fleet_size_class) = (select count(distinct r.fleet_size_class) from requirements as r)
),

requirements_any_size as (
    select
        role_family,
        {{ sorted_list('certification_code') }} as required_codes
    from codes_at_every_size
    group by role_family
),

first_award as (
    select
        person_key,
        min(issued_on) as first_issued_on
    from {{ ref('int_certification_awards') }}
    group by person_key
),

first_hire as (
    select
        person_key,
        min(hire_date) as first_hire_date
    from spells
    group by person_key
),

people as (
    select
        p.*,
        -- unknown role (no job history) = unknown; no requirement defined for the role =
        -- nothing required; unknown fleet size = the requirements common to every size
        case
            when p.role_family is not null
                then coalesce(
                    {{ list_has_all_of(
                        'p.active_certification_codes',
                        'coalesce(r.required_codes, ra.required_codes)'
                    ) }},
                    true
                )
        end as fully_compliant,
        case
            when fa.first_issued_on <= p.month + interval '1' month - interval '1' day
                then {{ divide(days_between('fh.first_hire_date', 'fa.first_issued_on'), '30.4375') }}
        end as months_to_first_cert
    from panel as p
    left join requirements as r
        on
            r.fleet_size_class = p.fleet_size_class
            and r.role_family = p.role_family
    left join requirements_any_size as ra
        on
            p.fleet_size_class is null
            and ra.role_family = p.role_family
    left join first_award as fa
        on fa.person_key = p.person_key
    left join first_hire as fh
        on fh.person_key = p.person_key
),

exam_counts as (
    select
        a.person_key,
        date_trunc('month', a.exam_date)::date as month,
        count(*) as exam_attempts,
        count(*) filter (where a.result = 'pass') as exam_passes
    from attempts as a
    where a.person_key is not null
    group by a.person_key, date_trunc('month', a.exam_date)::date
),

people_with_exams as (
    select
        p.*,
        coalesce(e.exam_attempts, 0) as exam_attempts,
        coalesce(e.exam_passes, 0) as exam_passes
    from people as p
    left join exam_counts as e
        on
            e.person_key = p.person_key
            and e.month = p.month
),

segmented as (
    {{ segment_fan_out('people_with_exams', {
        'team': 'team',
        'role_family': 'role_family',
        'level': 'skill_level',
        'site': 'site',
    }) }}
),

final as (
    select
        -- grain: the state on the month's last day
        {{ month_end_of('month') }}::date as month_end,
        segment_type,
        coalesce(segment_value, 'unknown') as segment_value,
        -- counts
        count(*) as headcount,
        count(*) filter (where is_certified) as any_cert_headcount,
        count(*) filter (where fully_compliant) as required_cert_compliant_headcount,
        -- shares (0-1)
        {{ divide('count(*) filter (where is_certified)', 'count(*)') }} as any_cert_share,
        {{ divide('count(*) filter (where fully_compliant)', 'nullif(count(fully_compliant), 0)') }} as required_cert_compliance_share,
        sum(expiring_next_90d)::bigint as expiring_next_90d,
        {{ median_of('months_to_first_cert') }} as median_months_to_first_cert,
        sum(exam_attempts)::bigint as exam_attempts,
        sum(exam_passes)::bigint as exam_passes,
        {{ divide('sum(exam_passes)', 'nullif(sum(exam_attempts), 0)') }} as exam_pass_rate,
        count(*) >= {{ min_group_size() }} as group_size_ok
    from segmented
    group by month, segment_type, coalesce(segment_value, 'unknown')
)

select * from final
