{{ config(alias='programme_outcomes') }}

-- Outcomes of the programme episodes (int_programme_episodes) per programme type, track,
-- cohort quarter and entry level: one row per level at entry and one 'all' row, which the level
-- rows add up to. Observed counts and shares: an episode counts towards the 6- and 12-month
-- shares when it was followed that long or certified within it (the Kaplan-Meier shares, which
-- use the censored episodes too, are in marts.time_to_certify).
with episodes as (
    select * from {{ ref('int_programme_episodes') }}
),

levelled as (
    select
        *,
        coalesce(cast(skill_level_at_entry as {{ text_type() }}), 'unknown') as entry_level
    from episodes
    union all
    select
        *,
        'all' as entry_level
    from episodes
),

flagged as (
    select
        programme_type,
        certification_code,
        cohort_quarter,
        entry_level,
        person_key,
        completed,
        first_attempt_on is not null as attempted,
        coalesce(first_attempt_passed, false) as first_attempt_passed,
        certified,
        certified or months_followed >= 6 as followed_6m,
        certified and months_followed <= 6 as certified_within_6m,
        certified or months_followed >= 12 as followed_12m,
        certified and months_followed <= 12 as certified_within_12m,
        fees_usd,
        list_price_usd,
        exam_fees_usd,
        training_hours,
        apprenticeship,
        followed_12m as exit_followed_12m,
        voluntary_exit_12m
    from levelled
),

final as (
    select
        programme_type,
        certification_code,
        cohort_quarter,
        entry_level,
        count(*) as participants,
        count(case when completed then 1 end) as completions,
        {{ divide('count(case when completed then 1 end)', 'count(*)') }} as completion_rate,
        count(case when attempted then 1 end) as first_attempts,
        count(case when first_attempt_passed then 1 end) as first_attempt_passes,
        {{ divide(
            'count(case when first_attempt_passed then 1 end)',
            'nullif(count(case when attempted then 1 end), 0)'
        ) }} as first_attempt_pass_rate,
        count(case when certified then 1 end) as certified,
        count(case when followed_6m then 1 end) as followed_6m,
        count(case when certified_within_6m then 1 end) as certified_within_6m,
        {{ divide(
            'count(case when certified_within_6m then 1 end)',
            'nullif(count(case when followed_6m then 1 end), 0)'
        ) }} as certified_within_6m_share,
        count(case when followed_12m then 1 end) as followed_12m,
        count(case when certified_within_12m then 1 end) as certified_within_12m,
        {{ divide(
            'count(case when certified_within_12m then 1 end)',
            'nullif(count(case when followed_12m then 1 end), 0)'
        ) }} as certified_within_12m_share,
        {{ exact_sum('fees_usd') }} as fees_usd,
        {{ exact_sum('list_price_usd') }} as list_price_usd,
        {{ exact_sum('list_price_usd') }} - {{ exact_sum('fees_usd') }} as discount_usd,
        {{ exact_sum('exam_fees_usd') }} as exam_fees_usd,
        {{ exact_sum('training_hours') }} as training_hours,
        count(case when apprenticeship then 1 end) as apprentices,
        count(case when exit_followed_12m then 1 end) as exit_followed_12m,
        count(case when voluntary_exit_12m then 1 end) as voluntary_exits_12m,
        {{ divide(
            'count(case when voluntary_exit_12m then 1 end)',
            'nullif(count(case when exit_followed_12m then 1 end), 0)'
        ) }} as voluntary_exit_rate_12m,
        count(*) >= {{ min_group_size() }} as group_size_ok
    from flagged
    group by programme_type, certification_code, cohort_quarter, entry_level
)

select * from final
