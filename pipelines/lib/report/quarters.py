"""Calendar quarters as the report names them (`2026-Q3`).

The report is about one complete quarter; these functions turn its label into dates and back so
that every section measures the same window.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import date, timedelta

_LABEL = re.compile(r"^\s*(\d{4})\s*-?\s*[Qq]([1-4])\s*$")


@dataclass(frozen=True, order=True)
class Quarter:
    year: int
    number: int  # 1..4

    @classmethod
    def parse(cls, label: str) -> Quarter:
        """Read `2026-Q3` (also `2026Q3`, `2026-q3`); anything else is explained, not guessed."""
        m = _LABEL.match(str(label))
        if not m:
            raise ValueError(
                f"Quarter {label!r} is not understood: write it as YYYY-Qn, for example 2026-Q3."
            )
        return cls(int(m[1]), int(m[2]))

    @classmethod
    def containing(cls, day: date) -> Quarter:
        return cls(day.year, (day.month - 1) // 3 + 1)

    @property
    def label(self) -> str:
        return f"{self.year}-Q{self.number}"

    @property
    def start(self) -> date:
        return date(self.year, 3 * (self.number - 1) + 1, 1)

    @property
    def end(self) -> date:
        """Last day of the quarter (inclusive)."""
        return self.next().start - timedelta(days=1)

    @property
    def last_month(self) -> date:
        """First day of the quarter's last month: the month-end snapshot the quarter reports."""
        return date(self.year, 3 * self.number, 1)

    @property
    def months(self) -> tuple[date, date, date]:
        s = self.start
        return (s, date(s.year, s.month + 1, 1), date(s.year, s.month + 2, 1))

    def next(self) -> Quarter:
        return (
            Quarter(self.year + 1, 1) if self.number == 4 else Quarter(self.year, self.number + 1)
        )

    def previous(self) -> Quarter:
        return (
            Quarter(self.year - 1, 4) if self.number == 1 else Quarter(self.year, self.number - 1)
        )

    def trailing(self, n: int) -> list[Quarter]:
        """This quarter and the n-1 before it, oldest first."""
        out = [self]
        while len(out) < n:
            out.append(out[-1].previous())
        return out[::-1]

    def __str__(self) -> str:
        return self.label


def latest_complete_quarter_for(last_month: date) -> Quarter:
    """A quarter is complete when the data reaches its last month (month-end snapshots)."""
    q = Quarter.containing(last_month)
    return q if last_month.month == q.last_month.month else q.previous()
