{{ config(alias='incident_downtime') }}

-- Downtime per quarter by the certification status of the primary responder at opening.
-- All incidents count; those without a linked primary responder are 'unmatched'.
with incidents as (
    select * from {{ ref('int_incidents') }}
),

final as (
    select
        quarter,
        case
            when person_key is null then 'unmatched'
            when is_certified then 'certified'
            else 'not_certified'
        end as certification_status,
        count(*) as incidents,
        -- people behind the row: distinct primary responders linked to an employee
        count(distinct person_key) as responders,
        coalesce({{ exact_sum('downtime_minutes') }}, 0) as downtime_minutes,
        coalesce({{ exact_sum('gpus_affected * downtime_minutes') }} / 60.0, 0) as gpu_hours_lost
    from incidents
    group by 1, 2
)

select * from final
