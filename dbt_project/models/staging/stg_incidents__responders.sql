-- Incident responders linked to people by normalised e-mail; the e-mail itself is dropped here.
with source as (
    {{ current_rows('responders', ['incident_number', 'responder_email']) }}
),

emails as (
    select * from {{ ref('stg_hris__person_emails') }}
),

linked as (
    select
        s.incident_number,
        e.person_key,
        case when e.person_key is null then pseudonym(lower(trim(s.responder_email))) end as email_key,
        lower(trim(s.role)) as role,
        s.assigned_at,
    from source as s
    left join emails as e
        on e.email_normalised = lower(trim(s.responder_email))
)

select * from linked
