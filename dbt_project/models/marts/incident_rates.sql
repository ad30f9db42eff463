-- Analyst-facing incident rates: restricted.incident_rates with rows about fewer than
-- min_group_size engineers suppressed. Lines: the statuses of a breakdown and quarter add up to
-- their `all` row, and the quarters of a status add up to its whole-window (`status`) row.
-- Months relative to certification (event_time) add up to nothing published: own lines.
with detail as (
    select
        *,
        case when breakdown = 'event_time' then row_key else certification_status end as status_across_quarters
    from {{ ref('restricted_incident_rates') }}
),

suppressed as (
    {{ suppress_small_groups(
        'detail',
        size='engineers',
        measures=[
            'engineers', 'engineer_months', 'incidents', 'incidents_per_100_engineer_months',
            'mttr_median_minutes', 'mttr_mean_minutes', 'resolved_incidents',
        ],
        lines=['breakdown, quarter, relative_month', 'status_across_quarters'],
        order_by='breakdown, quarter, certification_status, relative_month',
        keep=['row_key', 'breakdown', 'quarter', 'certification_status', 'relative_month'],
    ) }}
)

-- the macro's columns: `keep`, then `measures`, then suppressed and suppression_reason
select * from suppressed
