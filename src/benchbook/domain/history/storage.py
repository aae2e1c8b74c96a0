"""How history is stored (OpenAPI: ``GET /audit/storage``, ``POST /audit/storage/reclaim``;
docs/decisions.md *History*): whole edit entries, their background conversion, and the database
file's room.

An edit (``update`` entry) is stored *compact* when its ``old_data``/``new_data`` hold only the
identity of the thing (:data:`IDENTITY`) plus the values that changed, so an absent key means
unchanged. benchbook writes edits compact; an edit is *whole* when, besides identity, it holds a
value that is the same before and after: a top-level key outside :data:`IDENTITY`, or (record
entries) a key of ``data``. "The same" is decided by the database (equal JSON type and value), so
counting and converting agree on every backend.

A record's ``create`` or ``delete`` entry written before migration 0017 holds a copy of the
record's values; while the record still holds the same values the entry is *whole* too, and
conversion drops the copy (``history.own_values`` reads them from the record from then on).
One written before migration 0023 holds the record's identity too: conversion drops its ``id``
and ``dataset_id`` (the entry's own columns) and, while the entry has no values of its own and
the record holds the same, its name and parent; from an edit written before 0026, its ``id`` and
``dataset_id``.

Conversion runs in one daemon thread per database, a few hundred entries per transaction: it
drops the unchanged keys (and ``changes`` rows that changed nothing) of each whole edit. Its
progress is derived from the data alone (what is still whole), so a restart just continues.
Reclaiming (SQLite ``VACUUM``) is refused with ``Conflict`` while a conversion runs.
"""
from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy import Engine, bindparam, select, text
from sqlalchemy.orm import Session

from benchbook.domain.errors import Conflict
from benchbook.domain.history.own_values import OWN_VALUES
from benchbook.domain.progress import Progress, silent
from benchbook.persistence import json_sql
from benchbook.persistence.db import write_lock
from benchbook.persistence.entry_triggers import (
    BOTH,
    FROM_ENTRY,
    FROM_RECORD,
    IDENTITY_INDEXES,
    INDEXES,
    holding,
)
from benchbook.persistence.tables import EDITS_INDEX, AuditEntry, Record

log = logging.getLogger("benchbook.history")

IDENTITY = ("id", "name", "label", "schema_name", "dataset_id", "collection", "parent_record_id",
            "natural_name", "data")
"""Keys kept in every edit's old/new data (the thing's identity: id, name, label, where it sits);
``data`` (record values) is compared key by key instead."""
CHUNK = 200
STAGE = "converting history"
"""The stage a conversion reports to its ``progress`` (:meth:`HistoryStorage.start`)."""
CONVERSION_WAIT = 300.0
"""Seconds a conversion chunk waits for the database (it runs in the background: it may wait
for an import rather than stop)."""

_IDENT_SQL = ", ".join(f"'{k}'" for k in IDENTITY)
_SQLITE_SAME = f"""
SELECT e.id AS id, 'data' AS scope, o.key AS key FROM audit_entries e INDEXED BY {EDITS_INDEX}
  JOIN json_each(e.old_data, '$.data') o JOIN json_each(e.new_data, '$.data') n ON n.key = o.key
 WHERE e.action = 'update' AND e.entity_type = 'record' AND json_type(e.old_data, '$.data') = 'object'
   AND json_type(e.new_data, '$.data') = 'object' AND o.type = n.type AND o.value IS n.value
UNION ALL
SELECT e.id, 'top', o.key FROM audit_entries e INDEXED BY {EDITS_INDEX}
  JOIN json_each(e.old_data) o JOIN json_each(e.new_data) n ON n.key = o.key
 WHERE e.action = 'update' AND json_type(e.old_data) = 'object' AND json_type(e.new_data) = 'object'
   AND o.key NOT IN ({_IDENT_SQL}) AND o.type = n.type AND o.value IS n.value
"""


