"""Engine, sessions and schema upgrades.

``open_database(url)`` returns a :class:`Database` whose schema is upgraded to the newest
Alembic revision (the server and the CLI upgrade a project on open). SQLite connections
get WAL journaling, enforced foreign keys, a busy timeout and a 32 MiB page cache;
PostgreSQL URLs (``postgresql+psycopg://…``) are used as given.

How writers take the database is decided here and only here (:func:`write_lock`): on SQLite,
one writer at a time per process (a lock per database file, waited on in order) and then
SQLite's own write lock (``BEGIN IMMEDIATE``) against other processes, both within a bound
(:data:`WRITE_WAIT`); past it :class:`DatabaseBusy`, which the app answers with 503 and
``Retry-After`` (issue #13, ``docs/decisions.md``). After a write transaction the WAL is
checkpointed (TRUNCATE) once it has grown past :data:`CHECKPOINT_WAL_BYTES`.
"""
from __future__ import annotations

import functools
import json
import logging
import os
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import orjson
from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.dialects.sqlite.base import SQLiteCompiler
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, SessionTransaction, sessionmaker

if TYPE_CHECKING:
    from alembic.config import Config

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 30000
"""SQLite's busy timeout for statements outside :func:`write_lock` (readers, the run queue's
lease), milliseconds."""
WRITE_WAIT = 10.0
"""Seconds a writer waits for the database (the in-process queue of writers, then SQLite's
write lock held by another process) before :class:`DatabaseBusy`: a request answers 503 then."""
COMMAND_WAIT = 120.0
"""Seconds a command (``benchbook import``, ``plugins try``) waits for the database: a one-off
command may wait for a server's short writes longer than a request waits for an import."""
RETRY_AFTER = 5
"""Seconds a 503 for a busy database tells the client to wait (``Retry-After``)."""
CHECKPOINT_WAL_BYTES = 64 * 1024 * 1024
"""A write transaction that leaves the WAL larger than this checkpoints it (TRUNCATE) when it
ends; ``journal_size_limit`` caps what a later checkpoint leaves behind at the same size."""
CHECKPOINT_EVERY = 30.0
"""Seconds between two checkpoint attempts on one database (readers can hold one off)."""


MMAP_BYTES = 2**31 - 2**16
"""How much of a SQLite file is read through a memory map (SQLite's default build allows at most
this; the OS shares the mapped pages between connections and can reclaim them)."""


CACHE_KIB = 32 * 1024
"""Page cache of a SQLite connection, KiB (``PRAGMA cache_size``)."""
BULK_CACHE_KIB = 256 * 1024
"""Page cache of a connection while it writes many records at once (:func:`bulk_cache`), KiB."""


@contextmanager
def bulk_cache(conn: Any) -> Iterator[None]:
    """Give SQLite connection ``conn`` (a SQLAlchemy ``Connection``) :data:`BULK_CACHE_KIB` of
    page cache for the block, :data:`CACHE_KIB` again after it; nothing on other backends.

    A large import is one transaction: once its changed pages outgrow the cache, SQLite writes
    them to the WAL before the commit and reads them back from there, and each read looks the
    page up in a WAL index that grows with the transaction (at 600,000 records of 1,000,000,
    a quarter of the import's time went to spilling and finding pages). The memory is given back
    when the cache shrinks after the block."""
    if conn.dialect.name != "sqlite":
        yield
        return
    conn.exec_driver_sql(f"PRAGMA cache_size=-{BULK_CACHE_KIB}")
    try:
        yield
    finally:
        try:
            conn.exec_driver_sql(f"PRAGMA cache_size=-{CACHE_KIB}")
        except DBAPIError:  # a broken connection: the block's own error is the one to raise
            log.debug("could not give the bulk page cache back", exc_info=True)


