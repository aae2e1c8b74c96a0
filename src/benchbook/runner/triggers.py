"""Workflow triggers (spec *Events* 2–4): which runs a transaction's record changes queue, and
runs started by hand.

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
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy.orm import Session

from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.context import Ctx, RecordChange
from benchbook.domain.errors import Conflict, Invalid, NotFound
from benchbook.domain.records.rows import find_record
from benchbook.persistence.tables import Job, Record, Schema
from benchbook.runner import queue, workflows
from benchbook.runner.workflows import Workflow
from benchbook.settings.config import CONFIG_NAME, read_paused

SHORT = 200
"""Characters of a ``before``/``after`` value kept in ``trigger_detail.changes``."""


@dataclass
class Queued:
    """What :func:`on_changes` did: ``jobs`` queued, ``notes`` for the causing run's log."""

    jobs: list[Job] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


_OUTLINES: dict[Path, tuple[int, int, str, frozenset[str]]] = {}
_KEPT_LOCK = threading.Lock()
"""Guards what this module keeps per file between calls: :data:`_OUTLINES` and :data:`_PAUSED`."""


def outlines(project_root: Path) -> dict[str, tuple[str, frozenset[str]]]:
    """Each workflow file's name → (``record_schema``, trigger names), read cheaply (YAML only,
    no checks) and kept until the file changes: what a write needs to see which workflows it
    might start before any is loaded and checked in full. Unreadable files are left out."""
    where = workflows.folder(project_root)
    if not where.is_dir():
        return {}
    out: dict[str, tuple[str, frozenset[str]]] = {}
    for path in sorted(where.iterdir()):  # in name order, as workflows.load_all reads them
        if path.suffix not in (".yaml", ".yml"):
            continue
        try:
            st = path.stat()
        except OSError:
            continue
        with _KEPT_LOCK:
            known = _OUTLINES.get(path)
        if known is None or known[:2] != (st.st_mtime_ns, st.st_size):
            try:
                raw = yaml.safe_load(path.read_text(encoding="utf-8"))
            except (OSError, UnicodeDecodeError, yaml.YAMLError, RecursionError):
                continue
            if not isinstance(raw, dict):
                continue
            triggers = raw.get("triggers")
            known = (st.st_mtime_ns, st.st_size, str(raw.get("record_schema") or ""),
                     frozenset(triggers) if isinstance(triggers, dict) else frozenset())
            with _KEPT_LOCK:
                _OUTLINES[path] = known
        out[path.stem] = known[2:]
    return out


_PAUSED: dict[Path, tuple[tuple[int, int, int, int], bool]] = {}


def paused(project_root: Path) -> bool:
    """:func:`benchbook.settings.config.read_paused`, read again only when ``benchbook.toml`` changed (its
    inode, size, modification or change time: :func:`~benchbook.settings.config.write_paused` replaces
    the file, so a new inode): the worker asks before every run, and parsing the TOML each time
    cost about 0.5 ms a run."""
    path = project_root / CONFIG_NAME
    try:
        st = path.stat()
    except OSError:
        return read_paused(project_root)
    key = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)
    with _KEPT_LOCK:
        known = _PAUSED.get(path)
    if known is not None and known[0] == key:
        return known[1]
    value = read_paused(project_root)
    with _KEPT_LOCK:
        _PAUSED[path] = (key, value)
    return value


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


