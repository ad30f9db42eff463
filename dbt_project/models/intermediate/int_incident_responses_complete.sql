-- The statistics' incidents: those of complete months (see int_engineer_months_complete), and
-- those without a month, which the estimators count among the incidents they leave out.
with incidents as (
    select * from {{ ref('int_incident_responses') }}
),

engineer_months as (
    select * from {{ ref('int_engineer_months') }}
),

latest as (
    select max(month) as latest_month from engineer_months
),

final as (
    select
        incidents.person_key,
        incidents.is_certified,
        incidents.severity,
        incidents.resolve_minutes,
        incidents.month
    from incidents
    cross join latest
    where
        latest.latest_month is not null
        and (incidents.month is null or incidents.month < latest.latest_month)
)

select * from final
