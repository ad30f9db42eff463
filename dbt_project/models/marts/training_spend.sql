-- Analyst-facing training spend: restricted.training_spend with every (quarter, spend category)
-- of 1..min_group_size-1 participants suppressed. Line: the categories of a quarter add up to the
-- quarter's training investment.
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_training_spend'),
    size='participants',
    measures=[
        'participants', 'enrolments', 'completions', 'spend_usd', 'list_price_usd', 'discount_usd',
        'training_hours',
    ],
    lines=['quarter'],
    order_by='spend_category',
    keep=['quarter', 'spend_category'],
) }}
