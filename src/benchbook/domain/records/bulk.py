"""Creating many records at once, set-based: the same rules and the same history as
:func:`benchbook.domain.records.writes.create_record`, with a fixed number of statements per chunk.

Per chunk of :data:`CHUNK` rows: one query for the full-length parent ids, one for the
reference targets, one for the uploaded files, one per (schema, uniqueness key) for the live
siblings that could clash; then one statement each for the records and their audit entries
(``rows_insert.insert_rows``: a multi-row ``INSERT … VALUES`` on SQLite) and an ``executemany`` of
record links. Values are checked column by column (``values.merge_new_rows``). Rows may name, as
parent or reference, a row given earlier in the same call. A call adding many rows to a nearly
empty SQLite database builds the indexes of ``records`` and ``audit_entries`` once the rows are in
(``persistence.deferred_indexes``).

Every row is checked before anything is reported: problems are collected per row (the same
message ``create_record`` would raise for that row, with its first problem) and raised together
as :class:`RowProblems`; once a row is bad nothing more is inserted. The caller's transaction
must then be rolled back (all or nothing), as for every domain error.
"""
from __future__ import annotations

import json
from collections import ChainMap
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Row, Table, bindparam, func, insert, select, text, update
from sqlalchemy.orm import Session

from benchbook.domain import collector
from benchbook.domain.catalog import dtypes
from benchbook.domain.catalog.lookup import (
    SchemaCache,
    SchemaMeta,
    find_collection,
    find_schema,
    schema_names,
)
from benchbook.domain.context import Ctx, RecordChange
from benchbook.domain.errors import BenchbookError, Invalid, NotFound, error_entry
from benchbook.domain.ids import ID_LENGTH, new_ids
from benchbook.domain.records.derived import names_from_targets, names_with_inherited
from benchbook.domain.records.references import ReferenceResolver, resolve_rows
from benchbook.domain.records.rows import (
    check_parent,
    check_parent_row,
    chunks,
    create_entry,
    insert_entries,
    lock_collection,
    record_name,
)
from benchbook.domain.records.values import (
    FILE_TYPES,
    LINKED_TYPES,
    REFERENCE_TYPES,
    as_list,
    blank,
    merge_new_rows,
    merge_values,
    reference_problems,
    reference_targets,
)
from benchbook.persistence import deferred_indexes
from benchbook.persistence.db import bulk_cache
from benchbook.persistence.field_indexes import field_index_name
from benchbook.persistence.rows_insert import insert_rows
from benchbook.persistence.tables import Collection, Field, Record, RecordLink, Schema, StoredFile, utcnow

CHUNK = 1000
"""Rows validated and inserted together (IN lists stay far below every backend's limit)."""
BULK_CACHE_ROWS = 10_000
"""A call creating at least this many records gets a larger page cache on SQLite
(``db.bulk_cache``)."""
ANALYZE_AFTER = 10_000
"""A call creating at least this many records, a tenth or more of all, refreshes the planner's
statistics of ``records`` and ``record_links`` (SQLite has none until told: without them it
picks the per-field index for an equality but not for a range, and the covering listing index
over both; PostgreSQL's autovacuum comes later, and a filter through references planned
without ``record_links``' figures took 420 ms instead of 80 at 100,000 records)."""
_RECORDS = cast(Table, Record.__table__)
_LINKS = cast(Table, RecordLink.__table__)
_NUMERIC = ("integer", "float")


class RowProblems(Invalid):
    """Rows that cannot be created: ``problems`` lists ``(row index, message)``, the message
    being what :func:`~benchbook.domain.records.writes.create_record` says about that row."""

    def __init__(self, problems: list[tuple[int, str]]) -> None:
        shown = "; ".join(f"row {i}: {msg}" for i, msg in problems[:10])
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        super().__init__(f"{len(problems)} row(s) cannot be created: {shown}{more}",
                         [error_entry(["body", i], msg, "row") for i, msg in problems])
        self.problems = problems


