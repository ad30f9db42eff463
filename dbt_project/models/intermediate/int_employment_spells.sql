-- Employment spells with rehires: a rehire is a new spell (spell_number > 1) and each spell
-- ends in at most one separation, so a leaver is never counted twice. Termination dates after
-- the as-of date are treated as not yet happened.
with spells as (
    select * from {{ ref('stg_hris__employees') }}
),

bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

final as (
    select
        s.person_key,
        row_number() over (partition by s.person_key order by s.hire_date) as spell_number,
        s.hire_date,
        s.original_hire_date,
        case when s.termination_date <= b.as_of_date then s.termination_date end as termination_date,
        coalesce(
            case when s.termination_date <= b.as_of_date then s.termination_date end,
            date '9999-12-31'
        ) as spell_end,
        case when s.termination_date <= b.as_of_date then coalesce(s.termination_type, 'other') end as separation_type,
        case when s.termination_date <= b.as_of_date then coalesce(s.regrettable, false) end as regrettable,
        s.termination_reason
    from spells as s
    cross join bounds as b
)

select
    *,
    spell_number > 1 as is_rehire
from final
