"""The report's sections, one module each, returning typed data for the template.

Each `*_section(marts, quarter, min_group_size, ...)` returns a `Section` (title, plain-language
lead, charts, tables, notes) and its facts (a dataclass page 1 and later sections reuse). A
missing mart or an empty quarter makes a section say so instead of failing the report. Every
group figure passes through `suppression`, every number through `fmt`, every count in prose
through `labels.count`, every effect's status through `effects.status_tag`. `registry.py` lists
the sections in the order they are computed and the order they print.
"""
