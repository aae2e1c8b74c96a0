"""Turning request ``data`` (keyed by field name) into stored values (keyed by field id),
with every problem reported at once (OpenAPI ``ValidationErrorResponse``: one entry per
invalid field).

Whatever the field's restrictions, a value is refused (422) when it cannot be stored or passes
the input limits (``docs/limits.md``): text holding a NUL character or a lone UTF-16 surrogate,
a string longer than ``value_length`` characters, a list of more than ``list_items`` items, a
record whose stored values come to more than ``record_length`` characters of JSON. This holds for
every way values arrive (API, CSV import, plugins), so filters never meet such values and no
stored value is large enough for a filter to multiply (SQLite holds one copy per filter leaf per
row; ``filters.compile_filter`` skips rows past ``record_length``).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog import dtypes
from benchbook.domain.catalog.lookup import SchemaMeta
from benchbook.domain.errors import Invalid, error_entry
from benchbook.domain.records.references import ReferenceResolver, resolve_rows
from benchbook.persistence.db import json_dumps
from benchbook.persistence.tables import Collection, Field, Record, Schema, StoredFile
from benchbook.settings import limits

REFERENCE_TYPES = dtypes.REFERENCE_TYPES
FILE_TYPES = ("file", "file_list")
LINKED_TYPES = (*REFERENCE_TYPES, *FILE_TYPES)
"""Types whose values name other things (records, files): linked when written."""


def blank(value: Any) -> bool:
    """True for the values that mean "no value": None, "" and []."""
    return value is None or value == "" or value == []


def as_list(value: Any) -> list[Any]:
    """A stored value as a list (single values become one-element lists; blanks empty)."""
    if blank(value):
        return []
    return list(value) if isinstance(value, list) else [value]


def _file_lookup(session: Session) -> Any:
    def lookup(sha: str) -> dtypes.FileMeta | None:
        row = session.get(StoredFile, sha)
        return dtypes.FileMeta(filename=row.filename, size=row.size) if row else None
    return lookup


def coerce_data(session: Session, meta: SchemaMeta, collection: Collection, incoming: dict[str, Any], *,
                current: dict[str, Any] | None = None, loc: tuple[str, ...] = ("body", "data")) -> dict[str, Any]:
    """Merge ``incoming`` (field name → given value; None clears) into ``current`` (field id →
    stored value) and return the new stored dict. On create (``current`` None) defaults fill
    missing fields. Checks types, restrictions, required fields, references (existing, live,
    of the target schema, in scope) and files (uploaded). A reference typed as a key, natural
    name, id prefix or suffix is stored as the id it names (:mod:`.references`); one naming no
    record or several is a problem. Raises ``Invalid`` listing all problems.
    Only references the write adds are checked: one a field already held may point at a record
    deleted since (a delete with ``force`` keeps references, docs/deletes.md) and stays.
    """
    out, errors = merge_values(meta, collection, incoming, current=current, loc=loc,
                               file_lookup=_file_lookup(session))
    added = {f.id: [i for i in as_list(out.get(f.id)) if i not in as_list((current or {}).get(f.id))]
             for f in meta.fields if f.type in REFERENCE_TYPES and f.id in out}
    wanted = {i for ids in added.values() for i in ids}
    targets = reference_targets(session, wanted) if wanted else {}
    if any(i not in targets for i in wanted):  # typed as a key, name, id prefix or suffix
        errors += _resolve_typed_references(session, meta, collection, out, added, targets, current=current, loc=loc)
    errors += reference_problems(meta.fields, added, targets, collection, loc)
    if errors:
        raise Invalid("; ".join(e["msg"] for e in errors), errors)
    return out


def _resolve_typed_references(session: Session, meta: SchemaMeta, collection: Collection, out: dict[str, Any],
                              added: dict[str, list[str]], targets: dict[str, tuple[Any, ...]], *,
                              current: dict[str, Any] | None, loc: tuple[str, ...]) -> list[dict[str, Any]]:
    """For :func:`coerce_data` when some added reference (``added``: field id → ids the write adds) is not a
    record id of ``targets``: resolves the reference fields of ``out`` (stored dict, field id → value) in place
    through :func:`resolve_rows` (a field none of whose values resolves is dropped), recomputes ``added`` and
    adds the newly named records to ``targets`` (:func:`reference_targets`). Returns the resolution problems
    (error entries)."""
    fields = [f for f in meta.fields if f.id in added]
    resolved = {f.id: out[f.id] for f in fields}
    problems = resolve_rows(ReferenceResolver(session, collection), fields, [resolved],
                            known=targets.__contains__, loc=loc).get(0, [])
    for f in fields:
        if f.id in resolved:
            out[f.id] = resolved[f.id]
        else:  # every value unresolved: reported by resolve_rows
            out.pop(f.id, None)
        previous = as_list((current or {}).get(f.id))
        added[f.id] = [i for i in as_list(resolved.get(f.id)) if i not in previous]
    fresh = {i for ids in added.values() for i in ids} - targets.keys()
    targets.update(reference_targets(session, fresh) if fresh else {})
    return problems


def merge_values(meta: SchemaMeta, collection: Collection, incoming: dict[str, Any], *,
                 current: dict[str, Any] | None, loc: tuple[str, ...],
                 file_lookup: Callable[[str], dtypes.FileMeta | None]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The value rules of :func:`coerce_data` except references: ``(stored dict, problems)``,
    problems as error entries. ``file_lookup(sha256)`` tells whether a file was uploaded (the
    bulk path answers it from a prefetch)."""
    errors: list[dict[str, Any]] = []
    out = dict(current or {})
    bound = limits.current()
    for key, value in incoming.items():
        field = meta.by_name.get(key)
        if field is None:
            errors.append(error_entry([*loc, key], f"unknown field {key!r} of schema {meta.schema.name!r}",
                                      "unknown_field", None if limit_problem(key, bound) else value))
            continue
        problem = limit_problem(value, bound)
        if problem is not None:
            errors.append(error_entry([*loc, key], f"{key}: {problem[0]}", problem[1], None))
            continue
        try:
            stored = dtypes.coerce_value(field.type, field.restrictions or {}, value, tz=collection.timezone,
                                         file_lookup=file_lookup)
        except dtypes.ValueProblem as exc:
            errors.append(error_entry([*loc, key], f"{key}: {exc}", exc.type_, value))
            continue
        if blank(stored):
            out.pop(field.id, None)
        else:
            out[field.id] = stored
    if current is None:
        for field in meta.fields:
            if field.id not in out and not blank(field.default):
                out[field.id] = field.default
    for field in meta.fields:
        if field.required and blank(out.get(field.id)):
            errors.append(error_entry([*loc, field.name], f"{field.name}: a value is required", "missing", None))
    size = stored_length(out, bound.record_length)
    if size is not None:
        errors.append(error_entry(list(loc), f"the record's values come to {size} characters; a record holds at "
                                             f"most {bound.record_length} ([limits] record_length)", "too_long", None))
    return out, errors


