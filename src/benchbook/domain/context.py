"""The unit of work a domain call runs in."""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from benchbook.domain.ids import new_id


@dataclass(frozen=True, slots=True)
class RecordChange:
    """A record a write created or changed, as the automation triggers need it: ``action``
    ``created`` or ``updated``; ``before``/``after`` its stored values (by field id; ``before``
    empty for a create)."""

    action: str
    record_id: str
    schema_id: str
    dataset_id: str
    before: dict[str, Any]
    after: dict[str, Any]


@dataclass(frozen=True, slots=True)
class Origin:
    """Where a change applied by sync was made (docs/sync.md): the entry it arrived as keeps its
    ``entry_id``, ``actor`` and ``timestamp``; ``device`` is the name the authority stamped
    from the device's token (never from a request body); ``seq`` the authority's number when the
    entry is pulled onto a device (None while an authority applies a push)."""

    entry_id: str
    actor: str | None
    timestamp: datetime
    device: str | None
    batch_id: str | None = None
    seq: int | None = None


@dataclass
class Ctx:
    """What every domain call gets: an open ``session`` (inside ``session.begin()`` for
    writes), the ``actor`` changes are attributed to, the project's ``files_dir``, the
    current audit ``batch_id`` (from ``X-Service-Batch`` or opened by the server) and the
    HTTP ``request_id`` for correlation with logs.

    Record writes append what they did to ``changes``; the unit of work hands them to the
    automation triggers inside the same transaction (the domain never imports the runner).
    ``job_id`` and ``depth`` are set while a workflow run writes, so the runs its changes
    trigger know their cause (docs/automation.md *A run is queued with its cause*)."""

    session: Session
    actor: str | None
    files_dir: Path
    batch_id: str | None = None
    request_id: str | None = None
    changes: list[RecordChange] = field(default_factory=list)
    job_id: str | None = None
    workflow: str | None = None
    depth: int = 0
    origin: Origin | None = None
    """Set while sync applies a change made elsewhere (:meth:`apply_as`): the change's audit entry
    takes the origin's id, actor, time and device (:meth:`entry_origin`), and the change starts
    no workflow (a change runs its workflows where it was made)."""
    origin_taken: bool = False

    def apply_as(self, origin: Origin | None) -> None:
        """Make the next changes those of ``origin`` (None: this project's own again)."""
        self.origin, self.origin_taken = origin, False

    def entry_origin(self) -> Origin | None:
        """What the next audit entry is written as: None for this project's own change; while
        sync applies a change made elsewhere, that change's :class:`Origin` for its first entry,
        and for any further entry the same change makes here (a cascade: a collection's records
        deleted with it) the same actor, time and device under a new id."""
        if self.origin is None:
            return None
        if not self.origin_taken:
            self.origin_taken = True
            return self.origin
        return replace(self.origin, entry_id=new_id())

    def given_id(self, body: dict[str, Any]) -> str:
        """The id of a thing a create makes: the body's ``id`` while sync applies a change made
        elsewhere (the thing keeps the id it was made with), else a new one."""
        given = body.get("id") if self.origin is not None else None
        return str(given) if given else new_id()
