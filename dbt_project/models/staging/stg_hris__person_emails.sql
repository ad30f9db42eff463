-- The only place work e-mails leave raw: the link table from normalised e-mail to person_key.
-- When an address was reused by two employee ids, the person of the most recent spell owns it.
-- The current employment spells are staging's (stg_hris__employees, pseudonymised once there);
-- the e-mail and the employee id of each are read from the raw row it comes from.
with spells as (
    select
        s.person_key,
        s.hire_date,
        r.employee_id,
        lower(trim(r.work_email)) as email_normalised
    from {{ ref('stg_hris__employees') }} as s
    inner join {{ source('raw', 'employees') }} as r
        on r._file_id = s._file_id and r._line = s._line
    where r.work_email is not null
),

ranked as (
    select
        email_normalised,
        person_key,
        row_number() over (
            partition by email_normalised order by hire_date desc, employee_id asc
        ) as recency
    from spells
),

final as (
    select
        email_normalised,
        person_key
    from ranked
    where recency = 1
)

select * from final
