{#- Custom schema names are used as-is (staging, intermediate, marts), not prefixed with the
    target schema, so the build file has exactly the schemas docs/architecture.md names. -#}
{% macro generate_schema_name(custom_schema_name, node) -%}
    {%- if custom_schema_name is none -%}
        {{ target.schema }}
    {%- else -%}
        {{ custom_schema_name | trim }}
    {%- endif -%}
{%- endmacro %}
