"""Charts as inline SVG: matplotlib, no browser, no network, readable in black and white.

Colours come from the Okabe-Ito palette (safe for the common colour-vision deficiencies), and
every series also differs by marker, line style or hatch and carries a text label, so a printed
grey-scale page still reads. Text stays text in the SVG (`svg.fonttype = none`) so the browser
and WeasyPrint use the system fonts and the words remain searchable in the PDF.
"""

from __future__ import annotations

import io
import itertools
import re
from collections.abc import Sequence

import matplotlib

matplotlib.use("Agg")  # no display on servers; must precede pyplot
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter, MaxNLocator  # noqa: E402

from pipelines.lib.report.fmt import money as _money  # noqa: E402
from pipelines.lib.report.fmt import roi_pct  # noqa: E402

OKABE_ITO = {
    "blue": "#0072B2",
    "orange": "#E69F00",
    "green": "#009E73",
    "vermillion": "#D55E00",
    "sky": "#56B4E9",
    "purple": "#CC79A7",
    "yellow": "#F0E442",
    "black": "#000000",
    "grey": "#7F7F7F",
}
SERIES = ["blue", "orange", "green", "vermillion", "purple", "sky"]
MARKERS = ["o", "s", "^", "D", "v", "P"]
LINES = ["-", "--", "-.", ":", "-", "--"]
HATCHES = ["", "//", "..", "xx", "\\\\", "++"]

_RC = {
    "svg.fonttype": "none",
    "svg.hashsalt": "talent-report",  # reproducible ids; each chart gets its own prefix below
    # matplotlib ships DejaVu Sans, so the text is measured the same on every machine.
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titlesize": 10,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "axes.edgecolor": "#444444",
    "axes.grid": True,
    "grid.color": "#dddddd",
    "grid.linewidth": 0.6,
    "legend.frameon": False,
    "figure.dpi": 100,
}
_counter = itertools.count(1)


def _svg(fig, name: str) -> str:
    """Serialise a figure to an `<svg>` element safe to inline next to others.

    Matplotlib names clip paths and glyph definitions with ids that can repeat across figures,
    and duplicate ids in one HTML page make a browser clip the wrong chart: prefix them all.
    """
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    text = text[text.index("<svg") :]
    prefix = f"{re.sub(r'[^a-z0-9]+', '-', name.lower())}-{next(_counter)}-"
    ids = set(re.findall(r'id="([^"]+)"', text))

    def prefixed(m: re.Match) -> str:
        return f"{m[1]}{prefix}{m[2]}" if m[2] in ids else m[0]

    # One pass over the text (a pass per id took seconds on charts with thousands of glyphs).
    text = re.sub(r'(id="|#)([^"\)#\s]+)(?=["\)])', prefixed, text)
    text = re.sub(r"<metadata>.*?</metadata>", "", text, flags=re.S)
    # Responsive: keep the viewBox, let CSS size the element.
    text = re.sub(r'<svg([^>]*?) width="[^"]+" height="[^"]+"', r"<svg\1", text, count=1)
    return text.replace(
        "<svg", f'<svg role="img" aria-label="{name}" class="chart" data-chart="{name}"', 1
    )


def _pct(ax, axis: str = "y", decimals: int = 0) -> None:
    fmt = FuncFormatter(lambda v, _: f"{v * 100:.{decimals}f} %")
    (ax.yaxis if axis == "y" else ax.xaxis).set_major_formatter(fmt)


def line_chart(
    name: str,
    x: Sequence[str],
    series: dict[str, Sequence[float | None]],
    *,
    title: str,
    percent: bool = True,
    target: float | None = None,
    target_label: str = "target",
    ylabel: str = "",
) -> str:
    """Lines over time, each with its own marker and dash, labelled at its last point."""
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.2, 2.5))
        idx = list(range(len(x)))
        for i, (label, ys) in enumerate(series.items()):
            pts = [(j, y) for j, y in zip(idx, ys, strict=True) if y is not None and y == y]
            if not pts:
                continue
            xs, vs = zip(*pts, strict=True)
            colour = OKABE_ITO[SERIES[i % len(SERIES)]]
            ax.plot(
                xs,
                vs,
                color=colour,
                marker=MARKERS[i % 6],
                linestyle=LINES[i % 6],
                linewidth=1.8,
                markersize=4,
                label=label,
            )
            last = (
                f"{vs[-1] * 100:.{1 if abs(vs[-1]) < 0.2 else 0}f} %"
                if percent
                else f"{vs[-1]:,.1f}"
            )
            ax.annotate(
                last,
                (xs[-1], vs[-1]),
                xytext=(5, 0),
                textcoords="offset points",
                va="center",
                fontsize=8,
                color=colour,
            )
        if target is not None:
            ax.axhline(target, color=OKABE_ITO["black"], linestyle=":", linewidth=1.2)
            ax.annotate(
                f"{target_label} {target * 100:.0f} %" if percent else target_label,
                (0, target),
                xytext=(2, 3),
                textcoords="offset points",
                fontsize=8,
            )
        step = max(1, len(x) // 8)
        ax.set_xticks(idx[::step], [x[i] for i in idx[::step]])
        if percent:
            _pct(ax)
            top = max(
                [target or 0]
                + [v for ys in series.values() for v in ys if v is not None and v == v]
                + [0.1]
            )
            ax.set_ylim(0, min(1.0, top * 1.15) if top <= 1 else top * 1.15)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        return _svg(fig, name)


def bar_chart(
    name: str,
    categories: Sequence[str],
    values: Sequence[float | None],
    *,
    title: str,
    labels: Sequence[str] | None = None,
    percent: bool = False,
    xlabel: str = "",
    reference: Sequence[float | None] | None = None,
    reference_label: str = "template",
    money: bool = False,
) -> str:
    """Horizontal bars with the figure written on each bar; hidden figures draw no bar but keep
    their label (e.g. `<5`) so the reader sees the group exists. An optional reference (the
    template) is drawn as a black tick. Rows get tighter as their number grows, so a chart of
    every team still fits one printed page under its section heading."""
    n = max(3, len(categories))
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.2, _row_height(n) * n + 0.8))
        ys = list(range(len(categories)))[::-1]
        vals = [v if v is not None and v == v else 0 for v in values]
        ax.barh(ys, vals, color=OKABE_ITO["blue"], height=0.6, label="actual")
        texts = labels or [f"{v * 100:.0f} %" if percent else f"{v:,.0f}" for v in vals]
        span = max([abs(v) for v in vals] + [abs(r or 0) for r in (reference or [])] + [1e-9])
        for y, v, t in zip(ys, vals, texts, strict=True):
            ax.text(max(v, 0) + span * 0.01, y, t, va="center", fontsize=8)
        if reference is not None:
            for k, (y, r) in enumerate(zip(ys, reference, strict=True)):
                if r is not None:
                    ax.plot(
                        [r, r],
                        [y - 0.38, y + 0.38],
                        color=OKABE_ITO["black"],
                        linewidth=2,
                        label=reference_label if k == 0 else None,
                    )
            ax.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize=8)
        ax.set_yticks(ys, list(categories))
        ax.set_xlim(min(0, min(vals)) * 1.1, span * 1.18)
        ax.grid(axis="y", visible=False)
        if percent:
            _pct(ax, "x")
        elif money:
            ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _money(v)))
        else:
            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlabel(xlabel)
        ax.set_title(title)
        return _svg(fig, name)


