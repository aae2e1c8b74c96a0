"""Warm tier-1 plugin processes across runs (issue 36 item 1): a :class:`Pool` per drain of the
run queue keeps each plugin's processes between runs, so that a run no longer pays for a
process start (interpreter, SDK, the plugin's imports: about 0.1 to 0.5 s), only for its turns.

Tier 1 (plugin-protocol/README.md *Tiers*) keeps a plugin's process for the whole run; a pool keeps it for the whole
drain. Its lifetime (``docs/plugin-authoring.md`` *Warm processes*):

- **started on first use**: :meth:`Pool.take` hands out an idle process of the plugin, else
  starts one; a run holds it until its end (:meth:`Pool.give_back`), every step of the run
  that uses the plugin included;
- **kept** after a run while the plugin has fewer than ``pool_size`` idle processes
  (``plugin.toml``, default 1): a process handed back beyond that is ended;
- **ended** when the drain ends (:meth:`Pool.close`: the queue has nothing left); when the
  plugin changed: its registry entry's ``launch`` (command, folder, timeout, ``pool_size`` and
  the :func:`~.discovery.fingerprint` of its files, as ``plugins refresh`` found them last)
  differs from the one it was started with (a drain reads the registry again every second or
  so: :class:`~benchbook.runner.drain.Drain`); after ``warm_runs`` runs
  (``[limits] plugin_warm_runs``); after ``idle_seconds`` unused (``[limits]
  plugin_idle_seconds``; checked whenever a run starts with a pool, and by :meth:`Pool.sweep`);
  and always after a failure that leaves it in doubt, kinds :data:`POISONING` (a poisoned
  process never serves the next run), or when it is handed back mid-turn or dead.

Nothing of a run stays for the next but what the plugin keeps in its own memory: the record,
the history batch and the capabilities come with each run's frame and host operations, and the
process's scratch folder (``BENCHBOOK_SCRATCH``) is emptied when it is handed back (a folder
that cannot be emptied ends the process). Pooled processes are ordinary
:class:`~.host.PluginProcess` objects: they die with their host and are swept like any other
(:mod:`.processes`).

Use (what :class:`~.steps.StepRunner` does with a ``pool``)::

    with Pool(project_root=project.root) as pool:
        proc = pool.take(plugin)          # plugin: the registry's runnable entry, with launch
        try:
            proc.request({"type": "run", ...}, timeout=60)
        finally:
            pool.give_back(proc)
"""
from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from benchbook.runner.plugin_host.host import PluginProcess
from benchbook.settings.limits import DEFAULT

log = logging.getLogger("benchbook.runs")

POISONING = frozenset({"process_exit", "timeout", "protocol_error", "frame_too_large"})
"""Failure kinds after which a plugin's process is ended, never handed to another run."""


@dataclass
class _Warm:
    """A pooled process: the plugin's registry ``launch`` it was started with, the runs it
    served and since when it is idle."""

    plugin_id: str
    proc: PluginProcess
    launch: dict[str, Any]
    runs: int = 0
    idle_since: float = 0.0


