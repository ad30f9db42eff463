-- Analyst-facing level progression: restricted.level_progression with every (level, year) of
-- 1..min_group_size-1 engineers suppressed. Line: the years of a level add up to the level's
-- promotions in marts.time_in_level.
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_level_progression'),
    size='engineers',
    measures=[
        'engineers', 'engineers_start_observed', 'promotions', 'skips', 'demotions', 'exits',
        'promotion_rate', 'median_months_in_level_promoted', 'faster_than_band',
        'slower_than_band', 'share_outside_band',
    ],
    lines=['skill_level'],
    order_by='year',
    keep=['skill_level', 'year', 'covered_from', 'covered_to'],
) }}
