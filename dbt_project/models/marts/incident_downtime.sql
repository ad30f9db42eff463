-- Analyst-facing incident downtime: restricted.incident_downtime with rows whose incidents come
-- from 1..min_group_size-1 primary responders suppressed. Incidents nobody could be linked to
-- (unmatched, 0 responders) describe no person and stay. Line: the statuses of a quarter add up
-- to its incidents.
with detail as (
    select * from {{ ref('restricted_incident_downtime') }}
),

suppressed as (
    {{ suppress_small_groups(
        'detail',
        size='responders',
        measures=['incidents', 'responders', 'downtime_minutes', 'gpu_hours_lost'],
        lines=['quarter'],
        order_by='certification_status',
        keep=['quarter', 'certification_status'],
    ) }}
),

final as (
    select
        quarter,
        certification_status,
        incidents,
        responders,
        downtime_minutes,
        gpu_hours_lost,
        suppressed,
        suppression_reason
    from suppressed
)

select * from final
