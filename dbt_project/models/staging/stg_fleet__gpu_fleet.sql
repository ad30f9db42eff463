-- GPU count per cluster as of a date.
with source as (
    {{ current_rows('gpu_fleet', ['cluster', 'as_of_date']) }}
),

renamed as (
    select
        cluster,
        as_of_date,
        site,
        gpu_model,
        gpu_count
    from source
)

select * from renamed
