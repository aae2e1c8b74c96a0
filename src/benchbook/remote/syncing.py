"""Connect, sync and disconnect a device (docs/sync.md; OpenAPI tag ``remote``).

One sync is pull → push → pull. A device that holds nothing yet first copies the authority
by snapshot (:func:`_copy`; ``domain.sync.copy``), each page in one transaction with how far
the copy got, so a copy stopped midway goes on where it stopped. Each feed page is applied, and
the cursor saved, in one transaction: a process killed between the two applies the page again next time, which finds
every entry held and changes nothing. Each push's answers are kept in one transaction; a reply
lost on the way is asked for again by sending the same entries, which the authority answers
from what it stored (no change made twice).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from benchbook.domain import collector
from benchbook.domain.errors import BenchbookError, Conflict, Invalid, NotFound
from benchbook.domain.files import Spool, content_path
from benchbook.domain.sync import answers, conflicts, copy, files, outbox, replica, snapshot, state
from benchbook.persistence.db import Database
from benchbook.persistence.tables import StoredFile, SyncDevice, utcnow
from benchbook.remote import token as tokens
from benchbook.remote.client import Authority
from benchbook.settings.config import Project

PAGE = 1000
"""Entries asked for per feed page."""

Progress = Callable[[str, int, int], None]
"""``progress(stage, done, total)``: ``stage`` ``copy``, ``pull`` or ``push``, what is done so
far and the total known now (a first copy's records against the authority's head, which is at
least their number; a pull's entries against the authority's head less the cursor, a push's
against the entries that waited when it began)."""


def quiet(stage: str, done: int, total: int) -> None:
    """No progress shown."""


@contextmanager
def _writing(db: Database) -> Iterator[Session]:
    with db.session() as session, session.begin():
        db.write_lock(session)
        yield session


def status(db: Database, project: Project) -> dict[str, Any]:
    """RemoteStatus: ``{url, device, project_id, connected, last_sync_at, pending,
    open_conflicts, error}`` (all null, ``connected`` false, when no authority is followed)."""
    with db.session() as s:
        row = state.following(s)
        out: dict[str, Any] = {"url": None, "device": None, "project_id": None, "connected": False,
                               "last_sync_at": None, "pending": outbox.count(s) if row else 0,
                               "open_conflicts": conflicts.open_count(s) if row else 0, "error": None}
        if row is not None:
            out.update(url=row.remote_url, device=row.remote_device, project_id=row.remote_project_id,
                       connected=tokens.read(project.root) is not None,
                       last_sync_at=row.last_sync_at.isoformat() if row.last_sync_at else None, error=row.error)
        return out


def connect(db: Database, project: Project, url: str, invite: str, progress: Progress = quiet, *,
            transport: httpx.BaseTransport | None = None) -> dict[str, Any]:
    """Follow the authority at ``url`` with a one-use ``invite``: an empty project then copies
    it (one sync, told to ``progress``; ``transport`` as for :func:`sync`). Raises ``Conflict``
    when this project already follows one or has devices of its own, or when both it and the
    authority hold data (the invite stays unused); the authority's errors as :func:`sync`."""
    with db.session() as s:
        if state.following(s) is not None:
            raise Conflict("this project already follows an authority: disconnect first")
        if s.scalar(select(func.count()).select_from(SyncDevice)):
            raise Conflict("this project is an authority (it has devices): it cannot follow another")
        local = state.holds_data(s)
    with Authority(url, transport=transport) as authority:
        joined = authority.join(invite, holds_data=local)
    tokens.write(project.root, joined["token"])
    with _writing(db) as s:
        row = state.get(s)
        row.remote_url, row.remote_device, row.remote_project_id = url.rstrip("/"), joined["device"], joined["project_id"]
        row.cursor, row.error = 0, None
    summary = sync(db, project, progress, transport=transport)
    return {**status(db, project), "summary": summary}


