-- Who led each capacity project: one row per project and person named in led_by (e-mails or
-- HRIS employee ids) or led_by_name (full names), linked to person_key; names and e-mails stop
-- here.
with source as (
    {{ current_rows('capacity_changes', ['project_id']) }}
),

by_id as (
    select
        project_id,
        {{ unnest_list(split_list('led_by')) }} as lead
    from source
    where led_by is not null
),

by_name as (
    select
        project_id,
        {{ unnest_list(split_list('led_by_name')) }} as lead_name
    from source
    where led_by is null and led_by_name is not null
),

keyed as (
    select
        project_id,
        lower(lead) as email_normalised,
        lead as person_id,
        cast(null as {{ text_type() }}) as name_key
    from by_id
    where lead <> ''
    union all
    select
        project_id,
        cast(null as {{ text_type() }}) as email_normalised,
        cast(null as {{ text_type() }}) as person_id,
        pseudonym({{ normalised_name('lead_name') }}) as name_key
    from by_name
    where lead_name <> ''
),

final as (
    select
        k.project_id,
        {{ person_link_columns() }}
    from keyed as k
    {{ person_link_joins('k') }}
)

select distinct * from final
