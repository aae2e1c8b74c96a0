"""An import from start to end (issue 14 *Import*): a :class:`~.readers.Table` becomes records
of a collection, in one ``import`` batch, inside the caller's transaction.

1. The schema: ``schema``, or per row a ``schema_name`` column; or, with ``create_schema``, one
   inferred from the file (:mod:`.infer`), created, and added to the collection (which is
   created when missing).
2. Each row is checked: its cells read for their fields (:mod:`.columns`, :mod:`.dates`), its
   parent found (:mod:`.parents`), its key matched (:mod:`.keys`), its values checked by the
   same rules as any record (``values.merge_values``). Problems go to a
   :class:`~.problems.ProblemLog`, summarised one line per distinct problem.
3. The rows are written: new records set-based (``records.bulk.bulk_create_records``, in a
   savepoint), matched ones through ``records.writes.update_record`` (each in a savepoint), all
   in one batch (the client's, when ``ctx.batch_id`` is set).

All or nothing unless ``skip_bad``: when any row has a problem the result says so
(:attr:`ImportResult.failed`) and the caller must roll the transaction back. With ``skip_bad``
the good rows are written and the bad ones returned (:attr:`ImportResult.rejected`,
:func:`.rejected.rejected_file`). ``dry_run``: everything is checked and the caller rolls back.
"""
from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import PurePath
from typing import Any, Protocol, overload

from sqlalchemy.orm import Session

from benchbook.domain import abandon, collector
from benchbook.domain.catalog import collections as collection_rules
from benchbook.domain.catalog import schemas as schema_rules
from benchbook.domain.catalog.dtypes import ValueProblem, coerce_value
from benchbook.domain.catalog.lookup import (
    SchemaCache,
    SchemaMeta,
    find_collection,
    find_schema,
    schema_names,
)
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError, Conflict, Invalid, NotFound
from benchbook.domain.history import entries as audit
from benchbook.domain.ids import ID_BATCH, id_stream
from benchbook.domain.imports.columns import SPECIAL_COLUMNS, blank, cell_value, match_columns
from benchbook.domain.imports.dates import DateRules, day_month_values
from benchbook.domain.imports.infer import (
    InferredField,
    display_template,
    field_name,
    infer_fields,
    missing_marker,
)
from benchbook.domain.imports.infer_refs import propose_references
from benchbook.domain.imports.keys import KeyIndex
from benchbook.domain.imports.parents import AUTO, ParentIndex, ParentKey
from benchbook.domain.imports.problems import ProblemLog, Summary
from benchbook.domain.imports.readers import Cells, Table, cell_at
from benchbook.domain.imports.references import REFERENCE_KINDS, ImportReferences
from benchbook.domain.records.bulk import RowProblems, bulk_create_records
from benchbook.domain.records.values import (
    LINKED_TYPES,
    REFERENCE_TYPES,
    as_list,
    merge_new_rows,
    merge_values,
)
from benchbook.domain.records.writes import update_record
from benchbook.persistence.tables import Collection, Field, StoredFile

_SCHEMA_NAME = re.compile(r"[a-z][a-z0-9_]{0,62}")
_COLLECTION_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
CHECK_STEP = 500
"""Rows checked between two progress reports."""
PREVIEW_ROWS = 5
"""Rows a result shows as read (``ImportResult.preview``)."""


@dataclass
class ImportOptions:
    """What to import into and how: the ``collection`` (name or id); ``schema`` (name; with
    ``create_schema`` the name of the new schema, default the file's name); ``key`` (field
    names to match existing records by: upsert); ``parent_key`` (``[COLUMN=][SCHEMA.]FIELD``);
    ``dates`` (day-month order, date format); ``skip_bad``; ``dry_run``; ``create_missing``
    (bare target records for reference cells naming none: :mod:`.references`); ``references``
    (with ``create_schema``: ``auto`` makes the columns :func:`.infer_refs.propose_references`
    finds reference fields, ``none`` only proposes them)."""

    collection: str
    schema: str | None = None
    create_schema: bool = False
    key: list[str] = field(default_factory=list)
    parent_key: str | None = None
    dates: DateRules = field(default_factory=DateRules)
    skip_bad: bool = False
    dry_run: bool = False
    create_missing: bool = False
    references: str = "none"


