{{ config(alias='cluster_utilisation') }}

-- GPU-hours per cluster and month. Available: GPUs at month end (gpu_fleet) x 24 x the days of
-- the month up to the as-of date. Allocated and lost: Slurm jobs, each spread over the months
-- it ran in proportion to its time in each; lost = jobs that ended failed, node_fail,
-- boot_fail or out_of_memory. Busy: the mean of the telemetry's utilisation (DCGM_FI_DEV_GPU_UTIL,
-- percent) x available. A summary row of the tool (GPU-hours per day or month) is used as
-- delivered and takes precedence. The team's certified share: in-scope engineers of the team
-- (team = cluster) at month end who hold an active certification that day.
with bounds as (
    select as_of_date from {{ ref('int_calendar_bounds') }}
),

months as (
    select
        m.month,
        m.month_end,
        cast(m.month_end + 1 as timestamp) as next_month_at,
        {{ days_between('m.month', 'least(m.month_end, bounds.as_of_date)') }} + 1 as days_covered
    from {{ ref('int_months') }} as m
    cross join bounds
),

usage as (
    select * from {{ ref('stg_fleet__gpu_usage') }}
),

jobs as (
    select
        cluster,
        job_id,
        job_state,
        coalesce(gpus, 0) * coalesce(job_hours, 0) as gpu_hours,
        coalesce(job_started_at, cast(usage_date as timestamp)) as started_at,
        coalesce(job_ended_at, job_started_at, cast(usage_date as timestamp)) as ended_at
    from usage
    where record_type = 'job'
),

job_months as (
    select
        j.cluster,
        m.month,
        j.job_id,
        j.job_state,
        j.gpu_hours * case
            when {{ seconds_between('j.started_at', 'j.ended_at') }} > 0
                then {{ seconds_between(
                    'greatest(j.started_at, cast(m.month as timestamp))',
                    'least(j.ended_at, m.next_month_at)',
                ) }} / {{ seconds_between('j.started_at', 'j.ended_at') }}
            else 1
        end as gpu_hours
    from jobs as j
    inner join months as m
        on
            m.month <= cast(j.ended_at as date)
            and m.month_end >= cast(j.started_at as date)
),

job_totals as (
    select
        cluster,
        month,
        count(distinct job_id) as jobs,
        {{ exact_sum('gpu_hours') }} as gpu_hours_allocated,
        {{ exact_sum("case when job_state in ('failed', 'node_fail', 'boot_fail', 'out_of_memory') then gpu_hours else 0 end") }} as gpu_hours_lost
    from job_months
    group by cluster, month
),

telemetry as (
    select
        cluster,
        cast(date_trunc('month', usage_date) as date) as month,
        count(*) as telemetry_rows,
        {{ exact_avg('gpu_utilisation') }} as mean_gpu_utilisation,
        {{ exact_avg('sm_active') }} as mean_sm_active
    from usage
    where record_type = 'telemetry'
    group by cluster, cast(date_trunc('month', usage_date) as date)
),

summaries as (
    select
        cluster,
        cast(date_trunc('month', usage_date) as date) as month,
        {{ exact_sum('gpu_hours_available') }} as gpu_hours_available,
        {{ exact_sum('gpu_hours_allocated') }} as gpu_hours_allocated,
        {{ exact_sum('gpu_hours_busy') }} as gpu_hours_busy,
        {{ exact_sum('gpu_hours_lost') }} as gpu_hours_lost
    from usage
    where record_type = 'summary'
    group by cluster, cast(date_trunc('month', usage_date) as date)
),

teams as (
    select
        team,
        month,
        count(*) as engineers,
        count(case when is_certified then 1 end) as certified_engineers
    from {{ ref('int_engineer_months') }}
    where active_at_month_end
    group by team, month
),

joined as (
    select
        f.month,
        f.cluster,
        f.gpu_count,
        j.jobs,
        t.telemetry_rows,
        coalesce(s.gpu_hours_available, f.gpu_count * 24.0 * m.days_covered) as gpu_hours_available,
        coalesce(s.gpu_hours_allocated, j.gpu_hours_allocated) as gpu_hours_allocated,
        s.gpu_hours_busy as summary_busy,
        t.mean_gpu_utilisation,
        t.mean_sm_active,
        coalesce(s.gpu_hours_lost, j.gpu_hours_lost) as gpu_hours_lost,
        coalesce(e.engineers, 0) as engineers,
        coalesce(e.certified_engineers, 0) as certified_engineers
    from {{ ref('int_fleet_months') }} as f
    inner join months as m
        on f.month = m.month
    left join job_totals as j
        on f.cluster = j.cluster and f.month = j.month
    left join telemetry as t
        on f.cluster = t.cluster and f.month = t.month
    left join summaries as s
        on f.cluster = s.cluster and f.month = s.month
    left join teams as e
        on f.cluster = e.team and f.month = e.month
    where j.cluster is not null or t.cluster is not null or s.cluster is not null
),

final as (
    select
        month,
        cluster,
        gpu_count,
        jobs,
        telemetry_rows,
        gpu_hours_available,
        gpu_hours_allocated,
        coalesce(summary_busy, mean_gpu_utilisation / 100.0 * gpu_hours_available) as gpu_hours_busy,
        gpu_hours_lost,
        mean_gpu_utilisation,
        mean_sm_active,
        {{ divide('gpu_hours_allocated', 'nullif(gpu_hours_available, 0)') }} as allocated_share,
        {{ divide('coalesce(summary_busy, mean_gpu_utilisation / 100.0 * gpu_hours_available)', 'nullif(gpu_hours_available, 0)') }} as busy_share,
        {{ divide('gpu_hours_lost', 'nullif(gpu_hours_available, 0)') }} as lost_share,
        engineers,
        certified_engineers,
        {{ divide('certified_engineers', 'nullif(engineers, 0)') }} as certified_share
    from joined
)

select * from final
