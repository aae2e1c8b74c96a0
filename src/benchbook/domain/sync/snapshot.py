"""Snapshots an authority serves (``GET /sync/snapshot/{kind}``, docs/sync.md).

``catalog``: every row of ``collections``, ``schemas``, ``fields``, ``collection_schemas`` and
``views`` (deleted ones too), column by column. A device applies the catalog as the authority
has it before it applies a feed page (:func:`apply_catalog`): the catalog is small and changes
seldom, and a whole copy cannot miss a change (a field renamed, a key added, a schema moved
into a collection) however it was made.

``records`` and ``history``: a device's first copy (docs/sync.md *A first copy*), in pages
(:func:`records_page`, :func:`history_page`; the device's side is :mod:`.copy`): every record row
as it stands, parents before children, and every entry numbered so far as it is stored, with
its batches. Each page says the ``head`` (the last number given) and the cursor of the ``next``
page (null after the last).
"""
from __future__ import annotations

from datetime import datetime
from typing import Any

import orjson
from sqlalchemy import DateTime, Text, cast, delete, func, select
from sqlalchemy.orm import Session

from benchbook.domain import collector
from benchbook.domain.errors import Invalid, NotFound
from benchbook.domain.sync import feed
from benchbook.domain.sync.wire import parse_time
from benchbook.persistence.tables import (
    AuditBatch,
    AuditEntry,
    Base,
    Collection,
    CollectionSchema,
    Field,
    Record,
    Schema,
    UTCDateTime,
    View,
)

CATALOG: tuple[tuple[str, type[Base]], ...] = (
    ("collections", Collection), ("schemas", Schema), ("fields", Field),
    ("collection_schemas", CollectionSchema), ("views", View))
KINDS = ("catalog", "records", "history")
PAGE = 2000
"""Rows per ``records`` or ``history`` page by default; ``limit`` may ask for 1 to :data:`MAX_PAGE`."""
MAX_PAGE = 10_000


def _text(column: Any) -> Any:
    """A column read as the database's text of it, not made a Python value: a JSON column's
    JSON (handed on as it is, :class:`orjson.Fragment`), a time's ISO 8601 text (SQLite's
    ``2026-11-28 17:32:55.293881`` in UTC, PostgreSQL's with its offset: ``wire.parse_time``
    reads both). A page of thousands of rows spends most of its time making and writing values
    otherwise."""
    return cast(column, Text).label(column.key)


RECORD_COLUMNS = (Record.id, Record.dataset_id, Record.schema_id, Record.parent_id, _text(Record.data),
                  Record.natural_name, _text(Record.created_at), _text(Record.updated_at),
                  _text(Record.deleted_at), Record.delete_op)
ENTRY_COLUMNS = (AuditEntry.id, AuditEntry.seq, AuditEntry.action, AuditEntry.entity_type, AuditEntry.entity_id,
                 _text(AuditEntry.timestamp), AuditEntry.actor, AuditEntry.device, _text(AuditEntry.changes),
                 _text(AuditEntry.old_data), _text(AuditEntry.new_data), AuditEntry.batch_id, AuditEntry.dataset_id,
                 AuditEntry.schema_id)
"""An entry's stored columns as a copy keeps them (``request_id`` is the authority's own log's;
``sync`` rows are a device's own)."""
BATCH_COLUMNS = (AuditBatch.id, AuditBatch.kind, AuditBatch.label, AuditBatch.ref, AuditBatch.actor,
                 _text(AuditBatch.created_at))
_RAW = ("data", "changes", "old_data", "new_data")


def _row(obj: Base) -> dict[str, Any]:
    out = {}
    for column in obj.__table__.columns:
        value = getattr(obj, column.key)
        out[column.key] = value.isoformat() if isinstance(value, datetime) else value
    return out


def take(session: Session, kind: str, after: str | None = None, limit: int = PAGE) -> dict[str, Any]:
    """Snapshot ``kind`` (:data:`KINDS`): ``{kind, tables: {table: [row, …]}}``, and for
    ``records`` and ``history`` one page of it (``after``: the cursor a page gave as ``next``;
    ``limit`` rows at most) with ``head`` and ``next`` (:func:`records_page`,
    :func:`history_page`, which number the feed first: the caller's write transaction). Raises
    ``NotFound`` for another kind, ``Invalid`` for a cursor no page gave."""
    if kind == "records":
        return records_page(session, after, limit)
    if kind == "history":
        return history_page(session, after, limit)
    if kind not in KINDS:
        raise NotFound(f"no snapshot of kind {kind!r}; kinds: {', '.join(KINDS)}")
    return {"kind": kind, "tables": {name: [_row(o) for o in session.scalars(select(model))]
                                     for name, model in CATALOG}}