class Progress(Protocol):
    """Told how an import goes: a ``phase`` (``"checking"``, ``"writing"``) of ``total`` rows
    starts, then ``advance(n)`` as rows are done."""

    def phase(self, name: str, total: int) -> None:
        """A phase of ``total`` rows starts."""

    def advance(self, n: int) -> None:
        """``n`` more rows of the phase are done."""


@dataclass
class ImportResult:
    """What an import did (or, when :attr:`failed` or ``dry_run``, would have done): counts of
    records ``created``, ``updated``, ``unchanged`` (matched, nothing to change) and rows
    ``skipped``; the ``batch_id``; ``problems`` summarised; ``notes`` (columns naming no field,
    how day-month dates were read); ``schema`` and ``inferred`` fields when it created a
    schema; ``rejected`` rows ``(number, cells, problem)`` when ``skip_bad``."""

    file: str
    unit: str
    columns: list[str]
    skip_bad: bool = False
    dry_run: bool = False
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    skipped: int = 0
    batch_id: str | None = None
    problems: list[Summary] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    schema: str | None = None
    created_collection: bool = False
    inferred: list[InferredField] = field(default_factory=list)
    rejected: list[tuple[int, Cells, str]] = field(default_factory=list)
    display_template: str | None = None
    created_missing: list[dict[str, Any]] = field(default_factory=list)
    preview: list[dict[str, Any]] = field(default_factory=list)
    """The first rows as read (field name → value given), for a dry run to show."""

    @property
    def failed(self) -> bool:
        """True when rows had problems and ``skip_bad`` was off: nothing may be written."""
        return bool(self.problems) and not self.skip_bad

    @property
    def commit(self) -> bool:
        """Whether the caller should commit: not :attr:`failed` and not a dry run."""
        return not self.failed and not self.dry_run

    def summary_line(self) -> str:
        """``created 3, updated 1, unchanged 0, skipped 2 (batch ID; undo: benchbook imports undo ID)``."""
        counts = (f"created {self.created:,}, updated {self.updated:,}, unchanged {self.unchanged:,}, "
                  f"skipped {self.skipped:,}")
        if not (self.batch_id and self.commit):
            return counts
        return counts + f" (batch {self.batch_id}; undo: benchbook imports undo {self.batch_id})"

    def as_json(self) -> dict[str, Any]:
        """ImportResultResponse (docs/import.md)."""
        return {"file": self.file, "created": self.created, "updated": self.updated, "unchanged": self.unchanged,
                "skipped": self.skipped, "batch_id": self.batch_id if self.commit else None,
                "dry_run": self.dry_run, "schema": self.schema, "created_collection": self.created_collection,
                "inferred_fields": [{"column": f.column, **f.body(), **({"reference": f.reference} if f.reference else {})}
                                    for f in self.inferred],
                "problems": [s.as_json(self.unit) for s in self.problems], "notes": list(self.notes),
                "display_template": self.display_template, "created_missing": self.created_missing,
                "preview": self.preview}


@dataclass
class _Plan:
    """How rows of one schema are read: the fields their columns name, key and parent indexes."""

    meta: SchemaMeta
    mapping: dict[str, Field]
    keys: KeyIndex | None = None
    parents: ParentIndex | None = None

    @cached_property
    def linked(self) -> bool:
        """Whether the schema has reference or file fields (their values are looked up by name
        when written: ``bulk._Bulk.prefetch``)."""
        return any(f.type in LINKED_TYPES for f in self.meta.fields)


@dataclass(slots=True)
class _Row:
    number: int
    plan: _Plan
    data: dict[str, Any]
    parent: str | None = None
    parent_given: bool = False
    record_id: str | None = None
    new_id: str = ""
    stored: dict[str, Any] | None = None
    """A new record's values as the check stored them (field id → value), so that the bulk
    create does not check them again."""


@dataclass
class _Pending:
    """A row of the file between reading and finishing (:meth:`_Import.check`): its
    :class:`_Row` (None when its schema is unknown), fields left blank, fields whose cell could
    not be read (one problem each, not two), and its problems not yet noted: ``problems`` come
    before the parent's, ``after_parent`` after them (the key's)."""

    number: int
    row: _Row | None = None
    blanks: list[str] = field(default_factory=list)
    unread: set[str] = field(default_factory=set)
    problems: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    after_parent: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def note(self, message: str, **kw: Any) -> None:
        """Keep a problem for :attr:`problems` (``ProblemLog.add``'s keywords)."""
        self.problems.append((message, kw))


