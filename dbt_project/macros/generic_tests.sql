{#- Generic tests written here because dbt packages (dbt_utils) cannot be installed offline. -#}

{#- Fails for every row where the SQL expression is not true. -#}
{% test expression_is_true(model, expression, where=none) %}
select *
from {{ model }}
where not ({{ expression }})
{%- if where %} and ({{ where }}){% endif %}
{% endtest %}

{#- Fails for every combination of the columns that occurs more than once. -#}
{% test unique_combination_of_columns(model, combination_of_columns) %}
select {{ combination_of_columns | join(', ') }}, count(*) as n_rows
from {{ model }}
group by {{ combination_of_columns | join(', ') }}
having count(*) > 1
{% endtest %}

{#- Fails for every non-null value outside [min_value, max_value] (either bound optional). -#}
{% test accepted_range(model, column_name, min_value=none, max_value=none) %}
select *
from {{ model }}
where {{ column_name }} is not null
  and (
    false
    {%- if min_value is not none %} or {{ column_name }} < {{ min_value }}{% endif %}
    {%- if max_value is not none %} or {{ column_name }} > {{ max_value }}{% endif %}
  )
{% endtest %}

{#- Privacy: fails for every row where a count of people is 1..min_group_size-1 (the analyst-
    facing marts suppress such rows; macros/suppression.sql). -#}
{% test suppressed_below_min_group_size(model, column_name) %}
select *
from {{ model }}
where {{ column_name }} between 1 and {{ var('min_group_size') | int - 1 }}
{% endtest %}

{#- Privacy: fails for every line (rows adding up to a published figure) with exactly one
    suppressed row while a non-empty row is shown: the total minus the shown rows would give
    the suppressed row back. `size` is the shown rows' count of people. -#}
{% test no_single_suppressed_row_in_line(model, line, size) %}
select {{ line }}, count(*) filter (where suppressed) as suppressed_rows
from {{ model }}
group by {{ line }}
having
    count(*) filter (where suppressed) = 1
    and count(*) filter (where not suppressed and {{ size }} > 0) > 0
{% endtest %}

{#- Privacy: fails for every combination of `columns` (NULL is a value) that fewer than
    min_group_size rows share (k-anonymity over those columns). -#}
{% test k_anonymous(model, columns) %}
select {{ columns | join(', ') }}, count(*) as people
from {{ model }}
group by {{ columns | join(', ') }}
having count(*) < {{ var('min_group_size') }}
{% endtest %}
