"""The authority's answers to a device's push, kept on the device (docs/sync.md *Pushing*)."""
from __future__ import annotations

from typing import Any

from sqlalchemy import update
from sqlalchemy.orm import Session

from benchbook.domain.sync import replica
from benchbook.persistence.tables import AuditEntry


def record_answers(session: Session, results: list[dict[str, Any]], device: str | None = None) -> dict[str, int]:
    """Keep the authority's answers on the entries they answer (in the caller's transaction):
    the number given, the rows met. ``deferred`` leaves the entry to be sent again. Where the
    authority kept its own value (a ``conflict`` row; an ``edit_vs_delete`` row refusing this
    device's delete), the record shows the authority's state from now on
    (:func:`replica.show_theirs`, :func:`replica.show_live`). An entry the authority numbered
    takes the ``device`` it stamped on its copy (this device's name), so every copy of it says
    the same. Returns the count per status."""
    counts: dict[str, int] = {}
    for result in results:
        counts[result["status"]] = counts.get(result["status"], 0) + 1
        if result["status"] == "deferred":
            continue
        rows = result.get("rows") or []
        values: dict[str, Any] = {"sync": rows}
        if result.get("seq") is not None:
            values["seq"] = result["seq"]
            values["device"] = device
        session.execute(update(AuditEntry).where(AuditEntry.id == result["id"]).values(**values))
        entry = session.get(AuditEntry, result["id"])
        if entry is None or entry.entity_type != "record":
            continue
        for r in rows:
            if r["kind"] == "conflict":
                replica.show_theirs(session, entry.entity_id, r.get("field"), r.get("theirs"))
            elif r["kind"] == "edit_vs_delete" and r.get("attempted") == "delete":
                replica.show_live(session, entry.entity_id)
    return counts
