"""The history as events (OpenAPI: ``GET /audit/events``, ``AuditEventResponse``).

An event is a batch (however many changes it holds) or a change made outside any batch; it is
listed when any of its changes match, with how many did. Computed with one GROUP BY on
``coalesce(batch_id, id)``, so no history is loaded into Python beyond the page: one statement
tests the entries once and gives the event count, the page and the parts of the page's batches
(:func:`_grouped_page`), and two more shape its batches and lone entries. Without a filter the grouping is not needed: the batches
keep their figures and the history its event count (``batch_figures``), see :func:`_kept_page`.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, func, literal_column, select
from sqlalchemy.orm import Session

from benchbook.domain.history import batch_figures, text_match
from benchbook.domain.history.entries import batch_devices, batch_response, entry_responses
from benchbook.domain.history.filters import compile_history_filter
from benchbook.domain.history.shapes import AuditEventPart, AuditEventResponse, PaginatedAuditEventResponse
from benchbook.persistence.tables import AuditBatch, AuditEntry

Parts = dict[str, list[AuditEventPart]]
"""Event key → its matching entries counted per action and entity type (``parts`` of a batch)."""


def _grouped_page(session: Session, conds: list[ColumnElement[bool]], sort: str | None, limit: int,
                  offset: int) -> tuple[int, list[Any], Parts]:
    """``(total, [(key, n, at)], parts)`` of the events some of whose entries match ``conds``, in
    one statement, so the entries are tested once (a text search walks every entry): the matching
    entries grouped per event, action and entity type; those grouped per event, counted
    (``count(*) OVER ()``) and paged; the page joined back to its parts. A page past the end
    counts the events on its own."""
    key = func.coalesce(AuditEntry.batch_id, AuditEntry.id).label("key")
    grouped = (select(key, AuditEntry.action, AuditEntry.entity_type, func.count().label("n"),
                      func.max(AuditEntry.timestamp).label("at"))
               .where(*conds).group_by(key, AuditEntry.action, AuditEntry.entity_type).cte("parts"))
    events = (select(grouped.c.key, func.sum(grouped.c.n).label("n"), func.max(grouped.c.at).label("at"))
              .group_by(grouped.c.key).subquery("events"))
    ascending = sort == "timestamp:asc"

    def order(at: Any, k: Any) -> list[Any]:
        return [at.asc(), k.asc()] if ascending else [at.desc(), k.desc()]
    page = (select(events.c.key, events.c.n, events.c.at, func.count().over().label("total"))
            .order_by(*order(events.c.at, events.c.key)).limit(limit).offset(offset).subquery("page"))
    found = session.execute(
        select(page.c.key, page.c.n, page.c.at, page.c.total, grouped.c.action, grouped.c.entity_type,
               grouped.c.n.label("part"))
        .join(grouped, grouped.c.key == page.c.key)
        .order_by(*order(page.c.at, page.c.key), grouped.c.entity_type, grouped.c.action)).all()
    if not found:
        total = session.scalar(select(func.count()).select_from(events)) if offset else 0
        return int(total or 0), [], {}
    rows: list[Any] = []
    parts: Parts = {}
    for row in found:
        if row.key not in parts:
            rows.append((row.key, int(row.n), row.at))
            parts[row.key] = []
        parts[row.key].append({"action": row.action, "entity_type": row.entity_type, "count": row.part})
    return int(found[0].total), rows, parts


def _kept_page(session: Session, sort: str | None, limit: int, offset: int) -> tuple[int, list[Any]]:
    """The same for the whole history, from the batches' kept figures and the entries made
    outside any batch (migration 0010): batches and lone entries are each read newest first
    from their own index and merged, and the total is the kept event count (migration 0011),
    so the cost does not grow with the entries (only with ``offset``)."""
    batches = (select(AuditBatch.id.label("key"), AuditBatch.entry_count.label("n"),
                                   AuditBatch.last_at.label("at")).where(AuditBatch.entry_count > 0))
    # SQLite would pick the batch_id index for "IS NULL" and sort every lone entry: the partial one walks them in order
    lone: Any = (select(AuditEntry.id.label("key"), literal_column("1").label("n"), AuditEntry.timestamp.label("at"))
                 .where(AuditEntry.batch_id.is_(None)).with_hint(AuditEntry, "INDEXED BY ix_audit_entries_lone", "sqlite"))
    total = batch_figures.event_total(session)  # kept with the entries: counting lone entries grows with them
    ascending = sort == "timestamp:asc"
    want = limit + offset
    merged: list[Any] = []
    arms: list[tuple[Any, Any, Any]] = [(batches, AuditBatch.last_at, AuditBatch.id),
                                                (lone, AuditEntry.timestamp, AuditEntry.id)]
    for part, at, key in arms:
        order = [at.asc(), key.asc()] if ascending else [at.desc(), key.desc()]
        merged.extend(session.execute(part.order_by(*order).limit(want)).all())
    merged.sort(key=lambda r: (r[2], r[0]), reverse=not ascending)
    return total, merged[offset:offset + limit]


def list_events(session: Session, *, q: str | None, tree: str | None, sort: str | None, limit: int,
                offset: int) -> PaginatedAuditEventResponse:
    """Paginated AuditEventResponse, newest first unless ``sort`` is ``timestamp:asc``."""
    conds = [compile_history_filter(session, tree)] if tree else []
    if q and q.strip():
        conds.append(text_match.stored_text_matches(session, q))
    parts: Parts = {}
    if conds:
        total, rows, parts = _grouped_page(session, conds, sort, limit, offset)
    else:
        total, rows = _kept_page(session, sort, limit, offset)
    keys = [r[0] for r in rows]
    batches = {b.id: b for b in session.scalars(select(AuditBatch).where(AuditBatch.id.in_(keys)))} if keys else {}
    if not conds:  # every entry counts: the batch's kept parts (batch_figures)
        for batch_id, batch in batches.items():
            parts[batch_id] = [{"action": k.split(" ", 1)[0], "entity_type": k.split(" ", 1)[1], "count": n}
                               for k, n in sorted((batch.parts or {}).items(), key=lambda kv: kv[0].split(" ", 1)[::-1])]
    lone = [k for k in keys if k not in batches]
    singles = list(session.scalars(select(AuditEntry).where(AuditEntry.id.in_(lone)))) if lone else []
    shaped = {e["id"]: e for e in entry_responses(session, singles)}
    devices = batch_devices(session, list(batches))
    items: list[AuditEventResponse] = []
    for event_id, count, at in rows:
        if event_id in batches:
            batch = batches[event_id]
            items.append({"id": event_id, "kind": "batch", "timestamp": at.isoformat(), "count": count,
                          "actor": batch.actor, "device": devices.get(event_id), "entry": None,
                          "batch": batch_response(batch),
                          "parts": parts[event_id]})
        else:
            entry = shaped[event_id]
            items.append({"id": event_id, "kind": "entry", "timestamp": entry["timestamp"], "count": 1,
                          "actor": entry["actor"], "device": entry["device"], "entry": entry, "batch": None,
                          "parts": []})
    return {"items": items, "total": total, "offset": offset, "limit": limit}
