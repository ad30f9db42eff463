"""Typed building blocks every section returns: tables, sections, and the team selection that
keeps per-team figures to a bounded number of rows in print at any company size."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from typing import TypeVar

from markupsafe import Markup

from pipelines.lib.report import charts
from pipelines.lib.report.quarters import Quarter
from pipelines.lib.report.suppression import mask_label

Text = str | Markup
T = TypeVar("T")

# Teams shown in print per table and chart: the five furthest from and the five closest to
# their target or template. Every team is in the HTML (collapsed) and in the appendix files.
EXTREMES = 5


Cell = float | int | str | None


@dataclass(frozen=True)
class Data:
    """A table as a spreadsheet reads it: numbers as numbers (shares in percent), units in the
    headers, an empty cell and `hidden = true` where the report prints `<5`."""

    columns: list[str]
    rows: list[list[Cell]]


@dataclass(frozen=True)
class Table:
    caption: str
    columns: list[str]
    rows: list[list[Text]]
    total: list[Text] | None = None
    key: str = ""
    # "full": every row, shown collapsed on screen, left out of print, written to the appendix
    scope: str = "all"
    note: Text = ""
    data: Data | None = None  # what the appendix CSV file holds (tables with scope "full")


@dataclass
class Section:
    id: str
    title: str
    available: bool = True
    lead: Text = ""
    charts: list[charts.Chart] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    notes: list[Text] = field(default_factory=list)
    # print this section on a new page (a long section after a short one)
    new_page: bool = False
    # the order of its charts and tables by chart name or table key; the others follow,
    # tables first (a table breaks across pages, a chart moves whole to the next one, so a
    # table first leaves less of a page empty)
    order: list[str] = field(default_factory=list)

    def blocks(self) -> list[tuple[str, object]]:
        """("chart", Chart) and ("table", Table) in printing order."""
        items = [("table", t.key, t) for t in self.tables] + [
            ("chart", c.name, c) for c in self.charts
        ]
        rank = {k: i for i, k in enumerate(self.order)}
        ordered = sorted(enumerate(items), key=lambda it: (rank.get(it[1][1], len(rank)), it[0]))
        return [(kind, obj) for _, (kind, _, obj) in ordered]


def table(
    caption: str,
    columns: Sequence[str],
    rows: list[list[Text]],
    *,
    total: list[Text] | None = None,
    key: str = "",
    scope: str = "all",
    note: Text = "",
    data: Data | None = None,
) -> Table:
    return Table(caption, list(columns), rows, total, key, scope, note, data)


def unavailable(sid: str, title: str, why: str) -> Section:
    return Section(id=sid, title=title, available=False, lead=why)


def months_up_to(q: Quarter, quarters: int = 8) -> list[date]:
    return [m for qq in q.trailing(quarters) for m in qq.months]


def extremes(items: Sequence[T], distance: Callable[[T], float | None]) -> tuple[list[T], list[T]]:
    """The EXTREMES items furthest from their reference (largest distance) and the EXTREMES
    closest (smallest), without overlap; items without a distance (hidden) are left out."""
    known = [it for it in items if distance(it) is not None]
    ranked = sorted(known, key=lambda it: -float(distance(it)))  # type: ignore[arg-type]
    far = ranked[:EXTREMES]
    near = [it for it in ranked[::-1] if it not in far][:EXTREMES]
    return far, near


def bounded_rows(
    rows: list[list[Text]], names: Sequence[str], far: Sequence[str], near: Sequence[str]
) -> list[list[Text]]:
    """The printed rows: all when there are few, else the far ones then the near ones."""
    if len(rows) <= 2 * EXTREMES:
        return rows
    by_name = dict(zip(names, rows, strict=True))
    return [by_name[n] for n in far] + [by_name[n] for n in near]


def team_tables(
    caption: str,
    columns: Sequence[str],
    rows: list[list[Text]],
    names: Sequence[str],
    far: Sequence[str],
    near: Sequence[str],
    *,
    total: list[Text] | None,
    key: str,
    far_words: str,
    data: Data | None = None,
    printed_table: bool = True,
) -> list[Table]:
    """The full table of every team (collapsed on screen, out of print, written to the appendix
    with `data`), and, when `printed_table`, a printed one of the extremes when teams were left
    out (all of them when there are few)."""
    full = table(
        f"{caption}: all teams", columns, rows, total=total, key=f"{key}-all", scope="full",
        data=data,
    )  # fmt: skip
    if not printed_table:
        return [full]
    if len(rows) <= 2 * EXTREMES:
        return [table(caption, columns, rows, total=total, key=key), full]
    shown_rows = bounded_rows(rows, names, far, near)
    closest = f" and the {len(near)} closest" if near else ""
    note = (
        f"{len(rows)} teams: the {len(far)} {far_words}{closest} are printed; every team is in "
        "the full table (HTML) and in the appendix file."
    )
    return [table(caption, columns, shown_rows, total=total, key=key, note=note), full]


def printed(names: list[str], far: list[str], near: list[str]) -> list[str]:
    """The teams a chart draws: all of a few, else the far ones then the near ones."""
    return names if len(names) <= 2 * EXTREMES else far + near


def team_bar_chart(
    name: str,
    picked: list[str],
    value: dict[str, float | None],
    show: Callable[[str, float], str],
    thr: int,
    **kwargs,
) -> str:
    """Bars for the picked teams, each labelled with its figure (and what it is a share of,
    through `show(team, value)`) or as hidden."""
    return charts.bar_chart(
        name,
        picked,
        [value[n] for n in picked],
        labels=[
            show(n, value[n]) if value[n] is not None else f"{mask_label(thr)} (hidden)"  # type: ignore[arg-type]
            for n in picked
        ],
        **kwargs,
    )
