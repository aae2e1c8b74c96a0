"""The worker: drains the run queue, one run at a time, for one database
(docs/automation.md *The worker: one run at a time, one worker per project*).

There is one :class:`Worker` per database per process (:func:`for_database`), and at most one
worker drains a project at any moment across processes: it must hold the queue's lease
(:mod:`.queue`), renewed by a heartbeat thread while a long step runs.

- **The server** (:func:`start_serving`, called when the app starts serving) keeps a daemon
  thread that holds the lease for as long as the server runs. It drains right after each commit
  that queued runs (the unit of work calls :func:`kick`) and looks every :data:`POLL` seconds
  for runs queued by other processes (command-line sessions, another server on the same file).
  When it starts, it marks runs left ``running`` by a crash ``failed`` (``interrupted``) — only
  if it could take the lease, so a second server never touches the first one's run — and
  clears what processes killed before left behind: their plugins' processes and scratch
  areas (:func:`.plugins.processes.clear_leftovers`; never a live process's).
- **One-off app instances** (a command-line session, tests) have no polling thread: a commit
  that queued runs starts a drain thread that ends when the queue is empty (not a daemon, so a
  command-line session waits for its runs before exiting), unless another process (a server)
  holds the lease and will run them.
- :meth:`Worker.drain` (``POST /jobs/drain``, the CLI import) drains now and reports what ran;
  when another process holds the lease it waits until the queue is empty.

While automation is paused nothing is taken from the queue.
"""
from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
import weakref
from dataclasses import dataclass, field
from typing import Self

from sqlalchemy import Engine, select

from benchbook.domain import plugin_registry as registry
from benchbook.persistence.db import Database
from benchbook.persistence.tables import Job
from benchbook.runner import batch_runs, kept_reads, queue
from benchbook.runner.drain import GROUP_SECONDS, RUN_WAIT, Drain
from benchbook.runner.plugin_host import processes
from benchbook.runner.shapes import DrainResponse
from benchbook.settings.config import Project, read_paused

log = logging.getLogger("benchbook.runs")

POLL = 1.0
"""Seconds between the server worker's looks at the queue."""
LEASE_TTL = 15.0
"""Seconds a lease lasts unless renewed (renewed every :data:`POLL` s, and every third of this
while a step runs)."""
WAIT_LIMIT = 3600.0
"""Longest a drain waits for another process to empty the queue."""


@dataclass
class Tally:
    """What a drain ran: ``ran`` runs, by final status."""

    ran: int = 0
    completed: int = 0
    failed: int = 0
    cancelled: int = 0
    ids: dict[str, str] = field(default_factory=dict)  # run id → the status it is counted under

    def add(self, job_id: str, status: str | None) -> None:
        """Count run ``job_id`` that ended ``status`` (None: it did not run; ``deleted``: it was
        deleted while it ran). A run counted before (its group was rolled back and it ran
        again: ``drain.py``) is counted once, under its last status."""
        if status not in ("completed", "failed", "cancelled", "deleted"):
            return
        before = self.ids.pop(job_id, None)
        if before is not None:
            self.ran -= 1
            if before != "deleted":
                setattr(self, before, getattr(self, before) - 1)
        self.ids[job_id] = status
        self.ran += 1
        if status != "deleted":
            setattr(self, status, getattr(self, status) + 1)

    def response(self) -> DrainResponse:
        return {"ran": self.ran, "completed": self.completed, "failed": self.failed, "cancelled": self.cancelled}


class _Heartbeat:
    """Renews ``worker``'s lease every third of :data:`LEASE_TTL` while a drain runs."""

    def __init__(self, worker: Worker) -> None:
        self.worker = worker
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._beat, name="benchbook-lease", daemon=True)

    def _beat(self) -> None:
        while not self.done.wait(LEASE_TTL / 3):
            try:
                held, _ = queue.acquire(self.worker.db.engine, self.worker.holder, LEASE_TTL)
                if not held:
                    log.warning("the run queue's lease was taken over while %s was running", self.worker.holder)
            except Exception:
                log.exception("could not renew the run queue's lease")

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join(5)


