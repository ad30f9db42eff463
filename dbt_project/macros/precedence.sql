{#- Which tool's row counts when two tools deliver one natural key for the same period
    (pipelines/lib/ingest/precedence.py): the order var `source_precedence` gives for the
    export (from sources.yml: `precedence`, else `system_of_record`), then the latest delivery
    (the file loaded last). `current_rows` and `source_conflicts` rank by the same order. -#}

{#- The order in which the rows of one key win, `r` the raw rows and `m` their manifest row:
    the latest period, then the tool's place in the precedence, then the latest delivery,
    version and line. -#}
{% macro current_row_order(export) -%}
    r._period desc,
    {%- if precedence_of(export).tools %} {{ tool_rank(export, 'm.source_system') }},{% endif %}
    m.loaded_at desc, r._version desc, r._line desc
{%- endmacro %}

{#- The export's entry of var `source_precedence`: {tools: [...], rule: ...}, or {}. -#}
{% macro precedence_of(export) -%}
    {%- set every = var('source_precedence', {}) -%}
    {{ return(every[export] if every is mapping and export in every else {}) }}
{%- endmacro %}

{#- A tool's place in the export's precedence (1 = first); every tool the order does not name
    comes after those it names, in one place. -#}
{% macro tool_rank(export, tool_column) -%}
    {%- set tools = precedence_of(export).tools or [] -%}
    {%- if tools -%}
    case lower(coalesce({{ tool_column }}, ''))
        {%- for t in tools %} when '{{ t | lower | replace("'", "''") }}' then {{ loop.index }}{% endfor %}
        else {{ tools | length + 1 }} end
    {%- else -%}
    0
    {%- endif -%}
{%- endmacro %}

{#- How a key two tools deliver was resolved, when the kept tool ranks before the other one:
    'system of record' or 'precedence' (the sources.yml setting that orders the export). -#}
{% macro precedence_rule(export) -%}
    '{{ (precedence_of(export).rule or 'precedence') | replace("'", "''") }}'
{%- endmacro %}
