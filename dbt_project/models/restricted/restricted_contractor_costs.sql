{{ config(alias='contractor_costs') }}

-- Contractor hours and cost per calendar month (a flow: period_start is the month's first day).
with hours as (
    select * from {{ ref('stg_hris__contractor_hours') }}
),

final as (
    select
        month as period_start,
        {{ exact_sum('hours') }} as hours,
        {{ exact_sum('cost_usd') }} as cost_usd,
        {{ exact_sum('cost_usd') }} / nullif({{ exact_sum('hours') }}, 0) as average_rate_usd,
        count(distinct engagement_id) as engagements
    from hours
    group by month
)

select * from final