def _pg_obj(expr: str) -> str:
    return f"CASE WHEN jsonb_typeof({expr}) = 'object' THEN {expr} ELSE '{{}}'::jsonb END"


_PG_SAME = f"""
SELECT e.id AS id, 'data' AS scope, o.key AS key FROM audit_entries e
  CROSS JOIN LATERAL jsonb_each({_pg_obj("e.old_data -> 'data'")}) o
  JOIN LATERAL jsonb_each({_pg_obj("e.new_data -> 'data'")}) n ON n.key = o.key
 WHERE e.action = 'update' AND e.entity_type = 'record' AND o.value = n.value
UNION ALL
SELECT e.id, 'top', o.key FROM audit_entries e
  CROSS JOIN LATERAL jsonb_each({_pg_obj("e.old_data")}) o
  JOIN LATERAL jsonb_each({_pg_obj("e.new_data")}) n ON n.key = o.key
 WHERE e.action = 'update' AND o.key NOT IN ({_IDENT_SQL}) AND o.value = n.value
"""


def _dialect(session: Session) -> str:
    return "postgresql" if session.get_bind().dialect.name == "postgresql" else "sqlite"


_KEPT_INDEXES = {"data": INDEXES, "id": IDENTITY_INDEXES}
"""Key a record's create or delete entry may still hold → the partial indexes of such entries
by action: its values (migration 0017), its identity (0024)."""


def _entries_holding(dialect: str, action: str, key: str = "data") -> str:
    """``FROM`` ``audit_entries e`` for the record's ``action`` entries holding ``key`` (``data``:
    values; ``id``: identity): read from their partial index (:data:`_KEPT_INDEXES`; SQLite is
    told to, PostgreSQL's planner picks it), never every entry."""
    return f"audit_entries e INDEXED BY {_KEPT_INDEXES[key][action]}" if dialect == "sqlite" else "audit_entries e"


def _as_record(dialect: str, column: str) -> str:
    """SQL: the values in ``e.column`` are those of the record ``r`` (PostgreSQL: equal
    ``jsonb``; SQLite: the same JSON text, both written by one serializer)."""
    return f"{json_sql.value_json(dialect, f'e.{column}', 'data')} = {json_sql.json_value(dialect, 'r.data')}"


def _own_values_kept(dialect: str) -> list[str]:
    """SQL listing the ``id`` of each record entry written before migration 0017 that still holds
    a copy of the values its record holds (a create's or a delete's), one statement per kind:
    from 0017 on those are read from the record (``history.own_values``)."""
    return [f"SELECT e.id FROM {_entries_holding(dialect, action)} JOIN records r ON r.id = e.entity_id "
            f"WHERE {holding(dialect, action, column, 'e')} AND {_as_record(dialect, column)}"
            for action, column in OWN_VALUES.items()]


def _same_keys(session: Session) -> str:
    """SQL listing ``(id, scope, key)``: each key of a whole edit that holds the same value
    before and after; ``scope`` is ``data`` (a record value) or ``top``."""
    return _PG_SAME if _dialect(session) == "postgresql" else _SQLITE_SAME


def count_whole(session: Session) -> int:
    """How many entries are still stored whole, each counted once: edits holding unchanged
    values, record create and delete entries holding a copy of the values their record holds or
    the identity their own columns tell (written before migration 0023), and record edits
    holding their ids (before 0026)."""
    dialect = _dialect(session)
    parts = [f"SELECT id FROM ({_same_keys(session)}) k", *_own_values_kept(dialect), *_identity_kept(dialect),
             f"SELECT e.id FROM {_edits_with_ids(dialect)}"]
    union = " UNION ".join(f"SELECT id FROM ({part}) p{i}" for i, part in enumerate(parts))
    return int(session.execute(text(f"SELECT count(*) FROM ({union}) whole")).scalar_one())