@dataclass
class _Row:
    """A validated row: what :func:`snapshot` and the inserts need of a record."""

    id: str
    dataset_id: str
    schema_id: str
    parent_id: str | None
    data: dict[str, Any]
    natural_name: str | None
    meta: SchemaMeta


class _Bulk:
    """State of one :func:`bulk_create_records` call."""

    def __init__(self, ctx: Ctx, collection: Collection, cache: SchemaCache) -> None:
        self.ctx = ctx
        self.s: Session = ctx.session
        self.collection = collection
        self.cache = cache
        self.allowed = set(schema_names(self.s, collection.id))
        self.schemas: dict[str, Schema | str] = {}  # given name → schema, or the problem
        self.metas: dict[str, SchemaMeta] = {}
        self.pending: dict[str, _Row] = {}  # validated rows not (yet) in the database
        self.keys_seen: dict[str, _Row] = {}  # uniqueness markers of this call's rows
        self.problems: list[tuple[int, str]] = []
        self.linked: dict[str, dict[str, Field]] = {}  # schema id → its reference and file fields by name
        self.parents: dict[str, Row[Any]] = {}  # live parents read (and locked) by an earlier chunk
        self.resolver: ReferenceResolver | None = None  # references typed as keys (made when first needed)

    # ----------------------------------------------------------------------------- lookups
    def schema(self, name: Any) -> Schema:
        key = str(name)
        if key not in self.schemas:
            try:
                found = find_schema(self.s, name)
                self.schemas[key] = (found if found.name in self.allowed else
                                     f"collection {self.collection.name!r} is not for schema {found.name!r}")
            except NotFound:
                self.schemas[key] = f"unknown schema {name!r}"
        value = self.schemas[key]
        if isinstance(value, str):
            raise Invalid(value)
        return value

    def prefetch(self, bodies: list[dict[str, Any]]) -> tuple[dict[str, Row[Any]], dict[str, Any], set[str]]:
        """One query each: live full-length parents (those an earlier chunk of the call read
        are not read again: their lock holds until the transaction ends, so they are as read),
        reference targets, uploaded files."""
        parents, targets, shas = self._named(bodies)
        found_parents = self._read_parents(parents)
        found_targets = reference_targets(self.s, targets - set(self.pending))
        return found_parents, {"targets": found_targets, "files": self._read_files(shas)}, shas

    def _named(self, bodies: list[dict[str, Any]]) -> tuple[set[str], set[str], set[str]]:
        """What the chunk names: ``(full-length parent ids, upper case; reference values as given, trimmed;
        file sha256s, lower case)``. Bodies of an unknown schema or with non-object data name no values."""
        parents: set[str] = set()
        targets: set[str] = set()
        shas: set[str] = set()
        for body in bodies:
            parent = body.get("parent_record_id")
            if isinstance(parent, str) and len(parent.strip()) >= ID_LENGTH:
                parents.add(parent.strip().upper())
            data = body.get("data") or {}
            meta = self._meta_or_none(body.get("schema_name"))
            if meta is None or not isinstance(data, dict):
                continue
            self._add_linked_values(meta, data, targets, shas)
        return parents, targets, shas

    def _add_linked_values(self, meta: SchemaMeta, data: dict[str, Any], targets: set[str], shas: set[str]) -> None:
        """Adds the items of ``data``'s reference values (a list, or comma-separated text) to ``targets``
        and of its file values, lower case, to ``shas``."""
        for name, f in self.linked_fields(meta).items():
            value = data.get(name)
            if blank(value):
                continue
            items = value.split(",") if isinstance(value, str) else value if isinstance(value, list) else []
            items = [i.strip() for i in items if isinstance(i, str)]
            if f.type in REFERENCE_TYPES:
                targets.update(items)
            elif f.type in FILE_TYPES:
                shas.update(i.lower() for i in items)

    def _read_parents(self, parents: set[str]) -> dict[str, Row[Any]]:
        """The live records of ``parents`` as ``id → (id, schema_id, dataset_id)`` rows, read and share-locked
        (one query per chunk of ids) unless pending or read by an earlier chunk."""
        for part in chunks(sorted(parents - set(self.pending) - self.parents.keys())):
            self.parents.update({r.id: r for r in self.s.execute(
                select(Record.id, Record.schema_id, Record.dataset_id).where(Record.id.in_(part),
                                                                            Record.deleted_at.is_(None))
                .with_for_update(read=True))})  # PostgreSQL: a delete of a parent waits, or is seen (#13)
        return {p: self.parents[p] for p in parents if p in self.parents}

    def _read_files(self, shas: set[str]) -> dict[str, dtypes.FileMeta]:
        """The uploaded files among ``shas``: ``sha256 → FileMeta`` (one query per chunk)."""
        files = {}
        for part in chunks(sorted(shas)):
            files.update({f.sha256: dtypes.FileMeta(filename=f.filename, size=f.size)
                          for f in self.s.scalars(select(StoredFile).where(StoredFile.sha256.in_(part)))})
        return files

    def linked_fields(self, meta: SchemaMeta) -> dict[str, Field]:
        """``meta``'s live reference and file fields by name (most schemas have none)."""
        sid = meta.schema.id
        if sid not in self.linked:
            self.linked[sid] = {f.name: f for f in meta.fields if f.type in LINKED_TYPES}
        return self.linked[sid]

    def meta(self, schema: Schema) -> SchemaMeta:
        if schema.id not in self.metas:
            self.metas[schema.id] = self.cache.meta(schema.id)
        return self.metas[schema.id]

    def _meta_or_none(self, name: Any) -> SchemaMeta | None:
        if not isinstance(name, str):
            return None
        try:
            return self.meta(self.schema(name))
        except BenchbookError:
            return None

    # --------------------------------------------------------------------------- one row
    def parent(self, meta: SchemaMeta, given: Any, found: dict[str, Row[Any]]) -> str | None:
        """What :func:`.rows.check_parent` decides, from the prefetched rows."""
        if meta.parent is None or not given or not isinstance(given, str) or len(given.strip()) < ID_LENGTH:
            rec = check_parent(self.s, meta, self.collection, given, ["body", "parent_record_id"])
            return rec.id if rec else None
        pid = given.strip().upper()
        row = self.pending.get(pid) or found.get(pid)
        check_parent_row(meta, self.collection, given, row, ["body", "parent_record_id"])
        assert row is not None
        return str(row.id)

    def file_lookup(self, found: dict[str, Any], shas: set[str]) -> Callable[[str], dtypes.FileMeta | None]:
        """Whether a file was uploaded, answered from the prefetch (a database read otherwise)."""
        files = found["files"]

        def lookup(sha: str) -> dtypes.FileMeta | None:
            if sha in files or sha in shas:
                return files.get(sha)  # type: ignore[no-any-return]
            row = self.s.get(StoredFile, sha)
            return dtypes.FileMeta(filename=row.filename, size=row.size) if row else None
        return lookup

    def merged(self, bodies: list[dict[str, Any]], found: dict[str, Any],
               shas: set[str]) -> dict[int, tuple[dict[str, Any], list[dict[str, Any]]]]:
        """:func:`.values.merge_new_rows` of a chunk, schema by schema: the offset in ``bodies``
        of each row whose schema is known → its ``(stored values, problems)``."""
        groups: dict[str, list[int]] = {}
        for offset, body in enumerate(bodies):
            meta = self._meta_or_none(body.get("schema_name"))
            if meta is not None and isinstance(body.get("data") or {}, dict):
                groups.setdefault(meta.schema.id, []).append(offset)
        lookup = self.file_lookup(found, shas)
        merged: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        for schema_id, offsets in groups.items():
            rows = [bodies[o].get("data") or {} for o in offsets]
            merged.update(zip(offsets, merge_new_rows(self.metas[schema_id], self.collection, rows,
                                                      loc=("body", "data"), file_lookup=lookup)))
        return merged

    def resolve(self, bodies: list[dict[str, Any]], merged: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]],
                found: dict[str, Any]) -> None:
        """References of the chunk typed as keys, natural names, id prefixes or suffixes become
        the ids they name (``references.resolve_rows``, one lookup per schema and field for the
        chunk); the targets they name join ``found``, values naming no record or several become
        problems of their rows."""
        groups: dict[str, list[int]] = {}
        for offset in merged:
            meta = self._meta_or_none(bodies[offset].get("schema_name"))
            if meta is not None and any(f.type in REFERENCE_TYPES for f in self.linked_fields(meta).values()):
                groups.setdefault(meta.schema.id, []).append(offset)
        targets = found["targets"]
        for schema_id, offsets in groups.items():
            fields = [f for f in self.metas[schema_id].fields if f.type in REFERENCE_TYPES]
            rows = [merged[o][0] for o in offsets]
            if self.resolver is None:
                self.resolver = ReferenceResolver(self.s, self.collection, self.cache)
            problems = resolve_rows(self.resolver, fields, rows, loc=("body", "data"),
                                    known=lambda v: v in targets or v in self.pending)
            fresh = {v for row in rows for f in fields for v in as_list(row.get(f.id))} - targets.keys()
            targets.update(reference_targets(self.s, fresh - self.pending.keys()))
            for i, errors in problems.items():
                merged[offsets[i]][1].extend(errors)

    def coerce(self, meta: SchemaMeta, merged: tuple[dict[str, Any], list[dict[str, Any]]],
               found: dict[str, Any]) -> dict[str, Any]:
        """``values.coerce_data`` for a new record, from its :meth:`merged` values, with the
        references prefetched."""
        loc = ("body", "data")
        out, errors = merged
        errors = errors + self.reference_problems(meta, out, found["targets"], loc)
        if errors:
            raise Invalid("; ".join(e["msg"] for e in errors), errors)
        return out

    def reference_problems(self, meta: SchemaMeta, data: dict[str, Any], targets: dict[str, tuple[Any, ...]],
                           loc: tuple[str, ...]) -> list[dict[str, Any]]:
        """``values.reference_problems`` over the prefetched targets, this call's rows counting
        as live records of the collection."""
        if not self.linked_fields(meta):
            return []  # no reference field: nothing to check
        mine = {t: (row.id, None, row.meta.schema.name, self.collection.id, self.collection.scope, None)
                for f in meta.fields if f.type in REFERENCE_TYPES
                for t in as_list(data.get(f.id)) if (row := self.pending.get(t)) is not None}
        return reference_problems(meta.fields, data, ChainMap(mine, targets), self.collection, loc)

    def validate(self, index: int, body: dict[str, Any], rid: str, found_parents: dict[str, Row[Any]],
                 found: dict[str, Any], merged: tuple[dict[str, Any], list[dict[str, Any]]] | None) -> _Row | None:
        """The row as it will be stored, or None after noting its first problem."""
        try:
            schema = self.schema(body["schema_name"])
            meta = self.meta(schema)
            parent_id = self.parent(meta, body.get("parent_record_id"), found_parents)
            if merged is None:  # not an object (the API's document refuses it before): as before
                merged = merge_values(meta, self.collection, body.get("data") or {}, current=None,
                                      loc=("body", "data"), file_lookup=self.file_lookup(found, set()))
            data = self.coerce(meta, merged, found)
        except BenchbookError as exc:
            self.problems.append((index, exc.detail))
            return None
        return _Row(id=rid, dataset_id=self.collection.id, schema_id=schema.id, parent_id=parent_id, data=data,
                    natural_name=record_name(meta, data, self.collection.timezone), meta=meta)

    # ----------------------------------------------------------------------- uniqueness
    def clashes(self, rows: list[tuple[int, _Row]]) -> set[int]:
        """Note a problem for each row that breaks a uniqueness key (``uniqueness.check_unique``)
        against live records or an earlier row of this call; returns those rows' indexes."""
        keyed = [(i, r) for i, r in rows if r.meta.schema.unique_keys]
        if not keyed:
            return set()
        existing = self._existing_keys(keyed)
        bad = set()
        for i, r in keyed:
            message = self._clash(r, existing)
            if message is not None:
                self.problems.append((i, message))
                bad.add(i)
            else:
                self._remember_keys(r)
        return bad

    def _existing_keys(self, keyed: list[tuple[int, _Row]]) -> dict[str, Any]:
        """Live records that may clash with ``keyed`` rows: ``marker → (id, parent_id, dataset_id,
        natural_name, data)`` row (:func:`_marker`), one query per schema and uniqueness key."""
        existing: dict[str, Any] = {}
        by_schema: dict[str, list[_Row]] = {}
        for _, r in keyed:
            by_schema.setdefault(r.schema_id, []).append(r)
        for group in by_schema.values():
            meta = group[0].meta
            for key in meta.schema.unique_keys:
                for other in self._candidates(meta, key, group):
                    existing.setdefault(_marker(meta, key, other.parent_id, other.dataset_id, other.data), other)
        return existing

    def _clash(self, r: _Row, existing: dict[str, Any]) -> str | None:
        """The message for the first uniqueness key of ``r`` (keys with a blank value exempt) whose values an
        earlier row of this call or an ``existing`` record already has, else None."""
        names = {f.id: f.name for f in r.meta.fields}
        for key in r.meta.schema.unique_keys:
            if any(blank(r.data.get(fid)) for fid in key):
                continue
            marker = _marker(r.meta, key, r.parent_id, r.dataset_id, r.data)
            other = self.keys_seen.get(marker) or existing.get(marker)
            if other is not None:
                label = f"{other.natural_name!r} " if other.natural_name else ""
                fields = ", ".join(names.get(k, k) for k in key)
                return f"record {label}({other.id}) already has these values for unique key ({fields})"
        return None

    def _remember_keys(self, r: _Row) -> None:
        """Notes ``r``'s uniqueness markers (keys with a blank value exempt) for the rows after it."""
        for key in r.meta.schema.unique_keys:
            if not any(blank(r.data.get(fid)) for fid in key):
                self.keys_seen[_marker(r.meta, key, r.parent_id, r.dataset_id, r.data)] = r

    def _candidates(self, meta: SchemaMeta, key: list[str], group: list[_Row]) -> Iterable[Any]:
        """Live records of the schema that share a parent (top level: the collection) with a
        row of ``group`` and the first key field's value of one of them."""
        rows = [r for r in group if not any(blank(r.data.get(fid)) for fid in key)]
        if not rows:
            return []
        conds: list[ColumnElement[bool]] = [Record.schema_id == meta.schema.id, Record.deleted_at.is_(None)]
        if meta.parent is not None:
            conds.append(Record.parent_id.in_({r.parent_id for r in rows}))
        else:
            conds += [Record.parent_id.is_(None), Record.dataset_id == self.collection.id]
        types = {f.id: f.type for f in meta.fields}
        first = key[0]
        if types.get(first) in ("string", "url", "date", "datetime", "reference", "file", *_NUMERIC):
            accessor = "as_float" if types[first] in _NUMERIC else "as_string"
            conds.append(getattr(Record.data[first], accessor)().in_({r.data[first] for r in rows}))
        return self.s.execute(select(Record.id, Record.parent_id, Record.dataset_id, Record.natural_name,
                                     Record.data).where(*conds)).all()

    # -------------------------------------------------------------------------- writing
    def insert(self, rows: list[_Row]) -> None:
        """One statement each for the records and their ``create`` entries, one executemany of
        their links."""
        if not rows:
            return
        now = utcnow()
        conn = self.s.connection()
        zones = {self.collection.id: self.collection.timezone}
        named = names_from_targets(self.s, self.cache, rows, zones)  # references shown by their targets' names
        for r in rows:
            r.natural_name = named.get(r.id, r.natural_name)
        insert_rows(conn, _RECORDS, [
            {"id": r.id, "dataset_id": r.dataset_id, "schema_id": r.schema_id, "parent_id": r.parent_id,
             "data": r.data, "natural_name": r.natural_name, "created_at": now, "updated_at": now} for r in rows])
        # names whose template uses inherited fields, once the parents (maybe among these rows) are in
        renamed = names_with_inherited(self.s, self.cache, [r for r in rows if r.id not in named], zones)
        if renamed:
            conn.execute(update(_RECORDS).where(_RECORDS.c.id == bindparam("rid")).values(natural_name=bindparam("nn")),
                         [{"rid": rid, "nn": name} for rid, name in renamed.items()])
            for r in rows:
                r.natural_name = renamed.get(r.id, r.natural_name)
        links = [{"source_id": r.id, "field_id": f.id, "target_id": target,
                  "kind": "record" if f.type in REFERENCE_TYPES else "file"}
                 for r in rows for f in r.meta.fields if f.type in REFERENCE_TYPES or f.type in FILE_TYPES
                 for target in dict.fromkeys(as_list(r.data.get(f.id)))]
        if links:
            conn.execute(insert(_LINKS), links)
        insert_entries(self.s, self.entries(rows, now))
        self.ctx.changes.extend(RecordChange("created", r.id, r.schema_id, r.dataset_id, {}, r.data) for r in rows)

    def entries(self, rows: list[_Row], now: datetime) -> list[dict[str, Any]]:
        """The ``create`` entries, column for column what a single create stores
        (:func:`.rows.create_entry`; tests/domain/test_bulk.py compares every column). Their
        time is ``now``, the records' ``created_at``: one statement writes them all (their ids,
        made in order, keep them in order)."""
        return [create_entry(self.ctx, cast(Record, r), r.meta, self.collection, now) for r in rows]


