{#- Reconciliation: within each `line` (a list of columns), the rows that are not the total
    (`total_where` false) add up to the total row, column by column. Fails for every line and
    column where they do not. -#}
{% test parts_add_up_to_total(model, line, total_where, columns) %}
with sums as (
    select
        {{ line | join(', ') }},
        {%- for c in columns %}
        sum(case when {{ total_where }} then {{ c }} else 0 end) as total_{{ c }},
        sum(case when {{ total_where }} then 0 else {{ c }} end) as parts_{{ c }}{{ ',' if not loop.last }}
        {%- endfor %}
    from {{ model }}
    group by {{ line | join(', ') }}
)

select *
from sums
where
    false
    {%- for c in columns %}
    or total_{{ c }} <> parts_{{ c }}
    {%- endfor %}
{% endtest %}
