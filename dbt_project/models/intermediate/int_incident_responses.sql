-- Incidents whose primary responder was an in-scope engineer when the incident opened; the
-- statistics code reads this (grain incident_number). resolve_minutes is NULL while open.
with incidents as (
    select * from {{ ref('int_incidents') }}
),

final as (
    select
        incident_number,
        person_key,
        is_certified,
        severity,
        opened_at,
        resolve_minutes,
        month,
        cluster,
        responder_team as team,
        gpus_affected,
        downtime_minutes
    from incidents
    where responder_in_scope
)

select * from final
