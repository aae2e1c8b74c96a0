"""Records that point at records being deleted or restored (issue 35 item 4, docs/deletes.md).

A delete of records that live records reference (a ``reference`` or ``reference_list`` value of
a live field, in any collection) is refused with 409, the referrers counted per schema, unless
the request says what to do with the references (``references``):

``keep`` (also what ``force=true`` means when ``references`` is not given)
    the values keep pointing at the deleted records; they read as deleted and are whole again
    once the records are restored.
``clear``
    each referring record loses the deleted ids (a ``reference`` becomes empty, a
    ``reference_list`` keeps its other items): an ordinary update
    (:func:`.writes.update_record`, with its history entry) in the delete's batch, in the same
    transaction. Refused with 409 when a referring field is required (it cannot be emptied).

Referrers that are themselves deleted by the same request do not count. A restore of records
puts back the references their delete cleared (:func:`put_back`): a ``reference`` still empty
gets its target again, a ``reference_list`` gets the id appended when it no longer holds it;
each is an update in the restore's batch. A value set since is left alone.

The links are read from ``record_links`` (``ix_record_links_target``): one query per 500
targets, whatever the number of referrers.
"""
from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.context import Ctx
from benchbook.domain.errors import Conflict, Invalid, error_entry
from benchbook.domain.records.rows import chunks
from benchbook.domain.records.values import REFERENCE_TYPES, as_list, blank
from benchbook.persistence.tables import AuditEntry, Field, Record, RecordLink, Schema

Update = Callable[[Ctx, str, dict[str, Any]], Any]
"""How a record is changed: :func:`benchbook.domain.records.writes.update_record` (passed in:
``writes`` imports this module)."""

CHOICES = ("keep", "clear")
"""What a delete may be told to do with references to what it deletes (``references``)."""


def live_links_to(targets: Sequence[str]) -> Any:
    """The SELECT of ``(source_id, field_id, target_id, schema_id)`` of every reference from a
    live record, through a live field, to one of ``targets`` (at most a few hundred ids)."""
    return (select(RecordLink.source_id, RecordLink.field_id, RecordLink.target_id, Record.schema_id)
            .join(Record, Record.id == RecordLink.source_id).join(Field, Field.id == RecordLink.field_id)
            .where(RecordLink.target_id.in_(targets), RecordLink.kind == "record",
                   Record.deleted_at.is_(None), Field.deleted_at.is_(None)))


def links_to(session: Session, targets: Iterable[str], *, besides: Collection[str] = ()) -> list[Row[Any]]:
    """Every live reference to ``targets`` (rows of :func:`live_links_to`) whose source is not
    one of ``besides`` (records going with them). One query per 500 targets."""
    out: list[Row[Any]] = []
    for part in chunks(sorted(set(targets))):
        out += [row for row in session.execute(live_links_to(part)) if row.source_id not in besides]
    return out


def counts(session: Session, links: Iterable[Row[Any]]) -> dict[str, int]:
    """Referring records per schema name (each record once), most first: ``{"flight": 111}``."""
    by_schema = Counter(schema_id for _, schema_id in {(row.source_id, row.schema_id) for row in links})
    names = dict(session.execute(select(Schema.id, Schema.name).where(Schema.id.in_(list(by_schema)))).all())
    return {names.get(sid, sid): n for sid, n in sorted(by_schema.items(), key=lambda kv: (-kv[1], kv[0]))}


def referrer_counts(session: Session, targets: Iterable[str]) -> dict[str, int]:
    """Live records (not among ``targets``) referring to any of ``targets``, per schema name."""
    wanted = set(targets)
    return counts(session, links_to(session, wanted, besides=wanted))


def _described(by_schema: dict[str, int]) -> str:
    return ", ".join(f"{n} {name}" for name, n in by_schema.items())


