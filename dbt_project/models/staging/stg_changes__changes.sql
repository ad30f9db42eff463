-- Change requests with the implementer linked to a person (e-mail, else unique full name);
-- the e-mail and the name themselves are dropped here, and so is nothing else the marts need.
with source as (
    {{ current_rows('changes', ['change_number']) }}
),

keyed as (
    select
        change_number,
        cluster,
        change_type,
        requested_at,
        planned_start,
        planned_end,
        actual_start,
        actual_end,
        close_code,
        caused_incidents,
        lower(trim(implementer_email)) as email_normalised,
        cast(null as {{ text_type() }}) as person_id,
        pseudonym({{ normalised_name('implementer_name') }}) as name_key,
        _file_id
    from source
),

linked as (
    select
        k.change_number,
        k.cluster,
        k.change_type,
        {{ person_link_columns() }},
        k.requested_at,
        k.planned_start,
        k.planned_end,
        k.actual_start,
        k.actual_end,
        k.close_code,
        k.caused_incidents,
        k._file_id
    from keyed as k
    {{ person_link_joins('k') }}
),

final as (
    select
        change_number,
        cluster,
        change_type,
        person_key as implementer_key,
        link_method,
        requested_at,
        planned_start,
        planned_end,
        actual_start,
        actual_end,
        close_code,
        caused_incidents,
        _file_id
    from linked
)

select * from final
