-- Analyst-facing capacity projects: restricted.capacity_commissioning with the leads' counts
-- and certified share hidden where 1..min_group_size-1 people led the project (nearly always:
-- one or two engineers lead an expansion, and their share would be their certification
-- status). GPUs, dates and days count no people and stay. No lines: projects add up to nothing
-- published that counts people.
-- The macro's columns: `keep`, then `measures`, then suppressed and suppression_reason.
{{ suppress_small_groups(
    ref('restricted_capacity_commissioning'),
    size='leads',
    measures=['leads', 'certified_leads', 'certified_share_of_leads'],
    order_by='project_id',
    keep=[
        'project_id', 'cluster', 'change_type', 'gpus_added', 'delivered_on', 'accepted_on',
        'project_status', 'days_to_production', 'days_per_1000_gpus',
    ],
) }}
