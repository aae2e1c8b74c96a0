"""Full-text search over record values (spec *Records*: ``search``).

Words of the query must all occur (as word prefixes, case- and accent-insensitive) among a
record's values (strings, numbers and the items of lists; not field ids, not booleans) or its
natural name. SQLite answers from the FTS5 table ``records_fts``,
PostgreSQL from the GIN index ``ix_records_search`` (migration ``0002_search``; SQLite's table
as migration ``0013_search_values`` left it); both are kept in step with every write by the
database itself.
"""
from __future__ import annotations

import re

from sqlalchemy import ColumnElement, bindparam, literal_column, text
from sqlalchemy.orm import Session

PG_VECTOR = ("(jsonb_to_tsvector('simple'::regconfig, records.data, '[\"string\", \"numeric\"]'::jsonb) || "
             "to_tsvector('simple'::regconfig, coalesce(records.natural_name, '')))")
WORD = re.compile(r"[^\W_]+", re.UNICODE)
"""A word: letters and digits, as SQLite's tokenizer (unicode61) and PostgreSQL's parser split
text (an underscore separates two words)."""


def like_pattern(q: str) -> str:
    """``%q%`` for LIKE with ``\\`` escaping, so ``%`` and ``_`` in ``q`` match themselves
    (use with ``escape="\\"``)."""
    return "%" + q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def words(query: str) -> list[str]:
    """The words of a search query (runs of letters and digits): each is one token of the
    search index, which keeps no positions on SQLite (migration ``0013_search_values``)."""
    return WORD.findall(query.lower())


def pg_lexemes(session: Session, query: str) -> list[str]:
    """The words of ``query`` as PostgreSQL's ``simple`` configuration reads them, the way the
    index read the values: ``2.5`` and ``x@y.org`` are one word each there, where SQLite's
    tokenizer (and :func:`words`) make two and three. A query split otherwise would ask for
    ``5`` where the index holds only ``2.5``."""
    found = session.scalar(text("SELECT array_agg(lexeme ORDER BY lexeme) "
                                "FROM unnest(to_tsvector('simple'::regconfig, :q))").bindparams(q=query))
    return list(found or [])


def quoted(lexeme: str) -> str:
    """``lexeme`` for a quoted tsquery operand (a quote doubled, a backslash escaped)."""
    return lexeme.replace("\\", "\\\\").replace("'", "''")


def search_condition(session: Session, query: str) -> ColumnElement[bool] | None:
    """A WHERE condition matching records whose values contain every word of ``query`` as a
    word prefix; None when the query has no words."""
    found = words(query)
    if not found:
        return None
    if session.get_bind().dialect.name == "postgresql":
        lexemes = pg_lexemes(session, query)
        if not lexemes:
            return None
        tsquery = " & ".join(f"'{quoted(lexeme)}':*" for lexeme in lexemes)
        return text(f"{PG_VECTOR} @@ CAST(:search_query AS tsquery)").bindparams(
            bindparam("search_query", tsquery))  # type: ignore[return-value]
    match = " AND ".join(f'"{w}"*' for w in found)
    inner = text("SELECT rowid FROM records_fts WHERE records_fts MATCH :search_query").bindparams(
        bindparam("search_query", match))
    return literal_column("records.rowid").in_(inner)



