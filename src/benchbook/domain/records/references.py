"""References by key (issue 35 item 1): a ``reference`` or ``reference_list`` value may be typed
as the target record's id, a unique id prefix or suffix, or the target's natural key.

One value of a field resolves, in this order:

1. a whole id (26 characters of the id alphabet) is taken as it is (the reference rules of
   ``values.reference_problems`` then check that it exists, is live, of the right schema and
   within reach);
2. the target's **natural key**: its value of a one-field uniqueness key of the target schema
   (compared as stored: ``"7"`` matches an integer ``7``), else its natural name
   (``natural_name``);
3. a unique id prefix or suffix of at least 8 characters (the short id the CLI's tables show;
   up to 16 for a suffix). Shorter parts are not tried: a 4-character code such as a flight
   number would otherwise name a random record whose id happens to end with it.

Only records the field may reach are candidates: live records of the field's target schema
(``restrictions.schema``; any schema when it has none) in the writing collection or in a live
global collection (the rule ``GET /records?reachable_from=`` applies). A value two candidates
match is ambiguous; a value none matches is unknown: both are :class:`Unresolved`, which the
callers report as 422 entries (``reference_ambiguous``, ``reference_unknown``) naming field and
value.

Set-based: :meth:`ReferenceResolver.resolve` answers a set of values of one field with one
query per :data:`CHUNK` values for the keys and names, and one more for what is left that may
be an id prefix or suffix; answers are remembered for the resolver's life (an import resolves
each distinct code once, however many rows repeat it).
"""
from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, and_, or_, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.dtypes import REFERENCE_TYPES
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.errors import NotFound, error_entry
from benchbook.domain.ids import ID_LENGTH, RANDOM_LENGTH, SHORT_TAIL
from benchbook.persistence.tables import Collection, Field, Record

CHUNK = 500
"""Values looked up by one query (IN lists stay far below every backend's limit)."""
KEY_TYPES = {"string": "as_string", "url": "as_string", "date": "as_string", "integer": "as_float",
             "float": "as_float"}
"""Types of a one-field uniqueness key a value is compared with (each has a per-field index on
this typed value: ``field_indexes.INDEXED_ACCESSORS``)."""
UNKNOWN = "reference_unknown"
AMBIGUOUS = "reference_ambiguous"
_ID = re.compile(r"[0-9A-HJKMNP-TV-Z]{26}", re.IGNORECASE)
_PART = re.compile(rf"[0-9A-HJKMNP-TV-Z]{{{SHORT_TAIL},25}}", re.IGNORECASE)


def whole_id(value: str) -> bool:
    """True when ``value`` has the form of a whole record id (26 id-alphabet characters)."""
    return len(value) == ID_LENGTH and _ID.fullmatch(value) is not None


@dataclass(frozen=True)
class Unresolved:
    """A value that names no record (``kind`` :data:`UNKNOWN`) or several (:data:`AMBIGUOUS`,
    ``matches`` of them, a few ``examples`` ids), with the ``message`` to show (without the field)."""

    value: str
    kind: str
    message: str
    matches: int = 0
    examples: tuple[str, ...] = ()


Resolution = str | Unresolved
"""A record id, or why there is none."""


