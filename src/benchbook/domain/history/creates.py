"""A record's ``create`` entry and the values it was created with (issue 15, migration 0017).

A record's create entry is written with the record's identity only: ``new_data`` without
``data``. While it lacks ``data`` the record still holds exactly the values it was created with,
because the database copies them into the entry (triggers of migration 0017) before any
statement changes the row's values or removes the row. So the values of such an entry are read
from the record itself; the API still answers ``new_data`` whole (spec *Audit entry*: "whole
for create"). Entries written before 0017 hold their values and are read as they are.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, and_, func, literal_column, select
from sqlalchemy.orm import Session

from benchbook.persistence.tables import AuditEntry, Record


def values_deferred(entry: AuditEntry) -> bool:
    """True for a record's create entry whose values are still the record's own (no ``data``
    in ``new_data``)."""
    return (entry.entity_type == "record" and entry.action == "create" and isinstance(entry.new_data, dict)
            and "data" not in entry.new_data)


def whole_new_data(session: Session, entries: Iterable[AuditEntry]) -> dict[str, dict[str, Any]]:
    """``new_data`` with ``data`` (field id → value) of each entry among ``entries`` whose
    values are deferred (:func:`values_deferred`), by entry id; other entries are left out.

    One query for all of them. It reads the entries' stored ``new_data`` again, not the copies
    the session may hold: the database may have copied the values in since (a change to the
    record later in the same transaction), and then those are the values it was created with.
    An entry whose record is gone without its values copied (not possible while the triggers
    exist) gets ``{}``.
    """
    ids = [e.id for e in entries if values_deferred(e)]
    if not ids:
        return {}
    rows = session.execute(select(AuditEntry.id, AuditEntry.new_data, Record.data)
                           .outerjoin(Record, Record.id == AuditEntry.entity_id)
                           .where(AuditEntry.id.in_(ids)))
    out: dict[str, dict[str, Any]] = {}
    for eid, stored, values in rows:
        stored = dict(stored or {})
        if "data" not in stored:
            stored["data"] = dict(values or {})
        out[eid] = stored
    return out


def deferred_clause(session: Session) -> ColumnElement[bool]:
    """SQL: the entry is a record's create entry whose values are the record's own."""
    if session.get_bind().dialect.name == "postgresql":
        lacks = ~AuditEntry.new_data.op("?", is_comparison=True)(literal_column("'data'"))
    else:
        lacks = func.json_type(AuditEntry.new_data, "$.data").is_(None)
    return and_(AuditEntry.entity_type == "record", AuditEntry.action == "create", lacks)
