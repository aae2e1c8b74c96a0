"""Names that follow a renamed target (issue 35 item 2).

A display template may name a reference field (``{carrier}{flight}``): the placeholder shows the
target's natural name (:mod:`.labels`). When a record's natural name changes (its values, a move,
an ancestor's value it inherits, a reference it names being renamed in turn), the live records
whose template shows it through a reference are renamed in the same transaction,
set-based: per level, one query for the referring records (``record_links`` by target, the
fields restricted to the templated reference fields), one for their targets' names, one
``UPDATE`` and one insert of history entries. A chain A → B → C follows transitively, level by
level, at most :data:`FOLLOW_DEPTH` levels; each record is renamed at most once per change, so a
cycle of templates (A's name shows B, B's shows A) ends.

Unlike a name that follows an ancestor's value (``derived.follow_names``, no entry of its own:
the ancestor's value is part of the record's place), each record renamed through a reference
gets an ``update`` entry whose one change is ``natural_name`` (label ``name``, before → after),
with no values: the target is another record, and a reader of the referrer's history should see
why its name changed. The entries go into the batch the change makes (an import, a restore, a
delete's clear), else into an ``update`` batch opened for the edit and the names that follow,
so that history shows them as one event.
"""
from __future__ import annotations

from collections.abc import Iterable
from contextlib import nullcontext
from typing import Any

from sqlalchemy import Row, Table, bindparam, select, update
from sqlalchemy.orm import Session

from benchbook.domain.catalog import shared
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx
from benchbook.domain.history import entries as audit
from benchbook.domain.records.derived import follow_names, record_names
from benchbook.domain.records.labels import reference_placeholders
from benchbook.domain.records.rows import chunks, edit_identity, entry_row, insert_entries
from benchbook.persistence.tables import Collection, Record, RecordLink, Schema

FOLLOW_DEPTH = 8
"""How many levels of references a rename follows (A renamed → the records naming A → those
naming them …). Names further away keep the name they had until they are next edited."""

_RECORDS: Table = Record.__table__  # type: ignore[assignment]
_RENAME = update(_RECORDS).where(_RECORDS.c.id == bindparam("rid")).values(natural_name=bindparam("nn"))
NAME_CHANGE = {"field": "natural_name", "label": "name", "dtype": "string", "deleted": None}
"""The change of an entry written for a name that followed its target (before and after added)."""


def templated_reference_fields(session: Session, cache: SchemaCache) -> frozenset[str]:
    """Ids of the live reference / reference_list fields that a live schema's display template
    names: the links along which names follow (worked out once per catalog version)."""
    found: frozenset[str] = shared.shared(session, ("reference-named",), lambda: _templated(session, cache))
    return found


def _templated(session: Session, cache: SchemaCache) -> frozenset[str]:
    ids = session.scalars(select(Schema.id).where(Schema.deleted_at.is_(None), Schema.display_template.is_not(None)))
    return frozenset(f.id for sid in ids for f in reference_placeholders(cache.meta(sid)))


def _referring(session: Session, fields: frozenset[str], targets: set[str], seen: set[str]) -> list[Row[Any]]:
    """The live records not in ``seen`` that name one of ``targets`` in one of ``fields``."""
    out: list[Row[Any]] = []
    for part in chunks(sorted(targets)):
        sources = (select(RecordLink.source_id).where(RecordLink.target_id.in_(part), RecordLink.kind == "record",
                                                      RecordLink.field_id.in_(fields)).distinct())
        out += session.execute(select(Record.id, Record.schema_id, Record.parent_id, Record.dataset_id, Record.data,
                                      Record.natural_name)
                               .where(Record.id.in_(sources), Record.deleted_at.is_(None))).all()
    unique = {r.id: r for r in out if r.id not in seen}
    return list(unique.values())


def has_followers(session: Session, cache: SchemaCache, renamed: Iterable[str]) -> bool:
    """Whether a live record shows one of ``renamed`` by name through a templated reference
    (no query when no template names a reference field)."""
    fields = templated_reference_fields(session, cache)
    level = set(renamed)
    return bool(fields and level and _referring(session, fields, level, set()))


def follow_references(ctx: Ctx, cache: SchemaCache, renamed: Iterable[str],
                      lead: dict[str, Any] | None = None) -> list[str]:
    """Rename the live records whose display template shows one of ``renamed`` (ids of records
    whose natural name changed in this transaction) through a reference, transitively (also
    through descendants renamed by ``derived.follow_names``), up to :data:`FOLLOW_DEPTH`
    levels, each renamed record with an ``update`` entry of its name change (module docstring).
    ``lead``: the change's own entry row (:func:`rows.entry_row`), inserted first, in the
    ``update`` batch opened when names follow and no batch is open (and no sync change is being
    applied: it keeps its own batch). Returns the ids renamed."""
    s = ctx.session
    fields = templated_reference_fields(s, cache)
    level = set(renamed)
    rows = _referring(s, fields, level, set(level)) if fields and level else []
    if not rows:
        if lead is not None:
            insert_entries(s, [lead])
        return []
    opened = ctx.batch_id is None and ctx.origin is None
    with audit.server_batch(ctx, "update", "an edit and the names that follow it") if opened else nullcontext():
        if opened:
            s.flush()  # the batch row, before entries name it
        if lead is not None:
            if opened:
                lead["batch_id"] = ctx.batch_id
            insert_entries(s, [lead])
        return _follow(ctx, cache, fields, rows, seen=set(level))


def _follow(ctx: Ctx, cache: SchemaCache, fields: frozenset[str], rows: list[Row[Any]], *, seen: set[str]) -> list[str]:
    s = ctx.session
    out: list[str] = []
    for _ in range(FOLLOW_DEPTH):
        if not rows:
            break
        seen.update(r.id for r in rows)
        zones = {cid: tz for cid, tz in s.execute(select(Collection.id, Collection.timezone).where(
            Collection.id.in_({r.dataset_id for r in rows})))}
        names = record_names(s, cache, rows, zones)
        changed = [r for r in rows if names[r.id] != r.natural_name]
        if changed:
            s.connection().execute(_RENAME, [{"rid": r.id, "nn": names[r.id]} for r in changed])
            insert_entries(s, [_entry(ctx, cache, r, names[r.id]) for r in changed])
            out += [r.id for r in changed]
        moved = [rid for rid in follow_names(s, cache, [r.id for r in changed]) if rid not in seen]
        seen.update(moved)
        level = {r.id for r in changed} | set(moved)
        rows = _referring(s, fields, level, seen) if level else []
    return out


def _entry(ctx: Ctx, cache: SchemaCache, row: Row[Any], name: str | None) -> dict[str, Any]:
    """The ``update`` entry of ``row``'s name following its target: identity before and after,
    no values."""
    ident = edit_identity(row, cache.meta(row.schema_id), cache.collection(row.dataset_id))
    change = {**NAME_CHANGE, "before": row.natural_name, "after": name}
    return entry_row(ctx, "update", row, changes=[change], old={**ident, "data": {}},
                     new={**ident, "natural_name": name, "data": {}})
