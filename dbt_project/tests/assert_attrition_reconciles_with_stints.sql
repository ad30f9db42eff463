{{ config(meta={'dagster': {'ref': {'name': 'restricted_attrition'}}}) }}
-- Reconciliation: every in-scope separation and hire inside the covered window appears exactly
-- once in the monthly attrition of segment `all`, and the quarters sum their months. Returns
-- the mismatching figures (no rows = pass). Guards against rows vanishing after a refactor.
with bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

stints as (
    select
        count(*) filter (where ends_with_separation and stint_to between b.first_month and b.as_of_date) as separations,
        count(*) filter (where starts_with_hire and stint_from between b.first_month and b.as_of_date) as hires,
    from {{ ref('int_scope_stints') }}
    cross join bounds as b
),

mart as (
    select
        period_type,
        sum(separations) as separations,
        sum(hires) as hires,
    from {{ ref('restricted_attrition') }}
    where segment_type = 'all'
    group by period_type
)

select m.period_type, m.separations, s.separations as expected_separations, m.hires, s.hires as expected_hires
from mart as m
cross join stints as s
where m.separations != s.separations
    or m.hires != s.hires
