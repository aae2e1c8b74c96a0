"""Workflow triggers (docs/automation.md *A run is queued with its cause*): which runs a
transaction's record changes queue (runs started by hand: :mod:`benchbook.runner.manual_runs`).

:func:`on_changes` reads the :class:`~benchbook.domain.context.RecordChange` list a write left
in its ``Ctx`` and queues, in the same transaction, one run per (workflow, record):

- ``record_created``: a record of the workflow's ``record_schema`` was created;
- ``record_updated``: one of the fields the workflow watches (``fields``) really changed — a
  value stored differently after than before. Fields that merely also changed are listed in
  ``trigger_detail.changes`` with ``watched: false``. A workflow that saves other fields of its
  own record therefore does not trigger itself; one that saves a field it watches does, one hop
  deeper each time, until the chain ends;
- a run's own saves set ``caused_by`` (``{job_id, workflow}``) and ``depth`` = its depth + 1;
  past :data:`~.queue.MAX_DEPTH` hops nothing is queued and the causing run's log says so;
- while automation is paused nothing is queued.

Only valid workflows (no ``problems``) fire. A change of an ancestor record never fires a
workflow of a child schema, even one watching the inherited field: triggers look at the record
that changed.
"""
from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx, RecordChange
from benchbook.domain.errors import NotFound
from benchbook.persistence.tables import Job
from benchbook.runner import queue, workflows
from benchbook.runner.kept_reads import outlines, paused
from benchbook.runner.workflows import Workflow

SHORT = 200
"""Characters of a ``before``/``after`` value kept in ``trigger_detail.changes``."""


@dataclass
class Queued:
    """What :func:`on_changes` did: ``jobs`` queued, ``notes`` for the causing run's log."""

    jobs: list[Job] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def short(value: Any) -> Any:
    """``value`` cut to about :data:`SHORT` characters (long text, long lists or objects as text)."""
    if isinstance(value, str):
        return value if len(value) <= SHORT else value[:SHORT] + "…"
    if isinstance(value, (list, dict)):
        text = json.dumps(value, ensure_ascii=False, default=str)
        return value if len(text) <= SHORT else text[:SHORT] + "…"
    return value


def _merged(changes: Iterable[RecordChange]) -> list[RecordChange]:
    """One change per record, in first-change order: a record created and then edited in the same
    transaction counts as created with its last values."""
    by_record: dict[str, RecordChange] = {}
    for c in changes:
        first = by_record.get(c.record_id)
        by_record[c.record_id] = c if first is None else RecordChange(
            first.action, c.record_id, c.schema_id, c.dataset_id, first.before, c.after)
    return list(by_record.values())


def _field_changes(cache: SchemaCache, change: RecordChange, watched: set[str]) -> list[dict[str, Any]]:
    meta = cache.meta(change.schema_id)
    out = []
    for fid in dict.fromkeys([*change.before, *change.after]):
        before, after = change.before.get(fid), change.after.get(fid)
        if before == after:
            continue
        f = meta.by_id.get(fid)
        name = f.name if f is not None else fid
        out.append({"field": name, "label": (f.label or f.name) if f is not None else None,
                    "before": short(before), "after": short(after), "watched": name in watched})
    return out


WANTED = frozenset({"record_created", "record_updated"})
"""The triggers a record change can fire."""


def on_changes(ctx: Ctx, project_root: Path, loaded: workflows.Loaded | None = None) -> Queued:
    """Queue the runs ``ctx.changes`` trigger (see the module docstring), in ``ctx.session``'s
    transaction, and empty ``ctx.changes``. ``loaded``: workflows kept for a drain (a run's
    saves), else each candidate workflow is read and checked afresh."""
    changes, done = ctx.changes[:], Queued()
    ctx.changes.clear()
    found = outlines(project_root) if changes else {}
    if not any(triggers & WANTED for _, triggers in found.values()):
        return done
    if paused(project_root):
        if ctx.job_id:
            done.notes.append("automation is paused: the changes of this run start no workflow")
        return done
    cache = SchemaCache(ctx.session)
    names = {sid: cache.meta(sid).schema.name for sid in {c.schema_id for c in changes}}
    by_schema = _firing(ctx.session, project_root, loaded, found, set(names.values()))
    names = {sid: name for sid, name in names.items() if name in by_schema}
    depth = ctx.depth + 1 if ctx.job_id else 0
    caused_by = {"job_id": ctx.job_id, "workflow": ctx.workflow} if ctx.job_id else None
    for change in _merged(c for c in changes if c.schema_id in names):
        schema_name = names[change.schema_id]
        for wf in by_schema[schema_name]:
            fired = _fired(cache, wf, change)
            if fired is None:
                continue
            if depth > queue.MAX_DEPTH:
                done.notes.append(f"workflow {wf.name!r} was not started for record {change.record_id}: chains of "
                                  f"runs started by runs end after {queue.MAX_DEPTH} hops")
                continue
            trigger, detail = fired
            done.jobs.append(queue.enqueue(ctx.session, workflow=wf.name, record_id=change.record_id,
                                           schema_name=schema_name, trigger=trigger, depth=depth,
                                           trigger_detail={"changes": detail, "caused_by": caused_by}))
    return done


def _firing(s: Session, project_root: Path, loaded: workflows.Loaded | None,
            found: dict[str, tuple[str, frozenset[str]]], schema_names: set[str]) -> dict[str, list[Workflow]]:
    """Schema name → the valid workflows (checked in full) of those ``schema_names`` that a
    record change can fire, in file name order."""
    by_schema: dict[str, list[Workflow]] = {}
    for name, (schema_name, triggers) in sorted(found.items()):
        if schema_name not in schema_names or not triggers & WANTED:
            continue
        try:
            wf = (loaded.find if loaded is not None else workflows.find)(s, project_root, name)
        except NotFound:
            continue
        if not wf.problems:
            by_schema.setdefault(wf.record_schema, []).append(wf)
    return by_schema


def _fired(cache: SchemaCache, wf: Workflow, change: RecordChange) -> tuple[str, list[dict[str, Any]]] | None:
    """``(trigger, the field changes)`` when ``change`` fires ``wf``: a creation its
    ``record_created``, an update its ``record_updated`` when a watched field really changed."""
    if change.action == "created" and "record_created" in wf.triggers:
        return "record_created", _field_changes(cache, change, set())
    if change.action == "updated" and "record_updated" in wf.triggers:
        detail = _field_changes(cache, change, set(wf.triggers["record_updated"].get("fields") or []))
        return ("record_updated", detail) if any(c["watched"] for c in detail) else None
    return None