class Pool:
    """Warm processes of tier-1 plugins, by plugin id (see the module docstring). Settings:
    ``warm_runs`` (runs a process serves at most), ``idle_seconds`` (how long one may wait
    unused); ``clock()`` gives seconds (monotonic; tests pass a fake one). Its scratch folders
    are under ``project_root`` as :class:`~.host.PluginProcess` makes them. Thread-safe;
    figures for tests and benchmarks: :attr:`started` (processes started), :attr:`ended`
    (processes ended, by reason: ``closed``, ``idle``, ``runs``, ``changed``, ``failed``,
    ``surplus``)."""

    def __init__(self, *, project_root: Path | None = None, warm_runs: int = DEFAULT.plugin_warm_runs,
                 idle_seconds: float = DEFAULT.plugin_idle_seconds,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.project_root = project_root
        self.warm_runs = warm_runs
        self.idle_seconds = idle_seconds
        self.clock = clock
        self.started = 0
        self.ended: Counter[str] = Counter()
        self._idle: dict[str, list[_Warm]] = {}
        self._busy: dict[PluginProcess, _Warm] = {}
        self._lock = threading.Lock()

    # ------------------------------------------------------------------ a run's use
    def take(self, plugin: dict[str, Any]) -> PluginProcess:
        """A process of tier-1 ``plugin`` (the registry's runnable entry: ``id``, ``launch``
        with ``command`` and ``folder``) for one run: a warm one that is still what the plugin
        is now, else a new one. Hand it back with :meth:`give_back`. Raises
        :class:`~.frames.StepFailed` (``process_exit``) when a new one cannot be started."""
        self.sweep()
        launch = plugin["launch"]
        found: _Warm | None = None
        stale: list[tuple[_Warm, str]] = []
        with self._lock:
            idle = self._idle.get(plugin["id"], [])
            while idle and found is None:
                warm = idle.pop()
                why = self._unfit(warm, launch)
                if why:
                    stale.append((warm, why))
                else:
                    found = warm
                    self._busy[warm.proc] = warm
        for warm, why in stale:
            self._end(warm, why)
        if found is not None:
            return found.proc
        proc = PluginProcess(launch["command"], cwd=Path(launch["folder"]), log=_between_runs(plugin["id"]),
                             project_root=self.project_root)
        with self._lock:
            self.started += 1
            self._busy[proc] = _Warm(plugin["id"], proc, dict(launch))
        return proc

    def give_back(self, proc: PluginProcess, *, failed: str | None = None) -> None:
        """``proc`` (from :meth:`take`) is done with its run, which failed with kind ``failed``
        if given: keep it warm, or end it (see the module docstring). A process this pool did
        not hand out is ended."""
        with self._lock:
            warm = self._busy.pop(proc, None)
        if warm is None:
            proc.close()
            return
        warm.runs += 1
        why = ("failed" if failed in POISONING or proc.in_turn or not proc.alive() or not _emptied(proc.scratch)
               else "runs" if warm.runs >= self.warm_runs else None)
        if why is None:
            with self._lock:
                idle = self._idle.setdefault(warm.plugin_id, [])
                if len(idle) < _size(warm.launch):
                    warm.idle_since = self.clock()
                    idle.append(warm)
                else:
                    why = "surplus"
        if why is not None:
            self._end(warm, why)

    # ------------------------------------------------------------------ ending
    def sweep(self) -> int:
        """End every process idle for ``idle_seconds`` or more; returns how many were ended."""
        now = self.clock()
        with self._lock:
            old = [w for idle in self._idle.values() for w in idle if now - w.idle_since >= self.idle_seconds]
            for warm in old:
                self._idle[warm.plugin_id].remove(warm)
        for warm in old:
            self._end(warm, "idle")
        return len(old)

    def idle(self, plugin_id: str) -> list[int]:
        """The pids of ``plugin_id``'s idle processes (tests, benchmarks)."""
        with self._lock:
            return [w.proc.proc.pid for w in self._idle.get(plugin_id, [])]

    def close(self) -> None:
        """End every idle process (a process still out with a run is ended when handed back)."""
        with self._lock:
            idle = [w for ws in self._idle.values() for w in ws]
            self._idle.clear()
        for warm in idle:
            self._end(warm, "closed")

    def _unfit(self, warm: _Warm, launch: dict[str, Any]) -> str | None:
        """Why an idle process may not serve a run of the plugin as registered now, or None."""
        if not warm.proc.alive():
            return "failed"
        if warm.launch != launch:
            return "changed"
        return None

    def _end(self, warm: _Warm, why: str) -> None:
        try:
            warm.proc.close()
        finally:
            with self._lock:
                self.ended[why] += 1

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _size(launch: dict[str, Any]) -> int:
    size = launch.get("pool_size", 1)
    return size if isinstance(size, int) and size > 0 else 1


def _emptied(folder: Path) -> bool:
    """Empty ``folder`` (a process's scratch folder, kept); False when it cannot be."""
    try:
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)
        return True
    except OSError:
        log.warning("could not empty the scratch folder %s of a warm plugin process: it is ended", folder)
        return False


def _between_runs(plugin_id: str) -> Callable[[str, str], None]:
    """Where a warm process's standard error lines go while no run holds it: the log."""
    def sink(_stream: str, line: str) -> None:
        log.info("plugin %s (between runs), stderr: %s", plugin_id, line)
    return sink
