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
