"""An audit entry as sync carries it, both ways (docs/sync.md *What travels*).

A wire entry is the entry's own columns with its values whole (``old_data``/``new_data`` as the
API answers them, :func:`benchbook.domain.history.own_values.whole_values`), so whoever stores it
needs nothing of the sender's records to read it back::

    {id, seq, action, entity_type, entity_id, timestamp, actor, device, changes,
     old_data, new_data, dataset_id, schema_id, batch}

``changes`` is the stored column (empty for record entries: derived when read); ``batch`` is
``{id, kind, label, ref, actor, created_at}`` or null; ``seq`` the authority's number (null in a
push); ``device`` the stamp the authority gave (ignored in a push: docs/sync.md *Setting up*).
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.context import Origin
from benchbook.domain.history.own_values import whole_values
from benchbook.persistence.tables import AuditBatch, AuditEntry


def _at(value: datetime) -> str:
    return value.isoformat()


def parse_time(text: str) -> datetime:
    """A wire timestamp (ISO 8601; no zone = UTC)."""
    value = datetime.fromisoformat(text)
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def entries_out(session: Session, entries: list[AuditEntry]) -> list[dict[str, Any]]:
    """``entries`` as wire entries, in the order given (two queries: whole values, batches)."""
    whole = whole_values(session, entries)
    batch_ids = {e.batch_id for e in entries if e.batch_id}
    batches = {b.id: {"id": b.id, "kind": b.kind, "label": b.label, "ref": b.ref, "actor": b.actor,
                      "created_at": _at(b.created_at)}
               for b in session.scalars(select(AuditBatch).where(AuditBatch.id.in_(batch_ids)))} if batch_ids else {}
    out = []
    for e in entries:
        values = whole.get(e.id, {"old_data": e.old_data, "new_data": e.new_data})
        out.append({"id": e.id, "seq": e.seq, "action": e.action, "entity_type": e.entity_type,
                    "entity_id": e.entity_id, "timestamp": _at(e.timestamp), "actor": e.actor, "device": e.device,
                    "changes": e.changes or [], "old_data": values["old_data"], "new_data": values["new_data"],
                    "dataset_id": e.dataset_id, "schema_id": e.schema_id,
                    "batch": batches.get(e.batch_id) if e.batch_id else None})
    return out


def origin(entry: dict[str, Any], *, device: str | None, seq: int | None = None) -> Origin:
    """The :class:`Origin` a wire entry's change is applied under (``device``: the stamp,
    never the entry's own ``device`` when it comes from a push)."""
    batch = entry.get("batch") or None
    return Origin(entry_id=entry["id"], actor=entry.get("actor"), timestamp=parse_time(entry["timestamp"]),
                  device=device, batch_id=batch["id"] if batch else None, seq=seq)


def ensure_batch(session: Session, batch: dict[str, Any] | None) -> None:
    """Store a copy of a wire entry's ``batch`` when this project lacks it (same id), so the
    entries of one operation stay one event in every copy of history."""
    if batch and session.get(AuditBatch, batch["id"]) is None:
        session.add(AuditBatch(id=batch["id"], kind=batch["kind"], label=batch.get("label"), ref=batch.get("ref"),
                               actor=batch.get("actor"), created_at=parse_time(batch["created_at"])))
        session.flush()