def on_changes(ctx: Ctx, project_root: Path, loaded: workflows.Loaded | None = None) -> Queued:
    """Queue the runs ``ctx.changes`` trigger (see the module docstring), in ``ctx.session``'s
    transaction, and empty ``ctx.changes``. ``loaded``: workflows kept for a drain (a run's
    saves), else each candidate workflow is read and checked afresh."""
    changes, done = ctx.changes[:], Queued()
    ctx.changes.clear()
    found = outlines(project_root) if changes else {}
    wanted = {"record_created", "record_updated"}
    if not any(triggers & wanted for _, triggers in found.values()):
        return done
    if paused(project_root):
        if ctx.job_id:
            done.notes.append("automation is paused: the changes of this run start no workflow")
        return done
    s = ctx.session
    schema_ids = {c.schema_id for c in changes}
    cache = SchemaCache(s)
    names = {sid: cache.meta(sid).schema.name for sid in schema_ids}
    by_schema: dict[str, list[Workflow]] = {}
    for name, (schema_name, triggers) in sorted(found.items()):
        if schema_name not in names.values() or not triggers & wanted:
            continue
        try:
            # checked in full: only valid ones fire
            wf = (loaded.find if loaded is not None else workflows.find)(s, project_root, name)
        except NotFound:
            continue
        if not wf.problems:
            by_schema.setdefault(wf.record_schema, []).append(wf)
    names = {sid: name for sid, name in names.items() if name in by_schema}
    if not names:
        return done
    depth = ctx.depth + 1 if ctx.job_id else 0
    caused_by = {"job_id": ctx.job_id, "workflow": ctx.workflow} if ctx.job_id else None
    for change in _merged(c for c in changes if c.schema_id in names):
        schema_name = names[change.schema_id]
        for wf in by_schema[schema_name]:
            if change.action == "created" and "record_created" in wf.triggers:
                trigger, detail = "record_created", _field_changes(cache, change, set())
            elif change.action == "updated" and "record_updated" in wf.triggers:
                watched = set(wf.triggers["record_updated"].get("fields") or [])
                detail = _field_changes(cache, change, watched)
                if not any(c["watched"] for c in detail):
                    continue
                trigger = "record_updated"
            else:
                continue
            if depth > queue.MAX_DEPTH:
                done.notes.append(f"workflow {wf.name!r} was not started for record {change.record_id}: chains of "
                                  f"runs started by runs end after {queue.MAX_DEPTH} hops")
                continue
            done.jobs.append(queue.enqueue(s, workflow=wf.name, record_id=change.record_id, schema_name=schema_name,
                                           trigger=trigger, depth=depth,
                                           trigger_detail={"changes": detail, "caused_by": caused_by}))
    return done


# ---------------------------------------------------------------------------- by hand
def refuse_while_paused(project_root: Path, what: str, *, invalid: bool = False) -> None:
    """Raise ``Conflict`` (409; ``invalid``: ``Invalid``, 422) naming ``what`` while automation
    is paused."""
    if read_paused(project_root):
        message = f"automation is paused: {what} is refused until it is resumed (POST /automation/resume)"
        raise Invalid(message) if invalid else Conflict(message)


def manual_workflow(session: Session, project_root: Path, name: str) -> Workflow:
    """The workflow ``name``, checked to be runnable by hand. Raises ``NotFound``, ``Invalid``."""
    wf = workflows.find(session, project_root, name)
    if wf.problems:
        raise Invalid(f"workflow {name!r} has {len(wf.problems)} problem(s) and cannot run: "
                      + "; ".join(p["msg"] for p in wf.problems[:3]))
    if "manual" not in wf.triggers:
        raise Invalid(f"workflow {name!r} cannot be run by hand: its triggers do not include manual")
    return wf


def _record_for(session: Session, wf: Workflow, record_id: str) -> Record:
    rec = find_record(session, record_id)
    schema = session.get(Schema, rec.schema_id)
    if schema is None or schema.name != wf.record_schema:
        raise Invalid(f"record {rec.id} is a {schema.name if schema else '?'!r} record; workflow {wf.name!r} runs "
                      f"for {wf.record_schema!r} records")
    return rec


def run_manual(session: Session, project_root: Path, name: str, record_id: str) -> Job:
    """Queue a manual run of workflow ``name`` for ``record_id``. Raises ``Conflict`` while
    paused, ``NotFound`` (workflow, record), ``Invalid`` (workflow not runnable by hand, or for
    another schema)."""
    refuse_while_paused(project_root, "a manual run")
    wf = manual_workflow(session, project_root, name)
    rec = _record_for(session, wf, record_id)
    return queue.enqueue(session, workflow=wf.name, record_id=rec.id, schema_name=wf.record_schema, trigger="manual")


def run_many(session: Session, project_root: Path, name: str, record_ids: list[str]) -> dict[str, Any]:
    """Queue one manual run of ``name`` per record of ``record_ids`` (each once); those that
    cannot run are skipped with a reason. Returns ``{started, job_ids, skipped}``."""
    refuse_while_paused(project_root, "a manual run")
    wf = manual_workflow(session, project_root, name)
    started: list[str] = []
    skipped: list[dict[str, str]] = []
    seen: set[str] = set()
    for given in record_ids:
        try:
            rec = _record_for(session, wf, given)
        except (NotFound, Invalid) as exc:
            skipped.append({"id": given, "reason": exc.detail})
            continue
        if rec.id in seen:
            skipped.append({"id": given, "reason": f"record {rec.id} is listed more than once"})
            continue
        seen.add(rec.id)
        job = queue.enqueue(session, workflow=wf.name, record_id=rec.id, schema_name=wf.record_schema,
                            trigger="manual")
        started.append(job.id)
    return {"started": len(started), "job_ids": started, "skipped": skipped}
