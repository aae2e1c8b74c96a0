"""Running workflow steps in plugins: :class:`StepRunner` serves the steps of one run.

For each step it checks the plugin can run (status ``ok``), validates ``config`` against the
captured ``config_schema`` and the ``inputs`` against the declared inputs, encodes Python
values (``bytes``, ``pandas.DataFrame``, dates) into wire envelopes, dispatches by tier — tier 1
to a subprocess kept alive for the whole run (and, with a :class:`~.pool.Pool`, handed back to
it for later runs), tier 2 to a fresh container per operation, a
built-in in process — answers the plugin's ``rpc_call`` frames through the capability check,
checks the ``result`` against the declared outputs and decodes them back into Python values.
Every failure is a :class:`~.frames.StepFailed` with its ``kind``.

Use::

    with StepRunner(project_root=project.root) as runner:
        outputs = runner.run_step(plugin, {"text": "a b"}, {}, rpc_for=lambda scratch: ops, log=print)
"""
from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

import jsonschema

from benchbook.plugin import values as sdk_values
from benchbook.runner.plugins import builtin, container, scratch
from benchbook.runner.plugins.discovery import installed_in_process
from benchbook.runner.plugins.frames import StepFailed, port_problems
from benchbook.runner.plugins.host import LogSink, PluginProcess, RpcAnswer
from benchbook.runner.plugins.pool import POISONING, Pool
from benchbook.runner.plugins.rpc import enforcing

RpcFactory = Callable[[Path], RpcAnswer]
"""``rpc_for(scratch)``: the host operations for a step whose plugin uses ``scratch``."""