def _rows(session: Session, query: Any) -> list[dict[str, Any]]:
    """``query``'s rows as dicts by column name; JSON columns read as text (:func:`_text`)
    become :class:`orjson.Fragment` (written as they are)."""
    result = session.execute(query)
    keys = list(result.keys())
    raw = [i for i, key in enumerate(keys) if key in _RAW]
    out = []
    for row in result:
        values = list(row)
        for i in raw:
            if values[i] is not None:
                values[i] = orjson.Fragment(values[i])
        out.append(dict(zip(keys, values)))
    return out


def _depths(session: Session) -> list[list[str]]:
    """Schema ids by depth (top-level schemas first; deleted ones too): a record's parent is a
    record of its schema's parent, so records read depth by depth come after their parents."""
    parents: dict[str, str | None] = dict(session.execute(select(Schema.id, Schema.parent_id)).all())
    depth: dict[str, int] = {}

    def of(schema_id: str) -> int:
        if schema_id not in depth:
            parent = parents.get(schema_id)
            depth[schema_id] = 0  # a cycle (never made by the rules) ends here
            depth[schema_id] = of(parent) + 1 if parent in parents else 0
        return depth[schema_id]
    levels: list[list[str]] = []
    for schema_id in sorted(parents):
        d = of(schema_id)
        levels.extend([] for _ in range(d + 1 - len(levels)))
        levels[d].append(schema_id)
    return levels


@collector.paused()
def records_page(session: Session, after: str | None, limit: int = PAGE) -> dict[str, Any]:
    """One page of the ``records`` snapshot: ``{kind, tables: {records: [row, …]}, head, next}``,
    every column of each record (deleted ones too; purged ones are gone; times as text), ordered
    by the depth of their schema and then by id, so that a parent comes before its children;
    ``after`` is ``"<depth>:<record id>"`` (a page's ``next``; none for the first page, which
    also has ``total``, the number of record rows of the whole snapshot). Raises
    ``Invalid`` for another ``after``."""
    head = feed.number(session)
    limit = max(1, min(limit, MAX_PAGE))
    depth, last = 0, ""
    if after:
        text, _, last = after.partition(":")
        if not text.isdigit() or not last:
            raise Invalid(f"after {after!r} is not a records snapshot cursor (a page's next)")
        depth = int(text)
    levels = _depths(session)
    rows: list[dict[str, Any]] = []
    next_cursor = None
    for d in range(depth, len(levels)):
        query = (select(*RECORD_COLUMNS).where(Record.schema_id.in_(levels[d]), Record.id > (last if d == depth else ""))
                 .order_by(Record.id).limit(limit - len(rows)))
        rows += _rows(session, query)
        if len(rows) >= limit:
            next_cursor = f"{d}:{rows[-1]['id']}"
            break
    page = {"kind": "records", "tables": {"records": rows}, "head": head, "next": next_cursor}
    if not after:  # the first page says how many rows the whole copy holds (a progress bar's total)
        page["total"] = int(session.scalar(select(func.count()).select_from(Record)) or 0)
    return page


@collector.paused()
def history_page(session: Session, after: str | None, limit: int = PAGE) -> dict[str, Any]:
    """One page of the ``history`` snapshot: ``{kind, tables: {audit_entries: [row, …],
    audit_batches: [row, …]}, head, next}``: the entries numbered after ``after`` (a number;
    none for the first page), oldest first, their columns as stored (:data:`ENTRY_COLUMNS`;
    times as text), and the batches they belong to."""
    head = feed.number(session)
    limit = max(1, min(limit, MAX_PAGE))
    if after and not after.isdigit():
        raise Invalid(f"after {after!r} is not a history snapshot cursor (a page's next)")
    entries = _rows(session, select(*ENTRY_COLUMNS).where(AuditEntry.seq > int(after or 0))
                    .order_by(AuditEntry.seq).limit(limit))
    batch_ids = sorted({e["batch_id"] for e in entries if e["batch_id"]})
    batches = _rows(session, select(*BATCH_COLUMNS).where(AuditBatch.id.in_(batch_ids))) if batch_ids else []
    last = entries[-1]["seq"] if entries else head
    return {"kind": "history", "tables": {"audit_entries": entries, "audit_batches": batches}, "head": head,
            "next": str(last) if last < head else None}


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