def file_figures(session: Session) -> tuple[int | None, int | None]:
    """``(size_bytes, free_bytes)`` of a SQLite file from its page counts; ``(None, None)`` elsewhere."""
    if session.get_bind().dialect.name != "sqlite":
        return None, None
    page_size = session.execute(text("PRAGMA page_size")).scalar_one()
    pages = session.execute(text("PRAGMA page_count")).scalar_one()
    free = session.execute(text("PRAGMA freelist_count")).scalar_one()
    return pages * page_size, free * page_size


def compact(entry: AuditEntry, same: set[tuple[str, str]]) -> None:
    """Rewrite ``entry`` without the unchanged keys ``same`` (``(scope, key)`` pairs, ``scope``
    ``top`` or ``data``: :func:`_drop_same`), without ``changes`` rows for those keys whose before
    equals after (:func:`_changes_kept`), and (a record's edit) without the ``id`` and
    ``dataset_id`` its own columns hold (migration 0026: :func:`_drop_own_columns`)."""
    old, new = dict(entry.old_data or {}), dict(entry.new_data or {})
    dropped = _drop_same(old, new, same)
    if entry.entity_type == "record":  # what the entry's own columns hold (migration 0026)
        _drop_own_columns(entry, old, new)
    entry.old_data, entry.new_data = old, new
    entry.changes = _changes_kept(entry.changes, dropped)


def _drop_same(old: dict[str, Any], new: dict[str, Any], same: set[tuple[str, str]]) -> set[str]:
    """Drop from the edit's ``old`` and ``new`` data (changed in place) the unchanged keys
    ``same``: ``("top", key)`` a top-level key, ``("data", key)`` a key of ``data`` (whose
    dicts are rebuilt without them, ``{}`` when a side had none). Returns the keys dropped."""
    top = {k for scope, k in same if scope == "top"}
    data_keys = {k for scope, k in same if scope == "data"}
    for key in top:
        old.pop(key, None)
        new.pop(key, None)
    if data_keys:
        old["data"] = {k: v for k, v in (old.get("data") or {}).items() if k not in data_keys}
        new["data"] = {k: v for k, v in (new.get("data") or {}).items() if k not in data_keys}
    return data_keys | top


def _drop_own_columns(entry: AuditEntry, old: dict[str, Any], new: dict[str, Any]) -> None:
    """Drop from a record entry's ``old`` and ``new`` data (changed in place) each key of
    :data:`~benchbook.persistence.entry_triggers.FROM_ENTRY` whose value the entry's own column
    holds."""
    for key, column in FROM_ENTRY:
        for side in (old, new):
            if key in side and side[key] == getattr(entry, column):
                del side[key]


def _changes_kept(changes: list[Any] | None, dropped: set[str]) -> list[Any]:
    """The ``changes`` rows left when those of a ``dropped`` field whose before equals after go
    (rows that are not dicts stay)."""
    return [c for c in changes or []
            if not (isinstance(c, dict) and c.get("field") in dropped and c.get("before") == c.get("after"))]


def _lock_records(session: Session, entry_ids: list[str]) -> None:
    """On PostgreSQL, lock the records of the entries ``entry_ids`` (``FOR SHARE``) until
    the transaction ends: a writer changing one waits, and then its trigger (migration 0017)
    copies the values back into the entry converted meanwhile. SQLite's writers wait anyway."""
    if _dialect(session) == "postgresql":
        session.execute(select(Record.id).where(Record.id.in_(
            select(AuditEntry.entity_id).where(AuditEntry.id.in_(entry_ids)))).with_for_update(read=True))


def _compact_edits(session: Session, after: str) -> tuple[str | None, int]:
    """Convert the next :data:`CHUNK` whole edits after id ``after``: ``(the last one's id, or
    None when none is left; how many were converted)``."""
    sql = _same_keys(session)
    ids = list(session.execute(text(f"SELECT DISTINCT id FROM ({sql}) k WHERE id > :after ORDER BY id LIMIT :n"),
                               {"after": after, "n": CHUNK}).scalars())
    if not ids:
        return None, 0
    same: dict[str, set[tuple[str, str]]] = {}
    for eid, scope, key in session.execute(text(f"SELECT id, scope, key FROM ({sql}) k "
                                                "WHERE id >= :lo AND id <= :hi"), {"lo": ids[0], "hi": ids[-1]}):
        same.setdefault(eid, set()).add((scope, key))
    for entry in session.scalars(select(AuditEntry).where(AuditEntry.id.in_(ids))):
        compact(entry, same.get(entry.id, set()))
    return ids[-1], len(ids)


