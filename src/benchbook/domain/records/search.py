"""Full-text search over record values (OpenAPI: the record lists' ``search``).

Words of the query must all occur (as word prefixes, case- and accent-insensitive) among a
record's values (strings, numbers and the items of lists; not field ids, not booleans) or its
natural name, or in the natural name (label) of a record one of its reference fields names
(issue 35 item 2: ``UA 1545`` finds flight 1545 of the carrier called UA; each word is tested on
its own). SQLite answers from the FTS5 table ``records_fts``,
PostgreSQL from the GIN index ``ix_records_search`` (migration ``0002_search``; SQLite's table
as migration ``0013_search_values`` left it); both are kept in step with every write by the
database itself.

Through references: for each word, the targets whose name holds it (as a word prefix, as the
index reads words) are looked up first, among the schemas a live reference field may name
(:func:`target_schemas`): on SQLite through the search table (values and name together: the
name is checked again here, for at most :data:`TARGETS_MOST` of them; more are checked by
``LIKE``), on PostgreSQL by the name's own text vector after the search index; the records
naming them are read from ``record_links`` by target. A search none of whose words is in such a
name is the plain search, plan and all.
"""
from __future__ import annotations

import re
import unicodedata
from typing import Any

from sqlalchemy import ColumnElement, Select, TextClause, and_, bindparam, literal_column, or_, select, text
from sqlalchemy.exc import OperationalError
from sqlalchemy.orm import Session

from benchbook.domain.catalog import shared
from benchbook.domain.catalog.dtypes import REFERENCE_TYPES
from benchbook.persistence.tables import Field, Record, RecordLink, Schema

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
    word of ``query`` as a word prefix (None when the query has no words), each word found
    among the record's own values and name or in the name of a record it references (module
    docstring), and on SQLite its FTS5 ``MATCH`` text (None elsewhere, and when a word is
    found through a reference), for a count that reads the search table first."""
    found = words(query)
    if not found:
        return None, None
    through = _label_search(session, query)
    if through is not None:
        return through, None
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


# ------------------------------------------------------------------- through references
TARGETS_MOST = 10_000
"""Targets of one word listed by id; beyond, the referrers are found by a subquery."""
ANY_SCHEMA = "*"


def target_schemas(session: Session) -> frozenset[str]:
    """Ids of the live schemas a live reference / reference_list field names as its target
    (``restrictions.schema``); :data:`ANY_SCHEMA` among them when a field names none. Empty when
    no schema has a reference field. Worked out once per catalog version."""
    found: frozenset[str] = shared.shared(session, ("reference-targets",), lambda: _targets(session))
    return found


def _targets(session: Session) -> frozenset[str]:
    fields = session.scalars(select(Field).join(Schema, Schema.id == Field.schema_id).where(
        Field.type.in_(REFERENCE_TYPES), Field.deleted_at.is_(None), Schema.deleted_at.is_(None)))
    names = {(f.restrictions or {}).get("schema") or ANY_SCHEMA for f in fields}
    ids = set(session.scalars(select(Schema.id).where(Schema.name.in_(names - {ANY_SCHEMA}),
                                                      Schema.deleted_at.is_(None)))) if names - {ANY_SCHEMA} else set()
    return frozenset(ids | ({ANY_SCHEMA} & names))


def _fold(value: str) -> str:
    """Lower case without accents, as the search table's tokenizer reads a word."""
    return "".join(c for c in unicodedata.normalize("NFKD", value.lower()) if not unicodedata.combining(c))


def _named(name: str | None, word: str) -> bool:
    return name is not None and any(w.startswith(_fold(word)) for w in words(_fold(name)))


def _in_schemas(schemas: frozenset[str]) -> list[ColumnElement[bool]]:
    return [] if ANY_SCHEMA in schemas else [Record.schema_id.in_(sorted(schemas))]


def _sqlite_targets(session: Session, schemas: frozenset[str], word: str) -> list[str] | Select[Any]:
    """The ids of the records of ``schemas`` whose name holds ``word``; a subquery (testing the
    name by ``LIKE``) when more than :data:`TARGETS_MOST` match the search table."""
    found = literal_column("records.rowid").in_(text("SELECT rowid FROM records_fts WHERE records_fts MATCH :label_word")
                                                .bindparams(bindparam("label_word", fts_operand(session, word), unique=True)))
    rows = session.execute(select(Record.id, Record.natural_name).where(found, *_in_schemas(schemas))
                           .limit(TARGETS_MOST + 1)).all()
    if len(rows) <= TARGETS_MOST:
        return [rid for rid, name in rows if _named(name, word)]
    return select(Record.id).where(found, *_in_schemas(schemas),  # its own records: correlated to no outer one
                                   Record.natural_name.like(like_pattern(word), escape="\\")).correlate(None)


def _pg_targets(session: Session, schemas: frozenset[str], lexeme: str) -> list[str] | Select[Any]:
    """As :func:`_sqlite_targets` on PostgreSQL: the search index finds the records holding
    the word, their name's own vector keeps those whose name does."""
    found = text(f"{PG_VECTOR} @@ CAST(:label_word AS tsquery) AND to_tsvector('simple'::regconfig, "
                 "coalesce(records.natural_name, '')) @@ CAST(:label_word AS tsquery)").bindparams(
        bindparam("label_word", f"'{quoted(lexeme)}':*", unique=True))
    ids = list(session.scalars(select(Record.id).where(found, *_in_schemas(schemas)).limit(TARGETS_MOST + 1)))
    if len(ids) <= TARGETS_MOST:
        return ids
    return select(Record.id).where(found, *_in_schemas(schemas)).correlate(None)


def _referring(targets: list[str] | Select[Any]) -> ColumnElement[bool]:
    """Records naming one of ``targets`` in a reference field (``record_links`` by target)."""
    return Record.id.in_(select(RecordLink.source_id).where(RecordLink.target_id.in_(targets),
                                                            RecordLink.kind == "record"))


def _label_search(session: Session, query: str) -> ColumnElement[bool] | None:
    """The condition of a search ``query`` whose words may also be found in the names of
    referenced records (module docstring); None when no word is in any referenced schema's
    names (the caller then uses the plain search)."""
    schemas = target_schemas(session)
    if not schemas:
        return None
    postgres = session.get_bind().dialect.name == "postgresql"
    terms = pg_lexemes(session, query) if postgres else words(query)
    found = [(_pg_targets if postgres else _sqlite_targets)(session, schemas, term) for term in terms]
    if not any(isinstance(t, Select) or t for t in found):
        return None
    parts: list[ColumnElement[bool]] = []
    for i, (term, targets) in enumerate(zip(terms, found, strict=True)):
        if postgres:
            own: ColumnElement[bool] = text(f"{PG_VECTOR} @@ CAST(:search_{i} AS tsquery)").bindparams(  # type: ignore[assignment]
                bindparam(f"search_{i}", f"'{quoted(term)}':*", unique=True))
        else:
            own = literal_column("records.rowid").in_(
                text(f"SELECT rowid FROM records_fts WHERE records_fts MATCH :search_{i}").bindparams(
                    bindparam(f"search_{i}", fts_operand(session, term), unique=True)))
        parts.append(or_(own, _referring(targets)) if isinstance(targets, Select) or targets else own)
    return and_(*parts)
