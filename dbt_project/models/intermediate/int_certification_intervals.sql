-- Certification validity per (person, code) with renewals merged: an award issued on or before
-- the day after the running expiry of the earlier awards extends the same interval, so a
-- renewal never shows as a lapse. valid_to NULL = does not expire.
with awards as (
    select
        person_key,
        certification_code,
        issued_on,
        coalesce(expires_on, date '9999-12-31') as expires_on
    from {{ ref('int_certification_awards') }}
),

running as (
    select
        *,
        max(expires_on) over (
            partition by person_key, certification_code
            order by issued_on, expires_on
            rows between unbounded preceding and 1 preceding
        ) as previous_max_expiry
    from awards
),

flagged as (
    select
        *,
        case when previous_max_expiry is null or issued_on > previous_max_expiry + 1 then 1 else 0 end as is_new_interval
    from running
),

numbered as (
    select
        *,
        -- a running count: an integer (a sum of integers is HUGEINT on DuckDB, numeric on
        -- PostgreSQL, which BI tools read as a decimal measure)
        cast(sum(is_new_interval) over (
            partition by person_key, certification_code
            order by issued_on, expires_on
            rows unbounded preceding
        ) as integer) as interval_number
    from flagged
),

final as (
    select
        person_key,
        certification_code,
        interval_number,
        min(issued_on) as valid_from,
        nullif(max(expires_on), date '9999-12-31') as valid_to,
        count(*) as awards
    from numbered
    group by person_key, certification_code, interval_number
)

select * from final
