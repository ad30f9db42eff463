-- Continuous stretches in which a person is in scope (the analysed division, an included
-- employment type), merged across job changes. A stint starts with a hire or a transfer into
-- scope and ends with a separation, a transfer out, or is still open.
with history as (
    select * from {{ ref('int_person_history') }}
    where in_scope
),

spells as (
    select * from {{ ref('int_employment_spells') }}
),

flagged as (
    select
        *,
        case
            when valid_from = lag(valid_to) over (partition by person_key, spell_number order by valid_from) + 1
                then 0
            else 1
        end as is_new_stint
    from history
),

numbered as (
    select
        *,
        sum(is_new_stint) over (partition by person_key order by valid_from rows unbounded preceding) as stint_number
    from flagged
),

stints as (
    select
        person_key,
        stint_number,
        {{ any_value_of('spell_number') }} as spell_number,
        min(valid_from) as stint_from,
        max(valid_to) as stint_to
    from numbered
    group by person_key, stint_number
),

final as (
    select
        t.person_key,
        t.stint_number,
        t.spell_number,
        t.stint_from,
        t.stint_to,
        t.stint_from = s.hire_date as starts_with_hire,
        s.termination_date is not null and t.stint_to = s.termination_date as ends_with_separation,
        case when s.termination_date is not null and t.stint_to = s.termination_date then s.separation_type end as separation_type,
        case when s.termination_date is not null and t.stint_to = s.termination_date then s.regrettable end as regrettable
    from stints as t
    inner join spells as s
        on
            s.person_key = t.person_key
            and s.spell_number = t.spell_number
)

select * from final
