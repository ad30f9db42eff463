-- Analyst-facing change outcomes: restricted.change_outcomes with rows of 1..min_group_size-1
-- implementers suppressed. Line: the statuses of a month add up to its `all` row.
with detail as (
    select * from {{ ref('restricted_change_outcomes') }}
),

suppressed as (
    {{ suppress_small_groups(
        'detail',
        size='implementers',
        measures=[
            'implementers', 'changes', 'failed_changes', 'change_failure_rate',
            'lead_time_median_hours', 'lead_time_mean_hours',
        ],
        lines=['month'],
        order_by='month, certification_status',
        keep=['month', 'certification_status'],
    ) }}
),

final as (
    select
        month,
        certification_status,
        implementers,
        changes,
        failed_changes,
        change_failure_rate,
        lead_time_median_hours,
        lead_time_mean_hours,
        suppressed,
        suppression_reason
    from suppressed
)

select * from final
