-- Analyst-facing attrition: restricted.attrition with small groups suppressed. A row is hidden
-- when its headcount at the start or at the end is 1..min_group_size-1, or when
-- certification_coverage hides the same segment at the month end before the period or at its
-- end (headcount_start and headcount_end are those month-end headcounts). Lines: the segments of
-- a type add up to the `all` row, and a quarter is the sum of its three months.
with detail as (
    select
        *,
        {{ month_end_of("period_start + case period_type when 'quarter' then interval '2' month else interval '0' month end") }}::date
            as period_end,
        date_trunc('quarter', period_start)::date as quarter_and_its_months
    from {{ ref('restricted_attrition') }}
),

coverage as (
    select
        month_end,
        segment_type,
        segment_value,
        suppressed
    from {{ ref('certification_coverage') }}
),

flagged as (
    select
        d.*,
        coalesce(before_start.suppressed, false) or coalesce(at_end.suppressed, false) as coverage_hidden,
        coalesce(
            d.headcount_start between 1 and {{ var('min_group_size') | int - 1 }}
            or d.headcount_end between 1 and {{ var('min_group_size') | int - 1 }},
            true
        ) as headcount_small
    from detail as d
    left join coverage as before_start
        on
            before_start.month_end = d.period_start - interval '1' day
            and before_start.segment_type = d.segment_type
            and before_start.segment_value = d.segment_value
    left join coverage as at_end
        on
            at_end.month_end = d.period_end
            and at_end.segment_type = d.segment_type
            and at_end.segment_value = d.segment_value
),

suppressed as (
    {{ suppress_small_groups(
        'flagged',
        size='greatest(headcount_start, headcount_end)',
        primary='headcount_small or coverage_hidden',
        reason="case when headcount_small then 'fewer than " ~ var('min_group_size')
            ~ " people at the start or at the end of the period'"
            ~ " else 'certification_coverage hides this segment at the start or the end of the period' end",
        measures=[
            'headcount_start', 'hires', 'transfers_in', 'separations', 'voluntary_separations',
            'involuntary_separations', 'other_separations', 'regrettable_separations', 'transfers_out',
            'headcount_end', 'average_headcount', 'turnover_rate', 'voluntary_turnover_rate',
            'annualized_turnover_rate', 'trailing_12m_turnover_rate', 'rolling_12m_retention',
        ],
        lines=['period_type, period_start, segment_type', 'segment_type, segment_value, quarter_and_its_months'],
        order_by='period_type, period_start, segment_type, segment_value',
        keep=['period_type', 'period_start', 'segment_type', 'segment_value'],
    ) }}
)

-- the macro's columns: `keep`, then `measures`, then suppressed and suppression_reason
select * from suppressed
