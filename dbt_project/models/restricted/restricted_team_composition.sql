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
        list_transform(string_split(required_certification_codes, ';'), lambda x: upper(trim(x))) as required_codes,
    from {{ ref('team_template_requirements') }}
),

team_months as (
    select distinct
        month,
        team
    from panel where team is not null
),

actual as (
    select
        p.month,
        p.team,
        p.role_family,
        count(*) as headcount,
        list(p.skill_level) as levels,
        list(p.active_certification_codes) as code_lists,
    from panel as p
    where p.team is not null
    group by all
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
        last_day(g.month)::date as month_end,
        g.team,
        coalesce(g.role_family, 'unknown') as role_family,
        f.fleet_size_class,
        f.gpu_count,
        coalesce(a.headcount, 0) as headcount,
        coalesce(t.headcount, 0) as template_headcount,
        coalesce(t.headcount, 0) - coalesce(a.headcount, 0) as headcount_gap,
        t.level_min,
        t.level_max,
        -- (RF02: sqlfluff reads the lambda parameters l and c as unqualified columns)
        coalesce(len(list_filter(a.levels, lambda l: l between t.level_min and t.level_max)), 0) as headcount_in_level_band,  -- noqa: RF02
        t.required_certification_codes,
        coalesce(len(list_filter(a.code_lists, lambda c: list_has_all(c, coalesce(t.required_codes, []::varchar[])))), 0) as required_cert_compliant_headcount,  -- noqa: RF02
        coalesce(a.headcount, 0) >= {{ min_group_size() }} as group_size_ok,
    from grid as g
    left join actual as a
        on a.month = g.month and a.team = g.team and a.role_family is not distinct from g.role_family
    left join fleet as f
        on f.cluster = g.team and f.month = g.month
    left join template as t
        on t.fleet_size_class = f.fleet_size_class and t.role_family = g.role_family
)

select * from final
