-- Person-month panel of in-scope engineers with exposure: one row per (person_key, month) in
-- which the person was in scope on at least one day. Attributes and certification status are
-- taken on the person's last in-scope day of the month (the month end for everyone still
-- there). exposure_months = in-scope days / days in the month.
with history as (
    select * from {{ ref('int_person_history') }}
    where in_scope
),

months as (
    select * from {{ ref('int_months') }}
),

stints as (
    select * from {{ ref('int_scope_stints') }}
),

cert_intervals as (
    select * from {{ ref('int_certification_intervals') }}
),

responses as (
    select * from {{ ref('int_incident_responses') }}
),

fleet as (
    select * from {{ ref('int_fleet_months') }}
),

bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

month_overlaps as (
    select
        h.*,
        m.month,
        m.month_end,
        m.days_in_month,
        least(h.valid_to, m.month_end) as last_day,
        {{ days_between('greatest(h.valid_from, m.month)', 'least(h.valid_to, m.month_end)') }} + 1 as days
    from history as h
    inner join months as m
        on
            h.valid_from <= m.month_end
            and h.valid_to >= m.month
),

person_months as (
    select
        person_key,
        month,
        {{ any_value_of('month_end') }} as month_end,
        {{ divide('sum(days)', any_value_of('days_in_month')) }} as exposure_months,
        max(last_day) as measured_on,
        {{ value_at_max('team', 'valid_from') }} as team,
        {{ value_at_max('role_family', 'valid_from') }} as role_family,
        {{ value_at_max('skill_level', 'valid_from') }} as skill_level,
        {{ value_at_max('site', 'valid_from') }} as site,
        {{ value_at_max('fte', 'valid_from') }} as fte,
        {{ value_at_max('hire_date', 'valid_from') }} as spell_hire_date
    from month_overlaps
    group by person_key, month
),

first_cert as (
    select
        person_key,
        date_trunc('month', min(valid_from))::date as first_certified_month
    from cert_intervals
    where valid_from <= (select b.as_of_date from bounds as b)
    group by person_key
),

episodes as (
    select * from {{ ref('int_programme_episodes') }}
),

-- the month the engineer first enrolled in a course leading to a certification, among the
-- preparations that began on or before the first award (the statistics keep the months from
-- three before it up to the first certification out of the reference: preparation, and the
-- spell that may have prompted it)
first_preparation as (
    select
        e.person_key,
        date_trunc('month', min(e.first_enrolled_on))::date as first_preparation_month
    from episodes as e
    inner join (
        select
            person_key,
            min(valid_from) as first_award_on
        from cert_intervals
        group by person_key
    ) as a
        on a.person_key = e.person_key
    where e.first_enrolled_on <= a.first_award_on
    group by e.person_key
),

certs_on_date as (
    select
        pm.person_key,
        pm.month,
        {{ sorted_list('c.certification_code', distinct=true) }} as active_certification_codes,
        count(distinct case when c.valid_to between pm.month_end + 1 and pm.month_end + 90 then c.certification_code end) as expiring_next_90d
    from person_months as pm
    inner join cert_intervals as c
        on
            c.person_key = pm.person_key
            and c.valid_from <= pm.measured_on
            and (c.valid_to is null or c.valid_to >= pm.measured_on)
    group by pm.person_key, pm.month
),

separations as (
    select
        person_key,
        date_trunc('month', stint_to)::date as month,
        {{ value_at_max('separation_type', 'stint_to') }} as separation_type,
        count(*) as separations
    from stints
    where ends_with_separation
    group by person_key, date_trunc('month', stint_to)::date
),

incident_counts as (
    select
        person_key,
        month,
        count(*) as incidents
    from responses
    group by person_key, month
),

final as (
    select
        -- keys
        pm.person_key,
        pm.month,
        -- attributes (on the last in-scope day of the month)
        pm.team,
        pm.role_family,
        pm.skill_level,
        pm.site,
        pm.fte,
        {{ full_months_between('pm.spell_hire_date', 'pm.measured_on') }} as tenure_months,
        pm.measured_on = pm.month_end as active_at_month_end,
        -- certification
        c.person_key is not null as is_certified,
        coalesce(c.active_certification_codes, {{ empty_text_list() }}) as active_certification_codes,
        coalesce(c.expiring_next_90d, 0) as expiring_next_90d,
        f.first_certified_month,
        {{ full_months_between('f.first_certified_month', 'pm.month') }} as months_since_first_cert,
        case when f.first_certified_month is not null then fp.first_preparation_month end as first_preparation_month,
        -- outcomes and exposure
        coalesce(i.incidents, 0) as incidents,
        pm.exposure_months,
        s.person_key is not null as separated,
        s.separation_type,
        fl.gpu_count as fleet_gpus,
        fl.fleet_size_class
    from person_months as pm
    left join certs_on_date as c
        on
            c.person_key = pm.person_key
            and c.month = pm.month
    left join first_cert as f
        on f.person_key = pm.person_key
    left join first_preparation as fp
        on fp.person_key = pm.person_key
    left join separations as s
        on
            s.person_key = pm.person_key
            and s.month = pm.month
    left join incident_counts as i
        on
            i.person_key = pm.person_key
            and i.month = pm.month
    left join fleet as fl
        on
            fl.cluster = pm.team
            and fl.month = pm.month
)

select * from final
