-- GPU usage rows: scheduler jobs, telemetry averages and GPU-hour summaries per cluster and day
-- or month. Slurm job steps (123.batch, 123.0) repeat their job's allocation and are dropped.
with source as (
    {{ current_rows('gpu_usage', ['record_type', 'cluster', 'usage_date', 'job_id']) }}
),

renamed as (
    select
        record_type,
        cluster,
        usage_date,
        coalesce(granularity, 'day') as granularity,
        -- jobs
        job_id,
        job_state,
        job_started_at,
        job_ended_at,
        job_hours,
        gpus,
        -- GPU-hours and telemetry
        gpu_hours_available,
        gpu_hours_allocated,
        gpu_hours_busy,
        gpu_hours_lost,
        gpu_utilisation,
        sm_active,
        xid_errors,
        _file_id
    from source
    where not (record_type = 'job' and job_id like '%.%')
)

select * from renamed
