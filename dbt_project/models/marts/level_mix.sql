-- Analyst-facing level mix: restricted.level_mix with cells of 1..min_group_size-1 people
-- suppressed, and cells whose role family or level certification_coverage hides on the same day.
-- Lines: the levels of a role family add up to it, the role families of a level to the level.
with detail as (
    select * from {{ ref('restricted_level_mix') }}
),

coverage as (
    select
        month_end,
        segment_type,
        segment_value,
        suppressed
    from {{ ref('certification_coverage') }}
    where segment_type in ('level', 'role_family')
),

flagged as (
    select
        d.*,
        coalesce(lv.suppressed, false) or coalesce(r.suppressed, false) as coverage_hidden
    from detail as d
    left join coverage as lv
        on lv.month_end = d.month_end and lv.segment_type = 'level' and lv.segment_value = d.skill_level::{{ text_type() }}
    left join coverage as r
        on r.month_end = d.month_end and r.segment_type = 'role_family' and r.segment_value = d.role_family
),

suppressed as (
    {{ suppress_small_groups(
        'flagged',
        size='headcount',
        primary='headcount between 1 and ' ~ (var('min_group_size') | int - 1) ~ ' or coverage_hidden',
        reason="case when headcount < " ~ var('min_group_size') ~ " then 'fewer than " ~ var('min_group_size')
            ~ " people' else 'certification_coverage hides this level or role family on this day' end",
        measures=['headcount'],
        lines=['month_end, role_family', 'month_end, skill_level'],
        order_by='role_family, skill_level',
        keep=['month_end', 'role_family', 'skill_level'],
    ) }}
)

-- the macro's columns: `keep`, then `measures`, then suppressed and suppression_reason
select * from suppressed
