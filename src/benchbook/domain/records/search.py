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

from sqlalchemy import ColumnElement, TextClause, bindparam, literal_column, text
from sqlalchemy.exc import OperationalError
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


SPELLED_OUT_UP_TO = 8
"""Words of the search table a query word may begin for it to be asked for as those words
(:func:`fts_operand`); a word beginning more is asked for as a prefix."""


def fts_operand(session: Session, word: str) -> str:
    """The FTS5 query operand matching records holding a word that begins with ``word`` (one
    of :func:`words`). FTS5 answers a prefix query (``"alph"*``) by merging the match lists of
    all the words it begins into one list before the first match comes out (40 ms for 476,000
    matches at 1,000,000 records), where a word or an ``OR`` of words is read as it goes (the
    page of that search: 84 -> 43 ms). So when ``word`` begins at most
    :data:`SPELLED_OUT_UP_TO` words of the table (``records_fts_vocab``, migration
    ``0015_search_vocabulary``), they are spelled out: ``("alpha" OR "alphabet")``, or ``"alph"``
    for none (it matches nothing, as the prefix would). The range read is a byte range, so only
    an ASCII ``word`` is spelled out: the tokenizer folds other letters (``é`` to ``e``) in ways
    the range would have to repeat; those stay prefixes, as do words beginning many others."""
    if not word.isascii():
        return f'"{word}"*'
    following = word[:-1] + chr(ord(word[-1]) + 1)  # the first text after every word beginning with `word`
    try:
        terms = list(session.scalars(text("SELECT term FROM records_fts_vocab WHERE term >= :word "
                                          "AND term < :following LIMIT :most").bindparams(
            word=word, following=following, most=SPELLED_OUT_UP_TO + 1)))
    except OperationalError as exc:  # a database before 0015 (a migration's own test reads one)
        if "no such table" not in str(exc):
            raise
        return f'"{word}"*'
    if len(terms) > SPELLED_OUT_UP_TO:
        return f'"{word}"*'
    if not terms:
        return f'"{word}"'
    return "(" + " OR ".join(f'"{term}"' for term in terms) + ")"


def matched_rowids(match: str) -> TextClause:
    """``SELECT rowid FROM records_fts`` for the FTS5 ``MATCH`` text ``match``."""
    return text("SELECT rowid FROM records_fts WHERE records_fts MATCH :search_query").bindparams(
        bindparam("search_query", match))


def search_parts(session: Session, query: str) -> tuple[ColumnElement[bool] | None, str | None]:
    """``(condition, match)``: a WHERE condition matching records whose values contain every
    word of ``query`` as a word prefix (None when the query has no words), and on SQLite its
    FTS5 ``MATCH`` text (None elsewhere), for a count that reads the search table first."""
    found = words(query)
    if not found:
        return None, None
    if session.get_bind().dialect.name == "postgresql":
        lexemes = pg_lexemes(session, query)
        if not lexemes:
            return None, None
        tsquery = " & ".join(f"'{quoted(lexeme)}':*" for lexeme in lexemes)
        return text(f"{PG_VECTOR} @@ CAST(:search_query AS tsquery)").bindparams(  # type: ignore[return-value]
            bindparam("search_query", tsquery)), None
    match = " AND ".join(fts_operand(session, w) for w in found)  # SQLite: every word, as a word or prefix
    return literal_column("records.rowid").in_(matched_rowids(match)), match


def search_condition(session: Session, query: str) -> ColumnElement[bool] | None:
    """The condition of :func:`search_parts`."""
    return search_parts(session, query)[0]
