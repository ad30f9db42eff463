{{ config(alias='replacement_cost') }}

-- What replacing one voluntary leaver cost, by its parts, over the whole data window: means
-- over the filled backfill requisitions of in-scope voluntary leavers (int_backfills). The
-- vacancy is priced at the leaver's level's band midpoint (seed skill_levels, the level
-- ladder), never at anyone's salary. The ramp-up of the new hire is not measured here: the ROI
-- names it as an assumption (pipelines/lib/roi/README.md).
with backfills as (
    select
        b.*,
        (l.salary_min_usd + l.salary_max_usd) / 2.0 as level_pay_usd
    from {{ ref('int_backfills') }} as b
    inner join {{ ref('skill_levels') }} as l on b.level = l.skill_level
    where b.separation_type = 'voluntary'
),

per_backfill as (
    select
        requisition_id,
        hiring_cost_usd,
        days_vacant,
        days_vacant * level_pay_usd / 365.0 as vacancy_cost_usd,
        level_pay_usd,
        hiring_cost_usd + days_vacant * level_pay_usd / 365.0 as measured_cost_usd
    from backfills
),

parts as (
    select
        'hiring_cost' as component,
        1 as component_order,
        'Hiring cost: agency fee and advertising/assessment per filled backfill' as label,
        'requisitions (agency_fee_usd + other_hiring_cost_usd)' as source,
        avg(hiring_cost_usd) as amount_usd,
        stddev_samp(hiring_cost_usd) as sd_usd,
        cast(null as double) as mean_days,
        count(*) as backfills
    from per_backfill
    union all
    select
        'vacancy_cost',
        2,
        'Vacancy: days the position stood empty x the level''s daily pay',
        'requisitions and employees (days from the last day worked to the new hire''s first '
        || 'day) x seed skill_levels band midpoint / 365',
        avg(vacancy_cost_usd),
        stddev_samp(vacancy_cost_usd),
        avg(days_vacant),
        count(*)
    from per_backfill
    union all
    select
        'measured_total',
        3,
        'Measured replacement cost per voluntary exit (hiring + vacancy)',
        'the two parts above, summed per backfill',
        avg(measured_cost_usd),
        stddev_samp(measured_cost_usd),
        cast(null as double),
        count(*)
    from per_backfill
    union all
    select
        'level_pay',
        4,
        'Pay of the leavers'' levels (band midpoint, a year)',
        'seed skill_levels (salary_min_usd + salary_max_usd) / 2 at the leaver''s level',
        avg(level_pay_usd),
        stddev_samp(level_pay_usd),
        cast(null as double),
        count(*)
    from per_backfill
),

final as (
    select
        component,
        component_order,
        label,
        source,
        amount_usd,
        amount_usd - 1.96 * sd_usd / sqrt(backfills) as ci_low_usd,
        amount_usd + 1.96 * sd_usd / sqrt(backfills) as ci_high_usd,
        mean_days,
        backfills
    from parts
)

select * from final