def _drop_kept(action: str, column: str, key: str) -> Callable[[Session, str], tuple[str | None, int]]:
    """The conversion step for the record's ``action`` entries holding ``key`` in ``column``:
    ``data``, values (migration 0017); ``id``, identity (0023)."""
    def step(session: Session, after: str) -> tuple[str | None, int]:
        """Walk the next :data:`CHUNK` such entries after id ``after`` (along the primary key)
        and drop what their record or their own columns hold the same of, in statements that
        check them again (:func:`_kept_drops`): ``(the last id walked, or None when none is
        left; how many were converted)``."""
        dialect = _dialect(session)
        ids = list(session.execute(text(
            f"SELECT e.id FROM {_entries_holding(dialect, action, key)} WHERE e.id > :after "
            f"AND {holding(dialect, action, column, 'e', key=key)} ORDER BY e.id LIMIT :n"),
            {"after": after, "n": CHUNK}).scalars())
        if not ids:
            return None, 0
        _lock_records(session, ids)
        return ids[-1], _run_on(session, _kept_drops(dialect, column, key), ids)
    return step


def _kept_drops(dialect: str, column: str, key: str) -> list[str]:
    """The ``UPDATE`` statements (``:ids`` expanding) of :func:`_drop_kept`: for ``data`` the
    values where the record holds the same; for ``id`` :func:`_identity_drops`."""
    if key == "id":
        return _identity_drops(dialect, column)
    return [(f"UPDATE audit_entries AS e SET {column} = {json_sql.without_key(dialect, f'e.{column}', 'data')} "
            f"WHERE e.id IN :ids AND {_record_holds(_as_record(dialect, column))}")]


def _run_on(session: Session, statements: list[str], ids: list[str]) -> int:
    """Run each of ``statements`` (``:ids`` expanding) on the entries ``ids``, in order: how
    many rows the last one changed (the conversion's count of the chunk)."""
    changed = 0
    for statement in statements:
        result = session.execute(text(statement).bindparams(bindparam("ids", expanding=True)), {"ids": ids})
        changed = int(result.rowcount)  # type: ignore[attr-defined]
    return changed


def _identity_drops(dialect: str, column: str, *, from_record: bool = True) -> list[str]:
    """The ``UPDATE`` statements (``:ids`` expanding) dropping from ``column`` of the entries
    ``ids`` what they need not hold (migrations 0023 and 0026): with ``from_record`` (a create
    or delete) the name and the parent where the entry has no values and the record holds the
    same, then ``dataset_id`` and last ``id`` where the entry's own columns hold the same (``id``
    is what the others and the walk test)."""
    names = FROM_RECORD if from_record else ()
    doc = f"e.{column}"

    def drop(key: str, condition: str) -> str:
        return (f"UPDATE audit_entries AS e SET {column} = {json_sql.without_key(dialect, doc, key)} "
                f"WHERE e.id IN :ids AND {json_sql.has_key(dialect, doc, 'id')} AND {condition}")

    def record_holds(key: str, col: str) -> str:
        return _record_holds(json_sql.same(dialect, f"r.{col}", f"({json_sql.value_text(dialect, doc, key)})"))

    return [*(drop(key, f"{json_sql.lacks_key(dialect, doc, 'data')} AND {record_holds(key, col)}")
              for key, col in names),
            drop("dataset_id", json_sql.same(dialect, f"({json_sql.value_text(dialect, doc, 'dataset_id')})",
                                             "e.dataset_id")),
            drop("id", _same_id(dialect, column))]


