-- Analyst-facing pay against the salary bands: restricted.salary_bands with every
-- (quarter_end, skill level, role family) of 1..min_group_size-1 people suppressed, and every
-- cell marts.level_mix hides on the same day (the headcount is the same figure). Lines, as in
-- level_mix: the levels of a role family and the role families of a level add up. Pay is
-- rounded (1,000 USD; compa ratio 0.01) and withheld where fewer than min_group_size people have
-- pay, all of them earn the same, or the middle half earns the same rounded amount (the
-- quartiles would then show what those people earn).
with detail as (
    select * from {{ ref('restricted_salary_bands') }}
),

level_mix as (
    select
        month_end,
        role_family,
        skill_level,
        suppressed
    from {{ ref('level_mix') }}
),

flagged as (
    select
        d.*,
        coalesce(m.suppressed, false) as level_mix_hidden
    from detail as d
    left join level_mix as m
        on
            m.month_end = d.quarter_end
            and m.role_family = d.role_family
            and m.skill_level = d.skill_level
),

suppressed as (
    {{ suppress_small_groups(
        'flagged',
        size='headcount',
        primary='headcount between 1 and ' ~ (var('min_group_size') | int - 1) ~ ' or level_mix_hidden',
        reason="case when headcount < " ~ var('min_group_size') ~ " then 'fewer than " ~ var('min_group_size')
            ~ " people' else 'level_mix hides this cell on this day' end",
        measures=[
            'headcount', 'headcount_with_pay', 'pay_p25_usd', 'pay_median_usd', 'pay_p75_usd',
            'share_below_band', 'share_above_band', 'compa_ratio_median',
        ],
        lines=['quarter_end, role_family', 'quarter_end, skill_level'],
        order_by='role_family, skill_level',
        keep=['quarter_end', 'skill_level', 'role_family', 'band_low_usd', 'band_high_usd', 'pay_without_spread'],
    ) }}
),

withheld as (
    select
        *,
        case
            when suppressed then 'the row is suppressed'
            when headcount_with_pay < {{ min_group_size() }}
                then 'fewer than {{ min_group_size() }} people with pay'
            when pay_without_spread then 'no spread: everyone with pay earns the same'
            -- the middle half earning one rounded amount: the quartiles would show that pay
            when {{ round_to('pay_p25_usd', 1000) }} = {{ round_to('pay_p75_usd', 1000) }}
                then 'no spread: the middle half of the group earns the same rounded pay'
        end as pay_withheld_reason
    from suppressed
),

final as (
    select
        quarter_end,
        skill_level,
        role_family,
        headcount,
        headcount_with_pay,
        case when pay_withheld_reason is null then {{ round_to('pay_p25_usd', 1000) }} end as pay_p25_usd,
        case when pay_withheld_reason is null then {{ round_to('pay_median_usd', 1000) }} end as pay_median_usd,
        case when pay_withheld_reason is null then {{ round_to('pay_p75_usd', 1000) }} end as pay_p75_usd,
        band_low_usd,
        band_high_usd,
        case when pay_withheld_reason is null then share_below_band end as share_below_band,
        case when pay_withheld_reason is null then share_above_band end as share_above_band,
        case when pay_withheld_reason is null then {{ round_to('compa_ratio_median', 0.01) }} end
            as compa_ratio_median,
        pay_withheld_reason,
        suppressed,
        suppression_reason
    from withheld
)

select * from final