class _Import:
    """State of one :func:`import_table` call."""

    def __init__(self, ctx: Ctx, table: Table, opts: ImportOptions, progress: Progress | None) -> None:
        self.ctx, self.s, self.table, self.opts, self.progress = ctx, ctx.session, table, opts, progress
        self.log = ProblemLog()
        self.cache = SchemaCache(ctx.session)
        self.result = ImportResult(table.name, table.unit, list(table.columns), opts.skip_bad, opts.dry_run)
        self.index = {c: i for i, c in enumerate(table.columns)}
        self.parent_key = ParentKey.parse(opts.parent_key) if opts.parent_key else None
        if self.parent_key is None and "parent" in self.index:
            self.parent_key = ParentKey("parent", None, AUTO)
        if self.parent_key and self.parent_key.column not in self.index:
            raise Invalid(f"parent key: the file has no column {self.parent_key.column!r} "
                          f"(columns: {', '.join(table.columns)})")
        self.skip = set(SPECIAL_COLUMNS) | ({self.parent_key.column} if self.parent_key else set())
        self.rules: dict[str, DateRules] = {}
        self.new_ids: dict[str, str] = {}
        self.refs: ImportReferences | None = None
        self.ids = id_stream(max(1, min(ID_BATCH, len(table.rows))))
        """Where new records' ids come from, made many at once (``ids.new_ids``); no more at once
        than the file has rows, so that a small file's ids are made without numpy (loading it
        was 0.13 s of a two-row ``benchbook import``)."""

    def meta(self, schema_id: str) -> SchemaMeta:
        """The schema's meta (plain objects: the per-row checks read field attributes hundreds
        of thousands of times, several times faster than on ORM rows)."""
        return self.cache.meta(schema_id)

    def values(self, column: str) -> list[Any]:
        i = self.index[column]
        abandon.check()
        return [cell for _, cells in self.table.rows if not blank(cell := cell_at(cells, i))]

    # ------------------------------------------------------------------ schema and plans
    def collection(self) -> Collection | None:
        try:
            return find_collection(self.s, self.opts.collection)
        except NotFound:
            if self.opts.create_schema:
                return None
            raise

    def create_schema(self, collection: Collection | None) -> tuple[Collection, SchemaMeta, dict[str, Field]]:
        opts, ctx = self.opts, self.ctx
        name = opts.schema or field_name(PurePath(self.table.name).stem)
        if not _SCHEMA_NAME.fullmatch(name):
            raise Invalid(f"schema name {name!r}: lower-case letters, digits and _, starting with a letter")
        columns = [c for c in self.table.columns if c and c not in self.skip]
        values = {c: self.values(c) for c in columns}
        inferred = infer_fields(columns, values, opts.dates, len(self.table.rows))
        if opts.references not in ("none", "auto"):
            raise Invalid(f"references {opts.references!r}: expected none or auto")
        for note in propose_references(self.s, collection, inferred, values, apply=opts.references == "auto",
                                       create_missing=opts.create_missing):
            self.log_note(note)
        template = display_template(inferred)
        self.result.display_template = template
        parent = None
        if self.parent_key:
            if not self.parent_key.schema:
                how = "natural_name" if self.parent_key.field == AUTO else self.parent_key.field
                raise Invalid(f"a new schema's records get their parent through column "
                              f"{self.parent_key.column!r}: name the parent schema in the parent key, "
                              f"e.g. '{self.parent_key.column}=SCHEMA.{how}'")
            parent = _schema(self.s, self.parent_key.schema)
        schema = schema_rules.create_schema(ctx, {"name": name, "parent": parent.name if parent else None,
                                                   "display_template": template,
                                                   "fields": [f.body() for f in inferred]})
        if collection is None:
            if not _COLLECTION_NAME.fullmatch(opts.collection):
                raise Invalid(f"collection name {opts.collection!r}: letters, digits, _ . -, starting with a "
                              "letter or digit")
            collection = collection_rules.create_collection(ctx, {
                "name": opts.collection, "schemas": [*([parent.name] if parent else []), name]})
            self.result.created_collection = True
        else:
            collection_rules.update_collection(ctx, collection.id,
                                               {"schemas": [*schema_names(self.s, collection.id), name]})
        self.result.schema, self.result.inferred = name, inferred
        meta = self.meta(schema.id)
        return collection, meta, {f.column: meta.by_name[f.name] for f in inferred}

    def plans(self, found: Collection | None) -> tuple[Collection, _Plan | None, dict[str, _Plan]]:
        """The collection (created with the schema when missing), the plan of the one schema (or
        None), and plans by schema name when rows name their schema (``schema_name``)."""
        opts = self.opts
        fixed: _Plan | None = None
        if opts.create_schema:
            collection, meta, mapping = self.create_schema(found)
            fixed = _Plan(meta, mapping)
        elif found is None:
            raise NotFound(f"collection {opts.collection!r} not found")
        elif opts.schema:
            collection = found
            schema = _schema(self.s, opts.schema)
            if schema.name not in schema_names(self.s, collection.id):
                raise Conflict(f"collection {collection.name!r} is not for schema {schema.name!r}")  # as a record write
            meta = self.meta(schema.id)
            fixed = _Plan(meta, match_columns(self.table.columns, meta.fields, self.skip))
        elif "schema_name" not in self.index:
            raise Invalid("name the schema of the records, or give the file a schema_name column")
        else:
            collection = found
        plans: dict[str, _Plan] = {}
        if fixed is None:
            for name in schema_names(self.s, collection.id):
                meta = self.meta(_schema(self.s, name).id)
                plans[name] = _Plan(meta, match_columns(self.table.columns, meta.fields, self.skip))
        for plan in ([fixed] if fixed else list(plans.values())):
            if opts.key:
                plan.keys = KeyIndex(self.s, collection, plan.meta, opts.key, self.table.unit)
            if self.parent_key and plan.meta.parent is not None:
                wanted = self.parent_key.schema
                if wanted and fixed and wanted != plan.meta.parent.name:
                    raise Invalid(f"parent key: the parent of {plan.meta.schema.name!r} records is a "
                                  f"{plan.meta.parent.name!r} record, not a {wanted!r} one")
                plan.parents = ParentIndex(self.s, collection, self.meta(plan.meta.parent.id),
                                           self.parent_key.field, opts.dates)
        self.note_columns(fixed, plans)
        self.refs = ImportReferences(self.s, collection, self.cache, create_missing=opts.create_missing, ids=self.ids,
                                     allowed=set(schema_names(self.s, collection.id)))
        return collection, fixed, plans

    def note_columns(self, fixed: _Plan | None, plans: dict[str, _Plan]) -> None:
        named = {c for p in ([fixed] if fixed else plans.values()) for c in p.mapping}
        unknown = [c for c in self.table.columns if c and c not in self.skip and c not in named]
        if unknown:
            which = f"schema {fixed.meta.schema.name!r}" if fixed else "the collection's schemas"
            self.log_note(f"columns that name no field of {which} were not imported: {', '.join(unknown)}")
        for plan in ([fixed] if fixed else plans.values()):
            for column, f in plan.mapping.items():
                if f.type in ("date", "datetime") and column not in self.rules:
                    values = self.values(column)
                    self.rules[column] = rules = self.opts.dates.for_column(values)
                    example = day_month_values(values)
                    if example and self.opts.dates.dayfirst is None and not self.opts.dates.date_format:
                        order = "day first" if rules.dayfirst else "month first"
                        self.log_note(f"column {column!r}: dates like {example!r} were read {order}"
                                      + ("" if rules.dayfirst else " (dayfirst reads them day first)"))

    def log_note(self, text: str) -> None:
        self.result.notes.append(text)

    # ------------------------------------------------------------------------ checking
    def check(self, collection: Collection, fixed: _Plan | None, plans: dict[str, _Plan]) -> list[_Row]:
        """The rows to write, each checked; every problem noted in :attr:`log`, row by row in
        file order. Rows are checked :data:`CHECK_STEP` at a time: each row's cells are read and
        its key matched (:meth:`read_row`), then the new rows' values are checked column by
        column (``values.merge_new_rows``), edits' values row by row, then each row is finished
        in file order (:meth:`finish_row`: its parent, which may be an earlier row of the file,
        and its problems in the order a row-by-row check meets them)."""
        out: list[_Row] = []
        rows = self.table.rows
        if self.progress:
            self.progress.phase("checking", len(rows))
        lookup = _file_lookup(self.s)
        for start in range(0, len(rows), CHECK_STEP):
            abandon.check()
            step = rows[start:start + CHECK_STEP]
            read = [self.read_row(collection, fixed, plans, number, cells) for number, cells in step]
            merged = self.merge([r for r in read if r.row is not None], collection, lookup)
            self.resolve_references(read, merged)
            for pending, (_, cells) in zip(read, step):
                row = self.finish_row(pending, cells, merged.get(id(pending)))
                if row is not None:
                    out.append(row)
            if not self.opts.skip_bad:  # no rejected-rows file will want them
                self.table.release_cells(start, start + len(step))
            if self.progress:
                self.progress.advance(len(step))
        return out

    def read_row(self, collection: Collection, fixed: _Plan | None, plans: dict[str, _Plan], number: int,
                 cells: Cells) -> _Pending:
        """Row ``number``'s schema (``fixed``, else the one its ``schema_name`` cell names:
        :meth:`row_plan`), cells read as its fields' values (:meth:`read_cells`) and key matched
        (:meth:`match_key`); its problems so far kept (not yet noted) in the order met. The
        :class:`_Pending`'s ``row`` is None when the row's schema is unknown."""
        pending = _Pending(number)
        plan = fixed if fixed is not None else self.row_plan(collection, plans, number, cells, pending)
        if plan is None:
            return pending
        pending.row = row = _Row(number, plan, self.read_cells(plan, cells, pending))
        if plan.keys is not None:
            self.match_key(collection, plan.keys, row, pending)
        return pending

    def row_plan(self, collection: Collection, plans: dict[str, _Plan], number: int, cells: Cells,
                 pending: _Pending) -> _Plan | None:
        """The plan of the schema row ``number``'s ``schema_name`` cell names (``plans`` by schema
        name), or None with an ``unknown_schema`` problem kept in ``pending``. Keeps an
        ``unknown_field`` problem for each filled column naming a field of another of the
        collection's schemas but not of this one, in column order."""
        given = cell_at(cells, self.index["schema_name"])
        name = str(given).strip() if not blank(given) else ""
        plan = plans.get(name)
        if plan is None:
            problem = (f"schema_name: collection {collection.name!r} is not for schema {name!r}" if name
                       else "schema_name: no schema named")
            pending.note(problem, field="schema_name", kind="unknown_schema", value=given)
            return None
        for column in self.index:
            if (column not in plan.mapping and column not in self.skip
                    and not blank(cell_at(cells, self.index[column]))
                    and any(column in p.mapping for p in plans.values())):
                pending.note(f"{column}: not a field of schema {name!r}", field=column, kind="unknown_field")
        return plan

    def read_cells(self, plan: _Plan, cells: Cells, pending: _Pending) -> dict[str, Any]:
        """The row's values (field name → value) read from its ``cells`` for the fields the
        plan's columns name. Blank cells and missing markers are left out (their field names
        added to ``pending.blanks``); a cell that cannot be read is left out with a problem kept
        in ``pending`` (its field name added to ``pending.unread``)."""
        data: dict[str, Any] = {}
        get, width = (cells.get if isinstance(cells, dict) else None), len(cells)  # cell_at, inline: every cell
        for column, f in plan.mapping.items():
            i = self.index[column]
            cell = get(i) if get is not None else cells[i] if i < width else None
            if blank(cell) or missing_marker(cell, f.type):
                pending.blanks.append(f.name)
                continue
            try:
                data[f.name] = cell_value(f, cell, self.rules.get(column, self.opts.dates))
            except ValueProblem as exc:
                pending.unread.add(f.name)
                pending.note(f"{f.name}: {exc.msg}", field=f.name, kind=exc.type_, value=cell)
        return data

    def match_key(self, collection: Collection, keys: KeyIndex, row: _Row, pending: _Pending) -> None:
        """Set ``row.record_id`` to the existing record the row's key values name (None: a new
        record). Key values that cannot be coerced count as missing (the row's value check
        reports them); a key problem (clash, duplicate) is kept in ``pending.after_parent``."""
        key: dict[str, Any] = {}
        for f in keys.fields:
            try:
                key[f.id] = coerce_value(f.type, f.restrictions or {}, row.data.get(f.name), tz=collection.timezone)
            except ValueProblem:
                key[f.id] = None  # reported with the row's values below
        rid, key_problem, kind = keys.match(row.number, key)
        if key_problem:
            pending.after_parent.append((key_problem, {"field": "key", "kind": kind}))
        row.record_id = rid

    def merge(self, read: list[_Pending], collection: Collection,
              lookup: Any) -> dict[int, tuple[dict[str, Any], list[dict[str, Any]]]]:
        """``(stored values, problems)`` of each read row (by ``id()`` of its :class:`_Pending`):
        new records' column by column per schema, edits' (merged into the record's values)
        one by one."""
        out: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
        new: dict[int, list[tuple[_Pending, _Row]]] = {}
        for pending in read:
            row = pending.row
            assert row is not None
            current = row.plan.keys.records[row.record_id] if row.plan.keys and row.record_id else None
            if current is None:
                new.setdefault(id(row.plan), []).append((pending, row))
                continue
            by_name = row.plan.meta.by_name  # a blank clears a value the record has; others are no-ops
            incoming = {**row.data, **dict.fromkeys(n for n in pending.blanks if by_name[n].id in current)}
            row.data = incoming
            out[id(pending)] = merge_values(row.plan.meta, collection, incoming, current=current, loc=("data",),
                                            file_lookup=lookup)
        for group in new.values():
            results = merge_new_rows(group[0][1].plan.meta, collection, [row.data for _, row in group],
                                     loc=("data",), file_lookup=lookup)
            out.update((id(pending), result) for (pending, _), result in zip(group, results))
        return out

    def resolve_references(self, read: list[_Pending],
                           merged: dict[int, tuple[dict[str, Any], list[dict[str, Any]]]]) -> None:
        """The reference cells of the rows checked together, typed as ids, keys or names,
        resolved set-based per schema (:class:`.references.ImportReferences`)."""
        assert self.refs is not None
        groups: dict[int, list[tuple[dict[str, Any], dict[str, Any], list[dict[str, Any]]]]] = {}
        metas: dict[int, SchemaMeta] = {}
        for pending in read:
            if pending.row is None or id(pending) not in merged:
                continue
            if len(self.result.preview) < PREVIEW_ROWS:
                self.result.preview.append(dict(pending.row.data))
            if not pending.row.plan.linked:
                continue
            stored, errors = merged[id(pending)]
            meta = pending.row.plan.meta
            metas[id(meta)] = meta
            groups.setdefault(id(meta), []).append((stored, pending.row.data, errors))
        for key, rows in groups.items():
            self.refs.apply(metas[key], rows)

    def finish_row(self, pending: _Pending, cells: Cells,
                   merged: tuple[dict[str, Any], list[dict[str, Any]]] | None) -> _Row | None:
        """Note row ``pending``'s problems in the order a row-by-row check meets them (cells,
        parent, key, values); the row to write, or None when it has a problem."""
        log, number, row = self.log, pending.number, pending.row
        for message, kw in pending.problems:
            log.add(number, message, **kw)
        if row is None or merged is None:
            return None
        self.find_parent(row, cells)
        for message, kw in pending.after_parent:
            log.add(number, message, **kw)
        stored, errors = merged
        for e in errors:
            if str(e["loc"][-1]) not in pending.unread:
                log.add(number, e["msg"], field=str(e["loc"][-1]), kind=e["type"], value=e.get("input"))
        if number in log.bad_rows:
            return None
        if row.record_id is None:
            row.stored = stored
            if not row.plan.linked:  # written from `stored` alone: a large file's rows wait in memory
                row.data = {}
            row.new_id = next(self.ids)
            given_id = cell_at(cells, self.index["id"]) if "id" in self.index else None
            if not blank(given_id):
                self.new_ids[str(given_id).strip()] = row.new_id
        return row

    def find_parent(self, row: _Row, cells: Cells) -> None:
        by_id = cell_at(cells, self.index["parent_record_id"]) if "parent_record_id" in self.index else None
        if not blank(by_id):
            given = str(by_id).strip()
            row.parent, row.parent_given = self.new_ids.get(given, given), True
            return
        if self.parent_key is None:
            return
        cell = cell_at(cells, self.index[self.parent_key.column])
        if blank(cell):
            return
        meta = row.plan.meta
        if row.plan.parents is None:
            self.log.add(row.number, f"parent: schema {meta.schema.name!r} is top-level: its records have no parent",
                         field="parent", kind="parent")
            return
        found, problem, kind = row.plan.parents.find(cell)
        if problem:
            self.log.add(row.number, problem, field="parent", kind=kind, value=cell)
        row.parent, row.parent_given = found, True

    # ------------------------------------------------------------------------- writing
    def write(self, collection: Collection, rows: list[_Row]) -> None:
        """Write the checked ``rows`` in the import's batch (the client's, else one opened here:
        ``result.batch_id``): first the bare records for missing references, then the new
        records set-based (:meth:`write_creates`), then the edits one by one
        (:meth:`write_update`). Row problems are noted in :attr:`log`; without ``skip_bad`` a
        problem in the new records stops the write before the edits."""
        ctx = self.ctx
        if ctx.batch_id is None:
            ctx.batch_id = audit.open_batch(ctx, "import", label=self.table.name).id
        self.result.batch_id = ctx.batch_id
        if self.refs is not None and self.refs.missing:
            self.refs.write(ctx, _references_named(rows))
        creates = [r for r in rows if r.record_id is None]
        updates = [r for r in rows if r.record_id is not None]
        written = self.write_creates(collection, creates, len(updates))
        if written is None:
            return
        if self.progress and not written:
            self.progress.phase("writing", len(updates))
        for row in updates:
            self.write_update(row)

    def write_creates(self, collection: Collection, creates: list[_Row], updates: int) -> list[_Row] | None:
        """Create the new records of ``creates`` in one bulk write (in a savepoint), starting
        the ``writing`` phase of ``len(creates) + updates`` rows. When rows have problems they
        are noted and, with ``skip_bad``, the write is retried without them. Returns the rows
        created (``result.created`` their count; empty when none were left), or None when rows
        had problems without ``skip_bad`` (nothing created)."""
        while creates:
            if self.progress:
                self.progress.phase("writing", len(creates) + updates)
            problems = self.bulk_create(collection, creates)
            if problems is None:
                self.result.created = len(creates)
                return creates
            if not self.opts.skip_bad:
                return None
            bad = {i for i, _ in problems}
            creates = [r for i, r in enumerate(creates) if i not in bad]
        return creates

    def bulk_create(self, collection: Collection, creates: list[_Row]) -> list[tuple[int, str]] | None:
        """One try of the bulk create of ``creates``, in a savepoint. Returns the problems
        ``(index in creates, message)`` it raised (each noted in :attr:`log`; the savepoint and
        the changes it noted dropped), None when all were created."""
        ctx = self.ctx
        before = len(ctx.changes)
        try:
            with self.s.begin_nested():
                bulk_create_records(ctx, collection.id, _Bodies(creates), ids=[r.new_id for r in creates],
                                    cache=self.cache, progress=self.progress.advance if self.progress else None,
                                    stored=[r.stored or {} for r in creates])
        except RowProblems as exc:
            del ctx.changes[before:]
            for i, message in exc.problems:
                self.log.add(creates[i].number, message)
            return exc.problems
        return None

    def write_update(self, row: _Row) -> None:
        """Write the edit of matched ``row`` (``records.writes.update_record`` in a savepoint),
        counting it ``updated`` or ``unchanged``; a refused edit is noted in :attr:`log` (its
        savepoint and changes dropped). Advances the progress by one row either way."""
        abandon.check()
        ctx = self.ctx
        before = len(ctx.changes)
        body: dict[str, Any] = {"data": row.data}
        if row.parent_given:
            body["parent_record_id"] = row.parent
        try:
            with self.s.begin_nested():
                update_record(ctx, str(row.record_id), body)
        except BenchbookError as exc:
            del ctx.changes[before:]
            self.log.add(row.number, exc.detail)
            return
        finally:
            if self.progress:
                self.progress.advance(1)
        if len(ctx.changes) > before:
            self.result.updated += 1
        else:
            self.result.unchanged += 1

    def finish(self) -> ImportResult:
        result, log = self.result, self.log
        result.problems = log.summaries
        if self.refs is not None:
            for summary in result.problems:
                if summary.field and summary.kind in REFERENCE_KINDS:
                    summary.message = self.refs.describe(summary.field, summary.kind) or summary.message
            result.created_missing = self.refs.created()
        if result.failed:
            result.created = result.updated = result.unchanged = 0
        elif self.opts.skip_bad:
            result.skipped = len(log.bad_rows)
            cells = {number: row for number, row in self.table.rows}
            cells.update({number: row for number, _, row in self.table.problems})
            result.rejected = [(n, cells.get(n, []), message) for n, message in sorted(log.bad_rows.items())]
        return result


