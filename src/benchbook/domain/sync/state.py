"""This project's one ``sync_state`` row (migration 0027): its sync id, as an authority the last
sequence number given (``head``), as a device the remote it follows."""
from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from benchbook.domain.ids import new_id
from benchbook.persistence.tables import Collection, Schema, SyncState

ROW_ID = 1


def get(session: Session, *, lock: bool = False) -> SyncState:
    """The row, made on first use (its ``project_id`` a new id). ``lock``: held until the
    transaction ends (PostgreSQL ``FOR UPDATE``; SQLite's writers are already one at a time), so
    two numberings of the feed never interleave."""
    query = select(SyncState).where(SyncState.id == ROW_ID)
    row = session.scalar(query.with_for_update() if lock else query)
    if row is None:
        row = SyncState(id=ROW_ID, project_id=new_id(), head=0, cursor=0)
        session.add(row)
        session.flush()
    return row


def following(session: Session) -> SyncState | None:
    """The row when this project follows an authority (a device), else None."""
    row = session.get(SyncState, ROW_ID)
    return row if row is not None and row.remote_url else None


def holds_data(session: Session) -> bool:
    """Whether this project holds anything of its own: a collection or a schema (live or not)."""
    return bool(session.scalar(select(func.count()).select_from(Collection))
                or session.scalar(select(func.count()).select_from(Schema)))
