"""The history as events (spec ``GET /audit/events``) and storage figures (``GET /audit/storage``).

An event is a batch (however many changes it holds) or a change made outside any batch; it is
listed when any of its changes match, with how many did. Computed with one GROUP BY on
``coalesce(batch_id, id)``, so no history is loaded into Python beyond the page.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import String, cast, func, or_, select, text
from sqlalchemy.orm import Session

from benchbook.domain.audit import batch_response, entry_responses
from benchbook.domain.history_filters import compile_history_filter
from benchbook.persistence.tables import AuditBatch, AuditEntry


def list_events(session: Session, *, q: str | None, tree: str | None, sort: str | None, limit: int,
                offset: int) -> dict[str, Any]:
    """Paginated AuditEventResponse, newest first unless ``sort`` is ``timestamp:asc``."""
    conds = [compile_history_filter(session, tree)] if tree else []
    if q and q.strip():
        needle = f"%{q.strip()}%"
        labels = select(AuditBatch.id).where(AuditBatch.label.ilike(needle))
        conds.append(or_(cast(AuditEntry.changes, String).ilike(needle), cast(AuditEntry.old_data, String).ilike(needle),
                         cast(AuditEntry.new_data, String).ilike(needle), AuditEntry.batch_id.in_(labels)))
    key = func.coalesce(AuditEntry.batch_id, AuditEntry.id).label("key")
    grouped = (select(key, func.count().label("n"), func.max(AuditEntry.timestamp).label("at"))
               .where(*conds).group_by(key).subquery())
    total = session.scalar(select(func.count()).select_from(grouped)) or 0
    order = [grouped.c.at.asc(), grouped.c.key.asc()] if sort == "timestamp:asc" else \
        [grouped.c.at.desc(), grouped.c.key.desc()]
    rows = session.execute(select(grouped.c.key, grouped.c.n, grouped.c.at).order_by(*order)
                           .limit(limit).offset(offset)).all()
    batches = {b.id: b for b in session.scalars(select(AuditBatch).where(AuditBatch.id.in_([r[0] for r in rows])))}
    singles = {e.id: e for e in session.scalars(select(AuditEntry).where(
        AuditEntry.id.in_([r[0] for r in rows if r[0] not in batches])))}
    shaped = {e["id"]: e for e in entry_responses(session, list(singles.values()))}
    items = []
    for event_id, count, at in rows:
        if event_id in batches:
            batch = batches[event_id]
            parts = session.execute(select(AuditEntry.action, AuditEntry.entity_type, func.count())
                                    .where(AuditEntry.batch_id == event_id, *conds)
                                    .group_by(AuditEntry.action, AuditEntry.entity_type)).all()
            items.append({"id": event_id, "kind": "batch", "timestamp": at.isoformat(), "count": count,
                          "actor": batch.actor, "device": None, "entry": None, "batch": batch_response(batch),
                          "parts": [{"action": a, "entity_type": e, "count": n} for a, e, n in parts]})
        else:
            entry = shaped[event_id]
            items.append({"id": event_id, "kind": "entry", "timestamp": entry["timestamp"], "count": 1,
                          "actor": entry["actor"], "device": None, "entry": entry, "batch": None, "parts": []})
    return {"items": items, "total": total, "offset": offset, "limit": limit}


def storage(session: Session) -> dict[str, Any]:
    """HistoryStorageResponse. Edits are written compact (identity plus changed values) from the
    start, so no entry holds two whole copies and nothing is ever converting; the file figures
    come from SQLite's page counts (null on PostgreSQL, which manages its own space)."""
    size = free = None
    if session.get_bind().dialect.name == "sqlite":
        page_size = session.execute(text("PRAGMA page_size")).scalar_one()
        size = session.execute(text("PRAGMA page_count")).scalar_one() * page_size
        free = session.execute(text("PRAGMA freelist_count")).scalar_one() * page_size
    return {"whole_entries": 0, "converting": False, "done": None, "total": None, "size_bytes": size,
            "free_bytes": free}