class _Bodies(Sequence[dict[str, Any]]):
    """The new rows as the bulk create reads them (RecordCreate-like bodies), each made when
    read: a chunk at a time, so that a large import does not hold all of them at once."""

    def __init__(self, rows: list[_Row]) -> None:
        self.rows = rows

    def __len__(self) -> int:
        return len(self.rows)

    @overload
    def __getitem__(self, index: int) -> dict[str, Any]: ...

    @overload
    def __getitem__(self, index: slice) -> list[dict[str, Any]]: ...

    def __getitem__(self, index: int | slice) -> dict[str, Any] | list[dict[str, Any]]:
        if isinstance(index, slice):
            return [self._body(r) for r in self.rows[index]]
        return self._body(self.rows[index])

    @staticmethod
    def _body(row: _Row) -> dict[str, Any]:
        return {"schema_name": row.plan.meta.schema.name, "parent_record_id": row.parent, "data": row.data}


def _references_named(rows: list[_Row]) -> set[str]:
    """The ids the reference values of ``rows`` name (new rows' stored values, edits' given ones)."""
    named: set[str] = set()
    for row in rows:
        for f in row.plan.meta.fields:
            if f.type in REFERENCE_TYPES:
                named.update(as_list((row.stored or {}).get(f.id)), as_list(row.data.get(f.name)))
    return named


