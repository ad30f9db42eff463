"""`adapter` for sqlfluff's Jinja templater (.sqlfluff: library_path): dispatch renders a
dispatched macro's `default__` implementation (DuckDB's SQL), which is what the linter checks."""

from jinja2 import pass_context


def dispatch(name, macro_namespace=None):
    @pass_context
    def call(context, *args, **kwargs):
        return context.resolve(f"default__{name}")(*args, **kwargs)

    return call
