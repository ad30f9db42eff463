"""`target` for sqlfluff's Jinja templater: the models are linted as DuckDB renders them."""

type = "duckdb"  # noqa: A001 (dbt's name)
name = "dev"