def disconnect(db: Database, project: Project) -> dict[str, Any]:
    """Stop following: the token is forgotten, history and data stay; own changes not yet sent
    stay unsent (connecting again later would need a fresh, empty project or authority)."""
    with _writing(db) as s:
        row = state.following(s)
        if row is not None:
            row.remote_url = row.remote_device = row.remote_project_id = None
            row.error = None
    tokens.forget(project.root)
    return status(db, project)


def sync(db: Database, project: Project, progress: Progress = quiet, *,
         transport: httpx.BaseTransport | None = None) -> dict[str, int]:
    """One sync: pull, push, pull. Returns SyncSummary ``{pushed, pulled, conflicts, rejected,
    files_sent, files_received}``; ``progress`` is told how far each stage is (:data:`Progress`);
    ``transport`` carries the requests (httpx's own by default; tests put a flaky one here).
    Raises ``Conflict`` when no authority is followed, and the authority's errors (the message is
    kept as ``GET /remote`` ``error``)."""
    with db.session() as s:
        row = state.following(s)
        if row is None:
            raise Conflict("this project follows no authority: connect it first (POST /remote/connect)")
        url = row.remote_url
    token = tokens.read(project.root)
    summary = {"pushed": 0, "pulled": 0, "conflicts": 0, "rejected": 0, "files_sent": 0, "files_received": 0}
    try:
        with Authority(str(url), token, transport=transport) as authority:
            summary["pulled"] += _pull(db, authority, progress)
            _push(db, project, authority, summary, progress)
            summary["pulled"] += _pull(db, authority, progress)
            summary["files_received"] += _fetch_files(db, project, authority)
    except BenchbookError as exc:
        with _writing(db) as s:
            state.get(s).error = exc.detail
        raise
    with _writing(db) as s:
        row = state.get(s)
        row.last_sync_at, row.error = utcnow(), None
    return summary


def _copy(db: Database, authority: Authority, progress: Progress) -> int:
    """A first copy by snapshot (``domain.sync.copy``) when this device holds nothing yet or a
    copy is under way: the records as they stand, then the history up to the copy's head as
    stored; the feed after it is left to :func:`_pull`. Each page and how far the copy got are
    kept in one transaction. Returns how many entries were copied."""
    with db.session() as s:
        if not copy.wanted(s):
            return 0
        row = state.get(s)
        stage, head, after = row.copy_stage or copy.RECORDS, row.copy_head, row.copy_after
    copied, total = 0, None  # total: the first page's count of the snapshot's records (not known on a resume)
    while stage == copy.RECORDS:
        with collector.paused():  # thousands of rows parsed: no cycles among them (domain.collector)
            page = authority.snapshot(copy.RECORDS, after, copy.PAGE)
        rows = page["tables"]["records"]
        head = int(page["head"]) if head is None else head
        total = int(page["total"]) if page.get("total") is not None else total
        with db.session() as s:
            stale = after is None or copy.lacks_catalog(s, rows)
        snap = authority.snapshot("catalog") if stale else None
        after = page.get("next")
        stage = copy.RECORDS if after else copy.HISTORY
        with _writing(db) as s:
            if snap is not None:
                snapshot.apply_catalog(s, snap)
            copied += copy.add_records(s, rows)
            row = state.get(s)
            row.copy_stage, row.copy_head, row.copy_after = stage, head, after
        progress("copy", copied, max(copied, total if total is not None else head))
    head = head or 0
    pulled = 0
    with db.session() as s:
        cursor = state.get(s).cursor
    while cursor < head:
        with collector.paused():
            page = authority.snapshot(copy.HISTORY, str(cursor), min(copy.PAGE, head - cursor))
        entries = [e for e in page["tables"]["audit_entries"] if e["seq"] <= head]
        with _writing(db) as s:
            pulled += copy.add_history(s, entries, page["tables"]["audit_batches"])
            row = state.get(s)
            row.cursor = cursor = max(row.cursor, entries[-1]["seq"]) if entries else head
        progress("pull", cursor, head)
    with _writing(db) as s:
        row = state.get(s)
        row.copy_stage = row.copy_head = row.copy_after = None
    return pulled