def _sqlite_pragmas(dbapi_conn: Any, _record: Any) -> None:
    cur = dbapi_conn.cursor()
    cur.execute("PRAGMA journal_mode=WAL")
    cur.execute("PRAGMA foreign_keys=ON")
    cur.execute("PRAGMA synchronous=NORMAL")
    cur.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    cur.execute(f"PRAGMA journal_size_limit={CHECKPOINT_WAL_BYTES}")
    # 32 MiB of page cache per connection (SQLite's default is 2 MiB): an import of 300,000
    # records into a fresh project runs 12 % faster once the indexes outgrow 2 MiB
    cur.execute(f"PRAGMA cache_size=-{CACHE_KIB}")
    # read the file through a memory map (up to MMAP_BYTES; SQLite caps it at its own maximum):
    # a page walking a sort index reads records in random order, one pread each without it
    # (first page of 50 at 1,000,000 records, walk and count: 63 -> 56 ms; the walk alone 50 -> 15 ms)
    cur.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
    cur.close()


def json_dumps(value: Any) -> str:
    """JSON text of a JSON column's value: ``orjson`` (several times faster than ``json``, which
    matters when history writes 100,000 entries at once; non-ASCII text is kept as is, so full-
    text search sees real words), falling back to ``json`` for what orjson refuses (integers
    beyond 64 bits)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_NON_STR_KEYS).decode()
    except TypeError:
        return json.dumps(value)


def json_loads(text: str | bytes) -> Any:
    """Parse a JSON column's text (``orjson``; ``json`` for what it refuses, e.g. ``NaN``)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


class _HintingSQLiteCompiler(SQLiteCompiler):
    """SQLite's compiler, rendering ``Select.with_hint(table, "INDEXED BY <index>", "sqlite")``
    after the table name (SQLAlchemy's own SQLite compiler drops table hints)."""

    def get_from_hint_text(self, table: Any, text: str | None) -> str | None:
        return text


def make_engine(url: str) -> Engine:
    """Create an engine for ``url``; SQLite gets the pragmas above, thread-shared connections
    and table hints (``INDEXED BY``). JSON columns use :func:`json_dumps` / :func:`json_loads`."""
    codec = {"json_serializer": json_dumps, "json_deserializer": json_loads}
    if url.startswith("sqlite"):
        engine = create_engine(url, connect_args={"check_same_thread": False, "timeout": 30}, **codec)
        event.listen(engine, "connect", _sqlite_pragmas)
        engine.dialect.statement_compiler = _HintingSQLiteCompiler
        return engine
    return create_engine(url, pool_pre_ping=True, **codec)


def alembic_config(url: str) -> Config:
    """An Alembic config pointing at the packaged migrations and ``url`` (imports Alembic)."""
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(resources.files("benchbook.persistence") / "migrations"))
    cfg.set_main_option("sqlalchemy.url", url.replace("%", "%%"))
    return cfg


_REVISION = re.compile(r"^(down_revision|revision)\s*(?::[^=]*)?=\s*(?:['\"]([^'\"]+)['\"]|None)", re.MULTILINE)


@functools.cache
def head_revision() -> str | None:
    """The newest revision of the packaged migrations, read from the scripts' ``revision`` /
    ``down_revision`` lines without importing Alembic (Alembic, Mako and Pygments cost a tenth
    of a second at start-up, issue 14 item 15): the one revision no script names as its
    ``down_revision``. ``tests/test_startup.py`` checks it against Alembic's own
    ``ScriptDirectory.get_heads()``. None when the lines do not give one head (a merge
    revision's tuple, a branch): :func:`upgrade_if_needed` leaves the answer to Alembic then."""
    versions = resources.files("benchbook.persistence") / "migrations" / "versions"
    revisions: set[str] = set()
    parents: set[str] = set()
    for script in versions.iterdir():
        if not script.name.endswith(".py") or script.name.startswith("__"):
            continue
        found = {key: value for key, value in _REVISION.findall(script.read_text(encoding="utf-8"))}
        if "revision" not in found:
            continue
        revisions.add(found["revision"])
        if found.get("down_revision"):
            parents.add(found["down_revision"])
    heads = revisions - parents
    return heads.pop() if len(heads) == 1 else None


def current_revision(engine: Engine) -> str | None:
    """The revision the database at ``engine`` is at (its ``alembic_version`` row, read with a
    plain query), or None when it has none (a new database, or one with several rows)."""
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT version_num FROM alembic_version")).scalars().all()
    except DBAPIError:  # no alembic_version table yet
        return None
    return str(rows[0]) if len(rows) == 1 else None


