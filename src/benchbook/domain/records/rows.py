"""Record-row primitives shared by the single-record rules (:mod:`.writes`), the set-based
create path (:mod:`.bulk`), the catalog's cascades (a collection's or schema's records) and
history (restore, restore-all): finding a record, what history keeps of one (identity,
snapshot, value changes), the parent rule, and marking records deleted, restored or purged.

The lifecycle writes are set-based: one insert of audit entries (:func:`insert_entries`) and one
UPDATE/DELETE per chunk of ids, with exactly the entries :func:`benchbook.domain.history.
entries.write` would add per record (``tests/domain/test_bulk.py`` compares them column by
column).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any, cast

from sqlalchemy import ColumnElement, Row, Table, delete, select, update
from sqlalchemy.orm import Session
from sqlalchemy.orm.attributes import set_committed_value

from benchbook.domain import collector
from benchbook.domain.catalog.dtypes import display_value
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.catalog.naming import natural_name, placeholders
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, NotFound, error_entry, missing
from benchbook.domain.history import batch_figures
from benchbook.domain.history.shapes import AuditChange
from benchbook.domain.ids import ID_LENGTH, new_ids, resolve_prefix
from benchbook.domain.progress import Progress, silent
from benchbook.domain.records.labels import reference_placeholders
from benchbook.domain.records.labels import shown as shown_label
from benchbook.persistence.entry_triggers import FROM_ENTRY
from benchbook.persistence.rows_insert import insert_rows
from benchbook.persistence.tables import AuditEntry, Collection, Record, RecordLink, utcnow

Shaped = Record | Row[Any]
"""A record as responses are shaped from it (:class:`~benchbook.domain.records.shaping.RecordShaper`):
an ORM record, or a read-only row with the same columns
(:func:`~benchbook.domain.records.shaping.lineage`)."""


def find_record(session: Session, record_id: str, *, live: bool | None = True) -> Record:
    """The record with id (or unique prefix) ``record_id``; ``live`` True → live only, None → any.
    Raises ``NotFound`` or ``Invalid`` (ambiguous prefix)."""
    whole, given = whole_record_id(session, record_id, live=live)
    found = session.get(Record, whole)  # one statement, none when this session holds it already
    if given and (found is None or (live and found.deleted_at is not None)):
        raise NotFound(f"record {whole} not found")
    assert found is not None  # a prefix resolves to a record that is there
    return found


def whole_record_id(session: Session, record_id: str, *, live: bool | None = True) -> tuple[str, bool]:
    """``(whole id, given)``: the id ``record_id`` names, upper-cased, and True when it was
    given whole (not looked up: the record may not exist); else the id of the one record
    (``live`` as in :func:`find_record`) whose id starts or ends with it, and False. Raises
    ``NotFound`` or ``Invalid`` (ambiguous prefix) for a prefix."""
    whole = record_id.strip().upper()
    if len(whole) == ID_LENGTH:
        return whole, True
    conds: list[ColumnElement[bool]] = [Record.deleted_at.is_(None)] if live else []
    return resolve_prefix(session, Record, record_id, what="record", where=conds), False


def record_name(meta: SchemaMeta, data: dict[str, Any], tz: str | None,
                inherited: dict[str, tuple[str, Any]] | None = None,
                labels: Mapping[str, str | None] | None = None) -> str | None:
    """The record's natural name; only the values the name can use are worked out (the
    template's placeholders, else the string fields). ``inherited``: the template's inherited
    placeholders, name → ``(dtype, shown value)`` of the nearest ancestor record owning the
    field (:func:`benchbook.domain.records.derived.inherited_name_values`); an own field of the
    same name shadows it; a placeholder missing from both renders empty. ``labels``: target id
    → natural name (:func:`benchbook.domain.records.labels.template_labels`): a reference
    placeholder shows its target's name (a reference_list its targets' names joined with
    ``, ``), the id where the target has none; without ``labels`` it shows the ids."""
    template = meta.schema.display_template
    used = set(placeholders(template)) if template else {f.name for f in meta.fields if f.type == "string"}
    shown = {f.name: display_value(f.type, f.restrictions or {}, data[f.id], tz=tz)
             for f in meta.fields if f.name in used and f.id in data}
    if labels is not None and template:
        for f in reference_placeholders(meta):
            if f.id in data:
                shown[f.name] = shown_label(data[f.id], labels)
    types = {f.name: f.type for f in meta.fields}
    if template:
        for name, (dtype, value) in (inherited or {}).items():
            if name not in types:
                shown[name], types[name] = value, dtype
    return natural_name(template, shown, types)


def snapshot(rec: Record | Row[Any], meta: SchemaMeta, collection: Collection | None = None) -> dict[str, Any]:
    """The whole record as kept in history (``old_data`` of a purge)."""
    return {**identity(rec, meta, collection), "data": dict(rec.data)}


def create_entry(ctx: Ctx, rec: Record | Row[Any], meta: SchemaMeta, collection: Collection,
                 at: datetime) -> dict[str, Any]:
    """The ``audit_entries`` row (for :func:`insert_entries`) of a new record's ``create`` at
    ``at`` (the record's ``created_at``): ``new_data`` is the record's :func:`kept_identity`
    alone; its values, name and parent stay the record's own until the database copies them in
    (migrations 0017 and 0023, ``history.own_values``); ``changes`` are derived when read."""
    return entry_row(ctx, "create", rec, changes=[], old=None, new=kept_identity(meta, collection), at=at)


def kept_identity(meta: SchemaMeta, collection: Collection | None = None) -> dict[str, Any]:
    """What a record's create or delete entry stores of its :func:`identity`: the schema's and
    the collection's names (they may be renamed). The rest is read back
    (``history.own_values.whole_values``): ``id`` and ``dataset_id`` from the entry's own
    columns, ``natural_name`` and ``parent_record_id`` from the record until it changes
    (migration 0023)."""
    return {"schema_name": meta.schema.name, "collection": collection.name if collection else None}


def edit_identity(rec: Record | Row[Any], meta: SchemaMeta, collection: Collection | None = None) -> dict[str, Any]:
    """What an edit (``update`` entry) stores of the record's :func:`identity`, in both columns:
    all but ``id`` and ``dataset_id``, which are the entry's own columns (migration 0026); the
    name and parent stay, since they say where the record sat and what it was called then."""
    return {k: v for k, v in identity(rec, meta, collection).items() if k not in dict(FROM_ENTRY)}


def identity(rec: Record | Row[Any], meta: SchemaMeta, collection: Collection | None = None) -> dict[str, Any]:
    """What identifies a record in history: id, schema, where it sits, its name."""
    return {"id": rec.id, "schema_name": meta.schema.name, "dataset_id": rec.dataset_id,
            "collection": collection.name if collection else None, "parent_record_id": rec.parent_id,
            "natural_name": rec.natural_name}


def value_changes(meta: SchemaMeta, before: dict[str, Any], after: dict[str, Any]) -> list[AuditChange]:
    """AuditChange entries, schema order, for every field id whose value differs."""
    specs = meta.change_fields
    out: list[AuditChange] = [
        {"field": fid, "label": label, "dtype": dtype, "before": old, "after": new, "deleted": deleted}
        for fid, label, dtype, deleted in specs if (old := before.get(fid)) != (new := after.get(fid))]
    unknown = (before.keys() | after.keys()) - meta.change_ids
    out += [{"field": k, "label": None, "dtype": None, "before": before.get(k), "after": after.get(k),
             "deleted": True} for k in sorted(unknown) if before.get(k) != after.get(k)]
    return out


def check_parent(session: Session, meta: SchemaMeta, collection: Collection, parent_id: str | None,
                 loc: list[str | int]) -> Record | None:
    """The live parent record ``parent_id`` names for a new or moved record of ``meta`` in
    ``collection`` (None for a top-level schema). Raises ``Conflict`` at ``loc`` when a
    top-level record is given a parent, a nested one has none, or the parent cannot hold it,
    ``NotFound`` when no live record has the id (:func:`check_parent_row`)."""
    parent_schema = meta.parent
    if parent_schema is None:
        if parent_id:
            raise Conflict(f"schema {meta.schema.name!r} is top-level: its records have no parent",
                           [error_entry(loc, "top-level schema takes no parent", "parent", parent_id)])
        return None
    if not parent_id:
        raise Conflict(f"a {meta.schema.name!r} record needs a parent {parent_schema.name!r} record",
                       [error_entry(loc, "parent record required", "missing", None)])
    try:
        parent = find_record(session, parent_id)
    except NotFound:
        parent = None
    if parent is not None and not lock_live(session, [parent.id], share=True):
        parent = None  # deleted by a transaction that committed while this one waited for it
    check_parent_row(meta, collection, parent_id, parent, loc)
    assert parent is not None
    return parent


def lock_live(session: Session, ids: Sequence[str], *, share: bool) -> set[str]:
    """Which of ``ids`` are live records, each row locked until the transaction ends (issue #13:
    no orphans by race). PostgreSQL: ``SELECT … FOR SHARE`` (``share``: a child is about to be
    created under them or moved there) or ``FOR UPDATE`` (they are about to be deleted); the two
    conflict, so a create and a delete of its parent run one after the other and the later one
    sees what the earlier committed (a row a waiting ``FOR SHARE`` finds deleted is left out).
    SQLite: a plain read; its writers are one at a time already
    (:func:`benchbook.persistence.db.write_lock`)."""
    live: set[str] = set()
    for part in chunks(sorted(set(ids))):
        live.update(session.scalars(select(Record.id).where(Record.id.in_(part), Record.deleted_at.is_(None))
                                    .with_for_update(read=share)))
    return live


def lock_collection(session: Session, collection_id: str, *, share: bool) -> bool:
    """Whether collection ``collection_id`` is live, its row locked like :func:`lock_live`:
    ``share`` by what creates records in it, not ``share`` by what deletes it with its records
    (PostgreSQL; SQLite's writers are one at a time)."""
    return session.scalar(select(Collection.id).where(Collection.id == collection_id,
                                                      Collection.deleted_at.is_(None))
                          .with_for_update(read=share)) is not None


def check_parent_row(meta: SchemaMeta, collection: Collection, given: str, parent: Any, loc: list[str | int]) -> None:
    """Raise ``NotFound`` when ``parent`` (anything with ``id``, ``schema_id`` and
    ``dataset_id``) is None (no live record has the ``given`` id), ``Conflict`` when it cannot be
    the parent of a record of ``meta`` in ``collection``."""
    assert meta.parent is not None
    if parent is None:
        raise missing(f"parent record {given} does not exist or is deleted",
                      [error_entry(loc, "unknown parent record", "parent", given)])
    if parent.schema_id != meta.parent.id:
        raise Conflict(f"parent record {parent.id} is not a {meta.parent.name!r} record",
                       [error_entry(loc, f"parent must be a {meta.parent.name!r} record", "parent", given)])
    if parent.dataset_id != collection.id:
        raise Conflict(f"parent record {parent.id} is in another collection",
                       [error_entry(loc, "parent must be in the same collection", "parent", given)])


ROW_COLUMNS = (Record.id, Record.dataset_id, Record.schema_id, Record.parent_id, Record.natural_name,
               Record.delete_op, Record.deleted_at)
"""What history and the set-based writes read of a record (``bulk.py``), without its values."""


def record_rows(session: Session, *conds: Any, data: bool = True) -> list[Row[Any]]:
    """Records matching ``conds`` as plain rows (attributes ``id``, ``dataset_id``, ``schema_id``,
    ``parent_id``, ``natural_name``, ``delete_op``, ``deleted_at`` and, with ``data``, ``data``):
    for changing many records at once, loading no ORM objects (several times faster)."""
    columns = (*ROW_COLUMNS, Record.data) if data else ROW_COLUMNS
    return list(session.execute(select(*columns).where(*conds)))


def live_descendants(session: Session, ids: list[str], *, lock: bool = False) -> list[Row[Any]]:
    """Live records below any of ``ids`` at any depth (breadth first, parents before children),
    as :func:`record_rows` without ``data`` (a delete leaves the values in the records). With
    ``lock`` (a delete), each level's rows are locked ``FOR UPDATE`` on PostgreSQL before the
    level below is read: a child being created under one of them (its parent locked ``FOR
    SHARE``, :func:`lock_live`) has committed by then and is found."""
    out: list[Row[Any]] = []
    frontier = list(ids)
    while frontier:
        kids: list[Row[Any]] = []
        for start in range(0, len(frontier), 500):
            conds = (Record.parent_id.in_(frontier[start:start + 500]), Record.deleted_at.is_(None))
            if lock:
                kids += list(session.execute(select(*ROW_COLUMNS).where(*conds).with_for_update()))
            else:
                kids += record_rows(session, *conds, data=False)
        out += kids
        frontier = [k.id for k in kids]
    return out


_RECORDS = cast(Table, Record.__table__)


_LINKS = cast(Table, RecordLink.__table__)


_ENTRIES = cast(Table, AuditEntry.__table__)


def insert_entries(session: Session, entries: list[dict[str, Any]]) -> None:
    """Insert audit entries (column dicts) with one statement (``rows_insert.insert_rows``) and
    add them to their batches' figures. An entry whose ``id`` is None (:func:`entry_row`'s) gets
    a new one here, all of them made at once in the list's order (``ids.new_ids``)."""
    if entries:
        unnamed = [e for e in entries if e["id"] is None]
        for entry, entry_id in zip(unnamed, new_ids(len(unnamed)), strict=True):
            entry["id"] = entry_id
        insert_rows(session.connection(), _ENTRIES, entries)
        batch_figures.note_rows(session, entries)


def chunks(items: list[Any], size: int = 500) -> Iterable[list[Any]]:
    """``items`` in consecutive lists of at most ``size`` (IN lists every backend accepts)."""
    for start in range(0, len(items), size):
        yield items[start:start + size]


def entry_row(ctx: Ctx, action: str, rec: Record | Row[Any], *, changes: list[dict[str, Any]],
              old: dict[str, Any] | None, new: dict[str, Any] | None, at: datetime | None = None) -> dict[str, Any]:
    """The ``audit_entries`` row (column dict) of ``action`` on record ``rec`` at ``at`` (now
    when not given), for :func:`insert_entries`: what :func:`audit.write` adds through the ORM,
    without it. Its ``id`` is None: :func:`insert_entries` makes the ids; while sync applies a
    change made elsewhere (``ctx.origin``) it is that change's entry's, with its actor, time,
    batch and device."""
    row = {"id": None, "action": action, "entity_type": "record", "entity_id": rec.id,
           "timestamp": at or utcnow(),
           "actor": ctx.actor, "changes": changes, "old_data": old, "new_data": new, "batch_id": ctx.batch_id,
           "request_id": ctx.request_id, "dataset_id": rec.dataset_id, "schema_id": rec.schema_id}
    if (origin := ctx.entry_origin()) is not None:  # a change made elsewhere, applied by sync (entries.write)
        row.update(id=origin.entry_id, actor=origin.actor, timestamp=origin.timestamp, device=origin.device,
                   seq=origin.seq, batch_id=origin.batch_id)
    return row


def _set_loaded(records: Sequence[Record | Row[Any]], **values: Any) -> None:
    """Tell the session the ORM records among ``records`` now hold ``values`` (already written
    by a bulk UPDATE); plain rows (:func:`record_rows`) are left as they are."""
    for rec in records:
        if isinstance(rec, Record):
            for key, value in values.items():
                set_committed_value(rec, key, value)


@collector.paused()
def soft_delete_records(ctx: Ctx, records: Sequence[Record | Row[Any]], *, op: str,
                        progress: Progress = silent) -> None:
    """Mark ``records`` (ORM records or :func:`record_rows`) deleted by operation ``op``, chunk
    by chunk: a ``delete`` entry each, then one UPDATE. The entry holds the record's identity: the
    values lost, its name and parent stay the record's own until they change (migrations 0017 and
    0023, ``history.own_values``): the entry stores :func:`kept_identity`. Reports
    ``progress("deleting records", done, len(records))`` after each chunk."""
    s = ctx.session
    if not records:
        return
    meta = SchemaCache(s).meta
    now = utcnow()
    s.flush()
    conn = s.connection()
    done = 0
    for part in chunks(list(records)):
        # changes not stored: read back from the values (history.entries.record_changes)
        insert_entries(s, [entry_row(ctx, "delete", rec, changes=[], old=kept_identity(meta(rec.schema_id)), new=None)
                           for rec in part])
        conn.execute(update(_RECORDS).where(_RECORDS.c.id.in_([r.id for r in part]))
                     .values(deleted_at=now, delete_op=op))
        done += len(part)
        progress("deleting records", done, len(records))
    _set_loaded(records, deleted_at=now, delete_op=op)


@collector.paused()
def restore_records(ctx: Ctx, records: Sequence[Record | Row[Any]], *, cache: SchemaCache | None = None) -> None:
    """Bring ``records`` (ORM records or :func:`record_rows`) back to life: one UPDATE per
    chunk, then a ``restore`` entry each (lists no values; stores :func:`kept_identity` in both
    columns, the rest being the entry's columns and the record's own, migration 0025)."""
    s = ctx.session
    if not records:
        return
    meta = (cache or SchemaCache(s)).meta
    now = utcnow()
    s.flush()
    conn = s.connection()
    for part in chunks([r.id for r in records]):
        conn.execute(update(_RECORDS).where(_RECORDS.c.id.in_(part))
                     .values(deleted_at=None, delete_op=None, updated_at=now))
    _set_loaded(records, deleted_at=None, delete_op=None, updated_at=now)
    entries = []
    for rec in records:  # the rest of the identity: the record's own until it changes (migration 0025)
        ident = kept_identity(meta(rec.schema_id))
        entries.append(entry_row(ctx, "restore", rec, changes=[], old=ident, new=dict(ident)))
    insert_entries(s, entries)


@collector.paused()
def purge_records(ctx: Ctx, records: list[Record]) -> None:
    """Remove ``records`` for good: a ``purge`` entry each (the values lost), then their links
    and rows, one DELETE per chunk, in the order given (children first)."""
    if not records:
        return
    s = ctx.session
    meta = SchemaCache(s).meta
    s.flush()
    insert_entries(s, [entry_row(ctx, "purge", rec, changes=[], old=snapshot(rec, meta(rec.schema_id)), new=None)
                       for rec in records])  # changes read back from old_data, as for a delete
    conn = s.connection()
    for part in chunks([r.id for r in records]):
        conn.execute(delete(_LINKS).where(_LINKS.c.source_id.in_(part)))
        conn.execute(delete(_RECORDS).where(_RECORDS.c.id.in_(part)))
    for rec in records:
        s.expunge(rec)