def merge_new_rows(meta: SchemaMeta, collection: Collection, rows: list[dict[str, Any]], *, loc: tuple[str, ...],
                   file_lookup: Callable[[str], dtypes.FileMeta | None]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """:func:`merge_values` of many new records (``current`` None) of one schema, one
    ``(stored dict, problems)`` per row of ``rows``, equal to what ``merge_values`` gives for
    that row (tests/domain/test_merge_rows.py checks it on random rows).

    Column by column: each field's values go through one :func:`dtypes.column_coercer`, which
    works out the field's restrictions once for the whole column. A row with anything out of
    the ordinary (an unknown field, a value over a limit or refused by its type, a missing
    required value, a record near ``record_length``) is handed to ``merge_values`` whole, so
    its problems read exactly as they would for a single create."""
    bound = limits.current()
    fields = {f.name: f for f in meta.fields}
    slow = [False] * len(rows)
    columns = {name: _coerce_column(dtypes.column_coercer(field.type, field.restrictions or {},
                                                          tz=collection.timezone, file_lookup=file_lookup),
                                    name, rows, slow, bound)
               for name, field in fields.items()}
    return _assemble_rows(meta, collection, rows, fields, columns, slow, bound=bound, loc=loc,
                          file_lookup=file_lookup)


def _coerce_column(coerce: Callable[[Any], Any], name: str, rows: list[dict[str, Any]], slow: list[bool],
                   bound: limits.Limits) -> list[Any]:
    """Field ``name``'s value of each row through ``coerce`` (None where the row lacks it or is slow). A row
    whose value is over a limit or refused by ``coerce`` (``dtypes.ValueProblem``) is marked in ``slow``
    (in place) for :func:`merge_values`."""
    column: list[Any] = []
    for i, row in enumerate(rows):
        if name not in row or slow[i]:
            column.append(None)
            continue
        value = row[name]
        if (type(value) is str and not _plain_text(value, bound)) or (
                type(value) is list and limit_problem(value, bound) is not None):
            slow[i] = True
            column.append(None)
            continue
        try:
            column.append(coerce(value))
        except dtypes.ValueProblem:
            slow[i] = True
            column.append(None)
    return column


def _assemble_rows(meta: SchemaMeta, collection: Collection, rows: list[dict[str, Any]], fields: dict[str, Field],
                   columns: dict[str, list[Any]], slow: list[bool], *, bound: limits.Limits, loc: tuple[str, ...],
                   file_lookup: Callable[[str], dtypes.FileMeta | None]) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Each row's ``(stored dict, [])`` from its coerced ``columns`` (field name → value per row;
    ``fields``: the live fields by name) with defaults filled, or :func:`merge_values`'s ``(stored
    dict, problems)`` for a row that is ``slow``, names an unknown field, lacks a required value or
    comes near ``bound.record_length``."""
    defaults = [(f.id, f.default) for f in meta.fields if not blank(f.default)]
    required = [f.id for f in meta.fields if f.required]
    out: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
    for i, row in enumerate(rows):
        if not slow[i] and row.keys() <= fields.keys():
            stored = {fields[name].id: value for name in row if not blank(value := columns[name][i])}
            for fid, default in defaults:
                if fid not in stored:
                    stored[fid] = default
            if all(fid in stored for fid in required) and stored_length(stored, bound.record_length) is None:
                out.append((stored, []))
                continue
        out.append(merge_values(meta, collection, row, current=None, loc=loc, file_lookup=file_lookup))
    return out


def _plain_text(text: str, bound: limits.Limits) -> bool:
    """Whether ``text`` passes :func:`limit_problem` (short enough, storable)."""
    return len(text) <= bound.value_length and (text.isascii() and "\x00" not in text
                                                or limits.text_problem(text) is None)


def stored_length(data: dict[str, Any], limit: int) -> int | None:
    """The length in characters of ``data``'s stored JSON text when it is over ``limit``, else
    None. A rough count of its text first (escapes at most sextuple a character), so the JSON
    text is only made for records that may be near the limit."""
    rough = 0
    for key, value in data.items():
        rough += len(key) + 4
        for item in value if isinstance(value, list) else [value]:
            rough += len(item) + 3 if isinstance(item, str) else 32
    if rough * 6 <= limit:
        return None
    size = len(json_dumps(data))
    return size if size > limit else None


def limit_problem(value: Any, bound: limits.Limits) -> tuple[str, str] | None:
    """``(message, type)`` when a given value cannot be stored whatever its field (module
    docstring), else None: ``string_unicode`` (NUL, lone surrogate), ``too_long`` (a string over
    ``value_length`` characters), ``too_many`` (a list over ``list_items`` items)."""
    items = value if isinstance(value, list) else [value]
    if isinstance(value, list) and len(value) > bound.list_items:
        return (f"{len(value)} items; a value holds at most {bound.list_items} ([limits] list_items)", "too_many")
    for item in items:
        if not isinstance(item, str):
            continue
        problem = limits.text_problem(item)
        if problem:
            return f"the text {problem}", "string_unicode"
        if len(item) > bound.value_length:
            msg = f"{len(item)} characters long; a text value holds at most {bound.value_length} ([limits] value_length)"
            return msg, "too_long"
    return None


def reference_targets(session: Session, ids: set[str]) -> dict[str, tuple[Any, ...]]:
    """What the reference rules need of each record of ``ids``: ``id → (id, deleted_at, schema
    name, collection id, collection scope, collection deleted_at)`` (one query per 500 ids)."""
    found: dict[str, tuple[Any, ...]] = {}
    ordered = sorted(ids)
    for start in range(0, len(ordered), 500):
        found.update({r[0]: tuple(r) for r in session.execute(
            select(Record.id, Record.deleted_at, Schema.name, Collection.id, Collection.scope, Collection.deleted_at)
            .join(Schema, Schema.id == Record.schema_id).join(Collection, Collection.id == Record.dataset_id)
            .where(Record.id.in_(ordered[start:start + 500])))})
    return found


def reference_problems(fields: list[Field], data: dict[str, Any], targets: Mapping[str, tuple[Any, ...]],
                       collection: Collection, loc: tuple[str, ...]) -> list[dict[str, Any]]:
    """Error entries for the reference values in ``data`` whose target (as
    :func:`reference_targets` describes it) does not exist or is deleted, is of another schema
    than the field's ``schema`` restriction, or sits in another collection that is not global."""
    errors = []
    for field in fields:
        if field.type not in REFERENCE_TYPES or field.id not in data:
            continue
        for target in as_list(data.get(field.id)):
            row = targets.get(target)
            problem = None
            if row is None or row[1] is not None or row[5] is not None:
                problem = f"record {target} does not exist or is deleted"
            elif field.restrictions.get("schema") and row[2] != field.restrictions["schema"]:
                problem = f"record {target} is a {row[2]!r}, not a {field.restrictions['schema']!r}"
            elif row[3] != collection.id and row[4] != "global":
                problem = (f"record {target} is in another collection that is not global; a local collection's "
                           "records may only be referenced from the same collection")
            if problem:
                errors.append(error_entry([*loc, field.name], f"{field.name}: {problem}", "reference", target))
    return errors


def shown_values(meta: SchemaMeta, data: dict[str, Any], tz: str | None) -> dict[str, Any]:
    """Stored values (by field id) as shown (by field name, datetimes in the display zone)."""
    return {f.name: dtypes.display_value(f.type, f.restrictions or {}, data[f.id], tz=tz)
            for f in meta.fields if f.id in data}
