"""Snapshots an authority serves (``GET /sync/snapshot/{kind}``, docs/sync.md).

``catalog``: every row of ``collections``, ``schemas``, ``fields``, ``collection_schemas`` and
``views`` (deleted ones too), column by column. A device applies the catalog as the authority
has it before it applies a feed page (:func:`apply_catalog`): the catalog is small and changes
seldom, and a whole copy cannot miss a change (a field renamed, a key added, a schema moved
into a collection) however it was made.
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import DateTime, delete, select
from sqlalchemy.orm import Session

from benchbook.domain.errors import NotFound
from benchbook.domain.sync.wire import parse_time
from benchbook.persistence.tables import Base, Collection, CollectionSchema, Field, Schema, UTCDateTime, View

CATALOG: tuple[tuple[str, type[Base]], ...] = (
    ("collections", Collection), ("schemas", Schema), ("fields", Field),
    ("collection_schemas", CollectionSchema), ("views", View))
KINDS = ("catalog",)


def _row(obj: Base) -> dict[str, Any]:
    out = {}
    for column in obj.__table__.columns:
        value = getattr(obj, column.key)
        out[column.key] = value.isoformat() if isinstance(value, datetime) else value
    return out


def take(session: Session, kind: str) -> dict[str, Any]:
    """Snapshot ``kind`` (:data:`KINDS`): ``{kind, tables: {table: [row, …]}}``. Raises
    ``NotFound`` for another kind."""
    if kind not in KINDS:
        raise NotFound(f"no snapshot of kind {kind!r}; kinds: {', '.join(KINDS)}")
    return {"kind": kind, "tables": {name: [_row(o) for o in session.scalars(select(model))]
                                     for name, model in CATALOG}}


def _parents_first(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Schemas ordered so a parent schema comes before its children."""
    by_id, done, out = {r["id"]: r for r in rows}, set(), []

    def visit(r: dict[str, Any]) -> None:
        if r["id"] in done:
            return
        done.add(r["id"])
        if r.get("parent_id") in by_id:
            visit(by_id[r["parent_id"]])
        out.append(r)
    for r in rows:
        visit(r)
    return out


def apply_catalog(session: Session, snap: dict[str, Any]) -> int:
    """Make this project's catalog hold every row of the authority's ``snap`` (upsert by key;
    each collection's schemas exactly the authority's). Rows only this project has (its own
    changes not yet accepted) stay. Returns how many rows were written."""
    tables = snap.get("tables") or {}
    written = 0
    for name, model in CATALOG:
        rows = tables.get(name) or []
        if name == "schemas":
            rows = _parents_first(rows)
        if name == "collection_schemas":
            held = {r["collection_id"] for r in rows} | {r["id"] for r in tables.get("collections") or []}
            if held:
                session.execute(delete(CollectionSchema).where(CollectionSchema.collection_id.in_(held)))
                session.flush()
        columns = {c.key: c for c in model.__table__.columns}
        for r in rows:
            values = {k: (parse_time(v) if v is not None and _is_time(columns[k]) else v)
                      for k, v in r.items() if k in columns}
            session.merge(model(**values))
            written += 1
        session.flush()
    return written


def _is_time(column: Any) -> bool:
    return isinstance(column.type, (UTCDateTime, DateTime))
