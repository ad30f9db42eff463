{{ config(alias='attrition') }}

-- Attrition per month and quarter, overall and by segment (SHRM definitions).
-- headcount_start = in scope at the opening of the period's first day; headcount_end = in scope
-- at the close of its last day (a last day worked inside the period is a separation of the
-- period). Each person is attributed to one segment per period: their attributes and
-- certification status on their last in-scope day of the period, so within every segment
-- headcount_start + hires + transfers_in - separations - transfers_out = headcount_end.
with stints as (
    select * from {{ ref('int_scope_stints') }}
),

history as (
    select * from {{ ref('int_person_history') }}
    where in_scope
),

certified as (
    select * from {{ ref('int_certified_spells') }}
),

months as (
    select * from {{ ref('int_months') }}
),

periods as (
    select
        'month' as period_type,
        month as period_start,
        month_end as period_end
    from months
    union all
    select distinct
        'quarter' as period_type,
        quarter as period_start,
        {{ month_end_of("quarter + interval '2' month") }}::date as period_end
    from months
    -- a quarter that starts before the data does would count everyone hired in its first
    -- weeks as a hire of the quarter and miss their separations: no row for it
    where quarter >= (select min(first.month) from months as first)
),

-- one row per (period, stint) for stints touching the period
stint_periods as (
    select
        p.period_type,
        p.period_start,
        p.period_end,
        s.*
    from periods as p
    inner join stints as s
        on
            s.stint_from <= p.period_end
            and s.stint_to >= p.period_start
),

person_periods as (
    select
        period_type,
        period_start,
        {{ any_value_of('period_end') }} as period_end,
        person_key,
        max(case when stint_from < period_start then 1 else 0 end) as in_start,
        max(case when stint_to > period_end then 1 else 0 end) as in_end,
        count(*) filter (where stint_from >= period_start and starts_with_hire) as hires,
        count(*) filter (where stint_from >= period_start and not starts_with_hire) as transfers_in,
        count(*) filter (where stint_to <= period_end and ends_with_separation) as separations,
        count(*) filter (where stint_to <= period_end and ends_with_separation and separation_type = 'voluntary') as voluntary_separations,
        count(*) filter (where stint_to <= period_end and ends_with_separation and separation_type = 'involuntary') as involuntary_separations,
        count(*) filter (where stint_to <= period_end and ends_with_separation and separation_type not in ('voluntary', 'involuntary')) as other_separations,
        count(*) filter (where stint_to <= period_end and ends_with_separation and regrettable) as regrettable_separations,
        count(*) filter (where stint_to <= period_end and not ends_with_separation) as transfers_out,
        max(least(stint_to, period_end)) as attributed_on
    from stint_periods
    group by period_type, period_start, person_key
),

attributed as (
    select
        pp.*,
        h.team,
        h.role_family,
        h.skill_level::{{ text_type() }} as level,
        case
            when c.person_key is not null then 'certified'
            else 'not_certified'
        end as certification_status
    from person_periods as pp
    left join history as h
        on
            h.person_key = pp.person_key
            and pp.attributed_on between h.valid_from and h.valid_to
    -- the certified spells of a person are disjoint: at most one holds the day
    left join certified as c
        on
            c.person_key = pp.person_key
            and c.valid_from <= pp.attributed_on
            and (c.valid_to is null or c.valid_to >= pp.attributed_on)
),

segmented as (
    {{ segment_fan_out('attributed', {
        'certification_status': 'certification_status',
        'level': 'level',
        'role_family': 'role_family',
        'team': 'team',
    }) }}
),

counts as (
    select
        period_type,
        period_start,
        segment_type,
        coalesce(segment_value, 'unknown') as segment_value,
        sum(in_start)::bigint as headcount_start,
        sum(hires)::bigint as hires,
        sum(transfers_in)::bigint as transfers_in,
        sum(separations)::bigint as separations,
        sum(voluntary_separations)::bigint as voluntary_separations,
        sum(involuntary_separations)::bigint as involuntary_separations,
        sum(other_separations)::bigint as other_separations,
        sum(regrettable_separations)::bigint as regrettable_separations,
        sum(transfers_out)::bigint as transfers_out,
        sum(in_end)::bigint as headcount_end
    from segmented
    group by period_type, period_start, segment_type, coalesce(segment_value, 'unknown')
),

rates as (
    select
        *,
        {{ divide('headcount_start + headcount_end', '2.0') }} as average_headcount,
        {{ divide('separations', 'nullif((headcount_start + headcount_end) / 2.0, 0)') }} as turnover_rate,
        {{ divide('voluntary_separations', 'nullif((headcount_start + headcount_end) / 2.0, 0)') }} as voluntary_turnover_rate
    from counts
),

final as (
    select
        period_type,
        period_start,
        segment_type,
        segment_value,
        headcount_start,
        hires,
        transfers_in,
        separations,
        voluntary_separations,
        involuntary_separations,
        other_separations,
        regrettable_separations,
        transfers_out,
        headcount_end,
        average_headcount,
        turnover_rate,
        voluntary_turnover_rate,
        turnover_rate * case period_type when 'month' then 12 else 4 end as annualized_turnover_rate,
        case
            when period_type = 'month' and segment_type = 'all'
                then
                    sum(turnover_rate) over w12
        end as trailing_12m_turnover_rate,
        case
            when period_type = 'month' and segment_type = 'all' and count(*) over w12 = 12
                then
                    (1 - {{ divide('sum(separations) over w12', 'nullif(avg(headcount_end) over w12, 0)') }})
        end as rolling_12m_retention,
        greatest(headcount_start, headcount_end) >= {{ min_group_size() }} as group_size_ok
    from rates
    window w12 as (
        partition by period_type, segment_type, segment_value
        order by period_start
        range between interval '11' month preceding and current row
    )
)

select * from final
