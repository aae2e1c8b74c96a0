"""Workflows: YAML files in the project's ``workflows/`` folder, one per workflow (version-
controllable, not history entities). A file ``workflows/<name>.yaml``::

    name: measure-notes                # = the file name
    description: Count the words of a sample's notes
    record_schema: sample              # the schema whose records it runs for
    triggers:                          # any of these three
      record_created: {}
      record_updated: {fields: [notes]}   # only when one of these really changed
      manual: {}
    steps:
      - id: stats                      # unique within the workflow
        plugin: benchbook.text-stats   # a registered plugin id
        config: {}                     # checked against the plugin's config_schema
        inputs:                        # a literal, or a reference: record.<field> (own or
          text: record.notes           #   inherited), record.id, <earlier step id>.<output>
        timeout: 30                    # seconds (default: the plugin's)
        if: {field: notes, op: is_null, value: false}   # a record filter tree; else skipped
    save:                              # record field ← <step id>.<output>, after that step
      word_count: stats.words

:func:`load_all` lists every file, an invalid one with its ``problems`` (never skipped);
:func:`put` refuses a workflow with problems as one 422 listing each.
"""
from __future__ import annotations

import re
import stat
import threading
import time
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain import plugin_registry as registry
from benchbook.domain.catalog.lookup import SchemaMeta, ancestors, find_schema
from benchbook.domain.errors import Conflict, Invalid, NotFound, error_entry
from benchbook.persistence.tables import Job, Plugin, utcnow
from benchbook.runner.shapes import WorkflowProblem, WorkflowResponse

FOLDER = "workflows"
NAME = re.compile(r"^[a-z][a-z0-9_-]{0,99}$")
TRIGGERS = ("record_created", "record_updated", "manual")
WORKFLOW_KEYS = ("name", "description", "record_schema", "triggers", "steps", "save")
STEP_KEYS = ("id", "plugin", "config", "inputs", "timeout", "if")
MAX_FILE_BYTES = 256 * 1024
"""Largest workflow file read or accepted (256 KiB)."""
_REF = re.compile(r"^([A-Za-z_][A-Za-z0-9_-]*)\.([A-Za-z_][A-Za-z0-9_]*)$")
RECHECK = 1.0
"""Seconds a :class:`Loaded` keeps a workflow's check (schema, fields, plugins) before checking
it again: a schema or plugin change reaches a drain in progress within this time."""


@dataclass
class Step:
    """One step: ``when`` is the YAML ``if`` (a record filter tree) or None."""

    id: str
    plugin: str
    config: dict[str, Any] = field(default_factory=dict)
    inputs: dict[str, Any] = field(default_factory=dict)
    timeout: float | None = None
    when: dict[str, Any] | None = None


@dataclass
class Workflow:
    """A workflow file as loaded; ``problems`` (``[{loc, msg}]``) is empty when it is valid."""

    name: str
    description: str = ""
    record_schema: str = ""
    triggers: dict[str, Any] = field(default_factory=dict)
    steps: list[Step] = field(default_factory=list)
    save: dict[str, str] = field(default_factory=dict)
    problems: list[WorkflowProblem] = field(default_factory=list)
    content: str = ""


def reference(value: Any, step_ids: Collection[str]) -> tuple[str, str] | None:
    """``("record", field or "id")`` or ``(step id, output)`` when ``value`` is a reference
    string (``record.<field>``, ``record.id``, ``<step id>.<output>`` with a step of
    ``step_ids``), else None (a literal)."""
    if not isinstance(value, str) or not (m := _REF.match(value)):
        return None
    head, tail = m.groups()
    return (head, tail) if head == "record" or head in step_ids else None


def folder(project_root: Path) -> Path:
    """The project's ``workflows/`` folder."""
    return project_root / FOLDER


def _path(project_root: Path, name: str) -> Path:
    return folder(project_root) / f"{name}.yaml"


