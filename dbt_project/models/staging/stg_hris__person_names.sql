-- Link table from a keyed pseudonym of the full name to person_key, for incident tools that
-- list responders by name only. Names themselves never leave raw. A name two people share is
-- marked ambiguous and never used to link (a wrong link is worse than none).
-- The current employment spells are staging's (stg_hris__employees); the name of each is read
-- from the raw row it comes from. People are counted per normalised name, and only the names
-- and the people of unique names are pseudonymised (far fewer than the spells).
with spells as (
    select
        s.person_key,
        r.employee_id,
        {{ normalised_name("r.first_name || ' ' || r.last_name") }} as name_normalised
    from {{ ref('stg_hris__employees') }} as s
    inner join {{ source('raw', 'employees') }} as r
        on r._file_id = s._file_id and r._line = s._line
    where r.first_name is not null and r.last_name is not null
),

grouped as (
    select
        name_normalised,
        min(person_key) as person_key,
        count(distinct employee_id) as people
    from spells
    group by name_normalised
),

final as (
    select
        pseudonym(name_normalised) as name_key,
        case when people = 1 then person_key end as person_key,
        people > 1 as is_ambiguous
    from grouped
)

select * from final
