"""Derived columns (OpenAPI: ``GET /collections/{dataset_name}/records`` ``columns`` → ``derived``):
values a record's own ``data`` cannot answer, computed for a whole page in a fixed number of queries
(one per level of nesting for inherited fields, one for reference targets).

- ``field``: an inherited field, read from the nearest ancestor record whose schema owns it
  (an own field of the same name shadows it, and is then not derived).
- ``ref_field.target_field``: the ``target_field`` of the record(s) the reference field
  ``ref_field`` points at (a list for ``reference_list``).

Natural names whose display template uses inherited fields (issue 14 item 8) read the same
inherited values: :func:`inherited_name_values` for the records being written,
:func:`follow_names` for their descendants when an ancestor's values change;
:func:`record_names` makes whole names, reference placeholders shown by their targets' names
(:mod:`.labels`; records whose names follow a renamed target: :mod:`.names`).
"""
from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from benchbook.domain.catalog import shared
from benchbook.domain.catalog.dtypes import display_value
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.catalog.naming import placeholders
from benchbook.domain.errors import NotFound, error_entry, missing
from benchbook.domain.records.labels import reference_placeholders, targets, template_labels
from benchbook.domain.records.rows import Shaped, chunks, record_name
from benchbook.domain.records.values import REFERENCE_TYPES, as_list
from benchbook.persistence.tables import Collection, Field, Record, Schema


def _ancestor_metas(cache: SchemaCache, meta: SchemaMeta) -> list[SchemaMeta]:
    out, current = [], meta
    while current.parent is not None:
        current = cache.meta(current.parent.id)
        out.append(current)
    return out


def check_columns(cache: SchemaCache, metas: list[SchemaMeta], columns: list[str], *,
                  loc: list[Any] | None = None, positions: list[int] | None = None) -> None:
    """Raise ``NotFound`` for a column no listed schema can answer; each error is at ``loc``
    (default ``["query", "columns"]``) plus the column's position (``positions``, default its
    index in ``columns``)."""
    errors = []
    for i, column in enumerate(columns):
        if not any(_resolvable(cache, m, column) for m in metas):
            at = [*(loc or ["query", "columns"]), positions[i] if positions else i]
            errors.append(error_entry(at, f"unknown column {column!r}", "unknown_column", column))
    if errors:
        raise missing("; ".join(e["msg"] for e in errors), errors)


def _resolvable(cache: SchemaCache, meta: SchemaMeta, column: str) -> bool:
    name, dot, target = column.partition(".")
    if not dot:
        return name in meta.by_name or any(name in a.by_name for a in _ancestor_metas(cache, meta))
    ref = meta.by_name.get(name)
    if ref is None or ref.type not in REFERENCE_TYPES or not ref.restrictions.get("schema"):
        return False
    try:
        target_meta = cache.schema_named(ref.restrictions["schema"])
    except NotFound:
        return False
    return target in target_meta.by_name or target in ("natural_name", "id")


def derive(session: Session, cache: SchemaCache, records: Sequence[Shaped], columns: list[str],
           tz_of: dict[str, str | None]) -> dict[str, dict[str, Any]]:
    """``{record_id: {column: value}}`` for the derived ``columns`` of ``records``; ``tz_of``
    maps collection id → display timezone."""
    out: dict[str, dict[str, Any]] = {r.id: {} for r in records}
    if not columns or not records:
        return out
    plain = [c for c in columns if "." not in c]
    joined = [c for c in columns if "." in c]
    if plain:
        _inherited(session, cache, records, plain, tz_of, out)
    if joined:
        _joins(session, cache, records, joined, tz_of, out)
    return out


def _inherited(session: Session, cache: SchemaCache, records: Sequence[Shaped], columns: list[str],
               tz_of: dict[str, str | None], out: dict[str, dict[str, Any]]) -> None:
    known: dict[str, Shaped] = {r.id: r for r in records}
    level = {r.parent_id for r in records if r.parent_id}
    while level:
        rows = list(session.scalars(select(Record).where(Record.id.in_(level - set(known)))))
        known.update({r.id: r for r in rows})
        level = {r.parent_id for r in rows if r.parent_id and r.parent_id not in known}
    for rec in records:
        meta = cache.meta(rec.schema_id)
        for column in columns:
            if column in meta.by_name:
                continue
            current = rec
            while current.parent_id and current.parent_id in known:
                current = known[current.parent_id]
                owner = cache.meta(current.schema_id)
                field = owner.by_name.get(column)
                if field is not None:
                    value = current.data.get(field.id)
                    out[rec.id][column] = display_value(field.type, field.restrictions or {}, value,
                                                        tz=tz_of.get(rec.dataset_id))
                    break