class _Checker:
    """Collects the problems of one workflow document."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.problems: list[WorkflowProblem] = []

    def add(self, loc: list[str | int], msg: str) -> None:
        self.problems.append({"loc": loc, "msg": msg})

    def record_fields(self, schema_name: str) -> set[str] | None:
        try:
            schema = find_schema(self.session, schema_name)
        except NotFound:
            return None
        own = {f.name for f in SchemaMeta(self.session, schema).fields}
        inherited = {f.name for a in ancestors(self.session, schema) if a.deleted_at is None
                     for f in SchemaMeta(self.session, a).fields}
        return own | inherited | {"id"}

    def own_fields(self, schema_name: str) -> set[str]:
        return {f.name for f in SchemaMeta(self.session, find_schema(self.session, schema_name)).fields}

    def check(self, raw: Any, name: str) -> Workflow:
        if not isinstance(raw, dict):
            self.add([], "a workflow is a YAML mapping")
            return Workflow(name=name, problems=self.problems)
        for key in sorted(set(raw) - set(WORKFLOW_KEYS)):
            self.add([key], f"unknown key {key!r} (keys: {', '.join(WORKFLOW_KEYS)})")
        if raw.get("name", name) != name:
            self.add(["name"], f"name {raw.get('name')!r} differs from the file's name {name!r}")
        wf = Workflow(name=name, description=str(raw.get("description") or ""),
                      record_schema=str(raw.get("record_schema") or ""))
        fields = self.record_fields(wf.record_schema) if wf.record_schema else None
        if not wf.record_schema:
            self.add(["record_schema"], "record_schema is required")
        elif fields is None:
            self.add(["record_schema"], f"unknown schema {wf.record_schema!r}")
        wf.triggers = self._triggers(raw.get("triggers"), fields)
        outputs = self._steps(raw.get("steps"), wf, fields)
        self._save(raw.get("save"), wf, outputs)
        wf.problems = self.problems
        return wf

    def _triggers(self, triggers: Any, fields: set[str] | None) -> dict[str, Any]:
        """The document's ``triggers`` as ``trigger name → settings`` (known triggers only, None as {}),
        after noting their problems: none given, an unknown trigger, settings for one that takes none, and
        those of ``record_updated`` (:meth:`_watched_fields`)."""
        if not isinstance(triggers, dict) or not triggers:
            self.add(["triggers"], f"triggers must name at least one of {', '.join(TRIGGERS)}")
            return {}
        for key, spec in triggers.items():
            if key not in TRIGGERS:
                self.add(["triggers", key], f"unknown trigger {key!r} (triggers: {', '.join(TRIGGERS)})")
            elif spec not in (None, {}) and key != "record_updated":
                self.add(["triggers", key], f"{key} takes no settings ({{}})")
        if "record_updated" in triggers:
            self._watched_fields(triggers["record_updated"], fields)
        return {k: (v or {}) for k, v in triggers.items() if k in TRIGGERS}

    def _watched_fields(self, updated: Any, fields: set[str] | None) -> None:
        """Notes the problems of the ``record_updated`` trigger's settings ``updated``: ``fields`` must be a
        non-empty list of names, each a field of the record (``fields``, None when the schema is unknown:
        not checked; ``id`` is no field to watch)."""
        watched = (updated or {}).get("fields") if isinstance(updated, dict) else None
        if not isinstance(watched, list) or not watched or not all(isinstance(f, str) for f in watched):
            self.add(["triggers", "record_updated", "fields"], "record_updated needs fields: a list of field names")
        elif fields is not None:
            for i, f in enumerate(watched):
                if f not in fields or f == "id":
                    self.add(["triggers", "record_updated", "fields", i], f"unknown field {f!r}")

    def _steps(self, steps: Any, wf: Workflow, fields: set[str] | None) -> dict[str, set[str]]:
        if not isinstance(steps, list) or not steps:
            self.add(["steps"], "steps must be a non-empty list")
            return {}
        outputs: dict[str, set[str]] = {}
        every_id = {s.get("id") for s in steps if isinstance(s, dict)}
        for i, raw in enumerate(steps):
            loc: list[str | int] = ["steps", i]
            if not isinstance(raw, dict):
                self.add(loc, "a step is a mapping")
                continue
            for key in sorted(set(raw) - set(STEP_KEYS)):
                self.add([*loc, key], f"unknown key {key!r} (keys: {', '.join(STEP_KEYS)})")
            sid = raw.get("id")
            if not isinstance(sid, str) or not NAME.match(sid) or sid == "record":
                self.add([*loc, "id"], "id must be a slug (a-z, 0-9, - and _), not 'record'")
                continue
            if sid in outputs:
                self.add([*loc, "id"], f"step id {sid!r} is used twice")
            step = Step(id=sid, plugin=str(raw.get("plugin") or ""), config=raw.get("config") or {},
                        inputs=raw.get("inputs") or {}, timeout=raw.get("timeout"), when=raw.get("if"))
            plugin = self._plugin(step, loc)
            self._step_values(step, loc, plugin, fields, outputs, every_id)
            outputs[sid] = set(plugin.outputs) if plugin else set()
            wf.steps.append(step)
        return outputs

    def _plugin(self, step: Step, loc: list[str | int]) -> Plugin | None:
        try:
            plugin = registry.find_plugin(self.session, step.plugin)
        except NotFound:
            self.add([*loc, "plugin"], f"unknown plugin {step.plugin!r}")
            return None
        if plugin.status != "ok":
            self.add([*loc, "plugin"], f"plugin {step.plugin!r} cannot run: {plugin.error}")
        if not isinstance(step.config, dict):
            self.add([*loc, "config"], "config must be a mapping")
        else:
            import jsonschema  # only where a workflow is checked: 50 ms of every command's start-up otherwise

            for err in jsonschema.Draft202012Validator(plugin.config_schema or {}).iter_errors(step.config):
                self.add([*loc, "config", *err.absolute_path], err.message)
        return plugin

    def _step_values(self, step: Step, loc: list[str | int], plugin: Plugin | None, fields: set[str] | None,
                     outputs: dict[str, set[str]], every_id: set[Any]) -> None:
        if step.timeout is not None and (not isinstance(step.timeout, (int, float)) or step.timeout <= 0):
            self.add([*loc, "timeout"], "timeout must be a positive number of seconds")
        if step.when is not None and not isinstance(step.when, dict):
            self.add([*loc, "if"], "if must be a record filter tree (a mapping)")
        if not isinstance(step.inputs, dict):
            self.add([*loc, "inputs"], "inputs must be a mapping")
            return
        declared = plugin.inputs if plugin else {}
        for name, value in step.inputs.items():
            if plugin and name not in declared:
                self.add([*loc, "inputs", name], f"plugin {step.plugin!r} has no input {name!r}")
            self._reference([*loc, "inputs", name], value, fields, outputs, every_id)
        for name, port in declared.items():
            if port.get("required") and name not in step.inputs:
                self.add([*loc, "inputs", name], f"input {name!r} is required by plugin {step.plugin!r}")

    def _reference(self, loc: list[str | int], value: Any, fields: set[str] | None, outputs: dict[str, set[str]],
                   every_id: set[Any]) -> None:
        ref = reference(value, every_id)
        if ref is None:
            return
        head, tail = ref
        if head == "record":
            if fields is not None and tail not in fields:
                self.add(loc, f"record has no field {tail!r}")
        elif head not in outputs:
            self.add(loc, f"{value!r} refers to step {head!r}, which does not run before this one")
        elif tail not in outputs[head] and outputs[head]:
            self.add(loc, f"step {head!r} has no output {tail!r}")

    def _save(self, save: Any, wf: Workflow, outputs: dict[str, set[str]]) -> None:
        if save is None:
            return
        if not isinstance(save, dict):
            self.add(["save"], "save must map record fields to <step id>.<output>")
            return
        own = self.own_fields(wf.record_schema) if wf.record_schema and not any(
            p["loc"][:1] == ["record_schema"] for p in self.problems) else None
        for target, source in save.items():
            if own is not None and target not in own:
                self.add(["save", target], f"{wf.record_schema!r} has no field {target!r} to save into")
            ref = reference(source, set(outputs))
            if ref is None or ref[0] == "record":
                self.add(["save", target], f"{source!r} is not <step id>.<output> of a step of this workflow")
            elif outputs[ref[0]] and ref[1] not in outputs[ref[0]]:
                self.add(["save", target], f"step {ref[0]!r} has no output {ref[1]!r}")
            else:
                wf.save[str(target)] = str(source)


def yaml_problem(exc: yaml.YAMLError) -> WorkflowProblem:
    """A YAML syntax error as a problem a person can act on: ``{loc: [], msg, line, column}``,
    ``msg`` "not valid YAML at line 3, column 7: mapping values are not allowed here (while
    scanning a simple key)" and ``line``/``column`` 1-based where PyYAML marks the place (else the
    problem has neither)."""
    mark = getattr(exc, "problem_mark", None)
    problem = str(getattr(exc, "problem", "") or "").strip() or str(exc).strip()
    context = str(getattr(exc, "context", "") or "").strip()
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    found: WorkflowProblem = {"loc": [],
                              "msg": f"not valid YAML{where}: {problem}" + (f" ({context})" if context else "")}
    if mark is not None:
        found.update({"line": mark.line + 1, "column": mark.column + 1})
    return found


def parse(session: Session, name: str, content: str) -> Workflow:
    """The workflow ``content`` (YAML text) would define under ``name``, with its problems."""
    if len(content.encode("utf-8")) > MAX_FILE_BYTES:
        return Workflow(name=name, content=content, problems=[{"loc": [], "msg": f"a workflow file holds at most "
                                                                                  f"{MAX_FILE_BYTES} bytes"}])
    try:
        raw = yaml.safe_load(content)
    except yaml.YAMLError as exc:
        return Workflow(name=name, content=content, problems=[yaml_problem(exc)])
    except RecursionError:  # PyYAML composes recursively: ~1,000 levels of nesting exhaust the stack
        return Workflow(name=name, content=content, problems=[{"loc": [], "msg": "not valid YAML: nested too deep"}])
    wf = _Checker(session).check(raw, name)
    wf.content = content
    return wf


def load_all(session: Session, project_root: Path) -> list[Workflow]:
    """Every ``*.yaml``/``*.yml`` file of ``workflows/``, by name, invalid ones with problems."""
    where = folder(project_root)
    files = sorted([*where.glob("*.yaml"), *where.glob("*.yml")]) if where.is_dir() else []
    return [_load(session, path) for path in files]


def _load(session: Session, path: Path) -> Workflow:
    name = path.stem
    try:
        content = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        return Workflow(name=name, problems=[{"loc": [], "msg": f"cannot read {path.name}: {exc}"}])
    wf = parse(session, name, content)
    if not NAME.match(name):
        wf.problems.insert(0, {"loc": [], "msg": f"file name {path.name!r} is not a workflow name (a slug)"})
    return wf


def find(session: Session, project_root: Path, name: str) -> Workflow:
    """The workflow ``name`` (loaded, with its problems). Raises ``NotFound``."""
    for path in (_path(project_root, name), folder(project_root) / f"{name}.yml"):
        if NAME.match(name) and path.is_file():
            return _load(session, path)
    raise NotFound(f"workflow {name!r} not found")


_generation = 0
"""Bumped by :func:`put` and :func:`delete`: every :class:`Loaded` forgets what it kept."""
_generation_lock = threading.Lock()


def _changed() -> None:
    global _generation
    with _generation_lock:
        _generation += 1


class Loaded:
    """Workflows found and checked once for a stretch of work (one drain of the run queue): what
    :func:`find` returns, kept for as long as the file is the same (its inode, size and
    modification time), no :func:`put` or :func:`delete` happened in this process and the check
    is younger than ``recheck`` seconds (it reads the schema's fields and the plugin registry,
    which may change meanwhile). Only valid workflows are kept: one with problems is checked
    again on every call, so a fix (a schema or plugin added) is seen at once.

    A drain of 10,000 runs otherwise parses and checks the YAML twice per run (the engine, then
    the triggers of the run's save): about a third of a run's time (``docs/performance.md``).
    Not shared between threads."""

    def __init__(self, recheck: float = RECHECK) -> None:
        self.recheck = recheck
        self._kept: dict[str, tuple[tuple[Any, ...], float, Workflow]] = {}

    def find(self, session: Session, project_root: Path, name: str) -> Workflow:
        """:func:`find`, from what is kept when it is still current. Raises ``NotFound``."""
        if not NAME.match(name):
            raise NotFound(f"workflow {name!r} not found")
        for path in (_path(project_root, name), folder(project_root) / f"{name}.yml"):
            try:
                st = path.stat()
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            key = (str(path), st.st_ino, st.st_size, st.st_mtime_ns, _generation)
            kept = self._kept.get(name)
            now = time.monotonic()
            if kept is not None and kept[0] == key and now - kept[1] < self.recheck:
                return kept[2]
            wf = _load(session, path)
            if wf.problems:
                self._kept.pop(name, None)
            else:
                self._kept[name] = (key, now, wf)
            return wf
        self._kept.pop(name, None)
        raise NotFound(f"workflow {name!r} not found")


def put(session: Session, project_root: Path, name: str, content: str) -> tuple[Workflow, bool]:
    """Write ``workflows/<name>.yaml`` from ``content`` when it has no problems; returns the
    workflow and whether it is new. Raises ``Invalid`` listing every problem (loc
    ``["body", "content", …]``)."""
    if not NAME.match(name):
        raise Invalid(f"{name!r} is not a workflow name",
                      [error_entry(["path", "name"], "a slug: a-z, 0-9, - and _, starting with a letter", "name", name)])
    wf = parse(session, name, content)
    if wf.problems:
        raise Invalid(f"workflow {name!r} has {len(wf.problems)} problem(s): " + "; ".join(
            p["msg"] for p in wf.problems[:5]), [
                error_entry(["body", "content", *p["loc"]], p["msg"], "workflow",
                            ctx={k: p[k] for k in ("line", "column") if k in p}) for p in wf.problems])
    path = _path(project_root, name)
    created = not path.exists()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".yaml.tmp")
    tmp.write_text(content, encoding="utf-8")
    tmp.replace(path)
    _changed()
    return wf, created


def delete(session: Session, project_root: Path, name: str, *, force: bool) -> None:
    """Remove the workflow's file. Raises ``NotFound``; ``Conflict`` while it has waiting or
    running runs, unless ``force``: then waiting runs are cancelled and running ones asked to
    stop before their next step."""
    paths = [p for p in (_path(project_root, name), folder(project_root) / f"{name}.yml") if p.is_file()]
    if not NAME.match(name) or not paths:
        raise NotFound(f"workflow {name!r} not found")
    active = list(session.scalars(select(Job).where(Job.workflow_name == name,
                                                    Job.status.in_(("pending", "running")))))
    if active and not force:
        raise Conflict(f"workflow {name!r} has {len(active)} waiting or running run(s); pass force=true to delete "
                       "it anyway (waiting runs are cancelled, running ones stop before their next step)")
    for job in active:
        if job.status == "pending":
            job.status, job.finished_at = "cancelled", utcnow()
        else:
            job.cancel_requested = True
    for p in paths:
        p.unlink()
    _changed()


def workflow_response(wf: Workflow) -> WorkflowResponse:
    """WorkflowResponse: the definition, its YAML ``content``, ``valid`` and ``problems``."""
    return {"name": wf.name, "description": wf.description, "record_schema": wf.record_schema,
            "triggers": wf.triggers, "save": wf.save, "content": wf.content, "valid": not wf.problems,
            "problems": wf.problems,
            "steps": [{"id": s.id, "plugin": s.plugin, "config": s.config, "inputs": s.inputs, "timeout": s.timeout,
                       "if": s.when} for s in wf.steps]}
