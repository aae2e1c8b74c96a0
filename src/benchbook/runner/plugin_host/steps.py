"""Running workflow steps in plugins: :class:`StepRunner` serves the steps of one run.

For each step it checks the plugin can run (status ``ok``), validates ``config`` against the
captured ``config_schema`` and the ``inputs`` against the declared inputs, encodes Python
values (``bytes``, ``pandas.DataFrame``, dates) into wire envelopes, dispatches by tier — tier 1
to a subprocess kept alive for the whole run (and, with a :class:`~.pool.Pool`, handed back to
it for later runs), tier 2 to a fresh container per operation, a
built-in in process — answers the plugin's ``rpc_call`` frames through the capability check,
checks the ``result`` against the declared outputs and decodes them back into Python values.
Every failure is a :class:`~benchbook.runner.errors.StepFailed` with its ``kind``.

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
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host import builtin, container, scratch
from benchbook.runner.plugin_host.discovery import installed_in_process
from benchbook.runner.plugin_host.frames import port_problems
from benchbook.runner.plugin_host.host import LogSink, PluginProcess, RpcAnswer
from benchbook.runner.plugin_host.pool import POISONING, Pool
from benchbook.runner.plugin_host.rpc import enforcing, refusing_one_run_calls

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
    ``scratch`` given (a drain's: :class:`benchbook.runner.drain.Drain`), a step's folder that
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
        (``host`` or ``plugin``), for debugging. A batch plugin gets a batch of one
        (:meth:`run_batch`). Raises :class:`StepFailed`."""
        if plugin.get("batch"):
            (answer,) = self.run_batch(plugin, [inputs], config, rpc_for=rpc_for, timeout=timeout, log=log,
                                       frames=frames)
            if isinstance(answer, StepFailed):
                raise answer
            return answer
        self._runnable(plugin)
        config = self._config(plugin, config)
        proc = self._process(plugin) if plugin["tier"] == "1" else None
        scratch = proc.scratch if proc else self._step_scratch()
        wire_inputs = self._encode_inputs(plugin, inputs, scratch)
        frame = {"type": "run", "inputs": wire_inputs, "config": config, "capabilities": plugin["capabilities"]}
        final = self._dispatch(plugin, proc, frame, scratch, rpc_for=rpc_for, frames=frames, log=log or self.log,
                               timeout=self._timeout(plugin, timeout))
        if final["type"] == "error":
            err = final["error"]
            raise StepFailed(err["kind"], err["message"], err["retryable"])
        return self._outputs(plugin, final["outputs"], scratch)

    def run_batch(self, plugin: dict[str, Any], items: list[dict[str, Any]], config: dict[str, Any], *,
                  rpc_for: RpcFactory | None = None, timeout: float | None = None, log: LogSink | None = None,
                  frames: Callable[[str, dict[str, Any]], None] | None = None) -> list[dict[str, Any] | StepFailed]:
        """Run one step of a batch plugin (``batch`` true: ``plugin-protocol/README.md``) for
        every item of ``items`` (each one run's inputs) in one ``run`` frame; returns, in order,
        each item's outputs as Python values or the :class:`StepFailed` it ended with: its own
        ``invalid_input`` (it was not sent), its entry in the result's ``errors``, its own
        ``invalid_output``, or what failed the whole batch (the plugin's ``error`` frame, a
        result of the wrong length, ``timeout``, ``process_exit``: every item sent gets it).
        ``timeout`` (per item, default as in :meth:`run_step`) times the items sent bounds the
        whole turn. RPC calls about one run (:data:`~.rpc.ONE_RUN_CALLS`) are refused: no single
        run is in context. Raises :class:`StepFailed` only when the plugin cannot run at all or
        ``config`` breaks its schema."""
        self._runnable(plugin)
        config = self._config(plugin, config)
        proc = self._process(plugin) if plugin["tier"] == "1" else None
        scratch = proc.scratch if proc else self._step_scratch()
        answers: list[dict[str, Any] | StepFailed | None] = [None] * len(items)
        wire: list[dict[str, Any]] = []
        sent: list[int] = []
        for index, inputs in enumerate(items):
            try:
                wire.append(self._encode_inputs(plugin, inputs, scratch))
                sent.append(index)
            except StepFailed as exc:
                answers[index] = exc
        if sent:
            frame = {"type": "run", "inputs": wire, "config": config, "capabilities": plugin["capabilities"]}
            try:
                final = self._dispatch(plugin, proc, frame, scratch, rpc_for=rpc_for, frames=frames,
                                       log=log or self.log, timeout=self._timeout(plugin, timeout) * len(sent),
                                       batch=True)
                got = self._batch_answers(plugin, final, len(sent), scratch)
            except StepFailed as exc:  # the process or the wire failed: every item sent fails with it
                got = [exc] * len(sent)
            for index, answer in zip(sent, got, strict=True):
                answers[index] = answer
        return [answer for answer in answers if answer is not None]

    # ------------------------------------------------------------------ pieces
    def _runnable(self, plugin: dict[str, Any]) -> None:
        if plugin["status"] != "ok":
            raise StepFailed(plugin["status"] if plugin["status"] != "error" else "plugin_unavailable",
                             f"plugin {plugin['id']!r} cannot run: {plugin['error']}")

    @staticmethod
    def _timeout(plugin: dict[str, Any], timeout: float | None) -> float:
        return float(timeout or (plugin.get("launch") or {}).get("timeout") or 60.0)

    def _dispatch(self, plugin: dict[str, Any], proc: PluginProcess | None, frame: dict[str, Any], scratch: Path, *,
                  rpc_for: RpcFactory | None, frames: Callable[[str, dict[str, Any]], None] | None,
                  log: LogSink | None, timeout: float, batch: bool = False) -> dict[str, Any]:
        """Send ``frame`` to ``plugin`` by its tier and return its final frame (``result`` or
        ``error``); RPC calls are answered by ``rpc_for(scratch)`` behind the capability check
        (and, in a ``batch``, the refusal of one-run calls). A poisoned process is ended."""
        tier = plugin["tier"]
        rpc = rpc_for(scratch) if rpc_for else None
        if rpc and tier != "builtin":  # built-ins: capabilities are metadata only (plugin-protocol/README.md *Tiers*)
            rpc = enforcing(plugin["capabilities"], rpc)
        if rpc and batch:
            rpc = refusing_one_run_calls(rpc)
        if frames:
            rpc = _watching(frames, rpc)
            frames("host", frame)
        if proc is not None:
            try:
                final = proc.request(frame, timeout=timeout, rpc=rpc, log=log)
            except StepFailed as exc:
                self._failed(plugin["id"], exc.kind)
                raise
        elif tier == "2":
            launch = plugin.get("launch") or {}
            final = container.operate(self.runtime, {**launch, "id": plugin["id"]}, frame,
                                      cwd=Path(launch.get("folder") or scratch), timeout=timeout, rpc=None,
                                      log=log, project_root=self.project_root)
        else:
            final = self._in_process(plugin, frame["inputs"], frame["config"], rpc, log, scratch)
        if frames:
            frames("plugin", final)
        if final["type"] == "error" and proc is not None:
            self._failed(plugin["id"], final["error"]["kind"])
        return final

    def _outputs(self, plugin: dict[str, Any], outputs: dict[str, Any], scratch: Path) -> dict[str, Any]:
        """One run's wire ``outputs`` checked against the declared outputs and decoded."""
        problems = port_problems(plugin["outputs"], outputs)
        if problems:
            raise StepFailed("invalid_output", f"plugin {plugin['id']!r} returned outputs that break its "
                                               f"contract: {'; '.join(problems)}")
        return self._decode_outputs(plugin, outputs, scratch)

    def _batch_answers(self, plugin: dict[str, Any], final: dict[str, Any], sent: int,
                       scratch: Path) -> list[dict[str, Any] | StepFailed]:
        """Each sent item's outputs or failure from a batch's final frame (see :meth:`run_batch`)."""
        if final["type"] == "error":
            err = final["error"]
            return [StepFailed(err["kind"], f"the batch of {sent} failed: {err['message']}", err["retryable"])] * sent
        outputs, errors = final["outputs"], final.get("errors") or []
        broken = None
        if not isinstance(outputs, list) or len(outputs) != sent:
            broken = (f"outputs is {'a list of ' + str(len(outputs)) if isinstance(outputs, list) else 'not a list'}"
                      f" for a batch of {sent}")
        elif any(e["index"] >= sent for e in errors) or len({e["index"] for e in errors}) != len(errors):
            broken = f"errors name an index twice or past the batch of {sent}"
        if broken:
            return [StepFailed("invalid_output", f"plugin {plugin['id']!r} answered a batch wrongly: {broken}")] * sent
        failed = {e["index"]: StepFailed(e["kind"], e["message"], e["retryable"]) for e in errors}
        answers: list[dict[str, Any] | StepFailed] = []
        for index, item in enumerate(outputs):
            try:
                if index in failed:
                    raise failed[index]
                if item is None:
                    raise StepFailed("invalid_output", f"plugin {plugin['id']!r} gave item {index} of the batch "
                                                       "neither outputs nor an error")
                answers.append(self._outputs(plugin, item, scratch))
            except StepFailed as exc:
                answers.append(exc)
        return answers

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
