-- Effective-dated job records. Salary stays behind in raw; manager becomes a pseudonym too.
{{ incremental_staging(['person_key', 'effective_date']) }}

with source as (
    {{ current_rows('job_history', ['employee_id', 'effective_date']) }}
),

renamed as (
    select
        -- ids
        pseudonym(employee_id) as person_key,
        pseudonym(manager_id) as manager_key,
        -- dates
        effective_date,
        -- attributes
        division,
        team,
        lower(replace(trim(role_family), ' ', '_')) as role_family,
        job_title,
        skill_level::integer as skill_level,
        site,
        lower(trim(employment_type)) as employment_type,
        fte,
        lower(trim(change_reason)) as change_reason,
        -- the delivery and the line the row comes from (raw.manifest.file_id, raw line)
        _file_id,
        _line
    from source
)

select * from renamed
