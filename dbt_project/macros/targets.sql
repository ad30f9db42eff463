{#-
    What a build target needs before the first model (the project's `on-run-start` hook):

    - the function pseudonym(text): DuckDB has it from the pipeline's dbt-duckdb plugin
      (pipelines/lib/duckdb_plugin.py); PostgreSQL and Spark get an SQL function that computes the
      same keyed HMAC-SHA256 ('p_' + its first 16 hex), so the same key gives the same person_key
      on every target. The key is never in the SQL: PostgreSQL reads it from the session setting
      talent.pseudonym_key (PGOPTIONS, set by pipelines/lib/targets.py when it starts dbt), Spark
      from the environment at parse time (`${env:...}`, substituted in memory); the compiled SQL
      that dbt leaves in target/ holds only those names.
    - Spark: the raw tables, as Parquet files that pipelines/lib/targets.py wrote, registered as
      tables raw.<export> of the session (its catalog lives in memory for one dbt invocation).
-#}
{% macro prepare_target() %}{{ return(adapter.dispatch('prepare_target', 'talent_metrics')()) }}{% endmacro %}

{% macro default__prepare_target() %}{% endmacro %}

{% macro postgres__prepare_target() %}
    create extension if not exists pgcrypto;
    create or replace function pseudonym(value text) returns text
    language sql stable strict parallel safe
    as $$
        select 'p_' || left(encode(hmac(
            convert_to(value, 'UTF8'),
            convert_to(current_setting('talent.pseudonym_key'), 'UTF8'),
            'sha256'
        ), 'hex'), 16)
    $$;
{% endmacro %}

{% macro spark__prepare_target() %}
    {%- if execute %}
        {%- do run_query('create database if not exists raw') %}
        {%- for node in graph.sources.values() if node.source_name == 'raw' %}
            {%- do run_query(
                'create table if not exists raw.' ~ node.name ~ ' using parquet location '
                ~ "'" ~ env_var('TALENT_SPARK_RAW') ~ '/' ~ node.name ~ ".parquet'"
            ) %}
        {%- endfor %}
    {%- endif %}
    create or replace temporary function pseudonym(value string) returns string
    return case
        when value is not null
            then concat('p_', left(lower(hex(hmac(unbase64('${env:TALENT_PSEUDONYM_KEY_B64}'), value))), 16))
    end
{% endmacro %}

{#- dbt-spark's seed loader, with one change: an empty cell is inserted as NULL. dbt-spark's
    session connection quotes every bound value, so None arrived as the text 'None'. -#}
{% macro spark__load_csv_rows(model, agate_table) %}
    {%- set batch_size = get_batch_size() %}
    {%- set column_override = model['config'].get('column_types', {}) %}
    {%- set statements = [] %}
    {%- for chunk in agate_table.rows | batch(batch_size) %}
        {%- set bindings = [] %}
        {%- set sql %}
            insert into {{ this.render() }} values
            {% for row in chunk -%}
                ({%- for col_name in agate_table.column_names -%}
                    {%- set type = column_override.get(col_name, adapter.convert_type(agate_table, loop.index0)) -%}
                    {%- if row[loop.index0] is none -%}
                        cast(null as {{ type }})
                    {%- else -%}
                        {%- do bindings.append(row[loop.index0]) -%}
                        cast({{ get_binding_char() }} as {{ type }})
                    {%- endif -%}
                    {%- if not loop.last %}, {% endif -%}
                {%- endfor -%})
                {%- if not loop.last %},{% endif %}
            {%- endfor %}
        {%- endset %}
        {%- do adapter.add_query(sql, bindings=bindings, abridge_sql_log=True) %}
        {%- if loop.index0 == 0 %}
            {%- do statements.append(sql) %}
        {%- endif %}
    {%- endfor %}
    {{ return(statements[0]) }}
{% endmacro %}
