-- Analyst-facing teams: restricted.dim_team with the current headcount of a team suppressed when
-- it is 1..min_group_size-1 people or certification_coverage hides the team in the last month
-- (the two are the same figure).
with detail as (
    select * from {{ ref('restricted_dim_team') }}
),

latest_coverage as (
    select
        segment_value as team,
        suppressed
    from {{ ref('certification_coverage') }}
    where
        segment_type = 'team'
        and month_end = (select max(c.month_end) from {{ ref('certification_coverage') }} as c)
),

flagged as (
    select
        d.*,
        coalesce(c.suppressed, false) and d.current_headcount > 0 as coverage_hidden
    from detail as d
    left join latest_coverage as c on c.team = d.team
),

suppressed as (
    {{ suppress_small_groups(
        'flagged',
        size='current_headcount',
        primary='current_headcount between 1 and ' ~ (var('min_group_size') | int - 1) ~ ' or coverage_hidden',
        reason="case when current_headcount < " ~ var('min_group_size') ~ " then 'fewer than "
            ~ var('min_group_size') ~ " people' else 'certification_coverage hides this team in the last month' end",
        measures=['current_headcount'],
        keep=['team', 'site', 'current_gpu_count', 'current_fleet_size_class', 'runs_cluster'],
    ) }}
),

final as (
    select
        team,
        site,
        current_gpu_count,
        current_fleet_size_class,
        current_headcount,
        runs_cluster,
        suppressed,
        suppression_reason
    from suppressed
)

select * from final
