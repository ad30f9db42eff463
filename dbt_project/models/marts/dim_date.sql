-- Calendar: one row per day from the first month of data to the as-of date.
with bounds as (
    select * from {{ ref('int_calendar_bounds') }}
),

days as (
    select {{ date_series('first_month', 'as_of_date', 'day') }} as date_day
    from bounds
),

final as (
    select
        date_day,
        date_trunc('month', date_day)::date as month,
        date_trunc('quarter', date_day)::date as quarter,
        {{ date_part_of('year', 'date_day') }} as year,
        {{ date_part_of('quarter', 'date_day') }} as quarter_of_year,
        {{ date_part_of('year', 'date_day') }}::{{ text_type() }} || '-Q'
        || {{ date_part_of('quarter', 'date_day') }}::{{ text_type() }} as quarter_label,
        {{ date_part_of('month', 'date_day') }} as month_of_year,
        {{ date_part_of('isodow', 'date_day') }} as iso_day_of_week,
        date_day = {{ month_end_of('date_day') }} as is_month_end
    from days
)

select * from final
