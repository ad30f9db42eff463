-- How many records of each source could be linked to an HRIS person by normalised e-mail.
-- Unmatched records stay in staging with email_key (a pseudonym of the e-mail).
with sources as (
    select
        'lms_enrolments' as source,
        person_key,
        email_key
    from {{ ref('stg_lms__enrolments') }}
    union all
    select
        'lms_certifications',
        person_key,
        email_key
    from {{ ref('stg_lms__certifications') }}
    union all
    select
        'incident_responders',
        person_key,
        email_key
    from {{ ref('stg_incidents__responders') }}
),

final as (
    select
        source,
        count(*) as records,
        count(person_key) as matched,
        count(*) - count(person_key) as unmatched,
        count(person_key) / nullif(count(*), 0) as match_rate,
        count(distinct email_key) as unmatched_identities,
    from sources
    group by source
)

select * from final
