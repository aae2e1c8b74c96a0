"""Units of work for handlers: one session per request, one transaction per write."""
from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from connexion.context import scope
from sqlalchemy.orm import Session

from benchbook.domain.context import Ctx
from benchbook.domain.errors import Invalid, NotFound, error_entry
from benchbook.domain.history import entries as audit
from benchbook.runner import triggers
from benchbook.services import Services

BATCH_HEADER = "x-service-batch"


def services() -> Services:
    """The app's services for the current request."""
    return scope["state"]["services"]  # type: ignore[no-any-return]


def header(name: str) -> str | None:
    """The current request's header ``name`` (lower case), stripped; None when absent or empty."""
    for key, value in scope.get("headers", []):
        if key.decode("latin-1").lower() == name:
            return value.decode("latin-1").strip() or None
    return None


@contextmanager
def read() -> Iterator[Session]:
    """A session for reading."""
    with services().db.session() as session:
        yield session


@contextmanager
def write() -> Iterator[Ctx]:
    """A :class:`Ctx` inside one transaction: committed when the block ends, rolled back
    (database as it was) when it raises. Joins the client batch named by ``X-Service-Batch``.
    Before the commit, the record changes the block made queue the workflow runs they trigger
    (in the same transaction); after it, the worker is told to run them."""
    svc = services()
    queued = False
    with svc.db.session() as session, session.begin():
        svc.db.write_lock(session)  # SQLite: wait for the other writers (bounded: DatabaseBusy → 503)
        batch_id = header(BATCH_HEADER)
        if batch_id:
            try:
                audit.get_batch(session, batch_id)
            except NotFound:
                raise Invalid(f"X-Service-Batch names an unknown batch {batch_id!r}",
                              [error_entry(["header", "X-Service-Batch"], "unknown batch", "batch", batch_id)])
        ctx = Ctx(session=session, actor=svc.project.actor, files_dir=svc.project.files_dir, batch_id=batch_id,
                  request_id=scope.get("state", {}).get("request_id"))
        yield ctx
        queued = bool(triggers.on_changes(ctx, svc.project.root).jobs)
    if queued:
        kick_worker()


def kick_worker() -> None:
    """Runs were just committed to the queue (by a trigger, a manual run, a rerun): run them."""
    from benchbook.runner import worker  # only when runs were queued: a command's start-up skips it

    svc = services()
    worker.kick(svc.db, svc.project)
