-- Month spine from the first month of HRIS data to the month of the as-of date.
with bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

spine as (
    select unnest(generate_series(first_month, date_trunc('month', as_of_date)::date, interval 1 month))::date as month
    from bounds
),

final as (
    select
        month,
        last_day(month) as month_end,
        date_trunc('quarter', month)::date as quarter,
        datediff('day', month, last_day(month)) + 1 as days_in_month,
    from spine
)

select * from final
