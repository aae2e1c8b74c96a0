"""A run of pushed creates applied together (docs/sync.md *Pushing*; docs/performance.md *Sync*).

A device's push is mostly creates (an import, a day of new samples). One after the other, each
in a savepoint of its own through ``create_record``, they cost the authority four times what the
same creates cost made there. So :func:`merge.push <benchbook.domain.sync.merge.push>` hands a
run of consecutive creates of one collection to :func:`apply_run`, which makes them with the
bulk path (``bulk_create_records``: the same rules, the same entries as ``create_record``)
inside one savepoint. When rows of it are refused the savepoint is rolled back, each refused
row is weighed alone as before (a refusal undoes that entry alone and gets its row), and the
rows between them go in together again.

Each create keeps its entry as the device made it: the bulk path writes the entries through
:class:`_Stamped`, whose :meth:`~_Stamped.entry_origin` hands out the entries' origins (id,
actor, time, batch, the device's stamp) in the order of the rows; :func:`apply_run` checks
afterwards that every entry id names its own record.
"""
from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache, SchemaMeta
from benchbook.domain.context import Ctx, Origin
from benchbook.domain.errors import BenchbookError
from benchbook.domain.records.bulk import RowProblems, bulk_create_records
from benchbook.domain.sync import wire
from benchbook.domain.sync.rows import PARENT
from benchbook.persistence.tables import AuditEntry

MIN_RUN = 2
"""A run shorter than this goes entry by entry (the bulk path saves nothing on one create)."""


@dataclass
class _Stamped(Ctx):
    """A :class:`Ctx` whose audit entries take ``stamps`` in turn, one per entry written."""

    stamps: deque[Origin] = field(default_factory=deque)

    def entry_origin(self) -> Origin | None:
        """The next stamp (the bulk path writes one entry per row, in the rows' order)."""
        return self.stamps.popleft()


def by_name(meta: SchemaMeta, data: dict[str, Any]) -> dict[str, Any]:
    """Values keyed by field id as a request body's (field name → value); a field this project
    deleted or never had keeps its id, which the rules then refuse by name."""
    return {(meta.by_id[k].name if k in meta.by_id else k): v for k, v in data.items()}


def is_create(entry: dict[str, Any]) -> bool:
    """Whether the wire ``entry`` is a record's create."""
    return entry.get("entity_type") == "record" and entry.get("action") == "create"


def runs(entries: list[dict[str, Any]], present: set[str]) -> list[list[dict[str, Any]]]:
    """``entries`` (the push's entries not answered yet, in order) cut into consecutive groups:
    a run of at least :data:`MIN_RUN` creates of one collection whose records are neither among
    ``present`` (record ids the authority holds) nor made twice, or a single other entry."""
    out: list[list[dict[str, Any]]] = []
    run: list[dict[str, Any]] = []
    made: set[str] = set()

    def close() -> None:
        if len(run) >= MIN_RUN:
            out.append(list(run))
        else:
            out.extend([e] for e in run)
        run.clear()
        made.clear()

    for entry in entries:
        fits = (is_create(entry) and entry["entity_id"] not in present and entry["entity_id"] not in made
                and (not run or entry.get("dataset_id") == run[0].get("dataset_id")))
        if not fits:
            close()
            if not (is_create(entry) and entry["entity_id"] not in present):
                out.append([entry])
                continue
        run.append(entry)
        made.add(entry["entity_id"])
    close()
    return out


def apply_run(ctx: Ctx, device: str, run: list[dict[str, Any]], cache: SchemaCache,
              one: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """The answers to ``run`` (wire entries: creates of one collection, records not held), in
    order, stamped ``device``. The run goes in with the bulk path in one savepoint; when rows of
    it are refused, that is rolled back and the runs of rows between the refused ones go in the
    same way, each refused row by ``one`` (the entry-by-entry merge: its savepoint, its row).
    When the run cannot go at all (its collection or a schema gone), every entry goes by ``one``."""
    answered, refused = _bulk(ctx, device, run, cache)
    if answered is not None:
        return answered
    if refused is None:
        return [one(e) for e in run]
    out: list[dict[str, Any]] = []
    between: list[dict[str, Any]] = []
    for index, entry in enumerate(run):
        if index in refused:
            out += _between(ctx, device, between, cache, one)
            between = []
            out.append(one(entry))
        else:
            between.append(entry)
    return out + _between(ctx, device, between, cache, one)


def _between(ctx: Ctx, device: str, run: list[dict[str, Any]], cache: SchemaCache,
             one: Callable[[dict[str, Any]], dict[str, Any]]) -> list[dict[str, Any]]:
    """Rows the bulk path found nothing against: together again, or one by one when short or
    refused after all."""
    answered = _bulk(ctx, device, run, cache)[0] if len(run) >= MIN_RUN else None
    return answered if answered is not None else [one(e) for e in run]


def _bulk(ctx: Ctx, device: str, run: list[dict[str, Any]],
          cache: SchemaCache) -> tuple[list[dict[str, Any]] | None, set[int] | None]:
    """Make the creates of ``run`` with the bulk path inside one savepoint, each entry as the
    device made it. Returns their answers (``applied``) and None; or, with nothing changed,
    None and the indexes of the rows refused (a value, a parent, a uniqueness key), or None and
    None when the run cannot go at all (its collection or a schema gone)."""
    s = ctx.session
    try:
        collection = cache.collection(str(run[0].get("dataset_id")))
        metas = [cache.meta(str(e.get("schema_id"))) for e in run]
    except BenchbookError:
        return None, None
    if collection.deleted_at is not None:
        return None, None
    bodies = [{"schema_name": meta.schema.name, "parent_record_id": (e.get("new_data") or {}).get(PARENT),
               "data": by_name(meta, (e.get("new_data") or {}).get("data") or {})} for e, meta in zip(run, metas)]
    stamped = _Stamped(session=s, actor=ctx.actor, files_dir=ctx.files_dir, batch_id=ctx.batch_id,
                       request_id=ctx.request_id, stamps=deque(wire.origin(e, device=device) for e in run))
    savepoint = s.begin_nested()
    try:
        for entry in run:
            wire.ensure_batch(s, entry.get("batch"))
        bulk_create_records(stamped, collection.name, bodies, ids=[e["entity_id"] for e in run], cache=cache)
    except RowProblems as exc:
        savepoint.rollback()
        return None, {index for index, _ in exc.problems}
    except BenchbookError:
        savepoint.rollback()
        return None, None
    _check_stamps(s, run, stamped)
    savepoint.commit()
    return [{"id": e["id"], "status": "applied", "seq": None, "rows": []} for e in run], None


def _check_stamps(session: Session, run: list[dict[str, Any]], stamped: _Stamped) -> None:
    """Raise ``RuntimeError`` unless every stamp was used and every entry of ``run`` was written
    about its own record (the bulk path wrote its entries in the rows' order)."""
    written = dict(session.execute(select(AuditEntry.id, AuditEntry.entity_id).where(
        AuditEntry.id.in_([e["id"] for e in run]))).all())
    if stamped.stamps or any(written.get(e["id"]) != e["entity_id"] for e in run):
        raise RuntimeError("the bulk path wrote the pushed creates' entries out of order")
