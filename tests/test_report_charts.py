"""The report's charts as a designer checks them at print size: every letter at least 9 pt on
paper, no text running off the chart or into other text, a real accessible name.

Sizes are read from the SVG the report inlines (its viewBox and each text element's font size
and position) and the printed width (the 178 mm text width of an A4 page); text widths are
measured with matplotlib's own font metrics for DejaVu Sans, the font the charts use."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
from matplotlib.font_manager import FontProperties
from matplotlib.textpath import TextToPath

sys.path.insert(0, str(Path(__file__).parent))
from test_report import build_published_fixture, html_of  # noqa: E402
from test_report_length import MANY  # noqa: E402

PRINTED_WIDTH_PT = 178 / 25.4 * 72  # A4 less 2 x 16 mm margins (report.css @page)
_T2P = TextToPath()
_TEXT = re.compile(
    r'<text style="([^"]*)" x="([-\d.]+)" y="([-\d.]+)"(?: transform="rotate\(([-\d.]+)[^"]*")?>'
    r"([^<]*)</text>"
)


def charts(html: str) -> dict[str, str]:
    return {
        re.search(r'data-chart="([^"]+)"', svg).group(1): svg
        for svg in re.findall(r'<svg[^>]*class="chart".*?</svg>', html, re.S)
    }


def texts(svg: str) -> list[dict]:
    out = []
    for style, x, y, rot, text in _TEXT.findall(svg):
        size = float(re.search(r"font-size: ([\d.]+)px", style).group(1))
        anchor = (re.search(r"text-anchor: (\w+)", style) or [None, "start"])[1]
        prop = FontProperties(family="DejaVu Sans", size=size,
                              weight="bold" if "bold" in style else "normal")  # fmt: skip
        width = _T2P.get_text_width_height_descent(text, prop, ismath=False)[0]
        x0 = {"start": float(x), "middle": float(x) - width / 2, "end": float(x) - width}[anchor]
        out.append(dict(text=text, size=size, rotated=abs(float(rot or 0)) > 1,
                        box=(x0, float(y) - 0.72 * size, x0 + width, float(y) + 0.2 * size)))  # fmt: skip
    return out


def chart_problems(name: str, svg: str) -> list[str]:
    width = float(re.search(r'viewBox="0 0 ([\d.]+) ', svg).group(1))
    scale = PRINTED_WIDTH_PT / width
    found = []
    items = texts(svg)
    for t in items:
        if t["size"] * scale < 9:
            found.append(f"{name}: {t['text']!r} prints at {t['size'] * scale:.1f} pt")
    flat = [t for t in items if not t["rotated"] and t["text"].strip()]
    for t in flat:
        if t["box"][0] < -0.5 or t["box"][2] > width + 0.5:
            found.append(f"{name}: {t['text']!r} runs off the chart")
    for i, a in enumerate(flat):
        for b in flat[i + 1 :]:
            (ax0, ay0, ax1, ay1), (bx0, by0, bx1, by1) = a["box"], b["box"]
            if ax0 < bx1 - 0.5 and bx0 < ax1 - 0.5 and ay0 < by1 - 0.5 and by0 < ay1 - 0.5:
                found.append(f"{name}: {a['text']!r} overlaps {b['text']!r}")
    label = re.search(r'aria-label="([^"]+)"', svg).group(1)
    title = re.search(r"<title>([^<]*)</title>", svg)
    if len(label.split()) < 8 or label == name or not title or title.group(1) != label:
        found.append(f"{name}: no real accessible name ({label!r})")
    return found


@pytest.fixture(scope="module", params=["fixture", "240 teams"])
def html(request, tmp_path_factory) -> str:
    teams = {} if request.param == "fixture" else {"teams": MANY}
    return html_of(build_published_fixture(tmp_path_factory.mktemp("ch") / "t.duckdb", **teams))


def test_chart_text_is_large_enough_apart_and_inside_with_a_real_name(html):
    found = charts(html)
    assert len(found) >= 6
    assert [p for name, svg in found.items() for p in chart_problems(name, svg)] == []


def test_the_check_finds_small_overlapping_and_clipped_text(html):
    name, svg = "coverage-trend", charts(html)["coverage-trend"]
    assert chart_problems(name, svg) == []
    first, second = [m for m in _TEXT.finditer(svg) if "9.5px" in m.group(1)][:2]

    def planted(old: str, new: str) -> list[str]:
        return chart_problems(name, svg.replace(old, new))

    small = first.group(0).replace("font-size: 9.5px", "font-size: 7.5px")
    assert any("prints at 7.5 pt" in p for p in planted(first.group(0), small))
    off = first.group(0).replace(f'x="{first.group(2)}"', 'x="600"')
    assert any("runs off the chart" in p for p in planted(first.group(0), off))
    at = f'x="{second.group(2)}" y="{second.group(3)}"'
    on_top = second.group(0).replace(at, f'x="{first.group(2)}" y="{first.group(3)}"')
    assert any("overlaps" in p for p in planted(second.group(0), on_top))
    slug = re.sub(r'aria-label="[^"]+"', f'aria-label="{name}"', svg, count=1)
    assert any("no real accessible name" in p for p in chart_problems(name, slug))


def test_a_chart_without_a_target_uses_the_width(html):
    """With no target set, the team chart's axis ends near its longest bar and label (room for
    the label, not for a default target of 80 %)."""
    svg = charts(html)["coverage-by-team"]
    found = texts(svg)
    ticks = [int(t["text"].split()[0]) for t in found if re.fullmatch(r"\d+ %", t["text"])]
    bars = [int(t["text"].split()[0]) for t in found if re.match(r"\d+ % \(", t["text"])]
    assert ticks and bars and max(ticks) <= max(bars) + 35


# --- the sensitivity (tornado) chart and the stacked bars, drawn with awkward shapes ---------


def drawn(monkeypatch, draw, *args, **kwargs):
    """The matplotlib figure a chart function draws, laid out as it is saved."""
    from pipelines.lib.report import charts as chart_lib

    kept = {}

    def keep(fig, name, alt):
        fig.canvas.draw()
        kept["fig"] = fig
        return ""

    monkeypatch.setattr(chart_lib, "_svg", keep)
    draw(*args, **kwargs)
    return kept["fig"]


# (rows, base): figures beside break-even, a negative result at the estimates, a bar that does
# not reach its base line's far side, a long assumption name
SWINGS = {
    "near break-even": ([("Incidents", 0.02, 0.05), ("Time to restore", 0.01, 0.06),
                         ("Voluntary attrition", -0.3, 0.9), ("All together", -0.35, 1.0)], 0.03),
    "below break-even": ([("Replacement cost per exit", -0.48, 0.3), ("GPU-hour cost", -0.25, -0.12),
                          ("Training hours", -0.2, -0.17)], -0.18),
    "wide": ([("Replacement cost per exit", -0.48, 3.2), ("GPU-hour cost", 0.9, 1.4),
              ("Training hours", 1.08, 1.15)], 1.12),
}  # fmt: skip


@pytest.mark.parametrize("shape", list(SWINGS))
def test_no_swing_figure_sits_on_a_line_or_on_another_figure(monkeypatch, shape):
    from pipelines.lib.report import charts as chart_lib

    rows, base = SWINGS[shape]
    fig = drawn(monkeypatch, chart_lib.swing_chart, "s", rows, base, title="t", alt="a")
    ax = fig.axes[0]
    renderer = fig.canvas.get_renderer()
    boxes = [(t.get_text(), t.get_window_extent(renderer)) for t in ax.texts]
    assert {"break-even"} <= {t for t, _ in boxes} and len(boxes) == 2 * len(rows) + 1
    lines = [ax.transData.transform((x, 0))[0] for x in (0.0, base)]
    axes = ax.get_window_extent(renderer)
    for text, box in boxes:
        for x in lines:
            assert not box.x0 < x < box.x1, f"{text!r} sits on the line at {x:.0f}"
        assert axes.x0 <= box.x0 and box.x1 <= axes.x1, f"{text!r} runs out of the axes"
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            assert not box_a.overlaps(box_b), f"{a!r} collides with {b!r}"


def test_no_two_legend_entries_of_the_stacked_bars_look_alike(monkeypatch):
    from pipelines.lib.report import charts as chart_lib

    segs = [chart_lib.Segment("Return", "attrition (assumed price)", 2e6, "assumed"),
            chart_lib.Segment("Return", "downtime (assumed price)", 2e5, "assumed"),
            chart_lib.Segment("Return", "incidents", 1e5, "measured"),
            chart_lib.Segment("Return", "restore", 1e5, "measured"),
            chart_lib.Segment("Investment", "training", 9e5, "invested"),
            chart_lib.Segment("Investment", "exams", 1e5, "invested"),
            chart_lib.Segment("Later", "training", 5e5, "invested")]  # fmt: skip
    fig = drawn(monkeypatch, chart_lib.stacked_bars, "b", ["Return", "Investment", "Later"],
                segs, title="t", alt="a", row_totals=["1", "2", "3"])  # fmt: skip
    legend = fig.legends[0]
    labels = [t.get_text() for t in legend.get_texts()]
    assert sorted(labels) == sorted({s.label for s in segs})  # one entry per label
    swatches = [(tuple(h.get_facecolor()), h.get_hatch() or "") for h in legend.legend_handles]
    assert len(set(swatches)) == len(swatches), list(zip(labels, swatches, strict=True))
