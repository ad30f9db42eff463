{#- Small-group suppression of an analyst-facing mart, the way the report suppresses its tables
    (pipelines/lib/report/suppression.py).

    `relation`  the unsuppressed rows (a model in schema `restricted`).
    `size`      SQL expression: how many people a row is built from.
    `primary`   SQL expression, true for rows too small to show; default: `size` is 1..k-1,
                k = var min_group_size. NULL counts as true (fail closed).
    `lines`     partitions whose rows add up to a published figure (a total row, another mart,
                a quarter made of its months). Where a line has exactly one hidden row, its
                total minus the visible rows would give that row back, so the smallest visible
                non-empty row of the line is hidden too (complementary suppression). The lines
                are passed `rounds` times, because a row hidden for one line can leave another
                line with a single hidden row.
    `measures`  columns set to NULL on hidden rows: the counts and everything derived from them.
    `order_by`  tie-break among equally small candidates, so the choice is reproducible.

    Adds `suppressed` (boolean) and `suppression_reason` (NULL when shown). The generic tests
    `suppressed_below_min_group_size` and `no_single_suppressed_row_in_line` check the result. -#}
{% macro suppress_small_groups(relation, size, measures, lines=[], primary=none, reason=none, order_by='1', rounds=2) %}
    {%- set k = var('min_group_size') | int %}
    {%- set primary_sql = primary if primary else '(' ~ size ~ ') between 1 and ' ~ (k - 1) %}
    {%- set reason_sql = reason if reason else "'fewer than " ~ k ~ " people'" %}
    {%- set ns = namespace(sql='select *, coalesce((' ~ size ~ '), 0) as _size, coalesce((' ~ primary_sql ~ '), true) as _hidden, '
        ~ 'case when coalesce((' ~ primary_sql ~ '), true) then ' ~ reason_sql ~ ' end as _reason from ' ~ relation) %}
    {%- for round in range(rounds if lines else 0) %}
        {%- for line in lines %}
            {%- set ns.sql = 'select * exclude (_pick) replace (_hidden or _pick as _hidden, '
                ~ "case when _pick then 'complementary: the line (" ~ line | replace("'", "") ~ ") would give a hidden row back by subtraction' else _reason end as _reason) "
                ~ 'from (select *, coalesce(count(*) filter (where _hidden) over (partition by ' ~ line ~ ') = 1 '
                ~ 'and not _hidden and _size > 0 and row_number() over (partition by ' ~ line ~ ', (not _hidden and _size > 0) '
                ~ 'order by _size, ' ~ order_by ~ ') = 1, false) as _pick from (' ~ ns.sql ~ '))' %}
        {%- endfor %}
    {%- endfor %}
    select
        * exclude (_size, _hidden, _reason) replace (
        {%- for m in measures %}
            case when _hidden then null else {{ m }} end as {{ m }}{{ ',' if not loop.last }}
        {%- endfor %}
        ),
        _hidden as suppressed,
        _reason as suppression_reason
    from ({{ ns.sql }})
{% endmacro %}
