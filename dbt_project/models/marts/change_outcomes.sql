-- Analyst-facing change outcomes: restricted.change_outcomes with rows of 1..min_group_size-1
-- implementers suppressed. Line: the statuses of a month add up to its `all` row.
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_change_outcomes'),
    size='implementers',
    measures=[
        'implementers', 'changes', 'failed_changes', 'change_failure_rate',
        'lead_time_median_hours', 'lead_time_mean_hours',
    ],
    lines=['month'],
    order_by='month, certification_status',
    keep=['month', 'certification_status'],
) }}
