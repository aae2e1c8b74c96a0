"""What a history entry's reference and file values are called (issue 37 item 1: history and
revert plans showed record ids and file hashes where a person reads names).

An audit entry's change rows hold a reference as the target record's id and a file as its
sha256. :func:`value_labels` gives, per entry, ``{value: label}`` for every such value in its
rows: a record by its natural name (deleted records too: the history keeps naming what was
there), a file by its name in the store. Values with no name (a purged record, a file not in
the store) are left out; a reader then shows the value itself."""
from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.history.shapes import AuditChange
from benchbook.domain.records.labels import target_names
from benchbook.domain.records.values import FILE_TYPES, REFERENCE_TYPES, as_list
from benchbook.persistence.tables import StoredFile

CHUNK = 500
"""Values looked up per statement (bound parameters stay well under every backend's limit)."""


def _values(rows: list[AuditChange], types: tuple[str, ...]) -> set[str]:
    return {str(v) for c in rows if c.get("dtype") in types
            for side in ("before", "after") for v in as_list(c.get(side)) if isinstance(v, str)}


def _file_names(session: Session, hashes: set[str]) -> dict[str, str]:
    """``{sha256: file name}`` of the files of ``hashes`` the store holds, :data:`CHUNK` a query."""
    ordered = sorted(hashes)
    out: dict[str, str] = {}
    for start in range(0, len(ordered), CHUNK):
        out.update((sha, name) for sha, name in session.execute(
            select(StoredFile.sha256, StoredFile.filename).where(StoredFile.sha256.in_(ordered[start:start + CHUNK]))))
    return out


def value_labels(session: Session, changes: dict[str, list[AuditChange]]) -> dict[str, dict[str, str]]:
    """``{entry id: {value: label}}`` for the reference and file values of each entry's change
    rows (``changes``: AuditChange rows by entry id, with ``dtype``): records' names through
    :func:`benchbook.domain.records.labels.target_names`, files' from the store."""
    records = target_names(session, set().union(*(_values(rows, REFERENCE_TYPES) for rows in changes.values())))
    files = _file_names(session, set().union(*(_values(rows, FILE_TYPES) for rows in changes.values())))
    known = {value: name for value, name in {**records, **files}.items() if name}
    return {entry_id: {v: known[v] for v in _values(rows, REFERENCE_TYPES + FILE_TYPES) if v in known}
            for entry_id, rows in changes.items()}
