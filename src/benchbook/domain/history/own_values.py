"""Record entries whose values are still the record's own (issue 15, migration 0017).

Two kinds of record entry would hold a copy of the values the record itself holds: a ``create``
(``new_data``: the values it was created with) and a ``delete`` (``old_data``: the values it
held when deleted; a soft-deleted record keeps them). Both are written with the record's
identity only, without ``data``. While such an entry lacks ``data`` the record still holds
exactly those values, because the database copies them into every entry of the record that
lacks them (triggers of migration 0017) before any statement changes the row's values or
removes the row. So their values are read from the record itself; the API still answers them
whole (spec *Audit entry*: ``new_data`` "whole for create", ``old_data`` "whole for a delete").
Entries written before 0017 hold their values and are read as they are (the background
conversion, ``history.storage``, drops the copies their records still hold).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, and_, func, literal_column, or_, select
from sqlalchemy.orm import Session

from benchbook.persistence.own_values import KINDS
from benchbook.persistence.tables import AuditEntry, Record

OWN_VALUES = dict(KINDS)
"""Action of a record entry → the column whose ``data`` is the record's own until it changes
(``create`` → ``new_data``, ``delete`` → ``old_data``; the triggers' own list)."""


def deferred_column(entry: AuditEntry) -> str | None:
    """``new_data`` or ``old_data`` when ``entry`` is a record entry whose values in that column
    are still the record's own (no ``data`` there), else None."""
    column = OWN_VALUES.get(entry.action) if entry.entity_type == "record" else None
    if column is None:
        return None
    stored = getattr(entry, column)
    return column if isinstance(stored, dict) and "data" not in stored else None


def whole_values(session: Session, entries: Iterable[AuditEntry]) -> dict[str, dict[str, Any]]:
    """For each entry among ``entries`` whose values are the record's own
    (:func:`deferred_column`), by entry id: ``{"old_data": …, "new_data": …}`` with ``data``
    (field id → value) in the column that lacked it; other entries are left out.

    One query for all of them. It reads the entries' stored columns again, not the copies the
    session may hold: the database may have copied the values in since (a change to the record
    later in the same transaction), and then those are the entry's values. An entry whose
    record is gone without its values copied (not possible while the triggers exist) gets ``{}``.
    """
    ids = [e.id for e in entries if deferred_column(e)]
    if not ids:
        return {}
    rows = session.execute(select(AuditEntry.id, AuditEntry.action, AuditEntry.old_data, AuditEntry.new_data,
                                  Record.data).outerjoin(Record, Record.id == AuditEntry.entity_id)
                           .where(AuditEntry.id.in_(ids)))
    out: dict[str, dict[str, Any]] = {}
    for eid, action, old, new, values in rows:
        whole = {"old_data": old, "new_data": new}
        column = OWN_VALUES[action]
        stored = dict(whole[column] or {})
        if "data" not in stored:
            stored["data"] = dict(values or {})
        whole[column] = stored
        out[eid] = whole
    return out


def _lacks_data(session: Session, column: Any) -> ColumnElement[bool]:
    if session.get_bind().dialect.name == "postgresql":
        has: ColumnElement[bool] = column.op("?", is_comparison=True)(literal_column("'data'"))
        return ~has
    return func.json_type(column, "$.data").is_(None)


def deferred_clause(session: Session) -> ColumnElement[bool]:
    """SQL: the entry is a record entry whose values are still the record's own."""
    return and_(AuditEntry.entity_type == "record", or_(
        *(and_(AuditEntry.action == action, _lacks_data(session, getattr(AuditEntry, column)))
          for action, column in OWN_VALUES.items())))
