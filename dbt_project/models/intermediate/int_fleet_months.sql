-- GPU count per cluster at each month end: the latest snapshot on or before the month end.
with fleet as (
    select * from {{ ref('stg_fleet__gpu_fleet') }}
),

months as (
    select * from {{ ref('int_months') }}
),

classes as (
    select * from {{ ref('fleet_size_classes') }}
),

clusters as (
    select
        cluster,
        min(as_of_date) as first_as_of
    from fleet group by cluster
),

-- every snapshot on or before the month end, the latest first (an as-of join)
snapshots as (
    select
        m.month,
        m.month_end,
        f.cluster,
        f.site,
        f.gpu_count,
        row_number() over (partition by m.month, f.cluster order by f.as_of_date desc) as recency
    from months as m
    inner join clusters as c
        on c.first_as_of <= m.month_end
    inner join fleet as f
        on
            f.cluster = c.cluster
            and f.as_of_date <= m.month_end
),

as_of as (
    select * from snapshots
    where recency = 1
),

final as (
    select
        a.month,
        a.cluster,
        a.site,
        a.gpu_count,
        k.fleet_size_class
    from as_of as a
    left join classes as k
        on
            a.gpu_count >= k.gpu_min
            and (k.gpu_max is null or a.gpu_count <= k.gpu_max)
)

select * from final
