-- Analyst-facing programme outcomes: restricted.programme_outcomes with every row of
-- 1..min_group_size-1 participants suppressed. Lines: the entry levels of a (programme, track,
-- cohort) add up to its 'all' row; the cohorts of a (programme, track, entry level) add up to
-- the track's totals in marts.time_to_certify and marts.programme_costs.
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_programme_outcomes'),
    size='participants',
    measures=[
        'participants', 'completions', 'completion_rate', 'first_attempts', 'first_attempt_passes',
        'first_attempt_pass_rate', 'certified', 'followed_6m', 'certified_within_6m',
        'certified_within_6m_share', 'followed_12m', 'certified_within_12m',
        'certified_within_12m_share', 'fees_usd', 'list_price_usd', 'discount_usd', 'exam_fees_usd',
        'training_hours', 'apprentices', 'exit_followed_12m', 'voluntary_exits_12m',
        'voluntary_exit_rate_12m',
    ],
    lines=[
        'programme_type, certification_code, cohort_quarter',
        'programme_type, certification_code, entry_level',
    ],
    order_by='cohort_quarter, entry_level',
    keep=['programme_type', 'certification_code', 'cohort_quarter', 'entry_level'],
) }}
