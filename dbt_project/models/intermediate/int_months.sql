-- Month spine from the first month of HRIS data to the month of the as-of date.
with bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

spine as (
    select {{ date_series('first_month', "date_trunc('month', as_of_date)::date", 'month') }} as month
    from bounds
),

final as (
    select
        month,
        {{ month_end_of('month') }} as month_end,
        date_trunc('quarter', month)::date as quarter,
        {{ days_between('month', month_end_of('month')) }} + 1 as days_in_month
    from spine
)

select * from final
