{#- The records of one export that two or more tools deliver for the same period, and how
    their contract values differ (`marts/source_conflicts`). `e` is one entry of
    `contract_exports()`. An export one tool delivers gives no rows, without reading its raw
    table (the join with its files is empty). The CTEs are named after the export:

    - `<export>_candidates`: the active rows with the order staging picks the current row by
      (`pick` = 1 is the row staging keeps), their period's rank and one row per key and tool;
    - `<export>_delivered`: per file, the columns it fills at least once (a column a tool
      never exports is not compared: its empty value is no conflict);
    - `<export>_pairs`: per key, the kept row against each other tool's row of the same period;
    - `<export>_conflicts`: per kept tool, other tool and resolution, the keys both describe and
      per column the keys whose values differ (no key and no value leaves it). -#}
{% macro source_conflicts_of(e) -%}
{%- set key = e.key | join(', ') -%}
{{ e.name }}_candidates as (
    select
        {%- for c in e.key + e.columns %}
        r.{{ c }},
        {%- endfor %}
        r._file_id,
        m.source_system as tool,
        {{ tool_rank(e.name, 'm.source_system') }} as tool_rank,
        row_number() over (
            partition by {% for k in e.key %}r.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
            order by {{ current_row_order(e.name) }}
        ) as pick,
        dense_rank() over (
            partition by {% for k in e.key %}r.{{ k }}{{ ', ' if not loop.last }}{% endfor %}
            order by r._period desc
        ) as period_rank,
        row_number() over (
            partition by {% for k in e.key %}r.{{ k }}, {% endfor %}m.source_system, r._period
            order by r._version desc, r._line desc
        ) as tool_pick
    from {{ source('raw', e.name) }} as r
    -- the export's active files, when two or more tools deliver it (else no file: the raw
    -- table is not read)
    inner join (
        select
            file_id,
            source_system,
            loaded_at
        from {{ source('raw', 'manifest') }}
        where
            export = '{{ e.name }}'
            and status = 'active'
            and export in (
                select export from {{ source('raw', 'manifest') }}
                where status = 'active' and rows_loaded > 0
                group by export
                having count(distinct source_system) > 1
            )
    ) as m
        on m.file_id = r._file_id
),

{{ e.name }}_delivered as (
    select
        _file_id,
        {%- for c in e.columns %}
        count({{ c }}) > 0 as {{ c }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ e.name }}_candidates
    group by _file_id
),

{{ e.name }}_pairs as (
    select
        kept.tool as kept_tool,
        other.tool as other_tool,
        case
            when kept.tool_rank < other.tool_rank then {{ precedence_rule(e.name) }}
            else 'latest delivery'
        end as resolution,
        {%- for c in e.columns %}
        case
            when not kept_filled.{{ c }} or not other_filled.{{ c }} then 0
            when kept.{{ c }} = other.{{ c }} then 0
            when kept.{{ c }} is null and other.{{ c }} is null then 0
            else 1
        end as {{ c }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ e.name }}_candidates as kept
    inner join {{ e.name }}_candidates as other
        on
            {% for k in e.key %}other.{{ k }} is not distinct from kept.{{ k }}
            and {% endfor %}other.period_rank = 1
            and other.tool_pick = 1
            and other.tool <> kept.tool
    inner join {{ e.name }}_delivered as kept_filled on kept_filled._file_id = kept._file_id
    inner join {{ e.name }}_delivered as other_filled on other_filled._file_id = other._file_id
    where kept.pick = 1
),

{{ e.name }}_counts as (
    select
        kept_tool,
        other_tool,
        resolution,
        count(*) as shared_rows,
        sum(case when {% for c in e.columns %}{{ c }} = 1{{ ' or ' if not loop.last }}{% endfor %} then 1 else 0 end) as any_column,
        {%- for c in e.columns %}
        sum({{ c }}) as {{ c }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ e.name }}_pairs
    group by kept_tool, other_tool, resolution
),

{{ e.name }}_conflicts as (
    select
        '{{ e.name }}' as export,
        n.column_name,
        c.kept_tool,
        c.other_tool,
        c.resolution,
        c.shared_rows,
        case n.column_name
            when 'any column' then c.any_column
            {%- for col in e.columns %}
            when '{{ col }}' then c.{{ col }}
            {%- endfor %}
        end as conflicting_rows
    from {{ e.name }}_counts as c
    cross join (
        values ('any column'){% for col in e.columns %}, ('{{ col }}'){% endfor %}
    ) as n (column_name)
),
{%- endmacro %}

{#- Every export's conflicts, one query (`marts/source_conflicts`). -#}
{% macro source_conflicts() -%}
with
{%- for e in contract_exports() %}
{{ source_conflicts_of(e) }}
{%- endfor %}

found as (
    {%- for e in contract_exports() %}
    select
        export,
        column_name,
        kept_tool,
        other_tool,
        resolution,
        cast(shared_rows as bigint) as shared_rows,
        cast(conflicting_rows as bigint) as conflicting_rows
    from {{ e.name }}_conflicts
    {{- '\n    union all' if not loop.last }}
    {%- endfor %}
)

select * from found
{%- endmacro %}
