-- Passed exam attempts of linked people: one row per award with its validity interval.
-- Empty expires_on = the award does not expire.
with attempts as (
    select * from {{ ref('stg_lms__certifications') }}
),

final as (
    select
        attempt_id,
        person_key,
        certification_code,
        issued_on,
        expires_on
    from attempts
    where
        result = 'pass'
        and person_key is not null
        and issued_on is not null
)

select * from final
