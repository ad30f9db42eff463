{#-
    Sum of a DOUBLE expression that does not depend on the order of the rows.

    DuckDB aggregates in parallel and adds the partial sums in whatever order the threads finish,
    so a plain sum() of doubles can differ in its last bits between two builds of the same rows.
    Each value is rounded to 12 decimal places (far below a cent, a second or an hour's
    millionth) and summed exactly as DECIMAL; the total is returned as DOUBLE. Two builds of the
    same rows then publish the same bits, which the incremental test compares exactly.
-#}
{% macro exact_sum(expr) -%}
    sum(({{ expr }})::decimal(38, 12))::{{ double_type() }}
{%- endmacro %}

{#- Mean of a DOUBLE expression, independent of row order (see exact_sum); NULL without values. -#}
{% macro exact_avg(expr) -%}
    ({{ exact_sum(expr) }} / nullif(count({{ expr }}), 0))
{%- endmacro %}
