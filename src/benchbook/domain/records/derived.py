"""Derived columns (spec *Records*: ``columns`` → ``derived``): values a record's own ``data``
cannot answer, computed for a whole page in a fixed number of queries (one per level of
nesting for inherited fields, one for reference targets).

- ``field``: an inherited field, read from the nearest ancestor record whose schema owns it
  (an own field of the same name shadows it, and is then not derived).
- ``ref_field.target_field``: the ``target_field`` of the record(s) the reference field
  ``ref_field`` points at (a list for ``reference_list``).
"""
from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.dtypes import display_value
from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta, find_schema
from benchbook.domain.errors import Invalid, NotFound, error_entry
from benchbook.domain.records.values import REFERENCE_TYPES, as_list
from benchbook.persistence.tables import Collection, Record


def _ancestor_metas(cache: SchemaCache, meta: SchemaMeta) -> list[SchemaMeta]:
    out, current = [], meta
    while current.parent is not None:
        current = cache.meta(current.parent.id)
        out.append(current)
    return out


def check_columns(cache: SchemaCache, metas: list[SchemaMeta], columns: list[str], *,
                  loc: list[Any] | None = None, positions: list[int] | None = None) -> None:
    """Raise ``Invalid`` for a column no listed schema can answer; each error is at ``loc``
    (default ``["query", "columns"]``) plus the column's position (``positions``, default its
    index in ``columns``)."""
    errors = []
    for i, column in enumerate(columns):
        if not any(_resolvable(cache, m, column) for m in metas):
            at = [*(loc or ["query", "columns"]), positions[i] if positions else i]
            errors.append(error_entry(at, f"unknown column {column!r}", "unknown_column", column))
    if errors:
        raise Invalid("; ".join(e["msg"] for e in errors), errors)


def _resolvable(cache: SchemaCache, meta: SchemaMeta, column: str) -> bool:
    name, dot, target = column.partition(".")
    if not dot:
        return name in meta.by_name or any(name in a.by_name for a in _ancestor_metas(cache, meta))
    ref = meta.by_name.get(name)
    if ref is None or ref.type not in REFERENCE_TYPES or not ref.restrictions.get("schema"):
        return False
    try:
        target_meta = cache.meta(find_schema(cache.session, ref.restrictions["schema"]).id)
    except NotFound:
        return False
    return target in target_meta.by_name or target in ("natural_name", "id")


def derive(session: Session, cache: SchemaCache, records: list[Record], columns: list[str],
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


def _inherited(session: Session, cache: SchemaCache, records: list[Record], columns: list[str],
               tz_of: dict[str, str | None], out: dict[str, dict[str, Any]]) -> None:
    known: dict[str, Record] = {r.id: r for r in records}
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


def _joins(session: Session, cache: SchemaCache, records: list[Record], columns: list[str],
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
