{{ config(meta={'dagster': {'ref': {'name': 'restricted_attrition'}}}) }}
-- Each person is attributed to exactly one segment value per period, so every segment type's
-- rows add up to the `all` row (headcount, hires, separations). No rows = pass.
with attrition as (
    select * from {{ ref('restricted_attrition') }}
),

totals as (
    select
        period_type,
        period_start,
        segment_type,
        sum(headcount_start) as headcount_start,
        sum(hires) as hires,
        sum(separations) as separations,
        sum(headcount_end) as headcount_end
    from attrition
    group by period_type, period_start, segment_type
)

select t.*
from totals as t
inner join totals as a
    on a.period_type = t.period_type
    and a.period_start = t.period_start
    and a.segment_type = 'all'
where t.headcount_start != a.headcount_start
    or t.hires != a.hires
    or t.separations != a.separations
    or t.headcount_end != a.headcount_end