def _marker(meta: SchemaMeta, key: list[str], parent_id: str | None, dataset_id: str, data: dict[str, Any]) -> str:
    """Siblings (same parent; top level: same collection) with equal key values share a marker.
    Numbers compare as numbers, as the SQL check does."""
    types = {f.id: f.type for f in meta.fields}
    values = [data.get(fid) for fid in key]
    values = [float(v) if types.get(fid) in _NUMERIC and isinstance(v, (int, float)) else v
              for fid, v in zip(key, values)]
    return json.dumps([meta.schema.id, parent_id or ["collection", dataset_id], values], sort_keys=True)


def bulk_create_records(ctx: Ctx, collection_name: str, rows: Sequence[dict[str, Any]], *,
                        ids: list[str] | None = None, cache: SchemaCache | None = None,
                        progress: Callable[[int], None] | None = None,
                        stored: list[dict[str, Any]] | None = None) -> list[str]:
    """Create a record for each RecordCreate-like row (``schema_name``, ``parent_record_id``,
    ``data``) in collection ``collection_name``, each with the ``create`` entry
    ``create_record`` writes, inside the caller's transaction. Returns the new ids in row order.
    ``rows`` may be any sequence: it is read a chunk (a slice) at a time, and once whole for the
    schemas' names; a view that builds each row when read keeps a large call's memory down.

    ``ids``: ids to give the rows (fresh ``new_ids`` ones otherwise), so that rows can name an
    earlier row as parent or reference target. ``progress(n)`` is told about each chunk.
    ``stored``: each row's values as :func:`.values.merge_values` already stored them for a new
    record (field id → value; the import checks every row first, to report its problems by row
    and field): they are then not checked again (references, parents and unique keys still are).
    Raises ``NotFound`` (collection) and :class:`RowProblems` listing every bad row (then roll
    the transaction back: rows before the first bad chunk may have been inserted).
    """
    s = ctx.session
    collection = find_collection(s, collection_name)
    if not lock_collection(s, collection.id, share=True):  # deleted while this waited for it (#13)
        raise NotFound(f"collection {collection_name!r} not found")
    run = _Bulk(ctx, collection, cache or SchemaCache(s))
    ids = list(ids) if ids is not None else new_ids(len(rows))
    if len(ids) != len(rows) or (stored is not None and len(stored) != len(rows)):
        raise ValueError("ids and stored must give one item per row")
    s.flush()  # the batch and anything else pending go first (entries point at the batch)
    conn = s.connection()
    with (collector.paused(), bulk_cache(conn) if len(rows) >= BULK_CACHE_ROWS else nullcontext(),
          _indexes_built_after(run, rows, "records"), _indexes_built_after(run, rows, "audit_entries")):
        _create_chunks(run, rows, ids, progress, stored)
    if run.problems:
        raise RowProblems(sorted(run.problems))
    if len(rows) >= ANALYZE_AFTER and len(rows) * 10 >= (s.scalar(select(func.count()).select_from(Record)) or 0):
        s.execute(text("ANALYZE records"))
        s.execute(text("ANALYZE record_links"))
    return ids


