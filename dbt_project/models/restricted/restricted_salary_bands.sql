{{ config(alias='salary_bands') }}

-- Pay against the level's salary band at each quarter end, by skill level and role family:
-- in-scope people on the quarter-end day with a known skill level (the people marts.level_mix
-- counts that day) and the annual salary of the job record in force that day. The salary is
-- read from the raw job history here and nowhere else (staging leaves it behind); only these
-- aggregates leave this model. Quarters whose end lies after the as-of date are left out.
-- The current job records are staging's (stg_hris__job_history, pseudonymised once there); the
-- salary of each is read from the raw row it comes from, found by its delivery and line.
with pay as (
    select
        j.person_key,
        j.effective_date,
        r.annual_salary_usd
    from {{ ref('stg_hris__job_history') }} as j
    inner join {{ source('raw', 'job_history') }} as r
        on r._file_id = j._file_id and r._line = j._line
),

history as (
    select * from {{ ref('int_person_history') }}
    where in_scope and skill_level is not null
),

months as (
    select * from {{ ref('int_months') }}
),

levels as (
    select * from {{ ref('skill_levels') }}
),

bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

quarter_ends as (
    select m.month_end as quarter_end
    from months as m
    cross join bounds as b
    where
        {{ date_part_of('month', 'm.month') }} in (3, 6, 9, 12)
        and m.month_end <= b.as_of_date
),

people as (
    select
        q.quarter_end,
        h.person_key,
        h.skill_level,
        coalesce(h.role_family, 'unknown') as role_family,
        h.job_effective_date
    from quarter_ends as q
    inner join history as h
        on q.quarter_end between h.valid_from and h.valid_to
),

-- the job record in force on the quarter end is the one the history interval holding that day
-- comes from (int_person_history.job_effective_date)
people_pay as (
    select
        p.quarter_end,
        p.person_key,
        p.skill_level,
        p.role_family,
        j.annual_salary_usd as annual_pay_usd,
        l.salary_min_usd as band_low_usd,
        l.salary_max_usd as band_high_usd
    from people as p
    left join pay as j
        on
            j.person_key = p.person_key
            and j.effective_date = p.job_effective_date
    left join levels as l
        on l.skill_level = p.skill_level
),

final as (
    select
        quarter_end,
        skill_level,
        role_family,
        count(*) as headcount,
        count(annual_pay_usd) as headcount_with_pay,
        {{ quantile_of('annual_pay_usd', 0.25) }} as pay_p25_usd,
        {{ median_of('annual_pay_usd') }} as pay_median_usd,
        {{ quantile_of('annual_pay_usd', 0.75) }} as pay_p75_usd,
        min(annual_pay_usd) = max(annual_pay_usd) as pay_without_spread,
        {{ any_value_of('band_low_usd') }} as band_low_usd,
        {{ any_value_of('band_high_usd') }} as band_high_usd,
        {{ divide(
            'count(case when annual_pay_usd < band_low_usd then 1 end)',
            'nullif(count(annual_pay_usd), 0)'
        ) }} as share_below_band,
        {{ divide(
            'count(case when annual_pay_usd > band_high_usd then 1 end)',
            'nullif(count(annual_pay_usd), 0)'
        ) }} as share_above_band,
        {{ median_of(divide('annual_pay_usd', '(band_low_usd + band_high_usd) / 2')) }} as compa_ratio_median,
        count(*) >= {{ min_group_size() }} as group_size_ok
    from people_pay
    group by quarter_end, skill_level, role_family
)

select * from final