def _joins(session: Session, cache: SchemaCache, records: Sequence[Shaped], columns: list[str],
           tz_of: dict[str, str | None], out: dict[str, dict[str, Any]]) -> None:
    wanted: set[str] = set()
    for rec in records:
        meta = cache.meta(rec.schema_id)
        for column in columns:
            ref = meta.by_name.get(column.partition(".")[0])
            if ref is not None and ref.type in REFERENCE_TYPES:
                wanted.update(as_list(rec.data.get(ref.id)))
    targets = {r.id: r for r in session.scalars(select(Record).where(Record.id.in_(wanted)))} if wanted else {}
    zones: dict[str, str | None] = {}
    if targets:
        rows = session.execute(select(Collection.id, Collection.timezone).where(
            Collection.id.in_({t.dataset_id for t in targets.values()}))).all()
        zones = {cid: tz for cid, tz in rows}
    for rec in records:
        meta = cache.meta(rec.schema_id)
        for column in columns:
            name, _, target_name = column.partition(".")
            ref = meta.by_name.get(name)
            if ref is None or ref.type not in REFERENCE_TYPES:
                continue
            values = [_target_value(cache, targets.get(t), target_name, zones) for t in as_list(rec.data.get(ref.id))]
            out[rec.id][column] = values if ref.type == "reference_list" else (values[0] if values else None)


def _target_value(cache: SchemaCache, target: Record | None, name: str, zones: dict[str, str | None]) -> Any:
    if target is None:
        return None
    if name in ("id", "natural_name"):
        return getattr(target, name)
    field = cache.meta(target.schema_id).by_name.get(name)
    if field is None:
        return None
    return display_value(field.type, field.restrictions or {}, target.data.get(field.id),
                         tz=zones.get(target.dataset_id))


# ------------------------------------------------------------------------------ natural names
def inherited_placeholders(cache: SchemaCache, meta: SchemaMeta) -> dict[str, Field]:
    """The placeholders of ``meta``'s display template that name no own field, each with the
    field of the nearest ancestor schema owning it (the record filters' rule for inherited
    fields, ``docs/filters.md``); placeholders nothing owns are left out. Empty without a
    template."""
    template = meta.schema.display_template
    if not template:
        return {}
    out: dict[str, Field] = {}
    ups = _ancestor_metas(cache, meta)
    for name in placeholders(template):
        if name in meta.by_name or name in out:
            continue
        owner = next((up for up in ups if name in up.by_name), None)
        if owner is not None:
            out[name] = owner.by_name[name]
    return out


def inherited_name_values(session: Session, cache: SchemaCache, records: Sequence[Any],
                          tz_of: dict[str, str | None]) -> dict[str, dict[str, tuple[str, Any]]]:
    """For each of ``records`` (anything with ``id``, ``schema_id``, ``parent_id`` and
    ``dataset_id``; a record not yet flushed is fine) whose template uses inherited fields:
    ``{record id: {placeholder: (dtype, shown value)}}`` as :func:`benchbook.domain.records.
    rows.record_name` takes them, read from the nearest ancestor record owning each field (one
    query per level up, as derived columns). ``tz_of``: collection id → display timezone."""
    need = {r.id: inherited_placeholders(cache, cache.meta(r.schema_id)) for r in records}
    wanted = [r for r in records if need[r.id]]
    if not wanted:
        return {}
    columns = sorted({name for fields in need.values() for name in fields})
    values = derive(session, cache, wanted, columns, tz_of)
    return {r.id: {name: (f.type, values[r.id].get(name)) for name, f in need[r.id].items()} for r in wanted}


def names_with_inherited(session: Session, cache: SchemaCache, records: Sequence[Any],
                         tz_of: dict[str, str | None]) -> dict[str, str | None]:
    """The natural names of those of ``records`` (already in the database, with ``data`` as
    well) whose template reads other records: inherited fields, read from their ancestors as
    they are now, or reference fields, shown by their targets' names as they are now
    (:mod:`.labels`): ``{record id: name}`` (records whose template reads neither are left
    out). For writers that insert many records at once (import), parents and targets possibly
    among them."""
    inherited = inherited_name_values(session, cache, records, tz_of)
    referring = [r for r in records if reference_placeholders(cache.meta(r.schema_id))]
    labels = template_labels(session, cache, referring)
    reading = set(inherited) | {r.id for r in referring}
    return {r.id: record_name(cache.meta(r.schema_id), r.data, tz_of.get(r.dataset_id), inherited.get(r.id), labels)
            for r in records if r.id in reading}


