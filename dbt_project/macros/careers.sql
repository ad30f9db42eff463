{#-
    Portable helpers the programme, career and pay-band models need (same contract as
    portable.sql: `default__` is DuckDB's spelling; PostgreSQL and Spark give the same values).
-#}

{#- A date plus whole calendar months (a literal integer), as a DATE. The day is clamped to the
    month's last day on every target (2024-01-31 + 1 month = 2024-02-29). -#}
{% macro add_months_to(day, months) %}{{ return(adapter.dispatch('add_months_to', 'talent_metrics')(day, months)) }}{% endmacro %}
{% macro default__add_months_to(day, months) %}cast(({{ day }}) + interval '{{ months | int }} months' as date){% endmacro %}
{% macro spark__add_months_to(day, months) %}add_months({{ day }}, {{ months | int }}){% endmacro %}

{#- Days as months of the average calendar (days / 30.4375), as a double. -#}
{% macro days_as_months(days) -%}
    {{ divide(days, '30.4375') }}
{%- endmacro %}

{#- Continuous quantile q (0..1) of a numeric expression, interpolated between the two nearest
    values (aggregate; q = 0.5 is median_of). -#}
{% macro quantile_of(value, q) %}{{ return(adapter.dispatch('quantile_of', 'talent_metrics')(value, q)) }}{% endmacro %}
{% macro default__quantile_of(value, q) %}quantile_cont({{ value }}, {{ q }}){% endmacro %}
{% macro postgres__quantile_of(value, q) %}percentile_cont({{ q }}) within group (order by {{ value }}){% endmacro %}
{% macro spark__quantile_of(value, q) %}percentile({{ value }}, {{ q }}){% endmacro %}

{#- x rounded to the nearest multiple of `step` (halves away from zero for positive x, the same
    on every target: PostgreSQL's round() of a double rounds halves to even). -#}
{% macro round_to(x, step) -%}
    {%- if step < 1 -%}
        {%- set per_unit = (1 / step) | round | int -%}
    (floor(({{ x }}) * {{ per_unit }} + 0.5) / {{ per_unit }})
    {%- else -%}
    (floor(({{ x }}) / {{ step }} + 0.5) * {{ step }})
    {%- endif -%}
{%- endmacro %}
