-- Exam attempts linked to people by normalised e-mail; the e-mail itself is dropped here.
with source as (
    {{ current_rows('certifications', ['attempt_id']) }}
),

emails as (
    select * from {{ ref('stg_hris__person_emails') }}
),

linked as (
    select
        -- ids
        s.attempt_id,
        e.person_key,
        case when e.person_key is null then pseudonym(lower(trim(s.learner_email))) end as email_key,
        upper(trim(s.certification_code)) as certification_code,
        -- attributes
        lower(trim(s.result)) as result,
        -- dates
        s.exam_date,
        case when lower(trim(s.result)) = 'pass' then coalesce(s.issued_on, s.exam_date) end as issued_on,
        s.expires_on,
        -- numerics
        s.score,
        s.exam_fee_usd
    from source as s
    left join emails as e
        on e.email_normalised = lower(trim(s.learner_email))
)

select * from linked
