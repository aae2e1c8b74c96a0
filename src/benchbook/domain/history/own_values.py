"""Record entries whose values are still the record's own (issue 15, migrations 0017 and 0023).

Two kinds of record entry would hold a copy of the values the record itself holds: a ``create``
(``new_data``: the values it was created with) and a ``delete`` (``old_data``: the values it
held when deleted; a soft-deleted record keeps them). Both are written without ``data`` and,
from 0023 on, with only the part of the record's identity the record cannot tell
(``rows.kept_identity``: the schema's and the collection's names). While such an entry lacks
``data`` the record still holds exactly those values, and the name and parent it had, because
the database copies them into every entry of the record that lacks them (the triggers of
``persistence.entry_triggers``) before any statement changes the row's values, name or parent, or
removes the row. So they are read from the record itself, and ``id`` and ``dataset_id`` from the
entry's own columns; the API still answers them whole (OpenAPI ``AuditLogResponse``: ``new_data`` whole
for a create, ``old_data`` whole for a delete). A restore entry (no values; the identity in
both columns) is written the same way from migration 0025 on, and read the same way. Entries
written before keep what they hold and are read as they are (the background conversion,
``history.storage``, drops what their columns and records tell from creates and deletes).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import ColumnElement, and_, func, literal_column, or_, select
from sqlalchemy.orm import Session

from benchbook.persistence.entry_triggers import BOTH, EDIT, FROM_ENTRY, FROM_RECORD, KINDS, RESTORE
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


IDENTITY = ("id", "schema_name", "dataset_id", "collection", "parent_record_id", "natural_name")
"""The keys of a record's identity in a create, delete, restore or edit entry, in the order they
are answered (``rows.identity``), before ``data``."""
_FROM_ENTRY = dict(FROM_ENTRY)
_FROM_RECORD = dict(FROM_RECORD)


def _columns(entry: AuditEntry) -> tuple[str, ...]:
    """The columns of ``entry`` answered with a record's identity: a create's ``new_data``, a
    delete's ``old_data``, a restore's or an edit's both; none for any other entry."""
    if entry.entity_type != "record":
        return ()
    if entry.action in (RESTORE, EDIT):
        return BOTH
    column = OWN_VALUES.get(entry.action)
    return (column,) if column else ()


def _reads_record(entry: AuditEntry) -> bool:
    """Whether some of ``entry``'s answer is still the record's own: a create or delete without
    its values (:func:`deferred_column`), a restore without the name (migration 0025)."""
    if entry.entity_type == "record" and entry.action == RESTORE:
        return isinstance(entry.new_data, dict) and "natural_name" not in entry.new_data
    return deferred_column(entry) is not None


def _incomplete(entry: AuditEntry) -> bool:
    """Whether ``entry`` is stored without something it is answered with (an identity key read
    from its columns, or what :func:`_reads_record` reads)."""
    stored = [getattr(entry, column) for column in _columns(entry)]
    return any(isinstance(s, dict) and "id" not in s for s in stored) or (bool(stored) and _reads_record(entry))


def _made_whole(stored: dict[str, Any], entry: AuditEntry, record: Any) -> dict[str, Any]:
    """``stored`` with what it lacks: ``id`` and ``dataset_id`` from ``entry``'s columns; the
    name and parent from ``record`` (a row of those columns, None when it is gone) when the
    entry is a restore or a create or delete without its values, and then the values too (not a
    restore's: it lists none). An edit takes nothing from the record (migration 0026: it keeps
    the name and parent of its time). Keys ``stored`` holds are kept as they are."""
    values = entry.action in OWN_VALUES
    from_record = entry.action == RESTORE or (values and "data" not in stored)
    whole: dict[str, Any] = {}
    for key in IDENTITY:
        if key in stored:
            whole[key] = stored[key]
        elif key in _FROM_ENTRY:
            whole[key] = getattr(entry, _FROM_ENTRY[key])
        elif from_record and key in _FROM_RECORD:
            whole[key] = getattr(record, _FROM_RECORD[key]) if record is not None else None
    whole.update(stored)
    if from_record and values:
        whole["data"] = dict(record.data or {}) if record is not None else {}
    return whole


def whole_values(session: Session, entries: Iterable[AuditEntry]) -> dict[str, dict[str, Any]]:
    """For each record create, delete, restore or edit entry among ``entries`` stored without
    something it is answered with, by entry id: ``{"old_data": …, "new_data": …}`` with the
    columns of :func:`_columns` made whole (:data:`IDENTITY` in order, then a create's or
    delete's ``data``: field id → value); other entries are left out.

    One query for all those reading the record. It reads the entries' stored columns again, not
    the copies the session may hold: the database may have copied the values in since (a change
    to the record later in the same transaction), and then those are the entry's. An entry
    whose record is gone without them copied (not possible while the triggers exist) gets
    ``data`` ``{}`` and no name or parent.
    """
    owned = [e for e in entries if _incomplete(e)]
    reading = [e.id for e in owned if _reads_record(e)]
    rows = {row.id: row for row in session.execute(
        select(AuditEntry.id, AuditEntry.old_data, AuditEntry.new_data, Record.id.label("record_id"),
               Record.data, Record.natural_name, Record.parent_id)
        .outerjoin(Record, Record.id == AuditEntry.entity_id).where(AuditEntry.id.in_(reading)))} if reading else {}
    out: dict[str, dict[str, Any]] = {}
    for entry in owned:
        row = rows.get(entry.id)
        whole = {"old_data": row.old_data, "new_data": row.new_data} if row is not None else \
            {"old_data": entry.old_data, "new_data": entry.new_data}
        record = row if row is not None and row.record_id is not None else None
        for column in _columns(entry):
            whole[column] = _made_whole(dict(whole[column] or {}), entry, record)
        out[entry.id] = whole
    return out


def _lacks(session: Session, column: Any, key: str) -> ColumnElement[bool]:
    if session.get_bind().dialect.name == "postgresql":
        has: ColumnElement[bool] = column.op("?", is_comparison=True)(literal_column(f"'{key}'"))
        return ~has
    return func.json_type(column, f"$.{key}").is_(None)


def deferred_clause(session: Session, also: str | None = None) -> ColumnElement[bool]:
    """SQL: the entry is a record entry whose values are still the record's own; with ``also``
    (a key of :data:`FROM_RECORD`), one that lacks that key too (it is the record's as well),
    or a restore entry lacking it (migration 0025)."""
    keys = ("data", also) if also else ("data",)
    kinds = [and_(AuditEntry.action == action, *(_lacks(session, getattr(AuditEntry, column), key) for key in keys))
             for action, column in OWN_VALUES.items()]
    if also:
        kinds.append(and_(AuditEntry.action == RESTORE, _lacks(session, AuditEntry.new_data, also)))
    return and_(AuditEntry.entity_type == "record", or_(*kinds))
