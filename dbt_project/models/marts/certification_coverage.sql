-- Analyst-facing certification coverage: restricted.certification_coverage with every row built
-- from fewer than min_group_size people suppressed (counts and shares NULL, suppressed = true,
-- suppression_reason says why). Lines whose rows add up to a published figure get a second
-- hidden row: the segments of a type add up to the `all` row, and the teams of a site add up to
-- (part of) the site row (a team is named after its cluster, whose site fleet_size publishes).
with detail as (
    select * from {{ ref('restricted_certification_coverage') }}
),

team_sites as (
    select
        month_end,
        cluster,
        site
    from {{ ref('fleet_size') }}
),

lined as (
    select
        d.*,
        case
            when d.segment_type = 'team' then 'site:' || coalesce(t.site, 'unknown')
            when d.segment_type = 'site' then 'site:' || d.segment_value
            else d.segment_type || ':' || d.segment_value
        end as site_and_its_teams
    from detail as d
    left join team_sites as t
        on
            d.segment_type = 'team'
            and t.month_end = d.month_end
            and t.cluster = d.segment_value
),

suppressed as (
    {{ suppress_small_groups(
        'lined',
        size='headcount',
        measures=[
            'headcount', 'any_cert_headcount', 'required_cert_compliant_headcount', 'any_cert_share',
            'required_cert_compliance_share', 'expiring_next_90d', 'median_months_to_first_cert',
            'exam_attempts', 'exam_passes', 'exam_pass_rate',
        ],
        lines=['month_end, segment_type', 'month_end, site_and_its_teams'],
        order_by='segment_type, segment_value',
        keep=['month_end', 'segment_type', 'segment_value'],
    ) }}
)

-- the macro's columns: `keep`, then `measures`, then suppressed and suppression_reason
select * from suppressed
