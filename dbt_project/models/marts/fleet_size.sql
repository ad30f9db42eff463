-- GPU count per cluster at each month end (latest snapshot on or before it) and its size class.
with fleet as (
    select * from {{ ref('int_fleet_months') }}
),

final as (
    select
        {{ month_end_of('month') }}::date as month_end,
        cluster,
        site,
        gpu_count,
        fleet_size_class
    from fleet
)

select * from final
