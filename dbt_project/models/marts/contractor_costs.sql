-- Analyst-facing contractor costs: restricted.contractor_costs with months of 1..min_group_size-1
-- engagements suppressed (with one contractor, the average rate would be that person's rate).
-- Months add up to nothing published (the ROI tables publish yearly totals only).
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_contractor_costs'),
    size='engagements',
    measures=['hours', 'cost_usd', 'average_rate_usd', 'engagements'],
    keep=['period_start'],
) }}
