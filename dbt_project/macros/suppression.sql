{#- Small-group suppression of an analyst-facing mart, the way the report suppresses its tables
    (pipelines/lib/report/suppression.py) and the Python marts theirs
    (pipelines/lib/careers/result.py::suppress): one rule, computed to a fixed point.

    `relation`  the unsuppressed rows (a model in schema `restricted`, or a CTE over one).
    `size`      SQL expression: how many people a row is built from.
    `measures`  columns set to NULL on hidden rows: the counts and everything derived from them.
    `keep`      the other columns the mart shows (its grain and descriptive columns).
    `primary`   SQL expression, true for rows too small to show; default: `size` is 1..k-1,
                k = var min_group_size. NULL counts as true (fail closed).
    `reason`    SQL expression for the primary rows' `suppression_reason`.
    `lines`     partitions whose rows add up to a published figure (a total row, another mart,
                a quarter made of its months). Where a line has exactly one hidden row, its
                total minus the visible rows would give that row back, so the smallest visible
                non-empty row of the line is hidden too (complementary suppression). A line
                with one hidden row and no visible non-empty row to hide beside it cannot be
                protected that way: it is hidden whole.
    `order_by`  tie-break among equally small candidates, so the choice is reproducible.

    A row hidden for one line can leave another line with a single hidden row, and so on: the
    lines are passed round after round until a round hides nothing more (a fixed point; a
    recursive CTE, one round per step, so no company's nightly depends on how many rounds its
    data happens to need). Every round can only hide rows, so it ends after at most as many
    rounds as the mart has rows; in practice 1-4. Spark alone cannot run that recursion (its
    WITH RECURSIVE refuses window functions over the recursive reference): there the rounds are
    written out, var suppression_rounds_spark of them (default 8).

    The recursion carries only what the rule needs (the `keep` and `measures` columns, the
    size, a tie-break rank, one dense rank per line, the hidden flag, the primary reason, the
    reason as a code and whether the round changed anything), so it builds on DuckDB, PostgreSQL and Spark alike. The
    reason is written once, at the end, from the code of the pass that first hid the row.

    Adds `suppressed` (boolean) and `suppression_reason` (NULL when shown). The generic tests
    `suppressed_below_min_group_size` and `no_single_suppressed_row_in_line` check the result;
    the unit test in marts/level_mix.yml needs three rounds and hides a line whole. -#}
{% macro suppress_small_groups(relation, size, measures, keep, lines=[], primary=none, reason=none, order_by='1') %}
    {%- set k = var('min_group_size') | int %}
    {%- set primary_sql = primary if primary else '(' ~ size ~ ') between 1 and ' ~ (k - 1) %}
    {%- set reason_sql = reason if reason else "'fewer than " ~ k ~ " people'" %}
    {%- set n = lines | length %}
    {%- set columns = namespace(carried=keep + measures + ['_size', '_tie', '_primary_reason']) %}
    {%- for i in range(n) %}{% set columns.carried = columns.carried + ['_line_' ~ i] %}{% endfor %}
    {%- set carried = columns.carried %}
    {%- set anchor -%}
        select
            {%- for c in keep + measures %}
            {{ c }},
            {%- endfor %}
            coalesce(({{ size }}), 0) as _size,
            row_number() over (order by {{ order_by }}) as _tie,
            case when coalesce(({{ primary_sql }}), true) then {{ reason_sql }} end as _primary_reason,
            {%- for line in lines %}
            dense_rank() over (order by {{ line }}) as _line_{{ loop.index0 }},
            {%- endfor %}
            coalesce(({{ primary_sql }}), true) as _hidden,
            cast(case when coalesce(({{ primary_sql }}), true) then 0 end as integer) as _why,
            true as _go
        from {{ relation }}
    {%- endset %}
    {%- if n and target.type == 'spark' %}
    {#- Spark's WITH RECURSIVE refuses window functions over the recursive reference
        (INVALID_RECURSIVE_REFERENCE.PLACE), so there the rounds are written out, as many as
        var suppression_rounds_spark says; the test no_single_suppressed_row_in_line names a
        mart that would have needed more. -#}
    {%- set ns = namespace(sql=anchor) %}
    {%- for r in range(var('suppression_rounds_spark', 8) | int) %}
        {%- set ns.sql = suppression_round(carried, n, '(' ~ ns.sql ~ ') as _round_' ~ r) %}
    {%- endfor %}
    with _suppression as ({{ ns.sql }})
    {%- elif n %}
    with recursive _suppression as (
        {{ anchor }}
        union all
        {{ suppression_round(carried, n, '_suppression where _go') }}
    )
    {%- else %}
    with _suppression as ({{ anchor }})
    {%- endif %}

    select
        {%- for c in keep %}
        {{ c }},
        {%- endfor %}
        {%- for m in measures %}
        case when _hidden then null else {{ m }} end as {{ m }},
        {%- endfor %}
        _hidden as suppressed,
        case
            when _why = 0 then _primary_reason
            {%- for line in lines %}
            when _why = {{ loop.index }} then 'complementary: the line ({{ line | replace("'", "") }}) would give a hidden row back by subtraction'
            when _why = {{ n + loop.index }} then 'the line ({{ line | replace("'", "") }}) could not be protected: hidden whole'
            {%- endfor %}
        end as suppression_reason
    from _suppression
    where {{ 'not _go' if n and target.type != 'spark' else 'true' }}
{% endmacro %}


{#- One round of suppress_small_groups over `source` (a FROM item whose rows carry `carried`,
    `_hidden`, `_why`): a pass over each of the `n` lines in turn, each pass one select whose
    windows see the hidden flags of the pass before. Returns the same columns, with `_go` true
    on every row when the round hid anything. Reason codes: 0 primary, i complementary in line
    i, n + i line i hidden whole. -#}
{% macro suppression_round(carried, n, source) %}
    {%- set ns = namespace(sql='select ' ~ carried | join(', ') ~ ', _hidden as _was, _hidden as _hidden_0, _why as _why_0 from ' ~ source) %}
    {%- for i in range(n) %}
        {%- set h = '_hidden_' ~ i %}
        {%- set by = 'partition by _line_' ~ i %}
        {%- set lonely = 'sum(case when ' ~ h ~ ' then 1 else 0 end) over (' ~ by ~ ') = 1 and not ' ~ h %}
        {%- set smallest = 'coalesce(' ~ lonely ~ ' and _size > 0 and row_number() over (' ~ by
            ~ ' order by case when not ' ~ h ~ ' and _size > 0 then 0 else 1 end, _size, _tie) = 1, false)' %}
        {%- set whole = 'coalesce(' ~ lonely ~ ' and sum(case when not ' ~ h ~ ' and _size > 0 then 1 else 0 end) over (' ~ by ~ ') = 0, false)' %}
        {%- set ns.sql = 'select ' ~ carried | join(', ') ~ ', _was, '
            ~ h ~ ' or ' ~ smallest ~ ' or ' ~ whole ~ ' as _hidden_' ~ (i + 1) ~ ', '
            ~ 'case when ' ~ h ~ ' then _why_' ~ i ~ ' when ' ~ smallest ~ ' then ' ~ (i + 1)
            ~ ' when ' ~ whole ~ ' then ' ~ (n + i + 1) ~ ' end as _why_' ~ (i + 1)
            ~ ' from (' ~ ns.sql ~ ') as _pass_' ~ i %}
    {%- endfor -%}
    select
        {{ carried | join(', ') }},
        _hidden_{{ n }} as _hidden,
        cast(_why_{{ n }} as integer) as _why,
        max(case when _hidden_{{ n }} and not _was then 1 else 0 end) over () = 1 as _go
    from ({{ ns.sql }}) as _round
{%- endmacro %}
