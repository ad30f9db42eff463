-- Analyst-facing level progression over the 12 months to each quarter end:
-- restricted.level_progression_12m with every (level, window) of 1..min_group_size-1 engineers
-- suppressed. Line: the levels of a window add up to the window's engineers and promotions,
-- which the report prints as a total.
with detail as (
    select * from {{ ref('restricted_level_progression_12m') }}
),

suppressed as (
    {{ suppress_small_groups(
        'detail',
        size='engineers',
        measures=[
            'engineers', 'engineers_start_observed', 'promotions', 'promotion_rate',
            'faster_than_band', 'slower_than_band', 'share_outside_band',
        ],
        lines=['window_end'],
        order_by='skill_level',
        keep=['skill_level', 'window_end', 'window_from', 'covered_from', 'covered_to'],
    ) }}
),

final as (
    select
        skill_level,
        window_end,
        window_from,
        covered_from,
        covered_to,
        engineers,
        engineers_start_observed,
        promotions,
        promotion_rate,
        faster_than_band,
        slower_than_band,
        share_outside_band,
        suppressed,
        suppression_reason
    from suppressed
)

select * from final
