{{ config(alias='capacity_commissioning') }}

-- One row per capacity project (expansion or new cluster): GPUs added, days from hardware
-- delivery to acceptance into production, and who led it: leads linked to a person, and how
-- many of them held an active certification on the delivery day (int_certified_spells).
with projects as (
    select * from {{ ref('stg_changes__capacity_changes') }}
),

leads as (
    select distinct
        project_id,
        person_key
    from {{ ref('stg_changes__capacity_leads') }}
    where person_key is not null
),

lead_status as (
    select
        l.project_id,
        count(*) as leads,
        count(s.person_key) as certified_leads
    from leads as l
    inner join projects as p
        on l.project_id = p.project_id
    left join {{ ref('int_certified_spells') }} as s
        on
            l.person_key = s.person_key
            and p.delivered_on >= s.valid_from
            and (s.valid_to is null or p.delivered_on <= s.valid_to)
    group by l.project_id
),

final as (
    select
        p.project_id,
        p.cluster,
        p.change_type,
        p.gpus_added,
        p.delivered_on,
        p.accepted_on,
        case when p.accepted_on is null then 'commissioning' else 'in_production' end as project_status,
        {{ days_between('p.delivered_on', 'p.accepted_on') }} as days_to_production,
        {{ divide(days_between('p.delivered_on', 'p.accepted_on') ~ ' * 1000.0', 'nullif(p.gpus_added, 0)') }} as days_per_1000_gpus,
        coalesce(l.leads, 0) as leads,
        coalesce(l.certified_leads, 0) as certified_leads,
        {{ divide('l.certified_leads', 'nullif(l.leads, 0)') }} as certified_share_of_leads
    from projects as p
    left join lead_status as l
        on p.project_id = l.project_id
)

select * from final
