-- Calendar: one row per day from the first month of data to the as-of date.
with bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

days as (
    select unnest(generate_series(first_month, as_of_date, interval 1 day))::date as date_day
    from bounds
),

final as (
    select
        date_day,
        date_trunc('month', date_day)::date as month,
        date_trunc('quarter', date_day)::date as quarter,
        year(date_day) as year,
        quarter(date_day) as quarter_of_year,
        year(date_day)::varchar || '-Q' || quarter(date_day)::varchar as quarter_label,
        month(date_day) as month_of_year,
        isodow(date_day) as iso_day_of_week,
        date_day = last_day(date_day) as is_month_end,
    from days
)

select * from final
