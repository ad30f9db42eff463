{{ config(alias='training_spend') }}

-- Training and exam spend per quarter for in-scope people (scope on the enrolment or exam
-- date). Enrolments are bucketed by enrolment quarter (completions are those enrolments that
-- completed or passed); exams by exam quarter. spend_usd is what was charged after
-- discounts (empty charge = list price).
with enrolments as (
    select * from {{ ref('stg_lms__enrolments') }}
),

courses as (
    select * from {{ ref('stg_lms__courses') }}
),

attempts as (
    select * from {{ ref('stg_lms__certifications') }}
),

catalogue as (
    select * from {{ ref('certification_catalogue') }}
),

history as (
    select * from {{ ref('int_person_history') }}
    where in_scope
),

course_rows as (
    select
        date_trunc('quarter', e.enrolled_on)::date as quarter,
        coalesce(c.programme_type, 'unknown') as spend_category,
        e.person_key,
        e.status in ('completed', 'passed') as completed,
        coalesce(e.charged_usd, c.list_price_usd, 0) as spend_usd,
        coalesce(c.list_price_usd, e.charged_usd, 0) as list_price_usd,
        coalesce(e.hours_spent, case when e.status in ('completed', 'passed') then c.nominal_hours end, 0) as training_hours
    from enrolments as e
    inner join history as h
        on
            h.person_key = e.person_key
            and e.enrolled_on between h.valid_from and h.valid_to
    left join courses as c
        on c.course_id = e.course_id
),

exam_rows as (
    select
        date_trunc('quarter', a.exam_date)::date as quarter,
        'certification_exam' as spend_category,
        a.person_key,
        a.result = 'pass' as completed,
        coalesce(a.exam_fee_usd, k.exam_fee_usd, 0) as spend_usd,
        coalesce(k.exam_fee_usd, a.exam_fee_usd, 0) as list_price_usd,
        0.0 as training_hours
    from attempts as a
    inner join history as h
        on
            h.person_key = a.person_key
            and a.exam_date between h.valid_from and h.valid_to
    left join catalogue as k
        on k.code = a.certification_code
),

all_rows as (
    select * from course_rows
    union all
    select * from exam_rows
),

final as (
    select
        quarter,
        spend_category,
        count(distinct person_key) as participants,
        count(*) as enrolments,
        count(*) filter (where completed) as completions,
        {{ exact_sum('spend_usd') }} as spend_usd,
        {{ exact_sum('list_price_usd') }} as list_price_usd,
        {{ exact_sum('list_price_usd') }} - {{ exact_sum('spend_usd') }} as discount_usd,
        {{ exact_sum('training_hours') }} as training_hours,
        count(distinct person_key) >= {{ min_group_size() }} as group_size_ok
    from all_rows
    group by quarter, spend_category
)

select * from final