def upgrade(engine: Engine) -> None:
    """Bring the database at ``engine`` to the newest migration (idempotent; imports Alembic)."""
    from alembic import command

    cfg = alembic_config(engine.url.render_as_string(hide_password=False))
    with engine.begin() as conn:
        cfg.attributes["connection"] = conn
        command.upgrade(cfg, "head")


def upgrade_if_needed(engine: Engine) -> bool:
    """Upgrade the database at ``engine`` unless it is already at :func:`head_revision` (one
    ``SELECT`` then, and Alembic is not imported). Returns True when Alembic ran."""
    head = head_revision()
    if head is not None and current_revision(engine) == head:
        return False
    upgrade(engine)
    return True


class DatabaseBusy(Exception):
    """Another writer held the database longer than the writer could wait (SQLite only).

    ``waited`` is how long this writer waited (seconds), ``retry_after`` when to try again
    (seconds, :data:`RETRY_AFTER`). The app answers 503 ``{detail}`` with ``Retry-After``; a
    command prints the message.
    """

    def __init__(self, waited: float, retry_after: int = RETRY_AFTER) -> None:
        super().__init__(f"the database is busy: another writer held it for more than {waited:.0f} s "
                         f"(an import or a large delete may be running); try again in {retry_after} s")
        self.detail = str(self)
        self.waited = waited
        self.retry_after = retry_after


def is_locked_error(exc: BaseException) -> bool:
    """True for SQLite's "database is locked" / "database table is locked" (raw ``sqlite3`` or
    wrapped by SQLAlchemy): another writer held the database past the busy timeout."""
    text = str(getattr(exc, "orig", None) or exc)
    return type(getattr(exc, "orig", None) or exc).__name__ == "OperationalError" and "is locked" in text


class _Gate:
    """The writers of one SQLite file in this process: a lock taken in arrival order (``threading.
    Lock`` wakes waiters roughly first come, first served) and the last checkpoint attempt."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.last_checkpoint = 0.0


_GATES: dict[str, _Gate] = {}
_GATES_GUARD = threading.Lock()
_HELD = "benchbook.write_lock"
_GATE_ATTR = "_benchbook_write_gate"


def _gate(engine: Engine) -> _Gate:
    """The gate of ``engine``'s file, kept on the engine after the first lookup (resolving the
    file's real path costs a few system calls, and every write asks)."""
    gate: _Gate | None = getattr(engine, _GATE_ATTR, None)
    if gate is not None:
        return gate
    key = os.path.realpath(engine.url.database) if engine.url.database not in (None, "", ":memory:") else \
        f"memory:{id(engine)}"
    with _GATES_GUARD:
        gate = _GATES.setdefault(key, _Gate())
    setattr(engine, _GATE_ATTR, gate)
    return gate


def write_lock(session: Session, wait: float | None = None) -> None:
    """Make ``session``'s transaction the database's one writer, now, before it reads what it
    will change (issue #13: writers never see "database is locked").

    On SQLite: wait (at most ``wait`` seconds, default :data:`WRITE_WAIT`) for this process's
    other writers, then for SQLite's write lock (``BEGIN IMMEDIATE``; a deferred transaction
    that reads before its first write — FTS5 does inside every ``records`` write — cannot wait
    for another writer and fails at once). Both are held until the transaction ends (commit or
    rollback); then the WAL is checkpointed if it grew past :data:`CHECKPOINT_WAL_BYTES`. A
    transaction that already holds it, or already wrote, is left as it is. On PostgreSQL
    nothing happens: rows lock as they are written (and :func:`benchbook.domain.records.rows.
    check_parent` locks the parent it checks).

    Raises :class:`DatabaseBusy` when the wait passes the bound.
    """
    engine = session.get_bind()
    if engine.dialect.name != "sqlite" or _HELD in session.info:
        return
    conn = session.connection()
    dbapi = conn.connection.dbapi_connection
    if dbapi.in_transaction:  # type: ignore[union-attr]
        return  # it wrote already, so it holds SQLite's lock: waiting on the gate now could deadlock
    bound = WRITE_WAIT if wait is None else wait
    started = time.monotonic()
    gate = _gate(engine)  # type: ignore[arg-type]
    if not gate.lock.acquire(timeout=bound):
        raise DatabaseBusy(time.monotonic() - started)
    try:
        # straight to the driver: three statements that change no table, sent on every write
        # (SQLAlchemy's execution path costs more than SQLite does for them)
        left_ms = max(int((bound - (time.monotonic() - started)) * 1000), 1)
        dbapi.execute(f"PRAGMA busy_timeout={left_ms}")  # type: ignore[union-attr]
        try:
            dbapi.execute("BEGIN IMMEDIATE")  # type: ignore[union-attr]
        finally:
            dbapi.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")  # type: ignore[union-attr]
    except sqlite3.Error as exc:
        gate.lock.release()
        if is_locked_error(exc):
            raise DatabaseBusy(time.monotonic() - started) from None
        raise OperationalError("BEGIN IMMEDIATE", None, exc) from exc  # as SQLAlchemy would have raised it
    except BaseException:
        gate.lock.release()
        raise
    session.info[_HELD] = (gate, engine)


