-- The statistics' engineer-month panel: the complete months of int_engineer_months, the columns
-- the estimators read. The latest month is still being delivered (incidents keep arriving,
-- people still join, leave and certify), so it is left out until the data reaches the next
-- month; a certification in it counts as not yet made. Its content is the data version the
-- statistics depend on: a night that only adds to the month in progress leaves it unchanged.
with engineer_months as (
    select * from {{ ref('int_engineer_months') }}
),

latest as (
    select max(month) as latest_month from engineer_months
),

final as (
    select
        -- ids
        engineer_months.person_key,
        -- dates
        engineer_months.month,
        case
            when engineer_months.first_certified_month < latest.latest_month
                then engineer_months.first_certified_month
        end as first_certified_month,
        case
            when engineer_months.first_certified_month < latest.latest_month
                then engineer_months.first_preparation_month
        end as first_preparation_month,
        -- attributes
        engineer_months.skill_level,
        engineer_months.tenure_months,
        engineer_months.is_certified,
        engineer_months.separated,
        engineer_months.separation_type,
        -- numerics
        engineer_months.incidents,
        engineer_months.exposure_months,
        engineer_months.fleet_gpus
    from engineer_months
    cross join latest
    where engineer_months.month < latest.latest_month
)

select * from final
