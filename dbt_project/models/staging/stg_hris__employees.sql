-- Employment spells: one row per (person, hire). Names and e-mails stay behind in raw.
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
        regrettable
    from source
)

select * from renamed
