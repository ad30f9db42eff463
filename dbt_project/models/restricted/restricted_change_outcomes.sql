{{ config(alias='change_outcomes') }}

-- Completed changes per month (of actual_end) by the implementer's certification status on the
-- day the work started (int_changes): certified, not_certified, unlinked, and all. DORA change
-- failure rate = failed changes / changes deployed; lead time = opened to implemented (the
-- change-request stand-in for DORA's lead time for changes, commit to production).
with classified as (
    select * from {{ ref('int_changes') }}
),

by_status as (
    select
        month,
        certification_status,
        implementer_key,
        failed,
        lead_time_hours
    from classified
    union all
    select
        month,
        'all' as certification_status,
        implementer_key,
        failed,
        lead_time_hours
    from classified
),

final as (
    select
        month,
        certification_status,
        count(distinct implementer_key) as implementers,
        count(*) as changes,
        sum(failed)::bigint as failed_changes,
        {{ divide('sum(failed)::bigint', 'count(*)') }} as change_failure_rate,
        {{ median_of('lead_time_hours') }} as lead_time_median_hours,
        {{ exact_avg('lead_time_hours') }} as lead_time_mean_hours
    from by_status
    group by month, certification_status
)

select * from final
