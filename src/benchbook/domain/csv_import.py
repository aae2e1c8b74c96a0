"""CSV import: one record per row, all rows in one transaction and one ``import`` batch.

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

from benchbook.domain import audit
from benchbook.domain.catalog import SchemaCache
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError, Invalid
from benchbook.domain.records import create_record

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
    """Create a record for each row of ``path`` in ``collection``.

    Call inside a transaction: when ``problems`` come back, roll it back. Raises ``Invalid``
    when the file has no header or neither ``schema`` nor a ``schema_name`` column.
    """
    result = ImportResult()
    batch = audit.open_batch(ctx, "import", label=path.name)
    ctx.batch_id = result.batch_id = batch.id
    cache = SchemaCache(ctx.session)
    new_ids: dict[str, str] = {}
    with path.open(newline="", encoding="utf-8-sig") as fh:
        reader = csv.DictReader(fh)
        if not reader.fieldnames:
            raise Invalid(f"{path.name} has no header row")
        if schema is None and "schema_name" not in reader.fieldnames:
            raise Invalid("name the schema (--schema) or give a schema_name column")
        for row in reader:
            line = reader.line_num
            body = _body(row, schema, new_ids)
            try:
                rec = create_record(ctx, collection, body, cache=cache)
            except BenchbookError as exc:
                result.problems.append(f"line {line}: {exc.detail}")
            else:
                result.created += 1
                if row.get("id"):
                    new_ids[row["id"]] = rec.id
            if progress:
                progress(1)
    return result


def _body(row: dict[str, Any], schema: str | None, new_ids: dict[str, str]) -> dict[str, Any]:
    data = {k: v for k, v in row.items() if k and k not in LAYOUT_COLUMNS and v not in (None, "")}
    parent = (row.get("parent_record_id") or "").strip() or None
    return {"schema_name": (row.get("schema_name") or "").strip() or schema or "",
            "parent_record_id": new_ids.get(parent, parent) if parent else None, "data": data}
