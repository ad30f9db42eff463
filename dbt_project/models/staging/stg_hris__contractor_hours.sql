-- Contractor engagements by month (vendor staff, no personal data).
with source as (
    {{ current_rows('contractor_hours', ['engagement_id', 'month']) }}
),

renamed as (
    select
        engagement_id,
        vendor,
        month,
        team,
        hours,
        hourly_rate_usd,
        hours * hourly_rate_usd as cost_usd
    from source
)

select * from renamed
