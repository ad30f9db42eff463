-- Filled backfill requisitions of in-scope leavers, each with the separation it replaces, the
-- leaver's level and the days the position stood empty (per person: read by
-- restricted_replacement_cost only, never published).
with requisitions as (
    select * from {{ ref('stg_recruiting__requisitions') }}
    where replaced_person_key is not null and status = 'filled'
),

separations as (
    select
        person_key,
        spell_number,
        stint_to as termination_date,
        separation_type
    from {{ ref('int_scope_stints') }}
    where ends_with_separation
),

-- a leaver who left twice (a rehire) is matched to the separation nearest the opening day
matched as (
    select
        r.requisition_id,
        r.replaced_person_key,
        r.hired_person_key,
        r.level as requisition_level,
        r.opened_on,
        r.filled_on,
        r.agency_fee_usd,
        r.other_hiring_cost_usd,
        s.spell_number,
        s.termination_date,
        s.separation_type,
        row_number() over (
            partition by r.requisition_id
            order by abs({{ days_between('r.opened_on', 's.termination_date') }}), s.termination_date
        ) as nearest
    from requisitions as r
    inner join separations as s on r.replaced_person_key = s.person_key
),

-- the new hire's first day: their spell that starts on or after the opening (else the day the
-- offer was accepted)
starts as (
    select
        m.requisition_id,
        min(e.hire_date) as hire_date
    from matched as m
    inner join {{ ref('int_employment_spells') }} as e
        on m.hired_person_key = e.person_key and e.hire_date >= m.opened_on
    where m.nearest = 1
    group by m.requisition_id
),

levels as (
    select
        m.requisition_id,
        h.skill_level
    from matched as m
    inner join {{ ref('int_person_history') }} as h
        on
            m.replaced_person_key = h.person_key
            and m.spell_number = h.spell_number
            and m.termination_date between h.valid_from and h.valid_to
    where m.nearest = 1
),

final as (
    select
        m.requisition_id,
        m.replaced_person_key,
        m.separation_type,
        m.termination_date,
        m.opened_on,
        m.filled_on,
        coalesce(s.hire_date, m.filled_on) as vacancy_ends_on,
        coalesce(l.skill_level, m.requisition_level) as level,
        coalesce(m.agency_fee_usd, 0) as agency_fee_usd,
        coalesce(m.other_hiring_cost_usd, 0) as other_hiring_cost_usd,
        coalesce(m.agency_fee_usd, 0) + coalesce(m.other_hiring_cost_usd, 0) as hiring_cost_usd,
        greatest(
            0, {{ days_between('m.termination_date', 'coalesce(s.hire_date, m.filled_on)') }} - 1
        ) as days_vacant,
        {{ days_between('m.opened_on', 'm.filled_on') }} as days_to_fill
    from matched as m
    left join starts as s on m.requisition_id = s.requisition_id
    left join levels as l on m.requisition_id = l.requisition_id
    where m.nearest = 1
)

select * from final