def decide(session: Session, links: list[Row[Any]], *, force: bool, references: str | None,
           what: str, loc: tuple[str, ...] | None = ("query", "references")) -> bool:
    """Whether the delete must clear ``links`` (:func:`links_to` of what it deletes). Raises
    ``Invalid`` for an unknown ``references``, ``Conflict`` (409) when there are links and the
    request said nothing (``references`` None and not ``force``) — the message and one
    ``errors`` entry per schema (``ctx``: ``schema_name``, ``records``) count the referrers —
    or when ``clear`` would empty a required field. ``what`` names the deleted records in the
    message ("this 'plane' record"); ``loc`` where the request says ``references``, None for a
    request that offers only ``force`` (a revert, an import's undo): the 409 then names ``force``
    alone, at ``body.force``."""
    if references is not None and references not in CHOICES:
        raise Invalid(f"references must be one of {', '.join(CHOICES)}, not {references!r}")
    if not links:
        return False
    if references == "clear":
        _check_clearable(session, links, loc or ("query", "references"))
        return True
    if references == "keep" or force:
        return False
    by_schema = counts(session, links)
    total = sum(by_schema.values())
    choices = ("pass `references=clear` to clear those references, or `references=keep` (or `force=true`)"
               if loc else "pass `force=true`")
    raise Conflict(
        f"{total} live record(s) reference {what} ({_described(by_schema)}); {choices} to keep them pointing "
        "at the deleted record(s), restorable",
        [error_entry(list(loc or ("body", "force")), f"{n} {name} record(s) reference it", "referenced", None,
                     {"schema_name": name, "records": n}) for name, n in by_schema.items()])


def _check_clearable(session: Session, links: list[Row[Any]], loc: tuple[str, ...]) -> None:
    """Refuse (409) a clear that would empty a required reference field."""
    cache = SchemaCache(session)
    blocked: Counter[tuple[str, str]] = Counter()
    sources = _by_source(links)
    records = _records(session, sources)
    for source, fields in sources.items():
        meta = cache.meta(fields.pop(""))
        for field_id, gone in fields.items():
            f = meta.by_id[field_id]
            if f.required and not [v for v in as_list(records[source].data.get(field_id)) if v not in gone]:
                blocked[(meta.schema.name, f.name)] += 1
    if blocked:
        shown = ", ".join(f"{schema}.{name} ({n} record(s))" for (schema, name), n in blocked.items())
        raise Conflict(f"cannot clear references in required field(s) {shown}; pass `references=keep` "
                       "(or `force=true`) to keep them pointing at the deleted record(s)",
                       [error_entry(list(loc), f"{schema}.{name} is required", "required", "clear",
                                    {"schema_name": schema, "field": name, "records": n})
                        for (schema, name), n in blocked.items()])


def _records(session: Session, ids: Iterable[str]) -> dict[str, Record]:
    """The records ``ids`` by id, one query per 500 (later ``session.get`` calls find them loaded)."""
    return {r.id: r for part in chunks(sorted(ids)) for r in session.scalars(select(Record).where(Record.id.in_(part)))}


def _by_source(links: Iterable[Row[Any]]) -> dict[str, dict[str, Any]]:
    """source id → {field id → [target ids], "": schema id}."""
    out: dict[str, dict[str, Any]] = {}
    for row in links:
        fields = out.setdefault(row.source_id, {"": row.schema_id})
        fields.setdefault(row.field_id, []).append(row.target_id)
    return out


def clear(ctx: Ctx, links: list[Row[Any]], update: Update) -> int:
    """Take the targets of ``links`` out of their sources' values, one ``update`` (the normal
    :func:`.writes.update_record`, which imports this module) per referring record, in the
    caller's batch. Returns how many records were changed."""
    s = ctx.session
    cache = SchemaCache(s)
    changed = 0
    sources = _by_source(links)
    records = _records(s, sources)
    for source, fields in sources.items():
        meta = cache.meta(fields.pop(""))
        rec = records[source]
        data: dict[str, Any] = {}
        for field_id, gone in fields.items():
            f = meta.by_id[field_id]
            kept = [v for v in as_list(rec.data.get(field_id)) if v not in gone]
            data[f.name] = (kept or None) if f.type == "reference_list" else None
        update(ctx, source, {"data": data})
        changed += 1
    return changed


