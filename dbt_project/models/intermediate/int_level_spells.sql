-- Level spells: continuous in-scope stretches at one skill level. One row per
-- (person_key, level_from). The stretches are clipped to the data window [first_month,
-- as-of date] (int_calendar_bounds): history before the first HRIS delivery only holds the
-- people who stayed until then. The start is observed when the level began inside the window on
-- the stretch's first day (a hire at the level, or a level change); a stretch that starts on the
-- window's first day with the level held before, or with a transfer into scope at a level held
-- outside it, has an unknown start. months_in_level = (level_to - level_from + 1) days / 30.4375;
-- the band (seed skill_levels: experience_min_months / experience_max_months) is read as how
-- long a level takes.
with history as (
    select * from {{ ref('int_person_history') }}
),

spells as (
    select * from {{ ref('int_employment_spells') }}
),

levels as (
    select * from {{ ref('skill_levels') }}
),

bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

-- every interval of a spell (in scope or not), where its level run began (a run is a stretch of
-- the spell at one level, whatever the scope), and the interval after it. Spells never overlap,
-- so in valid_from order a person's intervals hold each spell together: one ordering of the
-- person serves every window (a previous interval of another spell starts a run).
ordered as (
    select
        h.*,
        case
            when
                lag(h.spell_number) over (partition by h.person_key order by h.valid_from) = h.spell_number
                and lag(h.skill_level) over (partition by h.person_key order by h.valid_from) = h.skill_level
                then 0
            else 1
        end as is_new_run,
        lead(h.valid_from) over (partition by h.person_key order by h.valid_from) as next_valid_from,
        lead(h.in_scope) over (partition by h.person_key order by h.valid_from) as next_in_scope,
        lead(h.skill_level) over (partition by h.person_key order by h.valid_from) as next_skill_level,
        lead(h.spell_number) over (partition by h.person_key order by h.valid_from) as next_spell_number
    from history as h
    cross join bounds as b
    where h.valid_from <= b.as_of_date
),

-- the first day of the interval's run: the latest run start so far (valid_from grows)
with_next as (
    select
        *,
        max(case when is_new_run = 1 then valid_from end) over (
            partition by person_key order by valid_from rows unbounded preceding
        ) as run_from
    from ordered
),

-- in-scope intervals with a level; a new stretch starts unless the previous in-scope interval
-- of the same spell ends the day before at the same level
flagged as (
    select
        *,
        case
            when
                lag(valid_to) over (partition by person_key order by valid_from) + 1 = valid_from
                and lag(spell_number) over (partition by person_key order by valid_from) = spell_number
                and lag(skill_level) over (partition by person_key order by valid_from) = skill_level
                then 0
            else 1
        end as is_new_stretch
    from with_next
    where in_scope and skill_level is not null
),

stretch_numbered as (
    select
        *,
        sum(is_new_stretch) over (partition by person_key order by valid_from rows unbounded preceding)
            as stretch_number,
        row_number() over (partition by person_key order by valid_from) as interval_number
    from flagged
),

stretch_bounds as (
    select
        person_key,
        stretch_number,
        min(interval_number) as first_interval,
        max(interval_number) as last_interval
    from stretch_numbered
    group by person_key, stretch_number
),

stretches as (
    select
        f.person_key,
        f.spell_number,
        f.skill_level,
        f.role_family,
        f.valid_from as stretch_from,
        f.run_from,
        l.valid_to as stretch_to,
        l.next_valid_from,
        l.next_in_scope,
        l.next_skill_level,
        l.next_spell_number
    from stretch_bounds as s
    inner join stretch_numbered as f
        on
            f.person_key = s.person_key
            and f.interval_number = s.first_interval
    inner join stretch_numbered as l
        on
            l.person_key = s.person_key
            and l.interval_number = s.last_interval
),

classified as (
    select
        s.person_key,
        s.skill_level,
        s.role_family,
        greatest(s.stretch_from, b.first_month) as level_from,
        least(s.stretch_to, b.as_of_date) as level_to,
        s.run_from = s.stretch_from and s.stretch_from >= b.first_month as start_observed,
        case
            when
                s.next_valid_from = s.stretch_to + 1
                and s.next_spell_number = s.spell_number
                and s.next_valid_from <= b.as_of_date
                and s.next_in_scope
                and s.next_skill_level is not null
                then
                    case
                        when s.next_skill_level = s.skill_level + 1 then 'promotion'
                        when s.next_skill_level > s.skill_level + 1 then 'skip'
                        else 'demotion'
                    end
            when
                s.next_valid_from = s.stretch_to + 1
                and s.next_spell_number = s.spell_number
                and s.next_valid_from <= b.as_of_date
                and s.next_in_scope
                then 'level_unknown'
            when sp.termination_date is not null and s.stretch_to = sp.termination_date then 'exit'
            when s.stretch_to >= b.as_of_date then 'open'
            else 'transfer_out'
        end as ended_by,
        s.next_skill_level
    from stretches as s
    cross join bounds as b
    inner join spells as sp
        on
            sp.person_key = s.person_key
            and sp.spell_number = s.spell_number
    where s.stretch_to >= b.first_month
),

final as (
    select
        -- ids
        c.person_key,
        c.skill_level,
        c.role_family,
        -- dates
        c.level_from,
        c.level_to,
        c.start_observed,
        -- how the stretch ended
        c.ended_by,
        case when c.ended_by in ('promotion', 'skip', 'demotion') then c.next_skill_level end as next_level,
        {{ days_as_months(days_between('c.level_from', 'c.level_to') ~ ' + 1') }} as months_in_level,
        -- against the band
        l.experience_min_months as band_min_months,
        l.experience_max_months as band_max_months,
        case
            when
                c.start_observed
                and l.experience_max_months is not null
                and {{ days_between('c.level_from', 'c.level_to') }}
                >= cast(floor(l.experience_max_months * 30.4375) as integer)
                then c.level_from + cast(floor(l.experience_max_months * 30.4375) as integer)
        end as band_exceeded_on,
        case
            when not c.start_observed then null
            when
                c.ended_by in ('promotion', 'skip')
                and {{ days_as_months(days_between('c.level_from', 'c.level_to') ~ ' + 1') }}
                < l.experience_min_months
                then 'faster'
            when
                l.experience_max_months is not null
                and {{ days_between('c.level_from', 'c.level_to') }}
                >= cast(floor(l.experience_max_months * 30.4375) as integer)
                then 'slower'
            else 'within'
        end as outside_band
    from classified as c
    left join levels as l
        on l.skill_level = c.skill_level
)

select * from final
