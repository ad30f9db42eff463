{#- Current rows of an export: rows of active files only; per natural key the row of the latest
    period wins ("changed records" deliveries, re-deliveries). When two tools deliver the key for
    that period, the row of the tool the precedence names first wins, else the latest delivery
    (`current_row_order`, macros/precedence.sql); a key two tools describe alike counts once.
    The rows carry one more column, _recency (1 for every current row).

    In an incremental build of the model that calls it (`incremental_staging`), only the keys a
    delivery since the model's last build touched are ranked again (`changed_keys`): every row
    of such a key, from every active file, so the winner is the one a full build picks. -#}
{% macro current_rows(export, key_columns) -%}
    select * from (
        select
            r.*,
            row_number() over (
                partition by {% for k in key_columns %}r.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
                order by {{ current_row_order(export) }}
            ) as _recency
        from {{ source('raw', export) }} as r
        inner join {{ source('raw', 'manifest') }} as m
            on m.file_id = r._file_id
            and m.export = '{{ export }}'
            and m.status = 'active'
        {%- if is_incremental() %}
        where exists (
            select 1
            from ({{ changed_keys(export, key_columns) }}) as c
            where {% for k in key_columns %}c.{{ k }} is not distinct from r.{{ k }}{{ ' and ' if not loop.last }}{% endfor %}
        )
        {%- endif %}
    ) as ranked
    where _recency = 1
{%- endmacro %}


{#- The natural keys an incremental build ranks again: the keys of every row of

    - a file of the export loaded since the model's last build, whether it is active or was
      loaded as a superseded late re-delivery (its keys are ranked again at no harm), and
    - a file whose rows the model holds but which is no longer active: a re-delivery replaced
      it, and its keys fall back to what the active files give (`drop_inactive_rows` then
      removes the rows of keys that no active file gives any more).

    "Since the last build" is every file loaded after the latest load time among the files the
    model holds rows of: the loader stamps each file when it loads it, later than every stamp
    before it even if the clock was set back (`load_stamp`), and one run at a time writes a
    warehouse (`pipelines/lib/locking.py`), its ingestion before its build, so every file
    loaded after the last build is stamped later than any it holds. Raw
    files are never deleted and a manifest row only ever goes from active to superseded
    (`pipelines/lib/ingest/loader.py`), so these files are all that can change a current row. -#}
{% macro changed_keys(export, key_columns) -%}
    select distinct {% for k in key_columns %}f.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
    from {{ source('raw', export) }} as f
    where f._file_id in (
        select m.file_id
        from {{ source('raw', 'manifest') }} as m
        where m.export = '{{ export }}'
            and m.loaded_at > (
                select coalesce(max(h.loaded_at), timestamp '1900-01-01')
                from {{ source('raw', 'manifest') }} as h
                where h.export = '{{ export }}'
                    and h.file_id in (select distinct t._file_id from {{ this }} as t)
            )
        union all
        select t._file_id
        from (select distinct _file_id from {{ this }}) as t
        where t._file_id not in (
            select a.file_id
            from {{ source('raw', 'manifest') }} as a
            where a.export = '{{ export }}' and a.status = 'active'
        )
    )
{%- endmacro %}


{#- Configuration of a staging model kept incrementally (DuckDB, the nightly's target): each
    build ranks again only the keys new deliveries touched (`current_rows`) and replaces the
    model's rows of those keys (`unique_key`: columns that identify the natural key, never
    NULL). On PostgreSQL and Spark the model is a table rebuilt in full, as every other model.
    The pipeline builds with --full-refresh whenever anything but raw data changed (a model, a
    macro, a setting such as the pseudonym key), so an incremental build only ever adds the
    effect of new files to rows built by the same code. -#}
{% macro incremental_staging(unique_key) -%}
    {{ config(
        materialized='incremental' if target.type == 'duckdb' else 'table',
        incremental_strategy='delete+insert',
        unique_key=unique_key,
        on_schema_change='fail',
        post_hook="{{ drop_inactive_rows() }}",
    ) }}
{%- endmacro %}


{#- After an incremental build: rows that came from a file no longer active and that no new
    row replaced are rows of keys no active file gives any more; a full build has none. -#}
{% macro drop_inactive_rows() -%}
    {%- if is_incremental() -%}
    delete from {{ this }}
    where _file_id not in (
        select file_id from {{ source('raw', 'manifest') }} where status = 'active'
    )
    {%- endif -%}
{%- endmacro %}

