-- The only place work e-mails leave raw: the link table from normalised e-mail to person_key.
-- When an address was reused by two employee ids, the person of the most recent spell owns it.
with employees as (
    {{ current_rows('employees', ['employee_id', 'hire_date']) }}
),

normalised as (
    select
        employee_id,
        lower(trim(work_email)) as email_normalised,
        hire_date
    from employees
    where work_email is not null
),

ranked as (
    select
        email_normalised,
        employee_id,
        row_number() over (
            partition by email_normalised order by hire_date desc, employee_id asc
        ) as recency
    from normalised
),

final as (
    select
        email_normalised,
        pseudonym(employee_id) as person_key
    from ranked
    where recency = 1
)

select * from final
