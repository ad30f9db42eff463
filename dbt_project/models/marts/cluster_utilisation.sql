-- Analyst-facing GPU utilisation per cluster and month: restricted.cluster_utilisation with the
-- team's certified share hidden where the team has 1..min_group_size-1 engineers (a share of
-- one or two people would be their certification status). GPU-hours stay: they count no
-- people. Rows add up to nothing published that counts people: no lines.
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_cluster_utilisation'),
    size='engineers',
    measures=['engineers', 'certified_engineers', 'certified_share'],
    order_by='month, cluster',
    keep=[
        'month', 'cluster', 'gpu_count', 'jobs', 'telemetry_rows', 'gpu_hours_available',
        'gpu_hours_allocated', 'gpu_hours_busy', 'gpu_hours_lost', 'mean_gpu_utilisation',
        'mean_sm_active', 'allocated_share', 'busy_share', 'lost_share',
    ],
) }}
