"""`exceptions` for sqlfluff's Jinja templater (dbt's raise_compiler_error)."""


def raise_compiler_error(message):
    raise RuntimeError(message)
