"""Which history entries hold a text (``q`` of ``GET /audit/events`` and of restore-all; OpenAPI:
"text to find … among the values a change stored").

An entry matches when some string or number of its ``old_data`` or ``new_data`` contains the
text, case-insensitively (keys do not count), including what a record's create or delete entry
reads from elsewhere (``history.own_values``): the record's values, name and parent while the
entry lacks them, and the entry's own ``entity_id`` and ``dataset_id`` columns.

Finding the strings and numbers means walking each entry's JSON (``json_tree``,
``jsonb_path_query``), which costs about a microsecond per value: every entry's, on every
search. Before walking, each JSON document is tested as text (``LIKE``, a plain substring
search): a string value holding the text has the same characters in the document's text,
provided the text has none of the characters JSON writes escaped (``"``, ``\\``, control
characters; benchbook writes other characters as they are, ``persistence.db.json_dumps``). A
number is written in the document as the walk renders it only in the common cases, so the
test is skipped (the walk alone decides) for a text a number could hold (:data:`NUMBER_TEXT`).
The records a search reads values, names and parents from are found in one pass over
``records`` rather than one lookup per entry; their values' keys are all field ids, so where the
text cannot be part of a key, a number, ``true``, ``false`` or ``null``, or lie across two
tokens, their text alone decides (:func:`text_alone_holds`).
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, Text, and_, cast, exists, func, literal_column, or_, select, type_coerce
from sqlalchemy.orm import Session

from benchbook.domain.history.own_values import OWN_VALUES, deferred_clause
from benchbook.domain.records.search import like_pattern
from benchbook.persistence.entry_triggers import EDIT, FROM_RECORD, RESTORE
from benchbook.persistence.tables import AuditBatch, AuditEntry, Record

NUMBER_TEXT = frozenset("0123456789.+-eEinfatyINFATY")
"""Characters a JSON number may be rendered with by SQLite's or PostgreSQL's walk (digits,
sign, point, exponent, and the words Infinity and NaN): a text made of these alone may be held
by a number whose rendering differs from the document's text, so it is found by the walk alone."""


def text_test_holds(q: str) -> bool:
    """Whether testing a JSON document's text for ``q`` finds every document with a value holding
    it (no character JSON escapes; not a text a number may hold): see the module's docstring."""
    escaped = any(ch in '"\\' or ord(ch) < 0x20 for ch in q)
    return not escaped and not set(q) <= NUMBER_TEXT


KEY_TEXT = frozenset("0123456789ABCDEFGHJKMNPQRSTVWXYZabcdefghjkmnpqrstvwxyz")
"""Characters of a record's value keys (field ids: Crockford base 32, in either case since
``LIKE`` folds it)."""
STRUCTURE = frozenset(",:[]{}")
"""Characters JSON writes between tokens (PostgreSQL's text also a space after ``,`` and ``:``)."""


def text_alone_holds(q: str) -> bool:
    """Whether a record's values hold ``q`` exactly when the JSON text of its ``data`` does, so
    that the walk can be left out: besides :func:`text_test_holds`, ``q`` can only lie inside
    one token (no :data:`STRUCTURE`), and that token is a value: ``q`` has a character no field
    id has (:data:`KEY_TEXT`) and is not part of ``true``, ``false`` or ``null``."""
    lowered = q.lower()
    return (text_test_holds(q) and not set(q) & STRUCTURE and not set(q) <= KEY_TEXT
            and not any(lowered in literal for literal in ("true", "false", "null")))


def _like(session: Session, expr: Any, pattern: str) -> ColumnElement[bool]:
    """``expr`` contains ``pattern`` (a :func:`like_pattern`), case-insensitively: SQLite's
    ``LIKE`` already folds ASCII letters, exactly as ``lower()`` does; PostgreSQL's ``ILIKE``."""
    if session.get_bind().dialect.name == "postgresql":
        return cast(expr, Text).ilike(pattern, escape="\\")
    return type_coerce(expr, Text).like(pattern, escape="\\")


def _walk_finds(session: Session, column: Any, pattern: str) -> ColumnElement[bool]:
    """Some string or number anywhere inside the JSON ``column`` contains ``pattern`` (keys do
    not count). PostgreSQL folds case fully; SQLite's LIKE folds ASCII letters only."""
    if session.get_bind().dialect.name == "postgresql":
        t = (func.jsonb_path_query(column, literal_column("'strict $.**'::jsonpath"))
             .table_valued("v").render_derived().alias("t"))
        return exists(select(1).select_from(t).where(func.jsonb_typeof(t.c.v).in_(("string", "number")),
                                                     t.c.v.op("#>>")(literal_column("'{}'")).ilike(pattern, escape="\\")))
    t = func.json_tree(column).table_valued("atom", "type").alias("t")
    return exists(select(1).select_from(t).where(t.c.type.in_(("text", "integer", "real")),
                                                 t.c.atom.like(pattern, escape="\\")))


def _value_contains(session: Session, column: Any, pattern: str, text_test: bool) -> ColumnElement[bool]:
    """:func:`_walk_finds`, after the cheaper test of the document's text when ``text_test``."""
    walk = _walk_finds(session, column, pattern)
    return and_(_like(session, column, pattern), walk) if text_test else walk


def stored_text_matches(session: Session, q: str, *, batch_labels: bool = True) -> ColumnElement[bool]:
    """SQL: the entry holds ``q`` (see the module's docstring), case-insensitively; with
    ``batch_labels`` also an entry of a batch whose label contains it."""
    q = q.strip()
    pattern, text_test = like_pattern(q), text_test_holds(q)
    # a common word is held by many records: their walk is most of a search's time
    values = _like(session, Record.data, pattern) if text_alone_holds(q) else \
        _value_contains(session, Record.data, pattern, text_test)
    found_records = select(Record.id).where(values)
    conds = [_value_contains(session, AuditEntry.old_data, pattern, text_test),
             _value_contains(session, AuditEntry.new_data, pattern, text_test),
             # the cheap probe of the (few) records found first: SQLite tests AND's terms in order
             and_(AuditEntry.entity_id.in_(found_records), deferred_clause(session)),
             # "IS NOT NULL": the partial indexes of names and parents are read instead of the table
             *(and_(AuditEntry.entity_id.in_(select(Record.id).where(getattr(Record, column).is_not(None),
                                                                     _like(session, getattr(Record, column), pattern))),
                    deferred_clause(session, key))
               for key, column in FROM_RECORD),
             and_(or_(AuditEntry.id.in_(select(AuditEntry.id).where(AuditEntry.entity_type == "record",
                                                                    _like(session, AuditEntry.entity_id, pattern))),
                      _like(session, AuditEntry.dataset_id, pattern)),
                  AuditEntry.entity_type == "record", AuditEntry.action.in_([*OWN_VALUES, RESTORE, EDIT]))]
    if batch_labels:
        conds.append(AuditEntry.batch_id.in_(select(AuditBatch.id).where(_like(session, AuditBatch.label, pattern))))
    return or_(*conds)
