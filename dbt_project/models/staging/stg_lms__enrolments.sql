-- Enrolments linked to people by normalised e-mail; the e-mail itself is dropped here.
with source as (
    {{ current_rows('enrolments', ['enrolment_id']) }}
),

emails as (
    select * from {{ ref('stg_hris__person_emails') }}
),

linked as (
    select
        -- ids
        s.enrolment_id,
        e.person_key,
        case when e.person_key is null then pseudonym(lower(trim(s.learner_email))) end as email_key,
        s.course_id,
        -- attributes
        lower(trim(s.status)) as status,
        -- dates
        s.enrolled_on,
        s.completed_on,
        -- numerics
        s.cost_usd as charged_usd,
        s.hours_spent,
        s.score
    from source as s
    left join emails as e
        on e.email_normalised = lower(trim(s.learner_email))
)

select * from linked
