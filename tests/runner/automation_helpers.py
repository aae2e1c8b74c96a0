"""What the automation tests share: a lab (``study`` → ``sample``), workflow files, a tier-1 SDK
plugin (``gate``) that can hold a step open, report problems, append to a text or fail, waiting
for runs (bounded only by :data:`tests.waiting.HANG`), plugin registration with each plugin
folder described once per test process (:func:`register_plugins`), and data built once and kept
for the tests that only read it (:func:`kept`).

Import the fixtures where they are used: ``from tests.runner.automation_helpers import auto, gate``.
"""
from __future__ import annotations

import copy
import functools
import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest
import yaml

from benchbook.domain import plugin_registry as registry
from benchbook.runner.plugin_host import container, discovery
from benchbook.settings.config import read_paused, write_paused
from tests.api.helpers import make_collection, make_record, make_schema
from tests.conftest import empty_tables
from tests.runner.rawplugin import folder
from tests.waiting import HANG, until

T = TypeVar("T")

STATS: dict[str, Any] = {
    "description": "Count the words of a sample's notes",
    "record_schema": "sample",
    "triggers": {"record_created": {}, "record_updated": {"fields": ["notes"]}, "manual": {}},
    "steps": [{"id": "stats", "plugin": "benchbook.text-stats", "inputs": {"text": "record.notes"}}],
    "save": {"words": "stats.words", "chars": "stats.characters"},
}
"""Counts a sample's notes into ``words`` and ``chars`` when it is created or its notes change."""

GATE_PLUGIN = '''
import os, sys, time
from benchbook.plugin import Plugin, PluginError

plugin = Plugin(
    id="gate", name="Gate", category="test", description="Waits for a file, reports problems, appends, fails.",
    inputs={"text": {"type": "string"}, "folder": {"type": "string"}, "when": {"type": "date"}},
    outputs={"text": {"type": "string"}, "pid": {"type": "integer"}, "problems": {"type": "integer"},
             "when": {"type": "string"}},
    config_schema={"type": "object", "additionalProperties": False, "properties": {
        "wait": {"type": "boolean"}, "fail": {"type": "boolean"}, "problems": {"type": "integer"},
        "sleep": {"type": "number"}, "write": {"type": "string"}, "commit": {"type": "boolean"}}},
    capabilities=["get_context_record", "update_record", "commit"],
)


@plugin.run
def run(ctx, inputs, config):
    ctx.log("text is " + repr(inputs.get("text")))
    print("a line on stderr", file=sys.stderr, flush=True)
    where = inputs.get("folder")
    if config.get("wait") and where:
        open(os.path.join(where, "started"), "a").close()
        deadline = time.time() + HANG_SECONDS  # only a hang (the gate never opened) reaches it
        while not os.path.exists(os.path.join(where, "open")) and time.time() < deadline:
            time.sleep(0.02)
    if config.get("sleep"):
        time.sleep(config["sleep"])
    if "write" in config:
        ctx.update_record(ctx.get_context_record()["id"], {"site": config["write"]})
        if config.get("commit"):
            ctx.commit()
    if config.get("fail"):
        raise PluginError("plugin_error", "asked to fail")
    when = inputs.get("when")
    return {"text": (inputs.get("text") or "") + " x", "pid": os.getpid(), "problems": config.get("problems", 0),
            "when": when.isoformat() if when else None}
'''.replace("HANG_SECONDS", repr(HANG))


SDK_MANIFEST = f'command = ["{{python}}", "-m", "benchbook.plugin", "plugin.py"]\ntimeout = {HANG:g}\n'
"""``plugin.toml`` of an SDK plugin (``plugin.py``) whose steps may take up to :data:`~tests.waiting.HANG`
seconds unless a workflow step says otherwise: a step never races the default timeout (60 s)."""


def workflow(api: Any, name: str, body: dict[str, Any]) -> None:
    """Write ``workflows/<name>.yaml`` into ``api``'s project."""
    where = api.project.root / "workflows"
    where.mkdir(exist_ok=True)
    (where / f"{name}.yaml").write_text(yaml.safe_dump({"name": name, **body}, sort_keys=False))


def resume(root: Path) -> None:
    """Automation running in the project at ``root`` (``benchbook.toml`` rewritten only when it
    was paused)."""
    if read_paused(root):
        write_paused(root, False)


def clear_automation(api: Any) -> None:
    """No workflow files, automation running."""
    shutil.rmtree(api.project.root / "workflows", ignore_errors=True)
    (api.project.root / "workflows").mkdir()
    resume(api.project.root)


def wait_for(api: Any, job_id: str, *statuses: str) -> dict[str, Any]:
    """Poll run ``job_id`` (``GET /jobs/{id}`` of ``api``, anything with ``ok(method, path)``)
    until its status is one of ``statuses``, and return it. Only a hang reaches the bound
    (:data:`~tests.waiting.HANG`); the error then shows the run as last seen."""
    seen: dict[str, Any] = {}

    def reached() -> dict[str, Any]:
        job: dict[str, Any] = api.ok("GET", f"/jobs/{job_id}")
        seen["job"] = job
        return job if job["status"] in statuses else {}
    try:
        return until(reached, f"run {job_id} to be {' or '.join(statuses)}")
    except AssertionError as exc:
        raise AssertionError(f"{exc}; the run: {seen.get('job')}") from None


