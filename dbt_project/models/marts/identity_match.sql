-- How many records of each source could be linked to an HRIS person by normalised e-mail (or,
-- for incident tools that export names only, by unique full name). Unmatched records stay in
-- staging with email_key (a pseudonym of the e-mail or name).
with sources as (
    select
        'lms_enrolments' as source,
        person_key,
        email_key,
        'email' as link_method
    from {{ ref('stg_lms__enrolments') }}
    union all
    select
        'lms_certifications',
        person_key,
        email_key,
        'email'
    from {{ ref('stg_lms__certifications') }}
    union all
    select
        'incident_responders',
        person_key,
        email_key,
        link_method
    from {{ ref('stg_incidents__responders') }}
),

final as (
    select
        source,
        count(*) as records,
        count(person_key) as matched,
        count(*) - count(person_key) as unmatched,
        {{ divide('count(person_key)', 'nullif(count(*), 0)') }} as match_rate,
        count(distinct email_key) as unmatched_identities,
        count(*) filter (where link_method = 'name') as matched_by_name,
        count(*) filter (where link_method = 'ambiguous_name') as ambiguous_names
    from sources
    group by source
)

select * from final
