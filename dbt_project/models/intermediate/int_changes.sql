-- Completed changes (closed successful, successful with issues, unsuccessful or backed out, with
-- an actual end), one row per change: the month of actual_end, the implementer's certification
-- status on the day the work started (planned start when no actual start): certified,
-- not_certified (linked to a person with no active certification that day) or unlinked (the
-- implementer matches no person); failed = closed unsuccessful or backed out, or linked to an
-- incident it caused (DORA change failure); lead time = opened to implemented, in hours.
with changes as (
    select
        c.*,
        coalesce(c.actual_start, c.planned_start, c.actual_end) as started_at
    from {{ ref('stg_changes__changes') }} as c
    where
        c.actual_end is not null
        and c.close_code in ('successful', 'successful_with_issues', 'unsuccessful', 'backed_out')
),

classified as (
    select
        c.change_number,
        c.cluster,
        c.change_type,
        cast(date_trunc('month', c.actual_end) as date) as month,
        cast(c.started_at as date) as started_on,
        c.implementer_key,
        case
            when c.implementer_key is null then 'unlinked'
            when s.person_key is not null then 'certified'
            else 'not_certified'
        end as certification_status,
        case
            when c.close_code in ('unsuccessful', 'backed_out') or c.caused_incidents is not null then 1
            else 0
        end as failed,
        {{ seconds_between('c.requested_at', 'c.actual_end') }} / 3600.0 as lead_time_hours
    from changes as c
    left join {{ ref('int_certified_spells') }} as s
        on
            c.implementer_key = s.person_key
            and cast(c.started_at as date) >= s.valid_from
            and (s.valid_to is null or cast(c.started_at as date) <= s.valid_to)
)

select * from classified
