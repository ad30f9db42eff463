-- Analyst-facing incident downtime: restricted.incident_downtime with rows whose incidents come
-- from 1..min_group_size-1 primary responders suppressed. Incidents nobody could be linked to
-- (unmatched, 0 responders) describe no person and stay. Line: the statuses of a quarter add up
-- to its incidents.
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_incident_downtime'),
    size='responders',
    measures=['incidents', 'responders', 'downtime_minutes', 'gpu_hours_lost'],
    lines=['quarter'],
    order_by='certification_status',
    keep=['quarter', 'certification_status'],
) }}