def _record_holds(condition: str) -> str:
    """SQL: the record ``r`` of the entry ``e`` exists and ``condition`` holds of the two."""
    return f"EXISTS (SELECT 1 FROM records r WHERE r.id = e.entity_id AND {condition})"


def _same_id(dialect: str, column: str) -> str:
    """SQL: the entry ``e`` holds in ``column`` the ``id`` its ``entity_id`` holds (so it can go)."""
    return f"{json_sql.value_text(dialect, f'e.{column}', 'id')} = e.entity_id"


def _identity_kept(dialect: str) -> list[str]:
    """SQL listing the ``id`` of each record create and delete entry written before migration
    0023 that still holds the identity its own columns tell, one statement per kind
    (``history.own_values`` reads it from there from 0023 on)."""
    return [f"SELECT e.id FROM {_entries_holding(dialect, action, 'id')} "
            f"WHERE {holding(dialect, action, column, 'e', key='id')} AND {_same_id(dialect, column)}"
            for action, column in OWN_VALUES.items()]


def _edits_with_ids(dialect: str) -> str:
    """``FROM audit_entries e WHERE`` …: the record edits still holding their ``id`` (written
    before migration 0026), read along the edits' partial index (migration 0022)."""
    hint = f" INDEXED BY {EDITS_INDEX}" if dialect == "sqlite" else ""
    return f"audit_entries e{hint} WHERE e.action = 'update' AND e.entity_type = 'record' AND {_same_id(dialect, 'new_data')}"


def _drop_edit_ids(session: Session, after: str) -> tuple[str | None, int]:
    """Walk the next :data:`CHUNK` record edits holding their ids after id ``after`` and drop
    ``dataset_id`` and ``id`` from both columns where the entry's columns hold the same:
    ``(the last id walked, or None when none is left; how many were converted)``."""
    dialect = _dialect(session)
    ids = list(session.execute(text(f"SELECT e.id FROM {_edits_with_ids(dialect)} AND e.id > :after "
                                    "ORDER BY e.id LIMIT :n"), {"after": after, "n": CHUNK}).scalars())
    if not ids:
        return None, 0
    return ids[-1], _run_on(session, [statement for column in BOTH
                                      for statement in _identity_drops(dialect, column, from_record=False)], ids)


_STEPS = (_compact_edits, *(_drop_kept(action, column, "data") for action, column in OWN_VALUES.items()),
          *(_drop_kept(action, column, "id") for action, column in OWN_VALUES.items()), _drop_edit_ids)
"""What the conversion does, in order: compact whole edits, drop the copies of values, then the
identity the entries' columns and records tell, then the ids of edits."""


