"""One module per `talent` command; each defines `command`, its typer signature and body.

Keep heavy imports (dagster, dbt, polars, GX) inside the function bodies.
"""