# ------------------------------------------------------------------------- restore
@dataclass(frozen=True)
class Cleared:
    """A reference a delete cleared: ``target`` was taken out of ``source``'s ``field_id``."""

    source: str
    field_id: str
    target: str


def cleared_by(session: Session, records: Iterable[Record | Row[Any]]) -> list[Cleared]:
    """The references the deletes of ``records`` (deleted records: their ``delete_op`` is the
    delete's batch) cleared, as read from that batch's update entries, in history order."""
    ops: dict[str, set[str]] = {}
    for rec in records:
        if rec.delete_op:
            ops.setdefault(rec.delete_op, set()).add(rec.id)
    out: list[Cleared] = []
    for part in chunks(sorted(ops)):
        entries = session.execute(
            select(AuditEntry.batch_id, AuditEntry.entity_id, AuditEntry.old_data, AuditEntry.new_data)
            .where(AuditEntry.batch_id.in_(part), AuditEntry.entity_type == "record", AuditEntry.action == "update")
            .order_by(AuditEntry.timestamp, AuditEntry.id))
        for batch_id, source, old, new in entries:
            before = (old or {}).get("data") or {}
            after = (new or {}).get("data") or {}
            for field_id, value in before.items():
                now = as_list(after.get(field_id))
                out += [Cleared(source, field_id, t) for t in as_list(value)
                        if isinstance(t, str) and t in ops[batch_id] and t not in now]
    return out


def put_back(ctx: Ctx, cleared: list[Cleared], update: Update) -> int:
    """Put the :func:`cleared_by` references whose target is live again back into their live
    sources (see the module docstring), one ``update`` (:func:`.writes.update_record`) per
    record. Returns how many records were changed."""
    s = ctx.session
    if not cleared:
        return 0
    wanted = _wanted_back(s, cleared)
    cache = SchemaCache(s)
    changed = 0
    records = _records(s, wanted)
    for source, fields in wanted.items():
        rec = records.get(source)
        if rec is None or rec.deleted_at is not None:
            continue
        data = _restored_values(cache.meta(rec.schema_id), rec.data, fields)
        if data:
            update(ctx, source, {"data": data})
            changed += 1
    return changed


def _wanted_back(session: Session, cleared: list[Cleared]) -> dict[str, dict[str, list[str]]]:
    """The ``cleared`` references whose target is live (one query per chunk of targets): source id →
    field id → targets, each once, in ``cleared`` order."""
    live = {r for part in chunks(sorted({c.target for c in cleared}))
            for r in session.scalars(select(Record.id).where(Record.id.in_(part), Record.deleted_at.is_(None)))}
    wanted: dict[str, dict[str, list[str]]] = {}
    for c in cleared:
        if c.target in live:
            targets = wanted.setdefault(c.source, {}).setdefault(c.field_id, [])
            if c.target not in targets:
                targets.append(c.target)
    return wanted


def _restored_values(meta: SchemaMeta, values: dict[str, Any], fields: dict[str, list[str]]) -> dict[str, Any]:
    """The update ``data`` (field name → value) putting ``fields``' targets (field id → ids) back into a
    record of ``meta`` holding ``values`` (field id → stored value): a blank ``reference`` gets the first
    target, a ``reference_list`` the targets it lacks appended; deleted fields, fields no longer references
    and references already set are left out."""
    data: dict[str, Any] = {}
    for field_id, targets in fields.items():
        f = meta.by_id.get(field_id)
        current = values.get(field_id)
        if f is None or f.deleted_at is not None or f.type not in REFERENCE_TYPES:
            continue
        if f.type == "reference" and blank(current):
            data[f.name] = targets[0]
        elif f.type == "reference_list" and any(t not in as_list(current) for t in targets):
            data[f.name] = [*as_list(current), *(t for t in targets if t not in as_list(current))]
    return data
