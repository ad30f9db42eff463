{{ config(meta={'dagster': {'ref': {'name': 'restricted_attrition'}}}) }}
-- Reconciliation: every in-scope separation and hire inside the covered window appears exactly
-- once in the monthly attrition of segment `all`, and once in the quarterly attrition when it
-- falls in a quarter that starts inside the window. Returns
-- the mismatching figures (no rows = pass). Guards against rows vanishing after a refactor.
with bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

-- months cover the whole window; quarters start at the first quarter that starts inside it
-- (the mart has no row for a quarter that starts before the data does)
windows as (
    select
        'month' as period_type,
        first_month as window_start,
        as_of_date as window_end
    from bounds
    union all
    select
        'quarter',
        case
            when first_month = date_trunc('quarter', first_month) then first_month
            else (date_trunc('quarter', first_month) + interval '3' month)::date
        end,
        as_of_date
    from bounds
),

stints as (
    select
        w.period_type,
        count(*) filter (where s.ends_with_separation and s.stint_to between w.window_start and w.window_end) as separations,
        count(*) filter (where s.starts_with_hire and s.stint_from between w.window_start and w.window_end) as hires
    from {{ ref('int_scope_stints') }} as s
    cross join windows as w
    group by w.period_type
),

mart as (
    select
        period_type,
        sum(separations) as separations,
        sum(hires) as hires
    from {{ ref('restricted_attrition') }}
    where segment_type = 'all'
    group by period_type
)

select m.period_type, m.separations, s.separations as expected_separations, m.hires, s.hires as expected_hires
from mart as m
inner join stints as s on m.period_type = s.period_type
where m.separations != s.separations
    or m.hires != s.hires
