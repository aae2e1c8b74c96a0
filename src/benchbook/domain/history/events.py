"""The history as events (spec ``GET /audit/events``).

An event is a batch (however many changes it holds) or a change made outside any batch; it is
listed when any of its changes match, with how many did. Computed with one GROUP BY on
``coalesce(batch_id, id)``, so no history is loaded into Python beyond the page: one query
counts the events, one reads the page, one counts the parts of the page's batches, and two
shape its batches and lone entries. Without a filter the grouping is not needed: the batches
keep their figures and the history its event count (``batch_figures``), see :func:`_kept_page`.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, and_, exists, func, literal_column, or_, select
from sqlalchemy.orm import Session

from benchbook.domain.history import batch_figures
from benchbook.domain.history.entries import batch_response, entry_responses
from benchbook.domain.history.filters import compile_history_filter
from benchbook.domain.history.own_values import OWN_VALUES, deferred_clause
from benchbook.domain.records.search import like_pattern
from benchbook.persistence.own_values import FROM_RECORD
from benchbook.persistence.tables import AuditBatch, AuditEntry, Record


def _value_contains(session: Session, column: Any, pattern: str) -> ColumnElement[bool]:
    """Some string or number anywhere inside the JSON ``column`` contains ``pattern`` (keys do not
    count). PostgreSQL folds case fully; SQLite's LIKE folds ASCII letters only."""
    if session.get_bind().dialect.name == "postgresql":
        t = (func.jsonb_path_query(column, literal_column("'strict $.**'::jsonpath"))
             .table_valued("v").render_derived().alias("t"))
        return exists(select(1).select_from(t).where(func.jsonb_typeof(t.c.v).in_(("string", "number")),
                                                     t.c.v.op("#>>")(literal_column("'{}'")).ilike(pattern, escape="\\")))
    t = func.json_tree(column).table_valued("atom", "type").alias("t")
    return exists(select(1).select_from(t).where(t.c.type.in_(("text", "integer", "real")),
                                                 t.c.atom.ilike(pattern, escape="\\")))


def stored_text_matches(session: Session, q: str, *, batch_labels: bool = True) -> ColumnElement[bool]:
    """Entries whose values (``old_data``, ``new_data``, and the record's for an entry whose
    values are still the record's own; together these hold every value a change lists) contain
    ``q``, case-insensitively; with ``batch_labels`` also entries of a batch whose label
    contains it."""
    pattern = like_pattern(q.strip())
    # an entry whose values are still the record's own (history.own_values): the record's, and
    # its name and parent; a create's or delete's id and collection id: the entry's own columns
    record_values = (select(Record.data).where(Record.id == AuditEntry.entity_id)
                     .correlate(AuditEntry).scalar_subquery())
    record_identity = [and_(deferred_clause(session, key), select(getattr(Record, column))
                            .where(Record.id == AuditEntry.entity_id).correlate(AuditEntry).scalar_subquery()
                            .ilike(pattern, escape="\\")) for key, column in FROM_RECORD]
    conds = [_value_contains(session, AuditEntry.old_data, pattern),
             _value_contains(session, AuditEntry.new_data, pattern),
             and_(deferred_clause(session), _value_contains(session, record_values, pattern)), *record_identity,
             and_(AuditEntry.entity_type == "record", AuditEntry.action.in_(list(OWN_VALUES)),
                  or_(AuditEntry.entity_id.ilike(pattern, escape="\\"), AuditEntry.dataset_id.ilike(pattern, escape="\\")))]
    if batch_labels:
        conds.append(AuditEntry.batch_id.in_(select(AuditBatch.id).where(AuditBatch.label.ilike(pattern, escape="\\"))))
    return or_(*conds)


def _grouped_page(session: Session, conds: list[ColumnElement[bool]], sort: str | None, limit: int,
                  offset: int) -> tuple[int, list[Any]]:
    """``(total, [(key, n, at)])`` of the events some of whose entries match ``conds``: one GROUP
    BY over the matching entries."""
    key = func.coalesce(AuditEntry.batch_id, AuditEntry.id).label("key")
    grouped = (select(key, func.count().label("n"), func.max(AuditEntry.timestamp).label("at"))
               .where(*conds).group_by(key).subquery())
    total = session.scalar(select(func.count()).select_from(grouped)) or 0
    order = [grouped.c.at.asc(), grouped.c.key.asc()] if sort == "timestamp:asc" else \
        [grouped.c.at.desc(), grouped.c.key.desc()]
    return total, list(session.execute(select(grouped.c.key, grouped.c.n, grouped.c.at).order_by(*order)
                                       .limit(limit).offset(offset)).all())


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
                offset: int) -> dict[str, Any]:
    """Paginated AuditEventResponse, newest first unless ``sort`` is ``timestamp:asc``."""
    conds = [compile_history_filter(session, tree)] if tree else []
    if q and q.strip():
        conds.append(stored_text_matches(session, q))
    if conds:
        total, rows = _grouped_page(session, conds, sort, limit, offset)
    else:
        total, rows = _kept_page(session, sort, limit, offset)
    keys = [r[0] for r in rows]
    batches = {b.id: b for b in session.scalars(select(AuditBatch).where(AuditBatch.id.in_(keys)))} if keys else {}
    parts: dict[str, list[dict[str, Any]]] = {bid: [] for bid in batches}
    if batches and not conds:  # every entry counts: the batch's kept parts (batch_figures)
        for batch_id, batch in batches.items():
            parts[batch_id] = [{"action": k.split(" ", 1)[0], "entity_type": k.split(" ", 1)[1], "count": n}
                          for k, n in sorted((batch.parts or {}).items(), key=lambda kv: kv[0].split(" ", 1)[::-1])]
    elif batches:
        for bid, action, entity_type, n in session.execute(
                select(AuditEntry.batch_id, AuditEntry.action, AuditEntry.entity_type, func.count())
                .where(AuditEntry.batch_id.in_(list(batches)), *conds)
                .group_by(AuditEntry.batch_id, AuditEntry.action, AuditEntry.entity_type)
                .order_by(AuditEntry.batch_id, AuditEntry.entity_type, AuditEntry.action)):
            parts[str(bid)].append({"action": action, "entity_type": entity_type, "count": n})
    lone = [k for k in keys if k not in batches]
    singles = list(session.scalars(select(AuditEntry).where(AuditEntry.id.in_(lone)))) if lone else []
    shaped = {e["id"]: e for e in entry_responses(session, singles)}
    items = []
    for event_id, count, at in rows:
        if event_id in batches:
            batch = batches[event_id]
            items.append({"id": event_id, "kind": "batch", "timestamp": at.isoformat(), "count": count,
                          "actor": batch.actor, "device": None, "entry": None, "batch": batch_response(batch),
                          "parts": parts[event_id]})
        else:
            entry = shaped[event_id]
            items.append({"id": event_id, "kind": "entry", "timestamp": entry["timestamp"], "count": 1,
                          "actor": entry["actor"], "device": None, "entry": entry, "batch": None, "parts": []})
    return {"items": items, "total": total, "offset": offset, "limit": limit}
