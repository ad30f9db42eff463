"""Render the rules table (`rules.RULES`) into docs/data-quality.md.

The page keeps its prose; only the part between the two markers is generated, so the severity
of every expectation is decided in code and read in the docs, never edited twice.
Refresh it with `.venv/bin/python -m tools.quality_docs`; a test fails when it is stale.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pipelines.lib.quality.rules import RULES, Rule

BEGIN = "<!-- BEGIN GENERATED: quality rules (python -m tools.quality_docs) -->"
END = "<!-- END GENERATED: quality rules -->"
DOC_PATH = Path(__file__).resolve().parents[1] / "docs" / "data-quality.md"


def _what(rule: Rule) -> str:
    """The expectation and its arguments, short enough for a table cell."""
    if rule.expectation == "table_exists":
        return "table exists"
    args = ", ".join(
        f"{k}={json.dumps(v) if not isinstance(v, str) else v}"
        for k, v in rule.kwargs.items()
        if k not in ("ignore_row_if", "condition_parser")
    )
    where = f" where `{rule.only_where}`" if rule.only_where else ""
    return f"`{rule.expectation}`({args}){where}".replace("|", "\\|")


def render_rules_table() -> str:
    lines = [
        "| suite | rule | expectation | frame | severity | why |",
        "|---|---|---|---|---|---|",
    ]
    for r in RULES:
        why = r.why.replace("|", "\\|")
        lines.append(
            f"| `{r.suite}` | `{r.name}` | {_what(r)} | {r.batch} | **{r.severity}** | {why} |"
        )
    return "\n".join(lines)


def render_section() -> str:
    return f"{BEGIN}\n\n{render_rules_table()}\n\n{END}"


def generated_section(text: str) -> str | None:
    """The generated part of a page, markers included; None when the markers are absent."""
    if BEGIN not in text or END not in text:
        return None
    start = text.index(BEGIN)
    return text[start : text.index(END, start) + len(END)]


def update_doc(path: Path = DOC_PATH) -> bool:
    """Rewrite the generated part of `path`; True when the file changed."""
    text = path.read_text(encoding="utf-8")
    current = generated_section(text)
    if current is None:
        raise ValueError(
            f"{path.name} has no generated section: add the lines {BEGIN!r} and {END!r} "
            "where the rules table belongs"
        )
    new = text.replace(current, render_section())
    if new != text:
        path.write_text(new, encoding="utf-8")
    return new != text


if __name__ == "__main__":
    changed = update_doc(Path(sys.argv[1]) if len(sys.argv) > 1 else DOC_PATH)
    print("docs/data-quality.md updated" if changed else "docs/data-quality.md is up to date")