class ReferenceResolver:
    """Resolves typed reference values of fields written in ``collection`` (module docstring;
    None: a collection yet to be made, which reaches the global collections only).
    ``cache``: the caller's :class:`SchemaCache` (a new one otherwise)."""

    def __init__(self, session: Session, collection: Collection | None, cache: SchemaCache | None = None) -> None:
        self.s, self.collection = session, collection
        self.cache = cache or SchemaCache(session)
        self._reach: list[str] | None = None
        self._memo: dict[tuple[str | None, str], Resolution] = {}

    def reach(self) -> list[str]:
        """The ids of the collections whose records the collection's references may name: its
        own and every live global collection (one query, then remembered)."""
        if self._reach is None:
            globals_ = self.s.scalars(select(Collection.id).where(Collection.scope == "global",
                                                                  Collection.deleted_at.is_(None)))
            self._reach = sorted({*([self.collection.id] if self.collection else []), *globals_})
        return self._reach

    def target(self, field: Field) -> SchemaMeta | None:
        """The field's target schema (``restrictions.schema``), None when any schema will do or
        the named one does not exist (then nothing resolves by key)."""
        name = (field.restrictions or {}).get("schema")
        if not name:
            return None
        try:
            return self.cache.schema_named(name)
        except NotFound:
            return None

    def key_fields(self, meta: SchemaMeta | None) -> list[Field]:
        """The target's one-field uniqueness keys a typed value is compared with."""
        if meta is None:
            return []
        return [meta.by_id[key[0]] for key in meta.schema.unique_keys
                if len(key) == 1 and key[0] in meta.by_id and meta.by_id[key[0]].type in KEY_TYPES
                and meta.by_id[key[0]].deleted_at is None]

    def resolve(self, field: Field, values: Iterable[str]) -> dict[str, Resolution]:
        """Each of ``values`` (text as given, compared trimmed) → the id of the one reachable
        record it names, or :class:`Unresolved`. Whole ids map to themselves, upper-cased."""
        meta = self.target(field)
        sid = meta.schema.id if meta else None
        out: dict[str, Resolution] = {}
        wanted: list[str] = []
        for value in dict.fromkeys(values):
            text = value.strip()
            if whole_id(text):
                out[value] = text.upper()
            elif (sid, text) in self._memo:
                out[value] = self._memo[(sid, text)]
            else:
                wanted.append(value)
        if not wanted:
            return out
        texts = sorted({v.strip() for v in wanted})
        found: dict[str, Resolution] = {}
        for start in range(0, len(texts), CHUNK):
            found.update(self._by_key(meta, texts[start:start + CHUNK]))
        rest = [t for t in texts if t not in found and _PART.fullmatch(t)]
        for start in range(0, len(rest), CHUNK):
            found.update(self._by_id_part(meta, rest[start:start + CHUNK]))
        for text in texts:
            if text not in found:
                found[text] = Unresolved(text, UNKNOWN, f"no {_what(meta)} record within reach has "
                                                        f"{_how(self.key_fields(meta))} {text!r}")
            self._memo[(sid, text)] = found[text]
        out.update({v: found[v.strip()] for v in wanted})
        return out

    def _conditions(self, meta: SchemaMeta | None) -> list[ColumnElement[bool]]:
        conds: list[ColumnElement[bool]] = [Record.deleted_at.is_(None), Record.dataset_id.in_(self.reach())]
        if meta is not None:
            conds.append(Record.schema_id == meta.schema.id)
        return conds

    def _by_key(self, meta: SchemaMeta | None, texts: list[str]) -> dict[str, Resolution]:
        """One query: the records whose one-field key value or natural name is one of ``texts``;
        a key match wins over a name match."""
        keys = self.key_fields(meta)
        tests, columns = _key_tests(keys, texts)
        numbers = {t: _number(t) for t in texts}
        by_key, by_name = _key_and_name_hits(keys, numbers, self.s.execute(
            select(Record.id, Record.natural_name, *columns).where(*self._conditions(meta), or_(*tests))))
        out: dict[str, Resolution] = {}
        for text in texts:
            hits = by_key.get(text) or by_name.get(text)
            if hits:
                how = "key" if text in by_key else "natural name"
                out[text] = _one(meta, text, hits, how)
        return out

    def _by_id_part(self, meta: SchemaMeta | None, texts: list[str]) -> dict[str, Resolution]:
        """One query: the records whose id starts (a range of the primary key) or ends with one
        of ``texts`` (upper-cased)."""
        tests: list[ColumnElement[bool]] = []
        for text in texts:
            part = text.upper()
            tests.append(and_(Record.id >= part, Record.id < part + "~"))
            if len(part) <= RANDOM_LENGTH:
                tests.append(Record.id.endswith(part, autoescape=True))
        hits: dict[str, set[str]] = {}
        for rid in self.s.scalars(select(Record.id).where(*self._conditions(meta), or_(*tests))):
            for text in texts:
                part = text.upper()
                if rid.startswith(part) or (len(part) <= RANDOM_LENGTH and rid.endswith(part)):
                    hits.setdefault(text, set()).add(rid)
        return {text: _one(meta, text, found, "id") for text, found in hits.items()}


def _key_tests(keys: list[Field], texts: list[str]) -> tuple[list[ColumnElement[bool]], list[Any]]:
    """For :meth:`ReferenceResolver._by_key`: ``(tests, columns)``, the tests (natural name, then each key
    field's typed value, one of ``texts``; numeric keys only for texts that are numbers) and the key fields'
    typed value columns, in ``keys`` order."""
    tests: list[ColumnElement[bool]] = [Record.natural_name.in_(texts)]
    columns: list[Any] = []
    for f in keys:
        typed = getattr(Record.data[f.id], KEY_TYPES[f.type])()
        given: list[Any] = texts if KEY_TYPES[f.type] == "as_string" else [n for t in texts
                                                                          if (n := _number(t)) is not None]
        if given:
            tests.append(typed.in_(given))
        columns.append(typed)
    return tests, columns


