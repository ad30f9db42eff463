{{ config(alias='level_mix') }}

-- Headcount at month end by role family and skill level. People without a skill level (most
-- HRIS exports carry none) are left out: the mix describes the levels that are known.
with panel as (
    select * from {{ ref('int_engineer_months') }}
    where active_at_month_end and skill_level is not null
),

final as (
    select
        {{ month_end_of('month') }}::date as month_end,
        coalesce(role_family, 'unknown') as role_family,
        skill_level,
        count(*) as headcount,
        count(*) >= {{ min_group_size() }} as group_size_ok
    from panel
    group by 1, 2, 3
)

select * from final
