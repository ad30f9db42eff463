-- Capacity expansions and new clusters, one row per project; who led them is in
-- stg_changes__capacity_leads.
with source as (
    {{ current_rows('capacity_changes', ['project_id']) }}
),

renamed as (
    select
        project_id,
        cluster,
        coalesce(change_type, 'expansion') as change_type,
        gpus_added,
        delivered_on,
        accepted_on,
        _file_id
    from source
)

select * from renamed
