-- Where two or more tools deliver the same records of an export for the same period (the same
-- people from BambooHR and Workday), how their contract values differ and how staging resolved
-- it (macros/precedence.sql, macros/source_conflicts.sql). Counts only: no natural key and no
-- value leaves the raw layer.
with conflicts as (
    {{ source_conflicts() }}
)

select * from conflicts
where column_name = 'any column' or conflicting_rows > 0
