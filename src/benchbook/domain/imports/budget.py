"""What reading an imported file may cost (docs/limits.md, *Imported files*; issue 33 findings 1
and 2): its rows, columns and cells are counted as it is read, against the ``[limits]`` of
:func:`benchbook.settings.limits.current`, and the reading stops when its requester has gone
(:func:`benchbook.domain.abandon.check`).

- **rows** (``import_rows``): the rows of the file, good or not. A text file's blank lines are
  skipped and not counted (each costs a byte of the file); a workbook counts every row from the
  top of the sheet to the one read, blank or not (a sheet can jump to row 1,048,576 in a few
  bytes).
- **columns** (``import_columns``): the header's width, or a JSON file's distinct keys, checked
  as soon as they are known (before any row is read; for JSON, at the key that passes it).
- **cells**: what the import will visit, ``rows × columns`` with blank cells included (a row
  wider than the header, or a workbook row reaching further right, counts its own width). A file
  may span at most ``import_cells_per_byte`` cells per byte of it, or :data:`CELLS_FLOOR`,
  whichever is more, so that a small file never expands into gigabytes of cells or hours of
  checking blanks.

Rows are kept sparse (:mod:`.readers`): a missing cell is absent, never padded, so memory grows
with the cells the file holds; the cells rule bounds the work over the blank ones.
"""
from __future__ import annotations

from benchbook.domain import abandon
from benchbook.domain.errors import Invalid
from benchbook.settings import limits

CELLS_FLOOR = 1_000_000
"""Cells any file may span whatever its size (a few MB of row lists at most)."""
CHECK_EVERY = 1000
"""Rows read between two checks that the requester is still there."""


class Budget:
    """The limits of reading one file named ``name`` of ``size`` bytes. Each ``check_*``
    method raises ``Invalid`` (422 ``{detail}``) naming the ``[limits]`` setting when its count
    is past the limit."""

    def __init__(self, name: str, size: int) -> None:
        bound = limits.current()
        self.name, self.size = name, size
        self.most_rows = bound.import_rows
        self.most_columns = bound.import_columns
        self.per_byte = bound.import_cells_per_byte
        self.most_cells = max(CELLS_FLOOR, bound.import_cells_per_byte * size)
        self._read = 0

    def tick(self) -> None:
        """One more row read (blank or not): every :data:`CHECK_EVERY` rows (the first
        included), raise ``Abandoned`` (503) when the requester has gone."""
        if self._read % CHECK_EVERY == 0:
            abandon.check()
        self._read += 1

    def check_rows(self, count: int) -> None:
        """``count`` rows counted so far (module docstring)."""
        if count > self.most_rows:
            raise Invalid(f"{self.name} has more than {self.most_rows:,} rows; at most {self.most_rows:,} are "
                          "imported at once ([limits] import_rows in benchbook.toml: an import's rows are checked, "
                          "all of them, before any is written; a workbook's blank rows count too). Split the file, "
                          "or raise the limit")

    def check_columns(self, count: int, what: str = "columns") -> None:
        """``count`` columns (``what``: ``"columns"``, or ``"distinct keys"`` for JSON)."""
        if count > self.most_columns:
            raise Invalid(f"{self.name} has more than {self.most_columns:,} {what}; at most {self.most_columns:,} "
                          "columns are imported ([limits] import_columns in benchbook.toml: every row is read and "
                          "checked column by column). Leave out columns, or raise the limit")

    def check_cells(self, count: int) -> None:
        """``count`` cells spanned so far (rows × columns, blank cells included)."""
        if count > self.most_cells:
            raise Invalid(f"{self.name} spans more than {self.most_cells:,} cells (rows × columns, blank ones "
                          f"included) for its {self.size:,} bytes: a file may span {self.per_byte} cells per byte, "
                          f"or {CELLS_FLOOR:,}, whichever is more ([limits] import_cells_per_byte in benchbook.toml: "
                          "an import visits every cell, blank or not). Split the file, or raise the limit")
