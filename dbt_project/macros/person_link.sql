{#- Link a person named by a tool to person_key: by normalised work e-mail, else by HRIS
    employee id, else by the unique full name (stg_hris__person_names; a name two people share
    is never used). `alias` is the relation holding `email_normalised` (lower-cased, trimmed
    e-mail), `person_id` (a trimmed HRIS employee id, or an e-mail: it links nothing) and
    `name_key` (pseudonym of the normalised full name). Gives the joins and,
    from `person_link_columns`, person_key and link_method (email, employee_id, name,
    ambiguous_name, unmatched). -#}
{% macro person_link_joins(alias) -%}
    left join {{ ref('stg_hris__person_emails') }} as link_e
        on {{ alias }}.email_normalised = link_e.email_normalised
    left join (
        select distinct person_key from {{ ref('stg_hris__employees') }}
    ) as link_i
        on pseudonym({{ alias }}.person_id) = link_i.person_key
    left join {{ ref('stg_hris__person_names') }} as link_n
        on {{ alias }}.name_key = link_n.name_key
{%- endmacro %}

{% macro person_link_columns() -%}
    coalesce(link_e.person_key, link_i.person_key, link_n.person_key) as person_key,
    case
        when link_e.person_key is not null then 'email'
        when link_i.person_key is not null then 'employee_id'
        when link_n.person_key is not null then 'name'
        when link_n.is_ambiguous then 'ambiguous_name'
        else 'unmatched'
    end as link_method
{%- endmacro %}

{#- A list written in one field, split at `,` or `;`, items trimmed (Jira's multi-user
    fields, incident numbers). -#}
{% macro split_list(value) %}{{ return(adapter.dispatch('split_list', 'talent_metrics')(value)) }}{% endmacro %}
{% macro default__split_list(value) %}list_transform(string_split_regex({{ value }}, '[,;]'), lambda x: trim(x)){% endmacro %}
{% macro postgres__split_list(value) -%}
    case when {{ value }} is not null then array(
        select trim(item.part)
        from unnest(regexp_split_to_array({{ value }}, '[,;]')) with ordinality as item (part, position)
        order by item.position
    ) end
{%- endmacro %}
{% macro spark__split_list(value) %}transform(split({{ value }}, '[,;]'), x -> trim(x)){% endmacro %}