def _indexes_built_after(run: _Bulk, rows: Sequence[dict[str, Any]], table: str) -> AbstractContextManager[Any]:
    """``deferred_indexes.deferred`` for ``table`` when the rows are many and the table nearly
    empty (``deferred_indexes.worth_it``): its indexes are built once the rows are in. The
    uniqueness check's query (:meth:`_Bulk._candidates`) keeps the indexes it reads."""
    conn = run.s.connection()
    if not deferred_indexes.worth_it(conn, table, len(rows)):
        return nullcontext()
    keep: set[str] = set()
    if table == "records":
        names = {body.get("schema_name") for body in rows if isinstance(body.get("schema_name"), str)}
        keys = [key for name in names if (meta := run._meta_or_none(name)) is not None
                for key in meta.schema.unique_keys]
        if keys:
            keep = {"ix_records_listing", "ix_records_parent_id", *(field_index_name(k[0]) for k in keys)}
    return deferred_indexes.deferred(conn, table, keep=keep)


def _create_chunks(run: _Bulk, rows: Sequence[dict[str, Any]], ids: list[str],
                   progress: Callable[[int], None] | None, stored: list[dict[str, Any]] | None) -> None:
    """Validate and insert ``rows`` chunk by chunk; nothing more is inserted once a row is bad.
    ``stored``: the rows' values, already checked (:func:`bulk_create_records`)."""
    for start in range(0, len(rows), CHUNK):
        bodies = list(rows[start:start + CHUNK])
        found_parents, found, shas = run.prefetch(bodies)
        merged = (run.merged(bodies, found, shas) if stored is None
                  else {offset: (stored[start + offset], []) for offset in range(len(bodies))})
        run.resolve(bodies, merged, found)
        good: list[tuple[int, _Row]] = []
        for offset, body in enumerate(bodies):
            row = run.validate(start + offset, body, ids[start + offset], found_parents, found, merged.get(offset))
            if row is not None:
                run.pending[row.id] = row
                good.append((start + offset, row))
        bad = run.clashes(good)
        for i, row in good:
            if i in bad:
                run.pending.pop(row.id, None)
        if not run.problems:
            run.insert([row for _, row in good])
            run.pending.clear()
        if progress:
            progress(len(bodies))


# ------------------------------------------------------------------ delete, restore, purge
# Set-based bodies of records.soft_delete_records / restore_records / purge_records: the same
# entries (tests/domain/test_bulk.py compares them with audit.write's, column by column), one
# executemany of entries and one UPDATE/DELETE per chunk of ids instead of a statement per record.


