{{ config(alias='dim_employee') }}

-- One row per in-scope person (ever): pseudonym and current or last attributes. No names,
-- e-mails, salaries, and no per-person performance figures.
with panel as (
    select * from {{ ref('int_engineer_months') }}
),

spells as (
    select * from {{ ref('int_employment_spells') }}
),

ranked as (
    select
        *,
        row_number() over (partition by person_key order by month desc) as recency
    from panel
),

latest as (
    select * from ranked
    where recency = 1
),

spell_summary as (
    select
        person_key,
        date_trunc('month', min(hire_date))::date as first_hire_month,
        count(*) as employment_spells
    from spells
    group by person_key
),

final as (
    select
        l.person_key,
        l.team,
        l.role_family,
        l.skill_level,
        l.site,
        l.fte,
        l.month as last_month_in_scope,
        l.active_at_month_end and l.month = (select max(p.month) from panel as p) as is_active,
        s.first_hire_month,
        s.employment_spells,
        l.first_certified_month
    from latest as l
    left join spell_summary as s
        on s.person_key = l.person_key
)

select * from final
