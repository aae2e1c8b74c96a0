"""The tier-2 host: a fresh container per operation (plugin-protocol/README.md *Tiers*), started as
``<runtime> run -i --rm --name NAME --memory M --cpus C IMAGE MODE`` with the mode
(``describe`` or ``run``) as the first argument; exactly one frame in, the answer out, then
the container exits. Memory, CPU and the timeout apply per operation; on a timeout the
container is killed by name (``<runtime> kill NAME``) as well as the local client process.

The runtime is ``docker`` unless the project's ``benchbook.toml`` says ``[plugins]
container_runtime = "podman"`` (or ``BENCHBOOK_CONTAINER_RUNTIME`` is set). Where it is not
installed, tier-2 plugins are listed with status ``no_container_runtime`` and refused at run
time with that reason.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

from benchbook.domain.ids import new_id
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host.host import LogSink, PluginProcess, RpcAnswer

DEFAULT_MEMORY = "512m"
DEFAULT_CPUS = "1"


def runtime_command(configured: str | None = None) -> str:
    """The container runtime to use: ``configured``, else ``$BENCHBOOK_CONTAINER_RUNTIME``, else
    ``docker``."""
    return configured or os.environ.get("BENCHBOOK_CONTAINER_RUNTIME") or "docker"


def runtime_available(runtime: str) -> bool:
    """Whether ``runtime`` is an executable on ``PATH`` (or a path to one)."""
    return shutil.which(runtime) is not None


class ContainerProcess(PluginProcess):
    """One container running one operation; killing it also kills the container by name."""

    def __init__(self, runtime: str, launch: dict[str, Any], mode: str, *, cwd: Path,
                 log: LogSink | None = None, project_root: Path | None = None) -> None:
        self.runtime = runtime
        self.name = f"benchbook-{launch.get('id', 'plugin')}-{new_id().lower()}"
        argv = [runtime, "run", "-i", "--rm", "--name", self.name,
                "--memory", str(launch.get("memory") or DEFAULT_MEMORY),
                "--cpus", str(launch.get("cpus") or DEFAULT_CPUS), str(launch["image"]), mode]
        super().__init__(argv, cwd=cwd, log=log, project_root=project_root)

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                subprocess.run([self.runtime, "kill", self.name], capture_output=True, timeout=10, check=False)
            except (OSError, subprocess.TimeoutExpired):
                pass
        super().kill()


def operate(runtime: str, launch: dict[str, Any], frame: dict[str, Any], *, cwd: Path, timeout: float,
            rpc: RpcAnswer | None = None, log: LogSink | None = None,
            project_root: Path | None = None) -> dict[str, Any]:
    """Run one operation (``frame`` is ``describe`` or ``run``) in a fresh container and return
    the plugin's final frame (the client's scratch folder under ``project_root``, as
    :class:`.host.PluginProcess`). Raises :class:`StepFailed` (``no_container_runtime`` first of
    all)."""
    if not runtime_available(runtime):
        raise StepFailed("no_container_runtime", f"tier-2 plugins need a container runtime and {runtime!r} "
                                                 "is not installed (set [plugins] container_runtime)")
    with ContainerProcess(runtime, launch, frame["type"], cwd=cwd, log=log, project_root=project_root) as proc:
        return proc.request(frame, timeout=timeout, rpc=rpc, log=log)
