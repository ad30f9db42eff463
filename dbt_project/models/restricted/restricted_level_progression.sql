{{ config(alias='level_progression') }}

-- Moves between skill levels per level and calendar year, from the level spells
-- (int_level_spells). A spell belongs to a year when it covers at least one of the year's days;
-- a move (promotion, skip, demotion) counts in the year of the last day at the old level. A
-- spell is slower than its band in the year its time in level passes the band's maximum
-- (band_exceeded_on), faster in the year it ends by promotion or skip before the band's minimum;
-- both need an observed start.
with level_spells as (
    select * from {{ ref('int_level_spells') }}
),

months as (
    select * from {{ ref('int_months') }}
),

bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

years as (
    select
        {{ date_part_of('year', 'm.month') }} as year,
        min(m.month) as covered_from,
        least(max(m.month_end), {{ any_value_of('b.as_of_date') }}) as covered_to
    from months as m
    cross join bounds as b
    group by {{ date_part_of('year', 'm.month') }}
),

spell_years as (
    select
        y.year,
        y.covered_from,
        y.covered_to,
        s.*,
        {{ date_part_of('year', 's.level_to') }} = y.year as ends_in_year,
        {{ date_part_of('year', 's.band_exceeded_on') }} = y.year as band_exceeded_in_year,
        s.band_exceeded_on <= y.covered_to as past_band_in_year
    from level_spells as s
    inner join years as y
        on
            s.level_from <= y.covered_to
            and s.level_to >= y.covered_from
),

final as (
    select
        skill_level,
        year,
        {{ any_value_of('covered_from') }} as covered_from,
        {{ any_value_of('covered_to') }} as covered_to,
        count(distinct person_key) as engineers,
        count(distinct case when start_observed then person_key end) as engineers_start_observed,
        count(case when ends_in_year and ended_by in ('promotion', 'skip') then 1 end) as promotions,
        count(case when ends_in_year and ended_by = 'skip' then 1 end) as skips,
        count(case when ends_in_year and ended_by = 'demotion' then 1 end) as demotions,
        count(case when ends_in_year and ended_by = 'exit' then 1 end) as exits,
        {{ divide(
            "count(case when ends_in_year and ended_by in ('promotion', 'skip') then 1 end)",
            'count(distinct person_key)'
        ) }} as promotion_rate,
        {{ median_of(
            "case when ends_in_year and ended_by in ('promotion', 'skip') and start_observed then months_in_level end"
        ) }} as median_months_in_level_promoted,
        count(case when ends_in_year and outside_band = 'faster' then 1 end) as faster_than_band,
        count(case when band_exceeded_in_year then 1 end) as slower_than_band,
        {{ divide(
            "count(distinct case when (ends_in_year and outside_band = 'faster') or past_band_in_year then person_key end)",
            'nullif(count(distinct case when start_observed then person_key end), 0)'
        ) }} as share_outside_band,
        count(distinct person_key) >= {{ min_group_size() }} as group_size_ok
    from spell_years
    group by skill_level, year
)

select * from final
