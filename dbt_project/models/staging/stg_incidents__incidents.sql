-- Incidents from the on-call tool; the free-text title is dropped (it can name people).
{{ incremental_staging('incident_number') }}

with source as (
    {{ current_rows('incidents', ['incident_number']) }}
),

renamed as (
    select
        -- ids
        incident_number,
        service,
        -- incident tools export no cluster: the service stands in (mapped at ingestion)
        coalesce(cluster, service) as cluster,
        lower(trim(severity)) as severity,
        -- timestamps
        opened_at,
        acknowledged_at,
        resolved_at,
        -- numerics
        gpus_affected,
        -- no downtime column in the export: opened to resolved
        coalesce(downtime_minutes, {{ seconds_between('opened_at', 'resolved_at') }} / 60.0)
            as downtime_minutes,
        {{ seconds_between('opened_at', 'acknowledged_at') }} / 60.0 as acknowledge_minutes,
        {{ seconds_between('opened_at', 'resolved_at') }} / 60.0 as resolve_minutes,
        -- the delivery the row comes from (raw.manifest.file_id)
        _file_id
    from source
)

select * from renamed