def _key_and_name_hits(keys: list[Field], numbers: dict[str, float | None],
                       rows: Iterable[Any]) -> tuple[dict[str, set[str]], dict[str, set[str]]]:
    """``(by_key, by_name)``: text → the ids of ``rows`` (``(id, natural_name, *key values)``) whose key
    value, or natural name, is that text (``numbers``: each text → its number, or None; numeric keys
    compare as numbers)."""
    by_key: dict[str, set[str]] = {}
    by_name: dict[str, set[str]] = {}
    for row in rows:
        rid, name, values = row[0], row[1], row[2:]
        if name is not None and name in numbers:
            by_name.setdefault(name, set()).add(rid)
        for f, value in zip(keys, values):
            if value is None:
                continue
            if KEY_TYPES[f.type] == "as_string":
                if value in numbers:
                    by_key.setdefault(value, set()).add(rid)
            else:
                for text, number in numbers.items():
                    if number is not None and float(value) == number:
                        by_key.setdefault(text, set()).add(rid)
    return by_key, by_name


def _number(text: str) -> float | None:
    try:
        number = float(text)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


def _what(meta: SchemaMeta | None) -> str:
    return repr(meta.schema.name) if meta is not None else "such"


def _how(keys: list[Field]) -> str:
    return ", ".join([*(f.name for f in keys), "natural name"]) + " or id"


def _one(meta: SchemaMeta | None, text: str, hits: set[str], how: str) -> Resolution:
    if len(hits) == 1:
        return next(iter(hits))
    examples = tuple(sorted(hits)[:3])
    what = "an id starting or ending with" if how == "id" else f"the {how}"
    return Unresolved(text, AMBIGUOUS, f"{len(hits)} {_what(meta)} records within reach have {what} {text!r} "
                                       f"(e.g. {', '.join(examples)}); give the record's id",
                      len(hits), examples)


MissingHook = Callable[[Field, Unresolved], str | None]
"""Asked about an unknown value (``--create-missing``): the id to use instead, or None."""


def resolve_rows(resolver: ReferenceResolver, fields: Sequence[Field], rows: Sequence[dict[str, Any]], *,
                 known: Callable[[str], bool] | None = None, missing: MissingHook | None = None,
                 loc: tuple[str, ...] = ("body", "data")) -> dict[int, list[dict[str, Any]]]:
    """Rewrite, in place, the reference values of ``rows`` (stored values: field id → a string,
    or a list of them for a reference_list) of ``fields`` as the ids they name, one
    :meth:`ReferenceResolver.resolve` per field for all rows. Values ``known`` accepts (ids
    already looked up) are left alone. An unresolved value is taken out of its row and becomes
    an error entry of that row (``loc`` + field name, type ``reference_unknown`` or
    ``reference_ambiguous``, input the value), unless ``missing`` gives an id for an unknown one.
    Returns the error entries by row index (rows without problems left out)."""
    errors: dict[int, list[dict[str, Any]]] = {}
    for f in fields:
        if f.type not in REFERENCE_TYPES:
            continue
        wanted = {v for row in rows for v in _items(row.get(f.id)) if not (known and known(v))}
        if not wanted:
            continue
        answers = resolver.resolve(f, wanted)
        if missing is not None:
            for value, answer in answers.items():
                if isinstance(answer, Unresolved) and answer.kind == UNKNOWN:
                    answers[value] = missing(f, answer) or answer
        _apply_answers(f, rows, answers, loc, errors)
    return errors


def _apply_answers(f: Field, rows: Sequence[dict[str, Any]], answers: Mapping[str, Resolution],
                   loc: tuple[str, ...], errors: dict[int, list[dict[str, Any]]]) -> None:
    """For :func:`resolve_rows`: each row's values of ``f`` become their ``answers`` (values without one
    stay; repeats are dropped; a field left without a value is removed), in place; each ``Unresolved``
    answer adds an error entry to ``errors`` under its row's index."""
    for i, row in enumerate(rows):
        if f.id not in row:
            continue
        kept: list[str] = []
        for value in _items(row[f.id]):
            answer = answers.get(value, value)
            if isinstance(answer, Unresolved):
                errors.setdefault(i, []).append(error_entry([*loc, f.name], f"{f.name}: {answer.message}",
                                                            answer.kind, value))
            elif answer not in kept:
                kept.append(answer)
        if isinstance(row[f.id], list):
            row[f.id] = kept
        elif kept:
            row[f.id] = kept[0]
        if not kept:
            del row[f.id]


def _items(value: Any) -> list[str]:
    if isinstance(value, list):
        return [v for v in value if isinstance(v, str)]
    return [value] if isinstance(value, str) and value else []
