{{ config(alias='level_progression_12m') }}

-- Moves between skill levels per level in the 12 months to each quarter end, from the level
-- spells (int_level_spells): the rules of restricted_level_progression with a trailing window
-- (window_from .. window_end) in place of a calendar year, so that a report for any quarter
-- reads the last 12 months rather than the last complete year. A spell belongs to a window
-- when it covers one of its days; a move counts in the window that holds the last day at the
-- old level; a spell is slower than its band in a window when its band_exceeded_on lies in it
-- or before its end.
with level_spells as (
    select * from {{ ref('int_level_spells') }}
),

months as (
    select * from {{ ref('int_months') }}
),

bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

windows as (
    select
        m.month_end as window_end,
        {{ add_months_to('m.month', -11) }} as window_from,
        greatest({{ add_months_to('m.month', -11) }}, b.first_month) as covered_from,
        least(m.month_end, b.as_of_date) as covered_to
    from months as m
    cross join bounds as b  -- one row
    where {{ date_part_of('month', 'm.month') }} in (3, 6, 9, 12)
),

spell_windows as (
    select
        w.window_end,
        w.window_from,
        w.covered_from,
        w.covered_to,
        s.*,
        s.level_to between w.covered_from and w.covered_to as ends_in_window,
        s.band_exceeded_on between w.covered_from and w.covered_to as band_exceeded_in_window,
        s.band_exceeded_on <= w.covered_to as past_band_in_window
    from level_spells as s
    inner join windows as w
        on
            s.level_from <= w.covered_to
            and s.level_to >= w.covered_from
),

final as (
    select
        skill_level,
        window_end,
        {{ any_value_of('window_from') }} as window_from,
        {{ any_value_of('covered_from') }} as covered_from,
        {{ any_value_of('covered_to') }} as covered_to,
        count(distinct person_key) as engineers,
        count(distinct case when start_observed then person_key end) as engineers_start_observed,
        count(case when ends_in_window and ended_by in ('promotion', 'skip') then 1 end) as promotions,
        {{ divide(
            "count(case when ends_in_window and ended_by in ('promotion', 'skip') then 1 end)",
            'count(distinct person_key)'
        ) }} as promotion_rate,
        count(case when ends_in_window and outside_band = 'faster' then 1 end) as faster_than_band,
        count(case when band_exceeded_in_window then 1 end) as slower_than_band,
        {{ divide(
            "count(distinct case when (ends_in_window and outside_band = 'faster') or past_band_in_window then person_key end)",
            'nullif(count(distinct case when start_observed then person_key end), 0)'
        ) }} as share_outside_band,
        count(distinct person_key) >= {{ min_group_size() }} as group_size_ok
    from spell_windows
    group by skill_level, window_end
)

select * from final
