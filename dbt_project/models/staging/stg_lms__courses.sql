-- LMS course catalogue.
with source as (
    {{ current_rows('courses', ['course_id']) }}
),

renamed as (
    select
        course_id,
        title,
        provider,
        lower(trim(programme_type)) as programme_type,
        hours as nominal_hours,
        cost_usd as list_price_usd,
        upper(trim(certification_code)) as certification_code
    from source
)

select * from renamed
