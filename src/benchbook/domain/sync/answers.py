"""The authority's answers to a device's push, kept on the device (docs/sync.md *Pushing*)."""
from __future__ import annotations

from collections import Counter
from typing import Any

from sqlalchemy import Table, bindparam, select, update
from sqlalchemy.orm import Session

from benchbook.domain.records.rows import chunks
from benchbook.domain.sync import replica
from benchbook.persistence.tables import AuditEntry

_ENTRIES: Table = AuditEntry.__table__  # type: ignore[assignment]
_NUMBERED = (update(_ENTRIES).where(_ENTRIES.c.id == bindparam("entry_id"))
             .values(sync=bindparam("rows"), seq=bindparam("n"), device=bindparam("stamp")))
_ANSWERED = update(_ENTRIES).where(_ENTRIES.c.id == bindparam("entry_id")).values(sync=bindparam("rows"))


def record_answers(session: Session, results: list[dict[str, Any]], device: str | None = None) -> dict[str, int]:
    """Keep the authority's answers on the entries they answer (in the caller's transaction):
    the number given, the rows met. ``deferred`` leaves the entry to be sent again. Where the
    authority kept its own value (a ``conflict`` row; an ``edit_vs_delete`` row refusing this
    device's delete), the record shows the authority's state from now on
    (:func:`replica.show_theirs`, :func:`replica.show_live`). An entry the authority numbered
    takes the ``device`` it stamped on its copy (this device's name), so every copy of it says
    the same. Two statements for the whole answer (numbered, not numbered) and one read of the
    entries that met rows. ``results`` are PushResult's ``{id, status, seq, rows}``. Returns
    the count per status."""
    counts = Counter(r["status"] for r in results)
    kept = [r for r in results if r["status"] != "deferred"]
    _write(session, kept, device)
    with_rows = {r["id"]: r["rows"] for r in kept if r.get("rows")}
    _show_authority(session, with_rows, _records_of(session, sorted(with_rows)))
    return dict(counts)


def _write(session: Session, kept: list[dict[str, Any]], device: str | None) -> None:
    """Store each answer's rows on its entry: those the authority numbered with their ``seq``
    and the ``device`` stamp in one statement, the others in a second."""
    numbered = [{"entry_id": r["id"], "rows": r.get("rows") or [], "n": r["seq"], "stamp": device}
                for r in kept if r.get("seq") is not None]
    answered = [{"entry_id": r["id"], "rows": r.get("rows") or []} for r in kept if r.get("seq") is None]
    conn = session.connection()
    if numbered:
        conn.execute(_NUMBERED, numbered)
    if answered:
        conn.execute(_ANSWERED, answered)


def _records_of(session: Session, entry_ids: list[str]) -> dict[str, str]:
    """Entry id → record id for those of ``entry_ids`` that are a record's entries, read a
    chunk at a time."""
    about: dict[str, str] = {}
    for part in chunks(entry_ids):
        about.update(session.execute(select(AuditEntry.id, AuditEntry.entity_id).where(
            AuditEntry.id.in_(part), AuditEntry.entity_type == "record")).all())
    return about


def _show_authority(session: Session, with_rows: dict[str, list[dict[str, Any]]], about: dict[str, str]) -> None:
    """For each entry's rows (entry id → rows, in the answer's order) about a record
    (``about``: entry id → record id; others are skipped): the record shows the authority's
    value of a ``conflict`` row's field, and is live again after an ``edit_vs_delete`` row
    that refused its delete."""
    for entry_id, rows in with_rows.items():
        record_id = about.get(entry_id)
        if record_id is None:  # not a record's entry
            continue
        for r in rows:
            if r["kind"] == "conflict":
                replica.show_theirs(session, record_id, r.get("field"), r.get("theirs"))
            elif r["kind"] == "edit_vs_delete" and r.get("attempted") == "delete":
                replica.show_live(session, record_id)