def _pull(db: Database, authority: Authority, progress: Progress) -> int:
    """Read the feed from the cursor to its head (a first copy by snapshot before, when one is
    wanted: :func:`_copy`); returns how many entries were new here."""
    pulled = _copy(db, authority, progress)
    read = 0
    catalog_read = False
    start: int | None = None
    while True:
        with db.session() as s:
            cursor = state.get(s).cursor
        page = authority.feed(cursor, PAGE)
        entries = page["entries"]
        if not entries:
            return pulled
        snap = None if catalog_read else authority.snapshot("catalog")
        with _writing(db) as s:
            if snap is not None:
                snapshot.apply_catalog(s, snap)
                catalog_read = True
            pulled += replica.apply_page(s, entries)
            row = state.get(s)
            row.cursor = max(row.cursor, entries[-1]["seq"])
        start = cursor if start is None else start
        read += len(entries)
        progress("pull", read, max(read, int(page["head"]) - start))
        if not page.get("more"):
            return pulled


def _push(db: Database, project: Project, authority: Authority, summary: dict[str, int],
          progress: Progress) -> None:
    """Send every own change not yet answered, :data:`outbox.BATCH` at a time, each batch after
    the files it cites that the authority lacks."""
    after = None
    with _writing(db) as s:
        conflicts.close_edited(s)
    with db.session() as s:
        total = outbox.count(s)
    sent = 0
    while True:
        with db.session() as s:
            entries = outbox.next_batch(s, after)
        if not entries:
            return
        summary["files_sent"] += _send_files(db, project, authority, entries)
        answer = authority.push(entries)
        with _writing(db) as s:
            answers.record_answers(s, answer["results"], state.get(s).remote_device)
        for result in answer["results"]:
            summary["pushed"] += result["status"] != "deferred"
            for r in result.get("rows") or []:
                summary["rejected" if r["kind"] == "rejected" else "conflicts"] += 1
        after = entries[-1]["id"]
        sent += len(entries)
        progress("push", sent, max(sent, total))


__all__ = ["connect", "disconnect", "status", "sync"]


def _send_files(db: Database, project: Project, authority: Authority, entries: list[dict[str, Any]]) -> int:
    """Upload the files ``entries`` cite that this project holds and the authority lacks;
    returns how many went. A file this project lacks too is left out (the entry citing it is
    then refused with a row, and the file goes with a later sync once it is here)."""
    with db.session() as s:
        shas = sorted(files.cited(s, entries))
        held = set(shas) - set(files.missing(s, project.files_dir, shas))
        names = dict(s.execute(select(StoredFile.sha256, StoredFile.filename)
                               .where(StoredFile.sha256.in_(held))).all()) if held else {}
    sent = 0
    for start in range(0, len(held), files.MAX_ASKED):
        for sha in authority.files_missing(sorted(held)[start:start + files.MAX_ASKED]):
            authority.put_file(sha, content_path(project.files_dir, sha), names.get(sha, sha))
            sent += 1
    return sent


def _fetch_files(db: Database, project: Project, authority: Authority) -> int:
    """Fetch the files this project's records link to and it lacks; each is checked against
    its sha256 in a temporary file before it is kept. Returns how many arrived; one the
    authority lacks as well is left for a later sync."""
    with db.session() as s:
        wanted = files.linked_but_absent(s, project.files_dir)
    received = 0
    for sha in wanted:
        spool = Spool(project.files_dir)
        try:
            filename = authority.get_file(sha, spool)
        except NotFound:
            spool.close()
            continue
        except BaseException:
            spool.close()
            raise
        with _writing(db) as s:
            try:
                files.accept(s, project.files_dir, sha, spool, filename)
            except Invalid as exc:  # the authority sent other content: not kept; said, and tried again next time
                state.get(s).error = exc.detail
                continue
        received += 1
    return received
