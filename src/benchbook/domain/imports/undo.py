"""Undoing an import (issue 14 *Import* 7: the last line names the batch "to revert it"):
every change of an ``import`` batch taken back, as one new event in history.

- Records the batch created that are still live are deleted together, set-based
  (``records.writes.delete_records``): one ``delete`` batch, so ``POST /audit/restore-all`` with
  that batch brings them back. A record that has live children since (created later, under
  it) blocks the undo unless ``force`` (which deletes the children too).
- Records the batch updated get their old values back through the ordinary revert of each
  ``update`` entry (``history.revert.apply_revert``): a field edited since the import is left
  as it is unless ``force``; an update whose every field was edited since blocks the undo
  (409) unless ``force``.

All or nothing, in the caller's transaction; the undo's own entries are one batch (kind
``delete``, label ``undo import <file>``), so the undo can itself be undone.
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select

from benchbook.domain.context import Ctx
from benchbook.domain.errors import Invalid
from benchbook.domain.history import entries as audit
from benchbook.domain.history.revert import apply_revert, revert_plan
from benchbook.domain.records.rows import chunks, record_rows
from benchbook.domain.records.writes import delete_records
from benchbook.persistence.tables import AuditEntry, Record


def undo_import(ctx: Ctx, batch_id: str, *, force: bool = False) -> dict[str, Any]:
    """Take back the changes of import batch ``batch_id`` (module docstring). Returns
    ``{batch_id (the undo's), deleted, reverted, already_gone}``: records deleted (children taken
    along with ``force`` included), updates reverted, created records that were deleted already.
    Raises ``NotFound`` (batch), ``Invalid`` (not an import batch, or an undone one), ``Conflict``
    (live children without ``force``; an update edited since in every field)."""
    s = ctx.session
    batch = audit.find_batch(s, batch_id)
    if batch.kind != "import":
        raise Invalid(f"batch {batch.id} is a {batch.kind!r} batch; only import batches are undone here")
    rows = s.execute(select(AuditEntry.id, AuditEntry.action, AuditEntry.entity_id)
                     .where(AuditEntry.batch_id == batch.id, AuditEntry.entity_type == "record")
                     .order_by(AuditEntry.timestamp.desc(), AuditEntry.id.desc())).all()
    if not rows:
        raise Invalid(f"batch {batch.id} holds no record changes")
    created = [entity_id for _, action, entity_id in rows if action == "create"]
    updates = [entry_id for entry_id, action, _ in rows if action == "update"]
    live = [r for part in chunks(created) for r in record_rows(s, Record.id.in_(part), Record.deleted_at.is_(None))]
    if not live and not updates:
        raise Invalid(f"nothing of batch {batch.id} is left to undo: its records are deleted already")
    deleted = reverted = 0
    with audit.server_batch(ctx, "delete", f"undo import {batch.label or batch.id}") as undo_id:
        if live:
            deleted, _ = delete_records(ctx, live, force=force, always_batch=True, loc=None)  # force only
        for entry_id in updates:
            plan = revert_plan(s, entry_id)
            if plan["kind"] == "update" and plan["blocker"] is None and not plan["can_apply"]:
                continue  # every field holds its old value again already
            apply_revert(ctx, entry_id, force=force)
            reverted += 1
    return {"batch_id": undo_id, "deleted": deleted, "reverted": reverted, "already_gone": len(created) - len(live)}