class StepRunner:
    """The steps of one run. Tier-1 processes started for a step stay alive for the run's
    later steps and are closed with the runner, or, with a ``pool`` (a drain's), taken from it
    and handed back to it (:mod:`.pool`: kept warm for the next runs; a process whose step
    failed with a kind of :data:`~.pool.POISONING` is ended at once); ``runtime`` is the
    container runtime command.

    Each in-process or tier-2 step gets a scratch folder of its own, empty when it starts,
    below ``scratch`` (default: a ``run-*`` folder of the runner's in this process's scratch
    area of the project in ``project_root``, removed with it; :mod:`.scratch`); tier-1
    processes make theirs in that area too (``project_root`` None: the user's cache folder's). With a
    ``scratch`` given (a drain's: :class:`benchbook.runner.engine.Drain`), a step's folder that
    is still empty when the runner closes is kept for the next run's step instead of being
    removed and made again: on this project's disks making and removing two folders cost about
    3 ms of wall-clock time a run, more than the rest of a 1-step built-in run's bookkeeping."""

    def __init__(self, *, runtime: str | None = None, log: LogSink | None = None, scratch: Path | None = None,
                 project_root: Path | None = None, pool: Pool | None = None) -> None:
        self.runtime = container.runtime_command(runtime)
        self.log = log
        self.project_root = project_root
        self.pool = pool
        if pool is not None:  # every run is a check point for processes idle too long
            pool.sweep()
        self._processes: dict[str, PluginProcess] = {}
        self._own = scratch is None
        self._scratch = self._area().make("run") if scratch is None else scratch
        self._steps = 0

    def _area(self) -> scratch.Area:
        return scratch.area(scratch.root_of(self.project_root))

    def run_step(self, plugin: dict[str, Any], inputs: dict[str, Any], config: dict[str, Any], *,
                 rpc_for: RpcFactory | None = None, timeout: float | None = None,
                 log: LogSink | None = None, frames: Callable[[str, dict[str, Any]], None] | None = None
                 ) -> dict[str, Any]:
        """Run one step of ``plugin`` (a PluginResponse from the registry, with its ``launch``)
        and return its outputs as Python values. ``timeout`` overrides the plugin's default
        (``plugin.toml`` ``timeout``, else 60 s). ``frames(direction, frame)`` sees every frame
        (``host`` or ``plugin``), for debugging. Raises :class:`StepFailed`."""
        if plugin["status"] != "ok":
            raise StepFailed(plugin["status"] if plugin["status"] != "error" else "plugin_unavailable",
                             f"plugin {plugin['id']!r} cannot run: {plugin['error']}")
        log = log or self.log
        config = self._config(plugin, config)
        launch = plugin.get("launch") or {}
        step_timeout = float(timeout or launch.get("timeout") or 60.0)
        tier = plugin["tier"]
        proc = self._process(plugin) if tier == "1" else None
        scratch = proc.scratch if proc else self._step_scratch()
        wire_inputs = self._encode_inputs(plugin, inputs, scratch)
        frame = {"type": "run", "inputs": wire_inputs, "config": config, "capabilities": plugin["capabilities"]}
        rpc = rpc_for(scratch) if rpc_for else None
        if rpc and tier != "builtin":  # built-ins: capabilities are metadata only (spec Dispatch models)
            rpc = enforcing(plugin["capabilities"], rpc)
        if frames:
            rpc = _watching(frames, rpc)
            frames("host", frame)
        if proc is not None:
            try:
                final = proc.request(frame, timeout=step_timeout, rpc=rpc, log=log)
            except StepFailed as exc:
                self._failed(plugin["id"], exc.kind)
                raise
        elif tier == "2":
            final = container.operate(self.runtime, {**launch, "id": plugin["id"]}, frame,
                                      cwd=Path(launch.get("folder") or scratch), timeout=step_timeout, rpc=None,
                                      log=log, project_root=self.project_root)
        else:
            final = self._in_process(plugin, wire_inputs, config, rpc, log, scratch)
        if frames:
            frames("plugin", final)
        if final["type"] == "error":
            err = final["error"]
            if proc is not None:
                self._failed(plugin["id"], err["kind"])
            raise StepFailed(err["kind"], err["message"], err["retryable"])
        problems = port_problems(plugin["outputs"], final["outputs"])
        if problems:
            raise StepFailed("invalid_output", f"plugin {plugin['id']!r} returned outputs that break its "
                                               f"contract: {'; '.join(problems)}")
        return self._decode_outputs(plugin, final["outputs"], scratch)

    # ------------------------------------------------------------------ pieces
    def _config(self, plugin: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
        errors = sorted(jsonschema.Draft202012Validator(plugin["config_schema"] or {}).iter_errors(config),
                        key=lambda e: e.message)
        if errors:
            raise StepFailed("invalid_config", f"config for plugin {plugin['id']!r}: "
                                               + "; ".join(e.message for e in errors[:3]))
        return config

    def _encode_inputs(self, plugin: dict[str, Any], inputs: dict[str, Any], scratch: Path) -> dict[str, Any]:
        wire: dict[str, Any] = {}
        for name, value in inputs.items():
            port = plugin["inputs"].get(name)
            try:
                wire[name] = (value if port is None or value is None or _already_wire(port["type"], value)
                              else sdk_values.encode_value(port["type"], value, scratch, stem=f"input-{name}"))
            except ValueError as exc:
                raise StepFailed("invalid_input", f"input {name!r}: {exc}") from None
        problems = port_problems(plugin["inputs"], wire)
        if problems:
            raise StepFailed("invalid_input", f"inputs for plugin {plugin['id']!r}: {'; '.join(problems)}")
        return wire

    def _decode_outputs(self, plugin: dict[str, Any], outputs: dict[str, Any], scratch: Path) -> dict[str, Any]:
        try:
            return {name: None if value is None else sdk_values.decode_value(plugin["outputs"][name]["type"], value,
                                                                             scratch)
                    for name, value in outputs.items()}
        except ValueError as exc:
            raise StepFailed("invalid_output", f"plugin {plugin['id']!r}: {exc}") from None

    def _process(self, plugin: dict[str, Any]) -> PluginProcess:
        proc = self._processes.get(plugin["id"])
        if proc is None or not proc.alive():
            if proc is not None:  # ended after an earlier step: what it started and its folder go first
                self._end(proc)
            if self.pool is not None:
                proc = self._processes[plugin["id"]] = self.pool.take(plugin)
                return proc
            launch = plugin["launch"]
            proc = PluginProcess(launch["command"], cwd=Path(launch["folder"]), log=self.log,
                                 project_root=self.project_root)
            self._processes[plugin["id"]] = proc
        return proc

    def _in_process(self, plugin: dict[str, Any], inputs: dict[str, Any], config: dict[str, Any],
                    rpc: RpcAnswer | None, log: LogSink | None, scratch: Path) -> dict[str, Any]:
        factory = installed_in_process().get((plugin.get("launch") or {}).get("entry_point", ""))
        if factory is None:
            raise StepFailed("plugin_unavailable", f"in-process plugin {plugin['id']!r} is no longer installed")
        return builtin.run_in_process(builtin.as_plugin(factory()), inputs, config, rpc, log, scratch)

    def _step_scratch(self) -> Path:
        """An empty folder for the next step (``step-<n>``; see the class docstring)."""
        self._steps += 1
        folder = self._scratch / f"step-{self._steps}"
        try:
            folder.mkdir()
        except FileExistsError:  # left empty by an earlier run (checked when it closed)
            if any(folder.iterdir()):
                shutil.rmtree(folder)
                folder.mkdir()
        return folder

    def _failed(self, plugin_id: str, kind: str) -> None:
        """A step of ``plugin_id`` failed with ``kind``: a poisoned process is ended now."""
        if kind in POISONING and (proc := self._processes.pop(plugin_id, None)) is not None:
            self._end(proc, kind)

    def _end(self, proc: PluginProcess, failed: str | None = "process_exit") -> None:
        if self.pool is not None:
            self.pool.give_back(proc, failed=failed)
        else:
            proc.close()

    def end_processes(self) -> None:
        """Be done with every plugin process of the run now (a later step would take or start
        them again): without a pool they are ended and their readers joined; handed back to
        the pool otherwise. Either way every line a plugin wrote to stderr during its steps has
        reached the log (a request returns after relaying them: :meth:`.host.PluginProcess.settle`)."""
        for proc in self._processes.values():
            self._end(proc, None)
        self._processes.clear()

    def close(self) -> None:
        """End every plugin process of the run and remove the run's scratch folders (a given
        ``scratch``: only what the steps left in their folders)."""
        self.end_processes()
        if self._own:
            shutil.rmtree(self._scratch, ignore_errors=True)
            return
        for n in range(1, self._steps + 1):
            folder = self._scratch / f"step-{n}"
            try:
                if any(folder.iterdir()):
                    shutil.rmtree(folder, ignore_errors=True)
            except OSError:
                pass  # gone already

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _already_wire(port_type: str, value: Any) -> bool:
    """Whether ``value`` is already in its wire form: dates and datetimes as ISO strings (how
    records store them and how the CLI gives them), checked by :func:`.frames.port_problems`."""
    return port_type in ("date", "datetime") and isinstance(value, str)


def _watching(frames: Callable[[str, dict[str, Any]], None], rpc: RpcAnswer | None) -> RpcAnswer:
    def watched(call: dict[str, Any]) -> dict[str, Any]:
        frames("plugin", call)
        answer = rpc(call) if rpc else {"type": "error", "call_id": call["call_id"], "error": {
            "kind": "capability_denied", "message": "no host operations are available here", "retryable": False}}
        frames("host", answer)
        return answer
    return watched