def wait_file(path: Path) -> None:
    """Wait until ``path`` exists (the gate plugin marks that it started); bounded only by
    :data:`~tests.waiting.HANG`."""
    until(path.exists, f"{path} to appear")


def runs(api: Any, **params: Any) -> list[dict[str, Any]]:
    """``GET /jobs`` with ``params``, oldest first."""
    return list(reversed(api.ok("GET", "/jobs", params=params)))


_DESCRIBED: dict[tuple[Any, ...], list[Any]] = {}


def _described(key: tuple[Any, ...], describe: Callable[[], list[Any]]) -> list[Any]:
    found = _DESCRIBED.get(key)
    if found is None:
        found = describe()
        if all(d.status == "ok" for d in found):  # a failed describe is tried again next time
            _DESCRIBED[key] = found
    return copy.deepcopy(found)  # replace_all renames clashing ids in place


def _describe_folder(where: Path, runtime: str) -> list[Any]:
    return [discovery.describe_folder(where, runtime)]


def register_plugins(api: Any) -> None:
    """Make the registry hold the built-ins and the plugins of the project's ``plugins/``, as
    ``POST /plugins/refresh`` does (what ``discovery.discover`` finds, in its order, then
    ``registry.replace_all`` under the write lock), describing each plugin folder once per test
    process and content: a tier-1 describe starts a Python subprocess (about 0.5 s with
    coverage), and the fixtures register the same few plugins again for hundreds of tests. Tests
    of discovery itself call the endpoint."""
    plugins_dir = api.project.root / "plugins"
    runtime = container.runtime_command()
    found = _described(("in-process",), lambda: discovery.discover(Path(os.devnull)))  # not a folder: no plugins/
    folders = sorted(plugins_dir.iterdir()) if plugins_dir.is_dir() else []
    for where in folders:
        if where.is_dir() and (where / discovery.MANIFEST).is_file():
            content = tuple((f.name, f.read_bytes()) for f in sorted(where.iterdir()) if f.is_file())
            found += _described((str(where), runtime, content), functools.partial(_describe_folder, where, runtime))
    discovery.installed_in_process.cache_clear()  # as a discovery does
    db = api.app.services.db
    with db.session() as s, s.begin():
        db.write_lock(s)
        registry.replace_all(s, found)


_KEPT: dict[tuple[str, int], tuple[Any, Any]] = {}


def kept(backend: Any, name: str, build: Callable[[Any], T], state: Callable[[Any], Any]) -> T:
    """Data that tests only read, built by ``build(backend)`` on emptied tables once per backend
    (``backend``: the session's app, the ``backend_app`` fixture) and reused while
    ``state(backend)`` is what it was right after the build. ``state`` must show rows the build
    made (their ids): any other test empties the tables first (the ``api`` fixture), so the next
    use sees another state and builds again. A test that uses it must not change what ``state``
    shows."""
    key = (name, id(backend))
    found = _KEPT.get(key)
    if found is not None and state(backend) == found[1]:
        return found[0]  # type: ignore[no-any-return]
    empty_tables(backend)
    built = build(backend)
    _KEPT[key] = (built, state(backend))
    return built


def make_lab(api: Any) -> dict[str, Any]:
    """Build the lab of :func:`auto` on ``api`` and return ``{"study": record, "make": make}``."""
    clear_automation(api)
    shutil.rmtree(api.project.root / "plugins", ignore_errors=True)
    make_schema(api, "study", [{"name": "title", "type": "string"}, {"name": "lead", "type": "string"}])
    make_schema(api, "sample", [{"name": "notes", "type": "string"}, {"name": "words", "type": "integer"},
                                {"name": "chars", "type": "integer"}, {"name": "site", "type": "string"},
                                {"name": "flag", "type": "boolean"}, {"name": "data", "type": "file"},
                                {"name": "checksum", "type": "string"}, {"name": "summary", "type": "string"},
                                {"name": "taken_on", "type": "date"}],
                parent="study")
    make_collection(api, "lab", ["study", "sample"])
    study = make_record(api, "lab", "study", {"title": "Lake", "lead": "Ada Lovelace"})
    register_plugins(api)

    def make(data: dict[str, Any] | None = None) -> dict[str, Any]:
        return make_record(api, "lab", "sample", data or {}, parent=study["id"])
    return {"study": study, "make": make}


@pytest.fixture
def auto(api: Any) -> Iterator[dict[str, Any]]:
    """A lab in collection ``lab``: a ``study`` (title, lead) holding ``sample`` records (notes,
    words, chars, site, flag, data, checksum, summary, taken_on); only the built-in plugins; no
    workflow file; automation running. ``make(data)`` creates a sample under the study. Drained
    and cleaned up afterwards."""
    yield make_lab(api)
    resume(api.project.root)
    api.ok("POST", "/jobs/drain")
    clear_automation(api)


@pytest.fixture
def gate(api: Any, auto: dict[str, Any], tmp_path: Path) -> Iterator[Path]:
    """The ``gate`` tier-1 SDK plugin in the project's ``plugins/``, discovered; yields a folder
    for its marker files (``started`` when a waiting step began; create ``open`` to let it go on).
    The gate is opened at the end."""
    folder(api.project.root / "plugins", "gate", GATE_PLUGIN, manifest=SDK_MANIFEST)
    register_plugins(api)
    assert api.ok("GET", "/plugins/gate")["status"] == "ok"
    marks = tmp_path / "gate"
    marks.mkdir()
    yield marks
    (marks / "open").touch()
