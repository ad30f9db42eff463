"""The report's one number formatter: every figure in text, tables, tiles and charts prints here.

Shares arrive as fractions and print as percent; money prints in whole dollars (or compactly,
`$1.25M`, on chart axes); ROI ratios print as whole percent rounded down through the ROI model's
`floor_percent`, the rounding the seed's worked example uses (3.655 -> 365 %). A missing value
(None or NaN) prints as an en dash everywhere.
"""

from __future__ import annotations

import math
from datetime import date

import pandas as pd
from markupsafe import Markup, escape

from pipelines.lib.roi.model import floor_percent

DASH = "–"
MINUS = "−"


def missing(v: object) -> bool:
    """None, NaN and pandas' NA (a nullable column with no value, e.g. no fleet export)."""
    if v is None or v is pd.NA or v is pd.NaT:
        return True
    try:
        return math.isnan(float(v))  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False


def fraction(v: object) -> float | None:
    """Shares arrive as fractions; a value above 1 is taken as a percentage."""
    if missing(v):
        return None
    f = float(v)  # type: ignore[arg-type]
    return f / 100 if f > 1.0 else f


def _sign(text: str) -> str:
    return text.replace("-", MINUS, 1) if text.startswith("-") else text


def pct(v: float | None, decimals: int = 0) -> str:
    """0.4812 -> `48 %` (or `48.1 %` with one decimal)."""
    return DASH if missing(v) else _sign(f"{float(v) * 100:.{decimals}f} %")  # type: ignore[arg-type]


def pts(delta: float | None, decimals: int = 1) -> str:
    """A change between two shares in percentage points: 0.012 -> `+1.2 pts`."""
    return DASH if missing(delta) else _sign(f"{float(delta) * 100:+.{decimals}f} pts")  # type: ignore[arg-type]


def num(v: object, decimals: int = 0) -> str:
    return DASH if missing(v) else _sign(f"{float(v):,.{decimals}f}")  # type: ignore[arg-type]


def signed(v: object, decimals: int = 0) -> str:
    return DASH if missing(v) else _sign(f"{float(v):+,.{decimals}f}")  # type: ignore[arg-type]


def usd(v: object) -> str:
    if missing(v):
        return DASH
    f = float(v)  # type: ignore[arg-type]
    return f"{MINUS}${-f:,.0f}" if f < 0 else f"${f:,.0f}"


def money(v: float) -> str:
    """Compact dollars for chart labels and axes: `$1.25M`, `$675k`, `−$12k`."""
    if missing(v):
        return DASH
    a, sign = abs(v), (MINUS if v <= -0.5 else "")
    if a >= 1e6:
        return f"{sign}${a / 1e6:,.0f}M" if a % 1e6 == 0 else f"{sign}${a / 1e6:,.2f}M"
    if a >= 1e3:
        return f"{sign}${a / 1e3:,.0f}k"
    return f"{sign}${a:,.0f}"


def roi_pct(ratio: float | None) -> str:
    """An ROI ratio as whole percent rounded down (3.655 -> `365 %`, −0.594 -> `−60 %`)."""
    whole = floor_percent(None if missing(ratio) else float(ratio))  # type: ignore[arg-type]
    return DASH if whole is None else _sign(f"{whole:,} %")


def ratio(v: float | None) -> str:
    """A rate or hazard ratio: `0.72`."""
    return DASH if missing(v) else f"{float(v):.2f}"  # type: ignore[arg-type]


def interval(lo: float | None, hi: float | None, fmt=ratio) -> str:
    return DASH if missing(lo) or missing(hi) else f"{fmt(lo)}–{fmt(hi)}"


def rate_ci(r: tuple[float, float, float], per: float = 100, decimals: int = 1) -> str:
    """`4.5 % (0.8–21.8)` for a share (per=100) or `7.2 (5.1–9.9)` for a rate (per=1)."""
    if missing(r[0]):
        return DASH
    unit = " %" if per == 100 else ""
    return f"{r[0] * per:.{decimals}f}{unit} ({r[1] * per:.{decimals}f}–{r[2] * per:.{decimals}f})"


def month_label(d: date) -> str:
    return d.strftime("%b %Y")


def window_label(start: date | None, end: date | None) -> str:
    if start is None or end is None:
        return ""
    return f"{month_label(start)} – {month_label(end)}"


_UPPER = {"usd": "USD", "gpu": "GPU", "gpus": "GPUs", "mttr": "MTTR", "roi": "ROI", "ci": "CI"}


def nice(code: object) -> str:
    """`faster_deployment_usd_per_gpu_year` -> `Faster deployment USD per GPU year`."""
    if code is None:
        return DASH
    words = [_UPPER.get(w.lower(), w) for w in str(code).replace("_", " ").split(" ")]
    text = " ".join(words)
    return text[:1].upper() + text[1:]


def fig(key: str, text: str) -> Markup:
    """A figure quoted in the report, tagged with the one key it is defined under. The same key
    in a sentence, a tile and a table cell must print the same text (a test checks this)."""
    return Markup('<span data-figure="{}">{}</span>').format(key, text)


def sentence(template: str, **parts: object) -> Markup:
    """Format a sentence: plain parts are escaped, figures from `fig` stay tagged."""
    return Markup(escape(template)).format(**parts)
