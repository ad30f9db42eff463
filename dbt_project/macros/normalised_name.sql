{#- A person's full name as incident tools and the HRIS both spell it: accents, case and
    repeated blanks removed. Only ever used inside pseudonym(). -#}
{% macro normalised_name(expression) -%}
    strip_accents(lower(trim(regexp_replace({{ expression }}, '\s+', ' ', 'g'))))
{%- endmacro %}
