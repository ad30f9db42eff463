-- Contractor hours and cost per month (all engagements).
with hours as (
    select * from {{ ref('stg_hris__contractor_hours') }}
),

final as (
    select
        month,
        sum(hours) as hours,
        sum(cost_usd) as cost_usd,
        sum(cost_usd) / nullif(sum(hours), 0) as average_rate_usd,
        count(distinct engagement_id) as engagements,
    from hours
    group by month
)

select * from final
