{#-
    SQL that DuckDB, PostgreSQL and Spark spell differently, behind adapter.dispatch, so that the
    models build unchanged on dbt-duckdb, dbt-postgres and dbt-spark (docs/architecture.md,
    "Targets"). `default__` is DuckDB's spelling, exactly what the models said before; the
    `postgres__` and `spark__` ones give the same values (tests/test_postgres_targets.py and
    tests/test_spark_targets.py compare every mart row for row).
-#}

{#- Text and double types for casts (Spark wants a length on varchar; PostgreSQL has no double). -#}
{% macro text_type() %}{{ return(adapter.dispatch('text_type', 'talent_metrics')()) }}{% endmacro %}
{% macro default__text_type() %}varchar{% endmacro %}
{% macro postgres__text_type() %}text{% endmacro %}
{% macro spark__text_type() %}string{% endmacro %}

{% macro double_type() %}{{ return(adapter.dispatch('double_type', 'talent_metrics')()) }}{% endmacro %}
{% macro default__double_type() %}double{% endmacro %}
{% macro postgres__double_type() %}double precision{% endmacro %}

{#- num / den as a double. DuckDB's `/` divides as doubles already; PostgreSQL's divides
    integers as integers (1 / 2 = 0) and numerics as numerics; Spark's returns a decimal for a
    decimal operand. -#}
{% macro divide(num, den) %}{{ return(adapter.dispatch('divide', 'talent_metrics')(num, den)) }}{% endmacro %}
{% macro default__divide(num, den) %}({{ num }}) / ({{ den }}){% endmacro %}
{% macro postgres__divide(num, den) %}cast({{ num }} as double precision) / ({{ den }}){% endmacro %}
{% macro spark__divide(num, den) %}cast({{ num }} as double) / ({{ den }}){% endmacro %}

{#- Whole days from start_date to end_date (dates). -#}
{% macro days_between(start_date, end_date) %}{{ return(adapter.dispatch('days_between', 'talent_metrics')(start_date, end_date)) }}{% endmacro %}
{% macro default__days_between(start_date, end_date) %}datediff('day', {{ start_date }}, {{ end_date }}){% endmacro %}
{% macro postgres__days_between(start_date, end_date) %}(({{ end_date }})::date - ({{ start_date }})::date){% endmacro %}
{% macro spark__days_between(start_date, end_date) %}datediff({{ end_date }}, {{ start_date }}){% endmacro %}

{#- Seconds from one timestamp to another, as a double. -#}
{% macro seconds_between(start_ts, end_ts) %}{{ return(adapter.dispatch('seconds_between', 'talent_metrics')(start_ts, end_ts)) }}{% endmacro %}
{% macro default__seconds_between(start_ts, end_ts) %}date_diff('second', {{ start_ts }}, {{ end_ts }}){% endmacro %}
{% macro postgres__seconds_between(start_ts, end_ts) %}floor(extract(epoch from ({{ end_ts }}) - ({{ start_ts }})))::double precision{% endmacro %}
{% macro spark__seconds_between(start_ts, end_ts) %}cast(timestampdiff(SECOND, {{ start_ts }}, {{ end_ts }}) as double){% endmacro %}

{#- Complete months from start_date to end_date (end on or after start), as DuckDB's
    date_sub('month', ...) counts them: a month is complete when the end's day of the month
    reaches the start's, or the end is the last day of its month. -#}
{% macro full_months_between(start_date, end_date) %}{{ return(adapter.dispatch('full_months_between', 'talent_metrics')(start_date, end_date)) }}{% endmacro %}
{% macro default__full_months_between(start_date, end_date) %}date_sub('month', {{ start_date }}, {{ end_date }}){% endmacro %}
{% macro postgres__full_months_between(start_date, end_date) -%}
    (
        (extract(year from {{ end_date }}) - extract(year from {{ start_date }})) * 12
        + extract(month from {{ end_date }}) - extract(month from {{ start_date }})
        - case
            when extract(day from {{ end_date }}) < extract(day from {{ start_date }})
                and {{ end_date }} <> {{ month_end_of(end_date) }} then 1
            else 0
        end
    )::bigint
{%- endmacro %}
{% macro spark__full_months_between(start_date, end_date) -%}
    cast(
        (year({{ end_date }}) - year({{ start_date }})) * 12
        + month({{ end_date }}) - month({{ start_date }})
        - case
            when day({{ end_date }}) < day({{ start_date }})
                and {{ end_date }} <> last_day({{ end_date }}) then 1
            else 0
        end
    as bigint)
{%- endmacro %}

{#- The last day of the month of a date (or of date + interval, which PostgreSQL makes a
    timestamp). -#}
{% macro month_end_of(day) %}{{ return(adapter.dispatch('month_end_of', 'talent_metrics')(day)) }}{% endmacro %}
{% macro default__month_end_of(day) %}last_day({{ day }}){% endmacro %}
{% macro postgres__month_end_of(day) %}(date_trunc('month', {{ day }}) + interval '1' month - interval '1' day)::date{% endmacro %}

{#- A date part as an integer: year, quarter, month, isodow (Monday = 1). -#}
{% macro date_part_of(part, day) %}{{ return(adapter.dispatch('date_part_of', 'talent_metrics')(part, day)) }}{% endmacro %}
{% macro default__date_part_of(part, day) %}{{ part }}({{ day }}){% endmacro %}
{% macro postgres__date_part_of(part, day) %}extract({{ part }} from {{ day }})::bigint{% endmacro %}
{% macro spark__date_part_of(part, day) -%}
    {%- if part == 'isodow' -%}(weekday({{ day }}) + 1){%- else -%}{{ part }}({{ day }}){%- endif -%}
{%- endmacro %}

{#- One row per date from start_date to end_date, a month or a day apart, as DATE values (in a
    select list; Spark allows its generator in no expression, so the cast is part of the macro). -#}
{% macro date_series(start_date, end_date, unit) %}{{ return(adapter.dispatch('date_series', 'talent_metrics')(start_date, end_date, unit)) }}{% endmacro %}
{% macro default__date_series(start_date, end_date, unit) %}unnest(generate_series({{ start_date }}, {{ end_date }}, interval 1 {{ unit }}))::date{% endmacro %}
{% macro postgres__date_series(start_date, end_date, unit) %}generate_series(({{ start_date }})::timestamp, ({{ end_date }})::timestamp, interval '1' {{ unit }})::date{% endmacro %}
{% macro spark__date_series(start_date, end_date, unit) %}explode(sequence({{ start_date }}, {{ end_date }}, interval 1 {{ unit }})){% endmacro %}

{#- Any one value of the group (aggregate; the models use it where all values are equal). -#}
{% macro any_value_of(value) %}{{ return(adapter.dispatch('any_value_of', 'talent_metrics')(value)) }}{% endmacro %}
{% macro default__any_value_of(value) %}any_value({{ value }}){% endmacro %}
{% macro postgres__any_value_of(value) %}min({{ value }}){% endmacro %}

{#- The value of `value` on the row with the largest `order_by` (aggregate), NULL when it is NULL
    there: int_engineer_months takes a person's attributes on the last in-scope day of the
    month, and an attribute missing that day is unknown, not the one of an earlier interval.
    DuckDB's arg_max skips rows whose value is NULL; arg_max_null does not, as PostgreSQL's
    ordered array_agg and Spark's max_by do not (tests/test_targets.py). -#}
{% macro value_at_max(value, order_by) %}{{ return(adapter.dispatch('value_at_max', 'talent_metrics')(value, order_by)) }}{% endmacro %}
{% macro default__value_at_max(value, order_by) %}arg_max_null({{ value }}, {{ order_by }}){% endmacro %}
{% macro postgres__value_at_max(value, order_by) %}(array_agg({{ value }} order by {{ order_by }} desc nulls last))[1]{% endmacro %}
{% macro spark__value_at_max(value, order_by) %}max_by({{ value }}, {{ order_by }}){% endmacro %}

{#- Median, interpolated between the two middle values (aggregate). -#}
{% macro median_of(value) %}{{ return(adapter.dispatch('median_of', 'talent_metrics')(value)) }}{% endmacro %}
{% macro default__median_of(value) %}median({{ value }}){% endmacro %}
{% macro postgres__median_of(value) %}percentile_cont(0.5) within group (order by {{ value }}){% endmacro %}

{#- Lists of text: aggregate sorted (distinct), split a ';'-separated string into upper-case
    codes, unnest into rows, and test that one list holds every element of another. -#}
{% macro sorted_list(value, distinct=false) %}{{ return(adapter.dispatch('sorted_list', 'talent_metrics')(value, distinct)) }}{% endmacro %}
{% macro default__sorted_list(value, distinct) -%}
    {%- if distinct -%}list_sort(list(distinct {{ value }})){%- else -%}list({{ value }} order by {{ value }}){%- endif -%}
{%- endmacro %}
{% macro postgres__sorted_list(value, distinct) %}array_agg({{ 'distinct ' if distinct }}{{ value }} order by {{ value }}){% endmacro %}
{% macro spark__sorted_list(value, distinct) %}array_sort({{ 'collect_set' if distinct else 'collect_list' }}({{ value }})){% endmacro %}

{% macro empty_text_list() %}{{ return(adapter.dispatch('empty_text_list', 'talent_metrics')()) }}{% endmacro %}
{% macro default__empty_text_list() %}[]::varchar[]{% endmacro %}
{% macro postgres__empty_text_list() %}array[]::text[]{% endmacro %}
{% macro spark__empty_text_list() %}cast(array() as array<string>){% endmacro %}

{% macro split_codes(value) %}{{ return(adapter.dispatch('split_codes', 'talent_metrics')(value)) }}{% endmacro %}
{% macro default__split_codes(value) %}list_transform(string_split({{ value }}, ';'), lambda x: upper(trim(x))){% endmacro %}
{% macro postgres__split_codes(value) -%}
    case when {{ value }} is not null then array(
        select upper(trim(code.part))
        from unnest(string_to_array({{ value }}, ';')) with ordinality as code (part, position)
        order by code.position
    ) end
{%- endmacro %}
{% macro spark__split_codes(value) %}transform(split({{ value }}, ';'), x -> upper(trim(x))){% endmacro %}

{% macro unnest_list(value) %}{{ return(adapter.dispatch('unnest_list', 'talent_metrics')(value)) }}{% endmacro %}
{% macro default__unnest_list(value) %}unnest({{ value }}){% endmacro %}
{% macro spark__unnest_list(value) %}explode({{ value }}){% endmacro %}

{#- NULL when either list is NULL, like DuckDB's list_has_all. -#}
{% macro list_has_all_of(haystack, needles) %}{{ return(adapter.dispatch('list_has_all_of', 'talent_metrics')(haystack, needles)) }}{% endmacro %}
{% macro default__list_has_all_of(haystack, needles) %}list_has_all({{ haystack }}, {{ needles }}){% endmacro %}
{% macro postgres__list_has_all_of(haystack, needles) %}(({{ haystack }}) @> ({{ needles }})){% endmacro %}
{% macro spark__list_has_all_of(haystack, needles) -%}
    case when {{ haystack }} is not null and {{ needles }} is not null
        then size(array_except({{ needles }}, {{ haystack }})) = 0 end
{%- endmacro %}
