"""Problems summarised (issue 14 *Import* 4): one line per distinct problem, with how many rows
have it and the first few of their numbers, instead of one line per row.

Two problems are "the same" when they concern the same field (or column) and are of the same
kind (``date_parsing``, ``missing``, ``not_in_choices``…); the line shows the first one's
message: ``date: '2012/13/01' is not a date (1,461 rows, lines 2, 3, 4, …)``. Problems without
a kind (messages of the set-based create, e.g. a uniqueness clash, or of an update) are the same
when their messages have the same template (:func:`benchbook.domain.message_template.template`:
quoted values, ids, paths and numbers left out, as failed runs are grouped).

However many distinct problems there are, :func:`lines` gives at most :data:`SHOWN_LINES` of
them, the most rows first, and one line counting the rest: a file whose every row fails in its
own way prints a screenful, not a line per row.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from benchbook.domain.message_template import template

SHOWN_NUMBERS = 3
"""Row numbers a summary line shows (the first ones, then ``…``)."""
SHOWN_LINES = 20
"""Distinct problems :func:`lines` shows before one line counting the rest."""


@dataclass
class Summary:
    """One distinct problem: ``field`` (or column; None for the row as a whole), ``kind``, the
    first ``message``, ``count`` of rows and their ``numbers`` (every one, in file order),
    ``value`` the first offending value."""

    field: str | None
    kind: str
    message: str
    count: int = 0
    numbers: list[int] = dataclasses.field(default_factory=list)
    value: Any = None

    def __post_init__(self) -> None:
        self._seen: set[int] = set(self.numbers)

    def note(self, number: int) -> None:
        """Count row ``number`` (once)."""
        if number not in self._seen:
            self._seen.add(number)
            self.numbers.append(number)
            self.count += 1

    def text(self, unit: str = "line") -> str:
        """``message (N rows, lines a, b, c, …)``."""
        shown = ", ".join(str(n) for n in sorted(self.numbers)[:SHOWN_NUMBERS])
        more = ", …" if len(self.numbers) > SHOWN_NUMBERS else ""
        rows = f"{self.count:,} row{'s' if self.count != 1 else ''}"
        units = f"{unit}{'s' if len(self.numbers) != 1 else ''}"
        return f"{self.message} ({rows}, {units} {shown}{more})"

    def as_json(self, unit: str = "line") -> dict[str, Any]:
        """ImportProblem: ``{field, kind, message, count, numbers (first 20), text}``."""
        return {"field": self.field, "kind": self.kind, "message": self.message, "count": self.count,
                "numbers": sorted(self.numbers)[:20], "text": self.text(unit)}


class ProblemLog:
    """Problems of an import, by row number, summarised in the order first met."""

    def __init__(self) -> None:
        self._by_key: dict[tuple[str | None, str], Summary] = {}
        self.bad_rows: dict[int, str] = {}  # row number → its first problem's message

    def add(self, number: int, message: str, *, field: str | None = None, kind: str | None = None,
            value: Any = None) -> None:
        """Note a problem of row ``number``; ``kind`` None groups by the message's shape."""
        key = (field, kind or template(message) or "")
        summary = self._by_key.get(key)
        if summary is None:
            summary = self._by_key[key] = Summary(field, kind or "row", message, value=value)
        summary.note(number)
        self.bad_rows.setdefault(number, message)

    def __bool__(self) -> bool:
        return bool(self._by_key)

    @property
    def summaries(self) -> list[Summary]:
        """The distinct problems, in the order first met."""
        return list(self._by_key.values())


def lines(summaries: Sequence[Summary], unit: str = "line") -> list[str]:
    """The lines a person reads for ``summaries``: each one's :meth:`Summary.text`, the most
    rows first (ties in the order met), at most :data:`SHOWN_LINES`; then, when more are left,
    ``… and N more distinct problems in M rows`` (a row may have several)."""
    ranked = sorted(summaries, key=lambda s: -s.count)
    out = [s.text(unit) for s in ranked[:SHOWN_LINES]]
    rest = ranked[SHOWN_LINES:]
    if rest:
        rows = len({n for s in rest for n in s.numbers})
        out.append(f"… and {len(rest):,} more distinct problems in {rows:,} {unit}{'s' if rows != 1 else ''} "
                   "(the import's `problems` list every one; --skip-bad writes each bad row with its problem)")
    return out
