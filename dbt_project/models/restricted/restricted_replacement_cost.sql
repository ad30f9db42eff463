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

-- one value per backfill and part
values_long as (
    select
        'hiring_cost' as component,
        hiring_cost_usd as value_usd,
        cast(null as {{ double_type() }}) as days
    from per_backfill
    union all
    select
        'vacancy_cost',
        vacancy_cost_usd,
        days_vacant
    from per_backfill
    union all
    select
        'measured_total',
        measured_cost_usd,
        cast(null as {{ double_type() }})
    from per_backfill
    union all
    select
        'level_pay',
        level_pay_usd,
        cast(null as {{ double_type() }})
    from per_backfill
),

components as (
    select
        'hiring_cost' as component,
        1 as component_order,
        'Hiring cost: agency fee and advertising/assessment per filled backfill' as label,
        'requisitions (agency_fee_usd + other_hiring_cost_usd)' as source
    union all
    select
        'vacancy_cost',
        2,
        'Vacancy: days the position stood empty x the level''s daily pay',
        'requisitions and employees (days from the last day worked to the new hire''s first '
        || 'day) x seed skill_levels band midpoint / 365'
    union all
    select
        'measured_total',
        3,
        'Measured replacement cost per voluntary exit (hiring + vacancy)',
        'the two parts above, summed per backfill'
    union all
    select
        'level_pay',
        4,
        'Pay of the leavers'' levels (band midpoint, a year)',
        'seed skill_levels (salary_min_usd + salary_max_usd) / 2 at the leaver''s level'
),

means as (
    select
        c.component,
        c.component_order,
        c.label,
        c.source,
        {{ exact_avg('v.value_usd') }} as amount_usd,
        {{ exact_avg('v.days') }} as mean_days,
        count(v.value_usd) as backfills
    from components as c
    left join values_long as v on c.component = v.component
    group by c.component, c.component_order, c.label, c.source
),

spread as (
    select
        m.component,
        {{ exact_sum('(v.value_usd - m.amount_usd) * (v.value_usd - m.amount_usd)') }}
        / nullif(m.backfills - 1, 0) as variance
    from means as m
    inner join values_long as v on m.component = v.component
    group by m.component, m.backfills
),

final as (
    select
        m.component,
        m.component_order,
        m.label,
        m.source,
        m.amount_usd,
        m.amount_usd - 1.96 * sqrt(s.variance / m.backfills) as ci_low_usd,
        m.amount_usd + 1.96 * sqrt(s.variance / m.backfills) as ci_high_usd,
        m.mean_days,
        m.backfills
    from means as m
    left join spread as s on m.component = s.component
)

select * from final
