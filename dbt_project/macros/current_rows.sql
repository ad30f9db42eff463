{#- Current rows of an export: rows of active files only; per natural key the row with the
    latest (_period, _version, _line) wins ("changed records" deliveries, re-deliveries).
    The rows carry one more column, _recency (1 for every current row). -#}
{% macro current_rows(export, key_columns) -%}
    select * from (
        select
            r.*,
            row_number() over (
                partition by {% for k in key_columns %}r.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
                order by r._period desc, r._version desc, r._line desc
            ) as _recency
        from {{ source('raw', export) }} as r
        inner join {{ source('raw', 'manifest') }} as m
            on m.file_id = r._file_id
            and m.export = '{{ export }}'
            and m.status = 'active'
    ) as ranked
    where _recency = 1
{%- endmacro %}
