-- Incident responders linked to people by normalised e-mail, else (tools that export names
-- only) by the unique full name; the e-mail and the name themselves are dropped here.
with source as (
    {{ current_rows('responders', ['incident_number', 'responder_email', 'responder_name']) }}
),

emails as (
    select * from {{ ref('stg_hris__person_emails') }}
),

names as (
    select * from {{ ref('stg_hris__person_names') }}
),

keyed as (
    select
        incident_number,
        role,
        assigned_at,
        lower(trim(responder_email)) as email_normalised,
        pseudonym({{ normalised_name('responder_name') }}) as name_key
    from source
),

linked as (
    select
        k.incident_number,
        coalesce(e.person_key, n.person_key) as person_key,
        case
            when coalesce(e.person_key, n.person_key) is null
                then coalesce(pseudonym(k.email_normalised), k.name_key)
        end as email_key,
        case
            when e.person_key is not null then 'email'
            when n.person_key is not null then 'name'
            when n.is_ambiguous then 'ambiguous_name'
            else 'unmatched'
        end as link_method,
        lower(trim(k.role)) as role,
        k.assigned_at
    from keyed as k
    left join emails as e
        on k.email_normalised = e.email_normalised
    left join names as n
        on k.name_key = n.name_key
)

select * from linked