def _schema(session: Session, name: str) -> Any:
    try:
        return find_schema(session, name)
    except NotFound:
        raise Invalid(f"unknown schema {name!r}") from None


def _file_lookup(session: Session) -> Any:
    from benchbook.domain.catalog.dtypes import FileMeta

    def lookup(sha: str) -> FileMeta | None:
        row = session.get(StoredFile, sha)
        return FileMeta(filename=row.filename, size=row.size) if row else None
    return lookup


def import_table(ctx: Ctx, table: Table, opts: ImportOptions, progress: Progress | None = None) -> ImportResult:
    """Import ``table`` as ``opts`` say (module docstring), inside the caller's transaction.
    Without ``skip_bad`` the table's cells are released as its rows are checked
    (:meth:`~benchbook.domain.imports.readers.Table.release_cells`: the checked rows wait in
    memory until written, their cells need not); its rows' numbers and count stay.

    Returns the :class:`ImportResult`; when :attr:`ImportResult.commit` is False the caller must
    roll back. Raises ``NotFound`` (collection, unless it is to be created), ``Invalid`` (no
    schema named, unknown schema or key field, bad parent key, schema name), ``Conflict`` (with
    ``create_schema``: a schema of that name exists).
    """
    run = _Import(ctx, table, opts, progress)
    for number, message, _ in table.problems:
        run.log.add(number, message, kind="row_width")
    with collector.paused():
        collection, fixed, plans = run.plans(run.collection())
        rows = run.check(collection, fixed, plans)
        if rows:  # also when other rows are bad and all-or-nothing: their clashes are reported too
            run.write(collection, rows)
    return run.finish()


