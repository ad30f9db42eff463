-- Who holds which certification until when: one row per validity interval (renewals merged),
-- with its status on the as-of date. Answers "which certifications lapse next quarter?"
-- without exposing anyone: people appear only under their pseudonymous person_key.
with intervals as (
    select * from {{ ref('int_certification_intervals') }}
),

bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

dated as (
    select
        i.*,
        b.as_of_date,
        (date_trunc('quarter', b.as_of_date) + interval '3' month)::date as next_quarter_start
    from intervals as i
    cross join bounds as b
),

final as (
    select
        -- grain
        person_key,
        certification_code,
        interval_number,
        -- dates
        valid_from as issued_on,
        valid_to as expires_on,
        (valid_to - interval '90' day)::date as renewal_due_on,
        as_of_date,
        -- status on the as-of date
        case
            when valid_from > as_of_date then 'future'
            when valid_to is not null and valid_to < as_of_date then 'expired'
            when valid_to is not null and valid_to < as_of_date + interval '90' day
                then 'expiring_90d'
            else 'active'
        end as status,
        coalesce(
            valid_to >= next_quarter_start
            and valid_to < next_quarter_start + interval '3' month,
            false
        ) as expires_next_quarter,
        awards as awards_merged
    from dated
)

select * from final
