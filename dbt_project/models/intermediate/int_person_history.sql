-- Effective-dated person history: one row per interval [valid_from, valid_to] in which the
-- person is employed (inside a spell) with one job record. Job records never overlap (each
-- lasts until the next) and spells never overlap, so an as-of join `d between valid_from and
-- valid_to` returns at most one row per person: no fan-out.
--
-- Only the employees export is required. A person without any job record gets one interval per
-- spell with unknown attributes (segments show 'unknown'). When no job history was delivered at
-- all, the division scope cannot be applied and every employee counts (the run summary and the
-- report say so); when it was delivered, a person missing from it is out of scope.
with jobs as (
    select * from {{ ref('stg_hris__job_history') }}
),

spells as (
    select * from {{ ref('int_employment_spells') }}
),

job_intervals as (
    select
        *,
        coalesce(
            lead(effective_date) over (partition by person_key order by effective_date) - 1,
            date '9999-12-31'
        ) as job_valid_to,
        lag(effective_date) over (partition by person_key order by effective_date) as previous_effective_date
    from jobs
),

joined as (
    select
        j.person_key,
        s.spell_number,
        greatest(j.effective_date, s.hire_date) as valid_from,
        least(j.job_valid_to, s.spell_end) as valid_to,
        s.hire_date,
        s.spell_end,
        j.division,
        j.team,
        j.role_family,
        j.skill_level,
        j.site,
        j.manager_key,
        j.employment_type,
        j.fte,
        j.change_reason,
        j.effective_date as job_effective_date,
        -- the spell's first job record: the one in force on the hire date, or the person's
        -- first record (a record in force before it would overlap the spell too)
        j.effective_date <= s.hire_date or j.previous_effective_date is null as first_of_spell
    from job_intervals as j
    inner join spells as s
        on
            s.person_key = j.person_key
            and j.effective_date <= s.spell_end
            and j.job_valid_to >= s.hire_date
),

job_history_delivered as (
    select count(*) > 0 as delivered from jobs
),

without_jobs as (
    select
        s.person_key,
        s.spell_number,
        s.hire_date as valid_from,
        s.spell_end as valid_to,
        s.hire_date,
        s.spell_end,
        null::{{ text_type() }} as division,
        null::{{ text_type() }} as team,
        null::{{ text_type() }} as role_family,
        null::integer as skill_level,
        null::{{ text_type() }} as site,
        null::{{ text_type() }} as manager_key,
        null::{{ text_type() }} as employment_type,
        null::{{ double_type() }} as fte,
        null::{{ text_type() }} as change_reason,
        null::date as job_effective_date
    from spells as s
    where not exists (select 1 from jobs as j where j.person_key = s.person_key)
),

-- A spell that starts before its first job record takes the first record of the spell from its
-- hire date (HRIS often dates the job record a few days after the hire).
final as (
    select
        person_key,
        spell_number,
        case
            when first_of_spell
                then hire_date
            else valid_from
        end as valid_from,
        valid_to,
        hire_date,
        spell_end,
        division,
        team,
        role_family,
        skill_level,
        site,
        manager_key,
        employment_type,
        fte,
        change_reason,
        job_effective_date,
        division = {{ scope_division() }}
        and employment_type in {{ included_employment_types() }} as in_scope
    from joined
),

unknown_jobs as (
    select
        w.*,
        not d.delivered as in_scope
    from without_jobs as w
    cross join job_history_delivered as d
)

-- both branches list the same columns in the same order
select * from final
union all
select * from unknown_jobs
