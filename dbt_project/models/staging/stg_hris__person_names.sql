-- Link table from a keyed pseudonym of the full name to person_key, for incident tools that
-- list responders by name only. Names themselves never leave raw. A name two people share is
-- marked ambiguous and never used to link (a wrong link is worse than none).
with employees as (
    {{ current_rows('employees', ['employee_id', 'hire_date']) }}
),

named as (
    select distinct
        employee_id,
        pseudonym({{ normalised_name("first_name || ' ' || last_name") }}) as name_key
    from employees
    where first_name is not null and last_name is not null
),

grouped as (
    select
        name_key,
        min(employee_id) as employee_id,
        count(distinct employee_id) as people
    from named
    group by name_key
),

final as (
    select
        name_key,
        case when people = 1 then pseudonym(employee_id) end as person_key,
        people > 1 as is_ambiguous
    from grouped
)

select * from final