def import_in_savepoint(ctx: Ctx, table: Table, opts: ImportOptions) -> ImportResult:
    """:func:`import_table` inside a savepoint of the caller's transaction, for callers that
    write more in the same transaction (the API stores the rejected rows as a file): when the
    result is not to be committed (problems without ``skip_bad``, or a dry run) the savepoint is
    rolled back, with the record changes it noted for the triggers. Raises what
    :func:`import_table` raises (its savepoint rolled back)."""
    before = len(ctx.changes)
    batch = ctx.batch_id
    savepoint = ctx.session.begin_nested()
    try:
        result = import_table(ctx, table, opts)
    except BaseException:
        savepoint.rollback()
        del ctx.changes[before:]
        raise
    if result.commit:
        savepoint.commit()
    else:
        savepoint.rollback()
        del ctx.changes[before:]
        ctx.batch_id = batch
    return result


def problems_error(result: ImportResult) -> Invalid:
    """The 422 for a failed import: ``detail`` counts the bad rows; ``errors`` has one entry per
    distinct problem, ``loc`` ``["body", "file", field]``, ``msg`` its summary line, ``type`` its
    kind, ``input`` the first offending value, ``ctx`` ``{count, numbers, unit}``."""
    bad = len({n for s in result.problems for n in s.numbers})
    return Invalid(f"{bad:,} rows have problems: nothing was imported (skip_bad imports the good rows)",
                   [{"loc": ["body", "file", *([s.field] if s.field else [])], "msg": s.text(result.unit),
                     "type": s.kind, "input": s.value if isinstance(s.value, (str, int, float, bool)) else None,
                     "ctx": {"count": s.count, "numbers": sorted(s.numbers)[:20], "unit": result.unit}}
                    for s in result.problems])
