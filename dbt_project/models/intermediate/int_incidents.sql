-- Every incident with its primary responder (the earliest-assigned primary when several are
-- listed), whether that person was in scope and certified when the incident opened.
with incidents as (
    select * from {{ ref('stg_incidents__incidents') }}
),

responders as (
    select * from {{ ref('stg_incidents__responders') }}
),

history as (
    select * from {{ ref('int_person_history') }}
),

certified as (
    select * from {{ ref('int_certified_spells') }}
),

ranked_primaries as (
    select
        *,
        row_number() over (
            partition by incident_number
            order by assigned_at nulls last, person_key nulls last, email_key
        ) as assignment_order
    from responders
    where role = 'primary'
),

primary_responders as (
    select * from ranked_primaries
    where assignment_order = 1
),

final as (
    select
        -- ids
        i.incident_number,
        p.person_key,
        p.email_key,
        -- attributes
        i.cluster,
        i.service,
        i.severity,
        coalesce(h.in_scope, false) as responder_in_scope,
        h.team as responder_team,
        c.person_key is not null as is_certified,
        -- timestamps
        i.opened_at,
        i.resolved_at,
        date_trunc('month', i.opened_at)::date as month,
        date_trunc('quarter', i.opened_at)::date as quarter,
        -- numerics
        i.resolve_minutes,
        i.acknowledge_minutes,
        i.gpus_affected,
        i.downtime_minutes
    from incidents as i
    left join primary_responders as p
        on p.incident_number = i.incident_number
    left join history as h
        on
            h.person_key = p.person_key
            and i.opened_at::date between h.valid_from and h.valid_to
    -- the certified spells of a person are disjoint: at most one holds the opening day
    left join certified as c
        on
            c.person_key = p.person_key
            and c.valid_from <= i.opened_at::date
            and (c.valid_to is null or c.valid_to >= i.opened_at::date)
)

select * from final
