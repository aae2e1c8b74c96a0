"""Problems summarised (issue 14 *Import* 4): one line per distinct problem, with how many rows
have it and the first few of their numbers, instead of one line per row.

Two problems are "the same" when they concern the same field (or column) and are of the same
kind (``date_parsing``, ``missing``, ``not_in_choices``…); the line shows the first one's
message: ``date: '2012/13/01' is not a date (1,461 rows, lines 2, 3, 4, …)``. Problems without
a kind (messages of the set-based create, e.g. a uniqueness clash) are the same when their
messages are equal once quoted values, record ids and numbers are left out.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

SHOWN_NUMBERS = 3
_VARYING = re.compile(r"'[^']*'|\"[^\"]*\"|\b[0-9A-HJKMNP-TV-Z]{26}\b|\d+(\.\d+)?")


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
        key = (field, kind or _VARYING.sub("…", message))
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
