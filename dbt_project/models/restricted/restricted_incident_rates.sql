{{ config(alias='incident_rates') }}

-- Incidents per 100 engineer-months (exposure = in-scope engineer-months), with MTTR both as
-- median (Four Keys) and mean (PagerDuty; unresolved incidents excluded from both).
-- Status of a person-month: certified (active certification on the measurement day),
-- not_yet_certified (certifies later), never_certified (no award up to the as-of date),
-- lapsed (certified earlier, nothing active now).
with panel as (
    select
        *,
        case
            when is_certified then 'certified'
            when first_certified_month is null then 'never_certified'
            when month < first_certified_month then 'not_yet_certified'
            else 'lapsed'
        end as certification_status,
        date_trunc('quarter', month)::date as quarter
    from {{ ref('int_engineer_months') }}
),

responses as (
    select
        r.*,
        p.certification_status,
        p.quarter,
        p.months_since_first_cert
    from {{ ref('int_incident_responses') }} as r
    inner join panel as p
        on
            p.person_key = r.person_key
            and p.month = r.month
),

panel_rows as (
    {{ incident_breakdowns('panel', ['person_key', 'exposure_months']) }}
),

response_rows as (
    {{ incident_breakdowns('responses', ['resolve_minutes']) }}
),

exposure as (
    select
        breakdown,
        quarter,
        certification_status,
        relative_month,
        count(distinct person_key) as engineers,
        {{ exact_sum('exposure_months') }} as engineer_months
    from panel_rows
    group by breakdown, quarter, certification_status, relative_month
),

outcomes as (
    select
        breakdown,
        quarter,
        certification_status,
        relative_month,
        count(*) as incidents,
        count(resolve_minutes) as resolved_incidents,
        {{ median_of('resolve_minutes') }} as mttr_median_minutes,
        {{ exact_avg('resolve_minutes') }} as mttr_mean_minutes
    from response_rows
    group by breakdown, quarter, certification_status, relative_month
),

final as (
    select
        md5(concat_ws('|', e.breakdown, coalesce(e.quarter::{{ text_type() }}, '-'), e.certification_status, coalesce(e.relative_month::{{ text_type() }}, '-'))) as row_key,
        e.breakdown,
        e.quarter,
        e.certification_status,
        e.relative_month,
        e.engineers,
        e.engineer_months,
        coalesce(o.incidents, 0) as incidents,
        100.0 * coalesce(o.incidents, 0) / nullif(e.engineer_months, 0) as incidents_per_100_engineer_months,
        o.mttr_median_minutes,
        o.mttr_mean_minutes,
        coalesce(o.resolved_incidents, 0) as resolved_incidents,
        e.engineers >= {{ min_group_size() }} as group_size_ok
    from exposure as e
    left join outcomes as o
        on
            o.breakdown = e.breakdown
            and o.quarter is not distinct from e.quarter
            and o.certification_status = e.certification_status
            and o.relative_month is not distinct from e.relative_month
)

select * from final