def names_from_targets(session: Session, cache: SchemaCache, records: Sequence[Any],
                       tz_of: dict[str, str | None]) -> dict[str, str | None]:
    """The natural names of those of ``records`` (about to be inserted, with ``data``) whose
    template shows references and uses no inherited field, when none of their targets is among
    ``records``: ``{record id: name}``, the targets' names read now (one query per 500). The
    rest are left out, for :func:`names_with_inherited` once they are in. Lets a bulk insert
    write such names with the rows instead of updating them afterwards."""
    ids = {r.id for r in records}
    shows: dict[str, list[Field]] = {}  # schema id → the reference fields its names show, if read here
    ready = []
    for rec in records:
        if rec.schema_id not in shows:
            meta = cache.meta(rec.schema_id)
            shows[rec.schema_id] = [] if inherited_placeholders(cache, meta) else reference_placeholders(meta)
        shown = shows[rec.schema_id]
        if shown and not any(t in ids for f in shown for t in targets(rec.data.get(f.id))):
            ready.append(rec)
    if not ready:
        return {}
    labels = template_labels(session, cache, ready)
    return {r.id: record_name(cache.meta(r.schema_id), r.data, tz_of.get(r.dataset_id), None, labels) for r in ready}


def record_names(session: Session, cache: SchemaCache, records: Sequence[Any],
                 tz_of: dict[str, str | None]) -> dict[str, str | None]:
    """``{record id: natural name}`` for every one of ``records`` (anything with ``id``,
    ``schema_id``, ``parent_id``, ``dataset_id`` and ``data``; not yet flushed is fine), as
    the rules make it now: own values, inherited fields from the ancestors, references by
    their targets' names. A query per level of inherited fields and one per 500 targets, none
    when no template reads another record. ``tz_of``: collection id → display timezone."""
    inherited = inherited_name_values(session, cache, records, tz_of)
    labels = template_labels(session, cache, records)
    return {r.id: record_name(cache.meta(r.schema_id), r.data, tz_of.get(r.dataset_id), inherited.get(r.id), labels)
            for r in records}


def _dependent_schemas(session: Session, cache: SchemaCache) -> tuple[frozenset[str], frozenset[str]]:
    """``(schemas whose template uses inherited fields, those schemas and all their ancestors)``
    among live child schemas with a template (worked out once per catalog version)."""
    found: tuple[frozenset[str], frozenset[str]] = shared.shared(session, ("dependent",), lambda: _find_dependent(session, cache))
    return found


def _find_dependent(session: Session, cache: SchemaCache) -> tuple[frozenset[str], frozenset[str]]:
    templated = session.execute(select(Schema.id, Schema.display_template).where(
        Schema.deleted_at.is_(None), Schema.display_template.is_not(None), Schema.parent_id.is_not(None))).all()
    if not templated:
        return frozenset(), frozenset()
    own: dict[str, set[str]] = {sid: set() for sid, _ in templated}
    for sid, name in session.execute(select(Field.schema_id, Field.name).where(
            Field.schema_id.in_(own), Field.deleted_at.is_(None))):
        own[sid].add(name)
    dependent: set[str] = set()
    above: set[str] = set()
    for schema_id, template in templated:
        if set(placeholders(template or "")) <= own[schema_id]:
            continue  # every placeholder is an own field
        meta = cache.meta(schema_id)
        if inherited_placeholders(cache, meta):
            dependent.add(schema_id)
            above.update([schema_id, *(up.schema.id for up in _ancestor_metas(cache, meta))])
    return frozenset(dependent), frozenset(above)  # shared between requests: read-only


def follow_names(session: Session, cache: SchemaCache, changed: Iterable[str]) -> list[str]:
    """Recompute the natural names of the live descendants of the ``changed`` records whose
    template uses inherited fields, after those records' values (or place) changed in this
    transaction: set-based, one query per level down and per level up, one ``UPDATE`` for the
    names that differ. A derived name writes no history entry (as a name recomputed from a
    record's own values writes none of its own: the values' change is the entry). Returns the
    ids of the records renamed (references to them follow: :func:`.names.follow_references`).
    Costs two queries when no template uses an inherited field."""
    dependent, above = _dependent_schemas(session, cache)
    level = set(changed)
    if not dependent or not level:
        return []
    found: list[Any] = []
    seen: set[str] = set(level)
    while level:
        rows: list[Any] = []
        for part in chunks(sorted(level)):
            rows += session.execute(select(Record.id, Record.schema_id, Record.parent_id, Record.dataset_id,
                                           Record.data, Record.natural_name)
                                    .where(Record.parent_id.in_(part), Record.deleted_at.is_(None),
                                           Record.schema_id.in_(above))).all()
        rows = [r for r in rows if r.id not in seen]
        seen.update(r.id for r in rows)
        found += [r for r in rows if r.schema_id in dependent]
        level = {r.id for r in rows}
    if not found:
        return []
    zones: dict[str, str | None] = {cid: tz for cid, tz in session.execute(
        select(Collection.id, Collection.timezone).where(Collection.id.in_({r.dataset_id for r in found})))}
    names = record_names(session, cache, found, zones)
    renamed = [{"id": row.id, "natural_name": names[row.id]} for row in found if names[row.id] != row.natural_name]
    if renamed:
        session.execute(update(Record), renamed)
    return [r["id"] for r in renamed]
