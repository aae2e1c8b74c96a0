"""SQL text of the few JSON operations the history's triggers, migrations and conversions write,
in SQLite's and PostgreSQL's syntax: one place for each, so that a statement is written once for
both backends.

``dialect`` is ``"sqlite"`` or ``"postgresql"``; ``doc`` is SQL naming a JSON object (a column,
``e.new_data``); ``key`` a top-level key (letters, digits and ``_``: written into the SQL as it
is). On PostgreSQL the documents are ``jsonb``. The texts of :func:`has_key` are part of the
partial indexes' conditions (``entry_triggers.holding``): a query reads such an index only when it
writes the condition the same, so they must not change.
"""
from __future__ import annotations

from collections.abc import Iterable


def _pg(dialect: str) -> bool:
    return dialect == "postgresql"


def has_key(dialect: str, doc: str, key: str) -> str:
    """SQL: ``doc`` holds ``key`` (its value may be JSON null)."""
    return f"{doc} ? '{key}'" if _pg(dialect) else f"json_type({doc}, '$.{key}') IS NOT NULL"


def lacks_key(dialect: str, doc: str, key: str) -> str:
    """SQL: ``doc`` does not hold ``key``."""
    return f"NOT ({doc} ? '{key}')" if _pg(dialect) else f"json_type({doc}, '$.{key}') IS NULL"


def value_text(dialect: str, doc: str, key: str) -> str:
    """SQL: the scalar value of ``key`` in ``doc`` (text on PostgreSQL, SQLite's own type on
    SQLite), NULL when it is missing or JSON null."""
    return f"{doc} ->> '{key}'" if _pg(dialect) else f"json_extract({doc}, '$.{key}')"


def value_json(dialect: str, doc: str, key: str) -> str:
    """SQL: the value of ``key`` in ``doc`` as JSON (``jsonb`` on PostgreSQL, JSON text on SQLite
    for an object or array), for comparing with :func:`json_value` of a column."""
    return f"{doc} -> '{key}'" if _pg(dialect) else f"json_extract({doc}, '$.{key}')"


def same(dialect: str, left: str, right: str) -> str:
    """SQL: ``left`` equals ``right``, two NULLs counting as equal."""
    return f"{left} IS NOT DISTINCT FROM {right}" if _pg(dialect) else f"{left} IS {right}"


def without_key(dialect: str, doc: str, key: str) -> str:
    """SQL: ``doc`` without ``key``."""
    return f"{doc} - '{key}'" if _pg(dialect) else f"json_remove({doc}, '$.{key}')"


def with_missing(dialect: str, doc: str, pairs: Iterable[tuple[str, str]]) -> str:
    """SQL: ``doc`` with each ``(key, value SQL)`` of ``pairs`` added where ``doc`` lacks that key;
    a key ``doc`` holds keeps its value. A value that is itself JSON goes through
    :func:`json_value` first."""
    if _pg(dialect):
        args = ", ".join(f"'{key}', {value}" for key, value in pairs)
        return f"jsonb_build_object({args}) || {doc}"
    args = ", ".join(f"'$.{key}', {value}" for key, value in pairs)
    return f"json_insert({doc}, {args})"


def json_value(dialect: str, value: str) -> str:
    """SQL: ``value`` (a JSON column) as a JSON value for :func:`with_missing`, not as text."""
    return value if _pg(dialect) else f"json({value})"
