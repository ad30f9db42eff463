-- Employment spells: one row per (person, hire). Names and e-mails stay behind in raw.
{{ incremental_staging(['person_key', 'hire_date']) }}

with source as (
    {{ current_rows('employees', ['employee_id', 'hire_date']) }}
),

renamed as (
    select
        -- ids
        pseudonym(employee_id) as person_key,
        -- dates
        hire_date,
        coalesce(original_hire_date, hire_date) as original_hire_date,
        termination_date,
        -- attributes
        lower(trim(termination_type)) as termination_type,
        lower(trim(termination_reason)) as termination_reason,
        regrettable,
        -- the delivery and the line the row comes from (raw.manifest.file_id, raw line)
        _file_id,
        _line
    from source
)

select * from renamed
