-- Certification catalogue (seed) joined with how many awards the warehouse holds per code; a code
-- held by 1..min_group_size-1 people shows no counts (the codes add up to nothing published).
with catalogue as (
    select * from {{ ref('certification_catalogue') }}
),

awards as (
    select
        certification_code,
        count(*) as awards,
        count(distinct person_key) as holders_ever
    from {{ ref('int_certification_awards') }}
    group by certification_code
),

codes as (
    select code as certification_code from catalogue
    union
    select certification_code from awards
),

counted as (
    select
        k.certification_code,
        c.name,
        c.issuer,
        c.level,
        c.validity_months,
        c.exam_fee_usd,
        c.questions,
        c.minutes,
        c.code is not null as in_catalogue,
        coalesce(a.awards, 0) as awards,
        coalesce(a.holders_ever, 0) as holders_ever
    from codes as k
    left join catalogue as c on c.code = k.certification_code
    left join awards as a on a.certification_code = k.certification_code
),

suppressed as (
    {{ suppress_small_groups(
        'counted',
        size='holders_ever',
        measures=['awards', 'holders_ever'],
        order_by='certification_code',
        keep=[
            'certification_code', 'name', 'issuer', 'level', 'validity_months', 'exam_fee_usd',
            'questions', 'minutes', 'in_catalogue',
        ],
    ) }}
)

-- the macro's columns: `keep`, then `measures`, then suppressed and suppression_reason
select * from suppressed
