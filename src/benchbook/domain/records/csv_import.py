"""CSV import: one record per row, all rows in one transaction and one ``import`` batch,
written set-based (``domain/bulk.py``).

The header names the schema's fields. Columns of the export layout are understood too:
``schema_name`` (rows of several schemas; then ``schema`` may be omitted),
``parent_record_id`` (a parent by id, or by the ``id`` of an earlier row of the same file, so
an export re-imports with its nesting), ``id`` and ``natural_name`` (not stored; the natural
name is recomputed). Empty cells mean "no value". Any bad row aborts the whole import and
nothing is written; every problem is reported with its line number.
"""
from __future__ import annotations

import csv
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchbook.domain.context import Ctx
from benchbook.domain.errors import Invalid
from benchbook.domain.history import entries as audit
from benchbook.domain.ids import new_id
from benchbook.domain.records.bulk import RowProblems, bulk_create_records

LAYOUT_COLUMNS = ("id", "schema_name", "parent_record_id", "natural_name")


@dataclass
class ImportResult:
    """What an import did: ``created`` records, the ``batch_id``, and ``problems``
    (``"line N: message"``; non-empty means nothing was written)."""

    created: int = 0
    batch_id: str | None = None
    problems: list[str] = field(default_factory=list)


def count_rows(path: Path) -> int:
    """Data rows in a CSV file (for progress bars)."""
    with path.open(newline="", encoding="utf-8-sig") as fh:
        return max(sum(1 for _ in csv.reader(fh)) - 1, 0)


def import_csv(ctx: Ctx, path: Path, collection: str, schema: str | None,
               progress: Callable[[int], None] | None = None) -> ImportResult:
    """Create a record for each row of ``path`` in ``collection`` (through the set-based
    :func:`~benchbook.domain.records.bulk.bulk_create_records`: the same rules and entries as one
    ``create_record`` per row).

    Call inside a transaction: when ``problems`` come back, roll it back. Raises ``Invalid``
    when the file has no header or neither ``schema`` nor a ``schema_name`` column, ``NotFound``
    for an unknown collection.
    """
    result = ImportResult()
    batch = audit.open_batch(ctx, "import", label=path.name)
    ctx.batch_id = result.batch_id = batch.id
    new_ids: dict[str, str] = {}
    bodies: list[dict[str, Any]] = []
    ids: list[str] = []
    lines: list[int] = []
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise Invalid(f"{path.name} has no header row")
        if schema is None and "schema_name" not in reader.fieldnames:
            raise Invalid("name the schema (--schema) or give a schema_name column")
        for row in reader:
            bodies.append(_body(row, schema, new_ids))
            ids.append(new_id())
            lines.append(reader.line_num)
            if row.get("id"):
                new_ids[row["id"]] = ids[-1]
    try:
        bulk_create_records(ctx, collection, bodies, ids=ids, progress=progress)
    except RowProblems as exc:
        result.problems = [f"line {lines[i]}: {message}" for i, message in exc.problems]
        result.created = len(bodies) - len({i for i, _ in exc.problems})
    else:
        result.created = len(bodies)
    return result


def _body(row: dict[str, Any], schema: str | None, new_ids: dict[str, str]) -> dict[str, Any]:
    data = {k: v for k, v in row.items() if k and k not in LAYOUT_COLUMNS and v not in (None, "")}
    parent = (row.get("parent_record_id") or "").strip() or None
    return {"schema_name": (row.get("schema_name") or "").strip() or schema or "",
            "parent_record_id": new_ids.get(parent, parent) if parent else None, "data": data}
