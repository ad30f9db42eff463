"""Acronyms: every one spelled out where the printed report first uses it, and listed once.

`spell_out_first(html, acronyms)` walks the text of the rendered page in reading order (not
tags, styles, scripts or charts, not the screen-only contents list or collapsed tables, which
do not print, nor the glossary's lists, which define them) and writes "return on investment
(ROI)" at the first use of each acronym. The
certification codes come from the certification catalogue seed, so a company's own catalogue
names its own codes. Company and product names written in capitals (NVIDIA) are not acronyms.
"""

from __future__ import annotations

import csv
import re
from pathlib import Path

ACRONYMS: dict[str, str] = {
    "AI": "artificial intelligence",
    "CI": "confidence interval",
    "CSV": "comma-separated values",
    "DCGM": "NVIDIA Data Center GPU Manager",
    "DORA": "DevOps Research and Assessment",
    "GPU": "graphics processing unit",
    "GPUs": "graphics processing units",
    "HR": "human resources",
    "ROI": "return on investment",
    "SHRM": "Society for Human Resource Management",
    "UTC": "Coordinated Universal Time",
    "AWS": "Amazon Web Services",
    "ISC2": "International Information System Security Certification Consortium",
}
# words in capitals that are names, not acronyms
NAMES = frozenset({"NVIDIA", "USD", "A4", "PDF", "HTML"})
# an acronym: two or more capitals or digits, optionally joined by hyphens (NCA-AIIO, ISC2),
# or capitals followed by a plural s (GPUs)
TOKEN = re.compile(r"(?<![\w-])(?:[A-Z][A-Z0-9]+(?:-[A-Z0-9]+)*|[A-Z]{2,}s)(?![\w-])")


def certification_acronyms(catalogue: Path) -> dict[str, str]:
    """Code -> name from the certification catalogue seed (`code,name,...`)."""
    if not catalogue.is_file():
        return {}
    with catalogue.open(encoding="utf-8") as fh:
        return {
            r["code"].strip(): " ".join(r["name"].replace(" - ", " – ").split())
            for r in csv.DictReader(fh)
            if r.get("code") and r.get("name")
        }


# not printed (nav, details), not text (style, script, svg, head), or the glossary lists (dl)
_SKIP = ("style", "script", "svg", "nav", "details", "head", "title", "dl")


def spell_out_first(html: str, acronyms: dict[str, str]) -> str:
    """Write the expansion before the first use of each acronym in the printed text."""
    parts = re.split(r"(<[^>]+>)", html)
    depth = {t: 0 for t in _SKIP}
    seen: set[str] = set()
    out = []
    for part in parts:
        if part.startswith("<"):
            m = re.match(r"<(/?)([a-zA-Z0-9]+)", part)
            if m and m[2].lower() in depth and not part.endswith("/>"):
                depth[m[2].lower()] += -1 if m[1] else 1
            out.append(part)
            continue
        if any(depth.values()) or not part.strip():
            out.append(part)
            continue

        def expand(m: re.Match, text: str = part) -> str:
            word = m.group(0)
            if word in seen or word not in acronyms:
                return word
            seen.add(word)
            # a plural and its singular count as one acronym
            seen.add(word[:-1] if word.endswith("s") else word + "s")
            if text[: m.start()].endswith(f"{acronyms[word]} ("):
                return word  # spelled out by the text itself
            return f"{acronyms[word]} ({word})"

        out.append(TOKEN.sub(expand, part))
    return "".join(out)


def glossary_acronyms(acronyms: dict[str, str]) -> list[tuple[str, str]]:
    return sorted(
        ((k, v) for k, v in acronyms.items() if not (k.endswith("s") and k[:-1] in acronyms)),
        key=lambda kv: kv[0],
    )
