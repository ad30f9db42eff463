{#- Segment fan-out: every row once per segment type, so that one GROUP BY (segment_type,
    segment_value) gives the whole organisation ('all', 'all') and every segment.
    `segments` maps a segment type to the SQL expression of its value, in the order the rows
    should come; values are text. Every branch has the same columns in the same order. -#}
{% macro segment_fan_out(relation, segments) %}
    select
        'all' as segment_type,
        'all' as segment_value,
        *
    from {{ relation }}
    {%- for segment_type, value in segments.items() %}
    union all
    select
        '{{ segment_type }}' as segment_type,
        cast(({{ value }}) as {{ text_type() }}) as segment_value,
        *
    from {{ relation }}
    {%- endfor %}
{% endmacro %}

{#- Incident breakdowns: every row once per breakdown of marts.incident_rates: by status (and
    'all' statuses), by quarter and status (and 'all'), and by month relative to the first
    certification (-12..+12, all statuses). `columns` are carried through. -#}
{% macro incident_breakdowns(relation, columns) %}
    {%- set carried = columns | join(', ') %}
    {%- set branches = [
        ("'status'", "null::date", "certification_status", "null::integer", ""),
        ("'status'", "null::date", "'all'", "null::integer", ""),
        ("'quarter_by_status'", "quarter", "certification_status", "null::integer", ""),
        ("'quarter_by_status'", "quarter", "'all'", "null::integer", ""),
        ("'event_time'", "null::date", "'all'", "months_since_first_cert::integer",
         "where months_since_first_cert between -12 and 12"),
    ] %}
    {%- for breakdown, quarter, status, relative_month, where in branches %}
    {%- if not loop.first %}
    union all
    {%- endif %}
    select
        {{ breakdown }} as breakdown,
        {{ quarter }} as quarter,
        {{ status }} as certification_status,
        {{ relative_month }} as relative_month,
        {{ carried }}
    from {{ relation }}
    {{ where }}
    {%- endfor %}
{% endmacro %}
