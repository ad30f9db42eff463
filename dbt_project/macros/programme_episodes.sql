{#- The programme episodes (int_programme_episodes, whose header says what an episode is), as of
    the warehouse's as-of date, or, with complete=true, as of the end of the last complete month
    (int_programme_episodes_complete): then only what was known by that day counts (enrolments,
    attempts and exits after it are left out, and open episodes are censored on it), so the
    table changes when a month closes or a late delivery reaches back, not with every day. That
    table leaves out what an enrolment's later status rewrites (completed, and the fees, hours
    and apprenticeship the costs price: a completion or withdrawal exported today updates an
    August enrolment's charge and hours, and a withdrawal carries no date to cut at); the costs
    read the episodes to date. -#}
{% macro programme_episodes(complete=false) %}
with enrolments as (
    select * from {{ ref('stg_lms__enrolments') }}
    where person_key is not null
),

courses as (
    select * from {{ ref('stg_lms__courses') }}
    where certification_code is not null and certification_code <> ''
),

attempts as (
    select * from {{ ref('stg_lms__certifications') }}
    where person_key is not null
),

catalogue as (
    select * from {{ ref('certification_catalogue') }}
),

history as (
    select * from {{ ref('int_person_history') }}
    where in_scope
),

stints as (
    select * from {{ ref('int_scope_stints') }}
),

spells as (
    select * from {{ ref('int_employment_spells') }}
),

cert_intervals as (
    select * from {{ ref('int_certification_intervals') }}
),

bounds as (
    {%- if complete %}
    -- the end of the last complete month: the day before the latest month of the panel
    select max(month) - 1 as as_of_date from {{ ref('int_engineer_months') }}
    {%- else %}
    select * from {{ ref('int_calendar_bounds') }}
    {%- endif %}
),

track_enrolments as (
    select
        e.enrolment_id,
        e.person_key,
        c.certification_code,
        coalesce(nullif(c.programme_type, ''), 'unknown') as programme_type,
        case coalesce(nullif(c.programme_type, ''), 'unknown')
            when 'bootcamp' then 1
            when 'vendor_partnership' then 2
            when 'apprenticeship' then 3
            when 'internal' then 4
            when 'online' then 5
            else 6
        end as programme_priority,
        e.enrolled_on,
        e.status in ('completed', 'passed') as completed,
        coalesce(e.charged_usd, c.list_price_usd, 0) as fees_usd,
        coalesce(c.list_price_usd, e.charged_usd, 0) as list_price_usd,
        coalesce(
            e.hours_spent, case when e.status in ('completed', 'passed') then c.nominal_hours end, 0
        ) as training_hours
    from enrolments as e
    inner join courses as c
        on c.course_id = e.course_id
    where e.enrolled_on is not null
),

-- the first enrolment of each track on a day the person was in scope
in_scope_enrolments as (
    select
        t.person_key,
        t.certification_code,
        t.enrolled_on
    from track_enrolments as t
    inner join history as h
        on
            h.person_key = t.person_key
            and t.enrolled_on between h.valid_from and h.valid_to
    cross join bounds as b
    where t.enrolled_on <= b.as_of_date
),

starts as (
    select
        person_key,
        certification_code,
        min(enrolled_on) as first_enrolled_on
    from in_scope_enrolments
    group by person_key, certification_code
),

-- not a refresher: no active certification of the code on the start day
new_starts as (
    select s.*
    from starts as s
    where not exists (
        select 1
        from cert_intervals as c
        where
            c.person_key = s.person_key
            and c.certification_code = s.certification_code
            and c.valid_from <= s.first_enrolled_on
            and (c.valid_to is null or c.valid_to >= s.first_enrolled_on)
    )
),

entry as (
    select
        s.person_key,
        s.certification_code,
        s.first_enrolled_on,
        h.skill_level as skill_level_at_entry,
        h.role_family as role_family_at_entry,
        h.hire_date,
        h.spell_number,
        st.stint_to,
        {%- if complete %}
        case when sp.termination_date <= b.as_of_date then sp.termination_date end as exit_on,
        case when sp.termination_date <= b.as_of_date then sp.separation_type end as exit_type
        {%- else %}
        sp.termination_date as exit_on,
        sp.separation_type as exit_type
        {%- endif %}
    from new_starts as s
    {%- if complete %}
    cross join bounds as b
    {%- endif %}
    inner join history as h
        on
            h.person_key = s.person_key
            and s.first_enrolled_on between h.valid_from and h.valid_to
    inner join stints as st
        on
            st.person_key = s.person_key
            and s.first_enrolled_on between st.stint_from and st.stint_to
    inner join spells as sp
        on
            sp.person_key = h.person_key
            and sp.spell_number = h.spell_number
),

-- the first pass of the code from the start until the person left scope or the as-of date
first_pass as (
    select
        e.person_key,
        e.certification_code,
        min(a.exam_date) as certified_on
    from entry as e
    cross join bounds as b
    inner join attempts as a
        on
            a.person_key = e.person_key
            and a.certification_code = e.certification_code
            and a.result = 'pass'
            and a.exam_date >= e.first_enrolled_on
            and a.exam_date <= least(e.stint_to, b.as_of_date)
    group by e.person_key, e.certification_code
),

followed as (
    select
        e.*,
        p.certified_on,
        coalesce(p.certified_on, least(e.stint_to, b.as_of_date)) as followed_until,
        b.as_of_date
    from entry as e
    cross join bounds as b
    left join first_pass as p
        on
            p.person_key = e.person_key
            and p.certification_code = e.certification_code
),

programme as (
    select
        f.person_key,
        f.certification_code,
        min(t.programme_priority) as programme_priority
    from followed as f
    inner join track_enrolments as t
        on
            t.person_key = f.person_key
            and t.certification_code = f.certification_code
            and t.enrolled_on >= f.first_enrolled_on
            and t.enrolled_on < f.first_enrolled_on + 90
            {%- if complete %}
            and t.enrolled_on <= f.as_of_date
            {%- endif %}
    group by f.person_key, f.certification_code
),

episode_enrolments as (
    select
        f.person_key,
        f.certification_code,
        count(*) as enrolments
        {%- if not complete %},
        max(case when t.completed then 1 else 0 end) = 1 as completed,
        max(case when t.programme_type = 'apprenticeship' then 1 else 0 end) = 1 as apprenticeship,
        {{ exact_sum('t.fees_usd') }} as fees_usd,
        {{ exact_sum('t.list_price_usd') }} as list_price_usd,
        {{ exact_sum('t.training_hours') }} as training_hours
        {%- endif %}
    from followed as f
    inner join track_enrolments as t
        on
            t.person_key = f.person_key
            and t.certification_code = f.certification_code
            and t.enrolled_on between f.first_enrolled_on and f.followed_until
    group by f.person_key, f.certification_code
),

episode_attempts as (
    select
        f.person_key,
        f.certification_code,
        a.attempt_id,
        a.exam_date,
        a.result,
        coalesce(a.exam_fee_usd, k.exam_fee_usd, 0) as exam_fee_usd,
        row_number() over (
            partition by f.person_key, f.certification_code order by a.exam_date, a.attempt_id
        ) as attempt_number
    from followed as f
    inner join attempts as a
        on
            a.person_key = f.person_key
            and a.certification_code = f.certification_code
            and a.exam_date between f.first_enrolled_on and f.followed_until
    left join catalogue as k
        on k.code = a.certification_code
),

attempt_summary as (
    select
        person_key,
        certification_code,
        count(*) as attempts,
        min(exam_date) as first_attempt_on,
        max(case when attempt_number = 1 and result = 'pass' then 1 else 0 end) = 1 as first_attempt_passed,
        {{ exact_sum('exam_fee_usd') }} as exam_fees_usd
    from episode_attempts
    group by person_key, certification_code
),

final as (
    select
        -- ids
        f.person_key,
        f.certification_code,
        -- programme and cohort
        case p.programme_priority
            when 1 then 'bootcamp'
            when 2 then 'vendor_partnership'
            when 3 then 'apprenticeship'
            when 4 then 'internal'
            when 5 then 'online'
            else 'unknown'
        end as programme_type,
        f.first_enrolled_on,
        date_trunc('quarter', f.first_enrolled_on)::date as cohort_quarter,
        -- who was sent
        f.skill_level_at_entry,
        f.role_family_at_entry,
        {{ days_as_months(days_between('f.hire_date', 'f.first_enrolled_on')) }} as tenure_months_at_entry,
        -- preparation
        coalesce(en.enrolments, 0) as enrolments,
        {%- if not complete %}
        coalesce(en.completed, false) as completed,
        {%- endif %}
        coalesce(att.attempts, 0) as attempts,
        att.first_attempt_on,
        att.first_attempt_passed,
        -- outcome and follow-up
        f.certified_on is not null as certified,
        f.certified_on,
        f.followed_until,
        {{ days_as_months(days_between('f.first_enrolled_on', 'f.followed_until')) }} as months_followed,
        {%- if not complete %}
        -- money and time
        coalesce(en.fees_usd, 0) as fees_usd,
        coalesce(en.list_price_usd, 0) as list_price_usd,
        coalesce(att.exam_fees_usd, 0) as exam_fees_usd,
        coalesce(en.training_hours, 0) as training_hours,
        coalesce(en.apprenticeship, false) as apprenticeship,
        {%- endif %}
        -- exits
        coalesce(
            f.exit_type = 'voluntary' and f.exit_on <= {{ add_months_to('f.first_enrolled_on', 12) }}, false
        ) as voluntary_exit_12m,
        {{ add_months_to('f.first_enrolled_on', 12) }} <= f.as_of_date
        or coalesce(f.exit_on <= {{ add_months_to('f.first_enrolled_on', 12) }}, false) as followed_12m,
        f.exit_on,
        f.exit_type
    from followed as f
    left join programme as p
        on
            p.person_key = f.person_key
            and p.certification_code = f.certification_code
    left join episode_enrolments as en
        on
            en.person_key = f.person_key
            and en.certification_code = f.certification_code
    left join attempt_summary as att
        on
            att.person_key = f.person_key
            and att.certification_code = f.certification_code
)

select * from final
{% endmacro %}