class Worker:
    """The run queue's worker for ``db`` in this process (see the module docstring)."""

    def __init__(self, db: Database, project: Project) -> None:
        self.db, self.project = db, project
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self.serving = False
        self._run_lock = threading.Lock()  # one run at a time in this process
        self._state = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ signals
    def kick(self) -> None:
        """Runs were queued: drain soon (the server's thread at once; otherwise a drain thread)."""
        with self._state:
            self._wake.set()
            if not self.serving and self._thread is None and not self._stopping.is_set():
                self._thread = threading.Thread(target=self._oneshot, name="benchbook-drain", daemon=False)
                self._thread.start()

    def start_serving(self) -> None:
        """Become the server's worker: take the lease now if it is free (marking runs a crash left
        ``running`` as interrupted), then keep a daemon thread draining and polling."""
        with self._state:
            if self.serving:
                return
            self.serving = True
            draining = self._thread
        if draining is not None:  # a drain thread of before: it sees ``serving`` and ends
            draining.join()
        try:  # what a server or command killed before left: plugin processes, scratch areas
            processes.clear_leftovers(self.project.root)
        except OSError:
            log.exception("could not clear what stopped benchbook processes left behind")
        try:
            self._take_lease()
        except Exception:
            log.exception("the run worker could not take the lease")
        with self._state:
            self._thread = threading.Thread(target=self._serve, name="benchbook-worker", daemon=True)
            self._thread.start()

    def stop(self, timeout: float = 10.0) -> None:
        """Stop: the run in progress ends before its next step (``interrupted``), the lease is
        given up. The worker can be started again afterwards."""
        self._stopping.set()
        self._wake.set()
        thread = self._thread
        if thread is not None:
            thread.join(timeout)
        try:
            queue.release(self.db.engine, self.holder)
        except Exception:  # it expires by itself
            log.exception("could not release the run queue's lease")
        with self._state:
            if thread is None or not thread.is_alive():
                self.serving, self._thread = False, None
                self._stopping.clear()
                self._wake.clear()

    # ------------------------------------------------------------------ threads
    def _serve(self) -> None:
        try:
            self._discover_plugins()
        except Exception:
            log.exception("could not discover the plugins")
        while not self._stopping.is_set():
            self._wake.wait(POLL)
            self._wake.clear()
            if self._stopping.is_set():
                break
            try:
                self.drain(wait=False)
            except Exception:
                log.exception("the run worker failed; trying again in %s s", POLL)

    def _oneshot(self) -> None:
        while True:
            with self._state:
                if not self._wake.is_set() or self._stopping.is_set() or self.serving:
                    self._thread = None
                    return
                self._wake.clear()
            try:
                self.drain(wait=False)
            except Exception:
                log.exception("draining the run queue failed")

    # ------------------------------------------------------------------ draining
    def _take_lease(self) -> bool:
        held, fresh = queue.acquire(self.db.engine, self.holder, LEASE_TTL)
        if held and fresh:
            with self.db.session() as s, s.begin():
                self.db.write_lock(s, RUN_WAIT)  # reads, then writes: one writer (#13)
                ids = queue.recover(s)
            if ids:
                log.warning("marked %d run(s) left running as interrupted: %s", len(ids), ", ".join(ids))
        return held

    def _discover_plugins(self) -> None:
        from benchbook.runner.plugin_host import discovery

        with self.db.session() as s:
            empty = registry.is_empty(s)
        if empty:
            found = discovery.discover(self.project.root / "plugins")
            with self.db.session() as s, s.begin():
                self.db.write_lock(s, RUN_WAIT)
                registry.replace_all(s, found)

    def drain(self, *, wait: bool = True) -> Tally:
        """Run waiting runs until none is left (or automation is paused, or the worker stops);
        returns what ran. When another process holds the lease: with ``wait``, wait until the
        queue is empty (taking over if that process goes away) and count how the runs waiting at
        the start ended; without, return at once."""
        with self._run_lock:
            tally = Tally()
            watched: list[str] | None = None
            deadline = time.monotonic() + WAIT_LIMIT
            while not self._stopping.is_set() and not read_paused(self.project.root):
                if self._take_lease():
                    self._run_all(tally)
                    break
                with self.db.session() as s:
                    active = queue.active_ids(s)
                if watched is None:
                    watched = active
                if not wait or not active or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            if watched:
                with self.db.session() as s:
                    for job_id, status in s.execute(select(Job.id, Job.status).where(Job.id.in_(watched))):
                        if job_id not in tally.ids:
                            tally.add(job_id, status)
            return tally

    def _run_all(self, tally: Tally) -> None:
        try:
            # what the runs of this drain share; each run's end claims the next
            with _Heartbeat(self), Drain(chain=self.db, group_seconds=GROUP_SECONDS, project_root=self.project.root,
                                         limits=self.project.limits) as kept:
                while not self._stopping.is_set() and not kept_reads.paused(self.project.root):
                    ran = batch_runs.execute_waiting(self.db, self.project, worker=self.holder,
                                                 should_stop=self._stopping.is_set, drain=kept)
                    for job_id, status in ran:
                        tally.add(job_id, status)
                    if ran:
                        continue
                    with self.db.session() as s:  # taken or cancelled meanwhile (PostgreSQL), or none left
                        if queue.next_pending(s) is None:
                            return
        finally:
            if not self.serving:
                queue.release(self.db.engine, self.holder)


_WORKERS: weakref.WeakKeyDictionary[Engine, Worker] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def for_database(db: Database, project: Project) -> Worker:
    """The one :class:`Worker` of ``db`` in this process."""
    with _LOCK:
        found = _WORKERS.get(db.engine)
        if found is None:
            found = _WORKERS[db.engine] = Worker(db, project)
        return found


def kick(db: Database, project: Project) -> None:
    """Runs were just queued in ``db``: have them run (see the module docstring)."""
    worker = for_database(db, project)
    if worker.serving or queue.live_holder(db.engine) in (None, worker.holder):
        worker.kick()


def start_serving(db: Database, project: Project) -> Worker:
    """Start the server's worker for ``db`` (see the module docstring)."""
    worker = for_database(db, project)
    worker.start_serving()
    return worker


def stop(db: Database) -> None:
    """Stop ``db``'s worker in this process, if it has one."""
    with _LOCK:
        worker = _WORKERS.get(db.engine)
    if worker is not None:
        worker.stop()