def _row_height(rows: int) -> float:
    """Inches per bar: roomy for a handful of rows, compact for a chart of every team."""
    return 0.32 if rows <= 10 else 0.26


def event_study_chart(
    name: str,
    relative_months: Sequence[int],
    estimate: Sequence[float],
    ci_low: Sequence[float],
    ci_high: Sequence[float],
    *,
    title: str,
) -> str:
    """Rate ratio by month relative to certification with its 95 % band; 1 = no change vs the
    month before certifying (month −1, the reference)."""
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.2, 2.5))
        ax.fill_between(
            relative_months,
            ci_low,
            ci_high,
            color=OKABE_ITO["sky"],
            alpha=0.35,
            linewidth=0,
            label="95 % interval",
        )
        ax.plot(
            relative_months,
            estimate,
            color=OKABE_ITO["blue"],
            marker="o",
            markersize=3.5,
            linewidth=1.6,
            label="estimate",
        )
        ax.axhline(1.0, color=OKABE_ITO["black"], linewidth=1, linestyle=":")
        ax.axvline(-0.5, color=OKABE_ITO["vermillion"], linewidth=1.2, linestyle="--")
        top = max(list(ci_high) + [1.2])
        ax.text(0.3, top, "after certifying →", color=OKABE_ITO["vermillion"], fontsize=8, va="top")
        ax.text(
            -1.3, top, "← before", color=OKABE_ITO["vermillion"], fontsize=8, va="top", ha="right"
        )
        ax.set_xlabel("months relative to certification (month −1 = reference)")
        ax.set_ylabel("rate ratio")
        ax.set_title(title)
        ax.legend(loc="lower left", fontsize=8)
        return _svg(fig, name)


def tornado_chart(
    name: str,
    rows: Sequence[tuple[str, float, float]],
    base: float,
    *,
    title: str,
    percent: bool = True,
) -> str:
    """Each assumption's low and high case as a bar around the base result, widest on top."""
    rows = sorted(rows, key=lambda r: abs(r[2] - r[1]))
    with plt.rc_context(_RC):
        fig, ax = plt.subplots(figsize=(7.2, 0.3 * max(3, len(rows)) + 1.0))
        fmt = roi_pct if percent else _money
        for y, (label, low, high) in enumerate(rows):
            ax.barh(
                y,
                low - base,
                left=base,
                color=OKABE_ITO["vermillion"],
                hatch="//",
                edgecolor="white",
                height=0.6,
                label="low case" if y == 0 else None,
            )
            ax.barh(
                y,
                high - base,
                left=base,
                color=OKABE_ITO["blue"],
                height=0.6,
                label="high case" if y == 0 else None,
            )
            ax.text(
                min(low, high), y, fmt(min(low, high)) + " ", ha="right", va="center", fontsize=7.5
            )
            ax.text(
                max(low, high), y, " " + fmt(max(low, high)), ha="left", va="center", fontsize=7.5
            )
            del label
        ax.set_yticks(range(len(rows)), [r[0] for r in rows])
        ax.axvline(base, color="black", linewidth=1)
        lo = min([r[1] for r in rows] + [r[2] for r in rows] + [base])
        hi = max([r[1] for r in rows] + [r[2] for r in rows] + [base])
        pad = (hi - lo) * 0.25 or 1
        ax.set_xlim(lo - pad, hi + pad)
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: fmt(v)))
        ax.grid(axis="y", visible=False)
        ax.legend(loc="lower right", fontsize=8)
        ax.set_title(f"{title} (base {fmt(base)})")
        return _svg(fig, name)
