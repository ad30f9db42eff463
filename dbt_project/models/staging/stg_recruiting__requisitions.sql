-- Requisitions of the applicant-tracking system, one row per requisition; the leaver a
-- backfill replaces and the person hired are kept as keyed pseudonyms only.
with source as (
    {{ current_rows('requisitions', ['requisition_id']) }}
),

renamed as (
    select
        requisition_id,
        pseudonym(nullif(trim(replaces_employee_id), '')) as replaced_person_key,
        pseudonym(nullif(trim(hired_employee_id), '')) as hired_person_key,
        level,
        opened_on,
        filled_on,
        agency_fee_usd,
        other_hiring_cost_usd,
        lower(trim(status)) as status,
        _file_id
    from source
)

select * from renamed
