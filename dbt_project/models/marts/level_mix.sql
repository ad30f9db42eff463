-- Headcount at month end by role family and skill level.
with panel as (
    select * from {{ ref('int_engineer_months') }}
    where active_at_month_end
),

final as (
    select
        month,
        coalesce(role_family, 'unknown') as role_family,
        skill_level,
        count(*) as headcount,
        count(*) >= {{ min_group_size() }} as group_size_ok,
    from panel
    group by all
)

select * from final
