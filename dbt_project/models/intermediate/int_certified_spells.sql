-- The days a person held at least one active certification, whatever the code: the union of
-- their certification intervals as disjoint spells (overlapping intervals merged), so a day
-- falls in at most one spell and "certified on day d" is a join that never fans out, where an
-- exists() over the intervals made DuckDB deduplicate every (person, day) probe first.
-- valid_to NULL = does not expire.
with intervals as (
    select
        person_key,
        valid_from,
        coalesce(valid_to, date '9999-12-31') as valid_to
    from {{ ref('int_certification_intervals') }}
),

running as (
    select
        *,
        max(valid_to) over (
            partition by person_key
            order by valid_from, valid_to
            rows between unbounded preceding and 1 preceding
        ) as previous_max_to
    from intervals
),

numbered as (
    select
        *,
        sum(case when previous_max_to is null or valid_from > previous_max_to then 1 else 0 end) over (
            partition by person_key
            order by valid_from, valid_to
            rows unbounded preceding
        ) as spell_number
    from running
),

final as (
    select
        person_key,
        spell_number,
        min(valid_from) as valid_from,
        nullif(max(valid_to), date '9999-12-31') as valid_to
    from numbered
    group by person_key, spell_number
)

select * from final
