{#- Generated from pipelines/lib/contracts.py by `python -m tools.dbt_sources`; do not
    edit. Each export's natural key and its other contract columns. -#}
{% macro contract_exports() -%}
    {{ return([
        {"name": "employees", "key": ["employee_id", "hire_date"], "columns": ["first_name", "last_name", "work_email", "original_hire_date", "termination_date", "termination_type", "termination_reason", "regrettable"]},
        {"name": "job_history", "key": ["employee_id", "effective_date"], "columns": ["division", "team", "role_family", "job_title", "skill_level", "site", "manager_id", "employment_type", "fte", "annual_salary_usd", "change_reason"]},
        {"name": "contractor_hours", "key": ["engagement_id", "month"], "columns": ["vendor", "team", "hours", "hourly_rate_usd"]},
        {"name": "courses", "key": ["course_id"], "columns": ["title", "provider", "programme_type", "hours", "cost_usd", "certification_code"]},
        {"name": "enrolments", "key": ["enrolment_id"], "columns": ["learner_email", "course_id", "status", "enrolled_on", "completed_on", "cost_usd", "hours_spent", "score"]},
        {"name": "certifications", "key": ["attempt_id"], "columns": ["learner_email", "certification_code", "exam_date", "result", "score", "issued_on", "expires_on", "exam_fee_usd"]},
        {"name": "incidents", "key": ["incident_number"], "columns": ["title", "service", "cluster", "severity", "opened_at", "acknowledged_at", "resolved_at", "gpus_affected", "downtime_minutes"]},
        {"name": "responders", "key": ["incident_number", "responder_email", "responder_name"], "columns": ["role", "assigned_at"]},
        {"name": "gpu_fleet", "key": ["cluster", "as_of_date"], "columns": ["site", "gpu_model", "gpu_count"]},
        {"name": "gpu_usage", "key": ["record_type", "cluster", "usage_date", "job_id"], "columns": ["granularity", "job_state", "job_started_at", "job_ended_at", "job_hours", "gpus", "gpu_hours_available", "gpu_hours_allocated", "gpu_hours_busy", "gpu_hours_lost", "gpu_utilisation", "sm_active", "xid_errors"]},
        {"name": "capacity_changes", "key": ["project_id"], "columns": ["cluster", "change_type", "gpus_added", "delivered_on", "accepted_on", "led_by", "led_by_name"]},
        {"name": "changes", "key": ["change_number"], "columns": ["cluster", "change_type", "implementer_email", "implementer_name", "requested_at", "planned_start", "planned_end", "actual_start", "actual_end", "close_code", "caused_incidents"]},
        {"name": "requisitions", "key": ["requisition_id"], "columns": ["replaces_employee_id", "level", "opened_on", "filled_on", "hired_employee_id", "agency_fee_usd", "other_hiring_cost_usd", "status"]}
    ]) }}
{%- endmacro %}
