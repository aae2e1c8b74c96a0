"""Catalog rows read once per catalog version and shared by every session of the process.

The database keeps a random token that its own triggers replace whenever a row of ``schemas``,
``fields``, ``collections`` or ``collection_schemas`` changes (``catalog_token``, migration
0012). :func:`shared` reads the token in the caller's transaction and keeps what ``build()``
returned under ``(token, key)``: the next session that reads the same token (the catalog has
not changed since) gets the same value without a query. A session that changed the catalog
reads the new token its own change made, so it never sees the rows from before its change;
when it rolls back, that token is never read by anyone else (it is random, not a counter). A
value is kept only when the token read after ``build()`` is still the one read before (on
PostgreSQL, where each statement sees the latest commit, the catalog may change in between).
Without a token row (a database whose tables a test emptied) nothing is shared.

Kept values are shared between threads, so they are plain read-only copies
(:func:`plain`), never ORM rows attached to a session: a caller must not change them.
At most :data:`ENTRIES` values are kept, the least recently used dropped first.
"""
from __future__ import annotations

import re
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from types import SimpleNamespace
from typing import Any, TypeVar

from sqlalchemy import (
    CompoundSelect,
    Connection,
    Delete,
    Engine,
    Insert,
    Select,
    Update,
    event,
    inspect,
    select,
)
from sqlalchemy.orm import Session
from sqlalchemy.sql import visitors

from benchbook.persistence.tables import CatalogToken

T = TypeVar("T")

ENTRIES = 4096
"""How many values the process keeps (a value is one schema's metadata, one collection, …)."""

CATALOG_TABLES = frozenset({"schemas", "fields", "collections", "collection_schemas"})
"""The tables whose changes replace the token (the triggers of migration 0012)."""

_TOKEN = select(CatalogToken.token).where(CatalogToken.id == 1)
_WRITES = "benchbook_catalog_writes"  # per connection: statements that may have changed the catalog
_MEMO = "benchbook_catalog_token"  # per session: (transaction, connection, writes, token) read last
_READS = ("SELECT", "PRAGMA", "BEGIN", "SAVEPO", "RELEAS")
_kept: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_lock = threading.Lock()


_DML = re.compile(r'\s*(?:INSERT\s+(?:OR\s+\w+\s+)?INTO|UPDATE|DELETE\s+FROM)\s+"?(\w+)"?[\s(]', re.IGNORECASE)
_selects: weakref.WeakKeyDictionary[Any, bool] = weakref.WeakKeyDictionary()


def _only_selects(compiled: Any) -> bool:
    """Whether a compiled statement is a SELECT with nothing but SELECTs inside (a ``WITH``
    query, say); the verdict is kept per compiled statement (SQLAlchemy reuses them)."""
    verdict = _selects.get(compiled)
    if verdict is None:
        statement = compiled.statement
        verdict = isinstance(statement, (Select, CompoundSelect)) and not any(
            isinstance(part, (Insert, Update, Delete)) for part in visitors.iterate(statement))
        _selects[compiled] = verdict
    return verdict


def _a_read_or_write_elsewhere(statement: str, compiled: Any) -> bool:
    """Whether a statement that is not SQLAlchemy's own insert, update or delete surely leaves
    the catalog as it was: text that starts as a read, a compiled ``SELECT`` with only
    ``SELECT``s inside, or SQL text that writes a table outside :data:`CATALOG_TABLES`."""
    if statement.lstrip()[:6].upper() in _READS:
        return True
    if compiled is not None:
        return _only_selects(compiled)
    dml = _DML.match(statement)
    return dml is not None and dml.group(1).lower() not in CATALOG_TABLES


@event.listens_for(Engine, "after_cursor_execute")
def _written(conn: Connection, cursor: Any, statement: str, parameters: Any, context: Any,
             executemany: bool) -> None:
    """Count, per connection, the statements that may have changed the catalog: writes to
    :data:`CATALOG_TABLES`, and any statement not known to be a read or a write elsewhere
    (a write elsewhere: SQLAlchemy's own insert, update or delete of another table, or SQL
    text that plainly is one, as :mod:`~benchbook.persistence.rows_insert` sends)."""
    compiled = context.compiled if context is not None else None
    if compiled is not None and (context.isinsert or context.isupdate or context.isdelete):
        if getattr(getattr(compiled.statement, "table", None), "name", None) not in CATALOG_TABLES:
            return
    elif _a_read_or_write_elsewhere(statement, compiled):
        return
    conn.info[_WRITES] = conn.info.get(_WRITES, 0) + 1


def token(session: Session, *, fresh: bool = False) -> str | None:
    """The catalog token as ``session``'s transaction sees it, or None when the table holds no
    row. Pending changes are flushed first (so that a catalog change fires its trigger). Read
    once per transaction until a statement of it may have changed the catalog (``fresh``: read
    it now); on PostgreSQL a transaction thus sees the catalog as it was at its first read."""
    if session.new or session.dirty or session.deleted:
        session.flush()
    transaction = session.get_transaction()
    memo = session.info.get(_MEMO)
    # the memo keeps the transaction's connection: asking the session for it again costs more
    # than the rest of a kept read (a single record's GET asks three times)
    if not fresh and memo is not None and memo[0] is transaction and memo[1].info.get(_WRITES, 0) == memo[2]:
        found: str | None = memo[3]
        return found
    conn = session.connection()
    found = conn.execute(_TOKEN).scalar()
    session.info[_MEMO] = (session.get_transaction(), conn, conn.info.get(_WRITES, 0), found)
    return found


def shared(session: Session, key: tuple[Any, ...], build: Callable[[], T]) -> T:
    """``build()``'s value for ``key`` under the current catalog token: kept from an earlier
    call (any session, any thread) made at the same token, else built now (in ``session``'s
    transaction) and kept. ``build()`` must return a read-only value made only of catalog
    rows (schemas, fields, collections, the schemas of collections)."""
    before = token(session)
    if before is None:
        return build()
    full = (before, *key)
    with _lock:
        if full in _kept:
            _kept.move_to_end(full)
            value: T = _kept[full]
            return value
    value = build()
    if token(session, fresh=True) == before:
        with _lock:
            _kept[full] = value
            while len(_kept) > ENTRIES:
                _kept.popitem(last=False)
    return value


def plain(row: Any) -> Any:
    """A plain read-only copy of an ORM row's column values (``SimpleNamespace``): safe to share
    between sessions and threads, and cheaper to read than an ORM attribute (about 0.5 µs each,
    read dozens of times per record by the per-row rules)."""
    return SimpleNamespace(**{c.key: getattr(row, c.key) for c in inspect(type(row)).column_attrs})


def forget() -> None:
    """Drop every kept value (tests that compare a database with itself before and after)."""
    with _lock:
        _kept.clear()
