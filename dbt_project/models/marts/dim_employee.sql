-- Analyst-facing people: the pseudonym and a few coarse attributes, k-anonymous over the
-- attributes kept (role_family, skill_level, first_hire_year, is_active): every combination
-- that occurs, NULLs included, belongs to at least min_group_size people. Where a combination
-- is smaller, one attribute is withheld (NULL) for its members, step by step: hire year, then
-- skill level, then role family, then is_active; if the people with nothing left are fewer
-- than min_group_size, the smallest remaining combination joins them. Team, site, FTE, exact
-- hire month, last month in scope and rehires stay in restricted.dim_employee.
with step_0 as (
    select
        person_key,
        role_family,
        skill_level,
        {{ date_part_of('year', 'first_hire_month') }} as first_hire_year,
        is_active
    from {{ ref('restricted_dim_employee') }}
),

{#- one step per attribute, in the order they are withheld -#}
{%- set withheld = ['first_hire_year', 'skill_level', 'role_family', 'is_active'] %}
{% for column in withheld %}
    {%- set withhold = 'case when count(*) over (partition by role_family, skill_level, first_hire_year, is_active) >= '
        ~ min_group_size() ~ ' then ' ~ column ~ ' end' %}
    step_{{ loop.index }} as (
        select
            person_key,
            {{ withhold if column == 'role_family' else 'role_family' }} as role_family,
            {{ withhold if column == 'skill_level' else 'skill_level' }} as skill_level,
            {{ withhold if column == 'first_hire_year' else 'first_hire_year' }} as first_hire_year,
            {{ withhold if column == 'is_active' else 'is_active' }} as is_active
        from step_{{ loop.index0 }}
    ),
{% endfor %}

combinations as (
    select
        *,
        coalesce(role_family, skill_level::{{ text_type() }}, first_hire_year::{{ text_type() }}, is_active::{{ text_type() }}) is null
            as nothing_left,
        count(*) over (partition by role_family, skill_level, first_hire_year, is_active) as combination_size
    from step_4
),

-- the smallest combination that still says something joins the withheld people when they alone
-- would be fewer than min_group_size
merged as (
    select
        role_family,
        skill_level,
        first_hire_year,
        is_active,
        true as withheld
    from combinations
    where
        not nothing_left
        and (select count(*) from combinations as c where c.nothing_left)
        between 1 and {{ var('min_group_size') | int - 1 }}
    order by combination_size, role_family, skill_level, first_hire_year, is_active
    limit 1
),

final as (
    select
        c.person_key,
        case when m.withheld is null then c.role_family end as role_family,
        case when m.withheld is null then c.skill_level end as skill_level,
        case when m.withheld is null then c.first_hire_year end as first_hire_year,
        case when m.withheld is null then c.is_active end as is_active
    from combinations as c
    left join merged as m
        on
            m.role_family is not distinct from c.role_family
            and m.skill_level is not distinct from c.skill_level
            and m.first_hire_year is not distinct from c.first_hire_year
            and m.is_active is not distinct from c.is_active
)

select * from final
