{{ config(alias='team_composition') }}

-- Actual team make-up at month end against the template for the team's fleet size class.
-- Rows: every (team, role_family) with people, plus template roles the team lacks.
with panel as (
    select * from {{ ref('int_engineer_months') }}
    where active_at_month_end
),

fleet as (
    select * from {{ ref('int_fleet_months') }}
),

template as (
    select
        *,
        {{ split_codes('required_certification_codes') }} as required_codes
    from {{ ref('team_template_requirements') }}
),

team_months as (
    select distinct
        month,
        team
    from panel where team is not null
),

-- each person against the template of their team's fleet size class and their role
actual as (
    select
        p.month,
        p.team,
        p.role_family,
        count(*) as headcount,
        count(*) filter (where p.skill_level between t.level_min and t.level_max) as headcount_in_level_band,
        count(*) filter (
            where {{ list_has_all_of('p.active_certification_codes', 'coalesce(t.required_codes, ' ~ empty_text_list() ~ ')') }}
        ) as required_cert_compliant_headcount
    from panel as p
    left join fleet as f
        on f.cluster = p.team and f.month = p.month
    left join template as t
        on t.fleet_size_class = f.fleet_size_class and t.role_family = p.role_family
    where p.team is not null
    group by p.month, p.team, p.role_family
),

template_rows as (
    select
        tm.month,
        tm.team,
        t.role_family
    from team_months as tm
    inner join fleet as f on f.cluster = tm.team and f.month = tm.month
    inner join template as t on t.fleet_size_class = f.fleet_size_class
    where t.headcount > 0
),

grid as (
    select
        month,
        team,
        role_family
    from actual
    union
    select
        month,
        team,
        role_family
    from template_rows
),

final as (
    select
        {{ month_end_of('g.month') }}::date as month_end,
        g.team,
        coalesce(g.role_family, 'unknown') as role_family,
        f.fleet_size_class,
        f.gpu_count,
        coalesce(a.headcount, 0) as headcount,
        coalesce(t.headcount, 0) as template_headcount,
        coalesce(t.headcount, 0) - coalesce(a.headcount, 0) as headcount_gap,
        t.level_min,
        t.level_max,
        coalesce(a.headcount_in_level_band, 0) as headcount_in_level_band,
        t.required_certification_codes,
        coalesce(a.required_cert_compliant_headcount, 0) as required_cert_compliant_headcount,
        coalesce(a.headcount, 0) >= {{ min_group_size() }} as group_size_ok
    from grid as g
    left join actual as a
        on a.month = g.month and a.team = g.team and a.role_family is not distinct from g.role_family
    left join fleet as f
        on f.cluster = g.team and f.month = g.month
    left join template as t
        on t.fleet_size_class = f.fleet_size_class and t.role_family = g.role_family
)

select * from final
