-- Link table from a keyed pseudonym of the full name to person_key, for incident tools that
-- list responders by name only. Names themselves never leave raw. A name two people share is
-- marked ambiguous and never used to link (a wrong link is worse than none).
-- The current employment spells are staging's (stg_hris__employees); the name of each is read
-- from the raw row it comes from. People are counted per normalised name, and only the names
-- and the people of unique names are pseudonymised (far fewer than the spells).
-- A leaver the retention policy pseudonymised bears a retained name ("retained-<hash> ..."),
-- and raw.retained_names keeps the pseudonym of the name it replaced: people are counted per
-- original name, so a name shared with a retained leaver stays ambiguous (and so does the
-- leaver's retained name), as it was before the policy ran.
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
        pseudonym(name_normalised) as name_key
    from spells
    group by name_normalised
),

retained as (
    select
        retained_name,
        min(name_key) as original_key
    from {{ source('raw', 'retained_names') }}
    group by retained_name
),

-- each name's original name: the one it replaced for a retained name, else itself
originals as (
    select
        g.name_normalised,
        g.name_key,
        g.person_key,
        coalesce(r.original_key, g.name_key) as original_key
    from grouped as g
    left join retained as r
        on g.name_normalised = r.retained_name
),

counted as (
    select
        o.original_key,
        count(distinct s.employee_id) as people
    from spells as s
    inner join originals as o
        on s.name_normalised = o.name_normalised
    group by o.original_key
),

final as (
    select
        o.name_key,
        case when c.people = 1 then o.person_key end as person_key,
        c.people > 1 as is_ambiguous
    from originals as o
    inner join counted as c
        on o.original_key = c.original_key
)

select * from final
