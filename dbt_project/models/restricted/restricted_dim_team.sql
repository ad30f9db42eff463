{{ config(alias='dim_team') }}

-- One row per team (infrastructure teams are named after the cluster they run).
with panel as (
    select * from {{ ref('int_engineer_months') }}
),

fleet as (
    select * from {{ ref('int_fleet_months') }}
),

teams as (
    select team from panel where team is not null
    union
    select cluster from fleet
),

ranked_fleet as (
    select
        *,
        row_number() over (partition by cluster order by month desc) as recency
    from fleet
),

latest_fleet as (
    select * from ranked_fleet
    where recency = 1
),

headcount as (
    select
        p.team,
        count(*) as current_headcount
    from panel as p
    where p.active_at_month_end and p.month = (select max(latest.month) from panel as latest)
    group by p.team
),

final as (
    select
        t.team,
        f.site,
        f.gpu_count as current_gpu_count,
        f.fleet_size_class as current_fleet_size_class,
        coalesce(h.current_headcount, 0) as current_headcount,
        f.cluster is not null as runs_cluster
    from teams as t
    left join latest_fleet as f on f.cluster = t.team
    left join headcount as h on h.team = t.team
)

select * from final
