{#- Small helpers so models read project vars the same way. -#}

{% macro min_group_size() -%}
    {{ var('min_group_size') | int }}
{%- endmacro %}

{% macro scope_division() -%}
    '{{ var("scope_division") | replace("'", "''") }}'
{%- endmacro %}

{% macro included_employment_types() -%}
    ({%- for t in var('included_employment_types') -%}'{{ t | lower }}'{{ ", " if not loop.last }}{%- endfor -%})
{%- endmacro %}

{#- as_of_date var when set, else the end of the month of the latest dated record. -#}
{% macro as_of_date() -%}
    {%- if var('as_of_date') -%}
        date '{{ var("as_of_date") }}'
    {%- else -%}
        (select as_of_date from {{ ref('int_calendar_bounds') }})
    {%- endif -%}
{%- endmacro %}
