-- Analyst-facing replacement cost per voluntary exit: restricted.replacement_cost with every
-- part hidden when fewer than min_group_size filled backfills stand behind it (with one, the
-- vacancy and the fee would be that leaver's and that hire's).
{{ suppress_small_groups(
    ref('restricted_replacement_cost'),
    size='backfills',
    measures=['amount_usd', 'ci_low_usd', 'ci_high_usd', 'mean_days', 'backfills'],
    keep=['component', 'component_order', 'label', 'source'],
) }}
