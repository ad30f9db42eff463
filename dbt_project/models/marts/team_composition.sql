-- Analyst-facing team composition: restricted.team_composition with every (team, role_family)
-- cell of 1..min_group_size-1 people suppressed, and every cell whose team or role family
-- certification_coverage hides on the same day (the cells add up to those rows). Lines: the roles
-- of a team add up to the team, the teams of a role to the role family. The template columns
-- describe the template, not people, and stay.
with detail as (
    select * from {{ ref('restricted_team_composition') }}
),

coverage as (
    select
        month_end,
        segment_type,
        segment_value,
        suppressed
    from {{ ref('certification_coverage') }}
    where segment_type in ('team', 'role_family')
),

flagged as (
    select
        d.*,
        coalesce(t.suppressed, false) or coalesce(r.suppressed, false) as coverage_hidden
    from detail as d
    left join coverage as t
        on t.month_end = d.month_end and t.segment_type = 'team' and t.segment_value = d.team
    left join coverage as r
        on r.month_end = d.month_end and r.segment_type = 'role_family' and r.segment_value = d.role_family
),

suppressed as (
    {{ suppress_small_groups(
        'flagged',
        size='headcount',
        primary='headcount between 1 and ' ~ (var('min_group_size') | int - 1) ~ ' or (coverage_hidden and headcount > 0)',
        reason="case when headcount < " ~ var('min_group_size') ~ " then 'fewer than " ~ var('min_group_size')
            ~ " people' else 'certification_coverage hides this team or role family on this day' end",
        measures=['headcount', 'headcount_gap', 'headcount_in_level_band', 'required_cert_compliant_headcount'],
        lines=['month_end, team', 'month_end, role_family'],
        order_by='team, role_family',
        keep=['month_end', 'team', 'role_family', 'fleet_size_class', 'gpu_count', 'template_headcount', 'level_min', 'level_max', 'required_certification_codes'],
    ) }}
),

final as (
    select
        month_end,
        team,
        role_family,
        fleet_size_class,
        gpu_count,
        headcount,
        template_headcount,
        headcount_gap,
        level_min,
        level_max,
        headcount_in_level_band,
        required_certification_codes,
        required_cert_compliant_headcount,
        suppressed,
        suppression_reason
    from suppressed
)

select * from final
