-- Analyst-facing contractor costs: restricted.contractor_costs with months of 1..min_group_size-1
-- engagements suppressed (with one contractor, the average rate would be that person's rate).
-- Months add up to nothing published (the ROI tables publish yearly totals only).
with detail as (
    select * from {{ ref('restricted_contractor_costs') }}
),

suppressed as (
    {{ suppress_small_groups(
        'detail',
        size='engagements',
        measures=['hours', 'cost_usd', 'average_rate_usd', 'engagements'],
        keep=['period_start'],
    ) }}
),

final as (
    select
        period_start,
        hours,
        cost_usd,
        average_rate_usd,
        engagements,
        suppressed,
        suppression_reason
    from suppressed
)

select * from final