class HistoryStorage:
    """The conversion state of one database. ``before_chunk`` (tests) is called in the
    conversion thread before each transaction, so a test can hold a conversion open;
    ``progress`` is told ``(STAGE, done, total)`` after each (``done`` reaches ``total`` only
    when the conversion has stopped, finished or not)."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.lock = threading.Lock()
        self.thread: threading.Thread | None = None
        self.done = 0
        self.total = 0
        self.before_chunk: Callable[[], Any] | None = None
        self.progress: Progress = silent

    @property
    def converting(self) -> bool:
        """A conversion thread is running now."""
        return self.thread is not None and self.thread.is_alive()

    def figures(self, session: Session, whole: int | None = None) -> dict[str, Any]:
        """HistoryStorageResponse (``whole``: already counted); ``done``/``total`` only while converting."""
        size, free = file_figures(session)
        converting = self.converting
        # an entry may be looked at by two steps (an edit compacted, then its ids dropped)
        return {"whole_entries": count_whole(session) if whole is None else whole, "converting": converting,
                "done": min(self.done, self.total) if converting else None, "total": self.total if converting else None,
                "size_bytes": size, "free_bytes": free}

    def start(self, left: int | None = None, progress: Progress = silent) -> bool:
        """Start converting when whole edits remain (``left``, counted now when not given) and
        no conversion runs; True if one runs now. A ``progress`` given (not :func:`silent`) is
        told how the conversion goes from now on, also one already running."""
        with self.lock:
            if progress is not silent:
                self.progress = progress
            if self.converting:
                return True
            if left is None:
                with Session(self.engine) as s:
                    left = count_whole(s)
            if not left:
                return False
            self.done, self.total = 0, left
            self.thread = threading.Thread(target=self._run, name="benchbook-history-conversion", daemon=True)
            self.thread.start()
            return True

    def wait(self, timeout: float | None = None) -> bool:
        """Wait for a running conversion to end; True when none runs afterwards."""
        thread = self.thread
        if thread is not None:
            thread.join(timeout)
        return not self.converting

    def _run(self) -> None:
        try:
            for step in _STEPS:
                after = ""
                while True:
                    if self.before_chunk is not None:
                        self.before_chunk()
                    with Session(self.engine) as s, s.begin():
                        write_lock(s, CONVERSION_WAIT)  # it reads, then writes: one writer at a time (#13)
                        last, converted = step(s, after)
                    if last is None:
                        break
                    after = last
                    self.done += converted
                    # an entry may be looked at by two steps: done stays below total until the end
                    self.progress(STAGE, min(self.done, self.total - 1), self.total)
        except Exception:  # the next GET /audit/storage starts again from what is still whole
            log.exception("history conversion stopped")
        finally:
            self.progress(STAGE, self.total, self.total)

    def reclaim(self) -> None:
        """Give the file's unused room back to disk (SQLite ``VACUUM`` outside any transaction,
        then a WAL checkpoint); nothing to do on PostgreSQL. Raises ``Conflict`` while converting."""
        with self.lock:
            if self.converting:
                raise Conflict("history is being converted; reclaim when the conversion has finished "
                               "(GET /audit/storage shows its progress)")
            if self.engine.dialect.name != "sqlite":
                return
            with self.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.exec_driver_sql("VACUUM")
                conn.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")


_STATES: weakref.WeakKeyDictionary[Engine, HistoryStorage] = weakref.WeakKeyDictionary()
_STATES_LOCK = threading.Lock()


def for_engine(engine: Engine) -> HistoryStorage:
    """The one :class:`HistoryStorage` of ``engine``'s database."""
    with _STATES_LOCK:
        state = _STATES.get(engine)
        if state is None:
            state = _STATES[engine] = HistoryStorage(engine)
        return state


def storage(engine: Engine, session: Session, progress: Progress = silent) -> dict[str, Any]:
    """HistoryStorageResponse, starting a conversion first when whole edits remain. With a
    ``progress`` (a command that follows the conversion in its own process), the conversion
    reports to it (:meth:`HistoryStorage.start`) and this waits until the conversion stops, then
    answers the figures after it (read in a session of its own; ``session``'s read transaction
    is ended first, so that it holds no old snapshot meanwhile)."""
    state = for_engine(engine)
    whole = count_whole(session)
    if whole and state.start(whole, progress) and progress is not silent:
        session.rollback()
        state.wait()
        with Session(engine) as after:
            return state.figures(after)
    return state.figures(session, whole)


def reclaim(engine: Engine) -> None:
    """Reclaim room (see :meth:`HistoryStorage.reclaim`)."""
    for_engine(engine).reclaim()


def resume(engine: Engine) -> threading.Thread:
    """Continue a conversion left unfinished, e.g. at start-up. Counting what is still whole
    reads every edit, so it happens in a daemon thread (returned) and start-up does not wait."""
    def check() -> None:
        try:
            for_engine(engine).start()
        except Exception:  # the next GET /audit/storage counts and starts again
            log.exception("could not resume the history conversion")
    thread = threading.Thread(target=check, name="benchbook-history-resume", daemon=True)
    thread.start()
    return thread