@event.listens_for(Session, "after_transaction_end")
def _release(session: Session, transaction: SessionTransaction) -> None:
    """When the outermost transaction of a session holding the write lock ends: checkpoint the
    WAL if it grew large (still as the one writer of this process), then let the next writer in."""
    if transaction.parent is not None or _HELD not in session.info:
        return
    gate, engine = session.info.pop(_HELD)
    try:
        _checkpoint_if_large(gate, engine)
    finally:
        gate.lock.release()


def wal_size(engine: Engine) -> int:
    """Bytes in the SQLite database's ``-wal`` file (0 when there is none or not SQLite)."""
    name = engine.url.database
    if engine.dialect.name != "sqlite" or not name or name == ":memory:":
        return 0
    try:
        return os.path.getsize(f"{name}-wal")
    except OSError:
        return 0


def checkpoint(engine: Engine, wait: float = 2.0) -> tuple[int, int, int] | None:
    """Checkpoint a SQLite database's WAL into the database file and truncate it to zero bytes
    (``PRAGMA wal_checkpoint(TRUNCATE)``), waiting at most ``wait`` seconds for readers still
    reading old pages. Returns SQLite's ``(busy, log frames, checkpointed frames)``: ``busy`` 1
    means readers held it off (the WAL is left as it is). None on PostgreSQL."""
    if engine.dialect.name != "sqlite":
        return None
    with engine.connect() as conn:
        conn.exec_driver_sql(f"PRAGMA busy_timeout={int(wait * 1000)}")
        try:
            row = conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)").one()
        finally:
            conn.exec_driver_sql(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
    return int(row[0]), int(row[1]), int(row[2])


def _checkpoint_if_large(gate: _Gate, engine: Engine) -> None:
    now = time.monotonic()
    if now - gate.last_checkpoint < CHECKPOINT_EVERY or wal_size(engine) <= CHECKPOINT_WAL_BYTES:
        return
    gate.last_checkpoint = now
    try:
        result = checkpoint(engine)
        log.info("WAL checkpoint after a large write: %s", result)
    except Exception:  # a checkpoint is housekeeping: the write itself has committed
        log.exception("WAL checkpoint failed")


@dataclass
class Database:
    """An upgraded database: ``engine`` plus a session factory."""

    engine: Engine
    sessions: sessionmaker[Session]

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session closed on exit; callers open transactions with ``session.begin()``."""
        with self.sessions() as s:
            yield s

    def write_lock(self, session: Session, wait: float | None = None) -> None:
        """:func:`write_lock` for a session of this database (for layers that reach the database
        through a :class:`Database` they were given, such as handlers)."""
        write_lock(session, wait)


def open_database(url: str) -> Database:
    """Open the database at ``url``, upgrading it first unless it is at the newest migration
    (:func:`upgrade_if_needed`)."""
    engine = make_engine(url)
    upgrade_if_needed(engine)
    return Database(engine, sessionmaker(engine, expire_on_commit=False))
