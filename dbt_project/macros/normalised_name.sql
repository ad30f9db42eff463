{#- A person's full name as incident tools and the HRIS both spell it: accents, case and
    repeated blanks removed. Only ever used inside pseudonym(). DuckDB strips accents with
    strip_accents; PostgreSQL and Spark have no such function, so they map the accented letters
    of the Latin, Greek and Cyrillic blocks to their base letters and drop combining marks
    (macros/accents.sql, checked against DuckDB by tests/test_targets.py). -#}
{% macro normalised_name(expression) %}{{ return(adapter.dispatch('normalised_name', 'talent_metrics')(expression)) }}{% endmacro %}

{% macro default__normalised_name(expression) -%}
    strip_accents(lower(trim(regexp_replace({{ expression }}, '\s+', ' ', 'g'))))
{%- endmacro %}

{% macro postgres__normalised_name(expression) -%}
    translate(lower(trim(regexp_replace({{ expression }}, '\s+', ' ', 'g'))), {{ accented_letters() }}, {{ base_letters() }})
{%- endmacro %}

{% macro spark__normalised_name(expression) -%}
    translate(lower(trim(regexp_replace({{ expression }}, '\\s+', ' '))), {{ accented_letters() }}, {{ base_letters() }})
{%- endmacro %}
