"""Discovery: find every plugin, ask each once for its contract and store it in the registry
(:mod:`benchbook.domain.plugin_registry`). Sources, in this order:

1. benchbook's built-ins and the ``benchbook.plugins`` entry-point group (in-process, tier
   ``builtin``; :mod:`.builtin`);
2. the project's ``plugins/`` folder: one folder per plugin holding ``plugin.toml``::

       command = ["{python}", "plugin.py"]   # argv, run in the plugin's folder; {python} = this interpreter
       tier = 1                              # 1 (subprocess, default) or 2 (container)
       image = "example/plugin:1"            # tier 2: the image
       memory = "512m"                       # tier 2, optional
       cpus = "1"                            # tier 2, optional
       timeout = 60                          # optional: default step timeout in seconds
       pool_size = 1                         # tier 1, optional: warm processes kept between runs (.pool)

A tier-1 plugin's ``launch`` also holds the :func:`fingerprint` of its folder's files, so a
refresh after its code changed reports it ``changed`` and ends its warm processes (:mod:`.pool`).

A plugin whose ``plugin.toml`` is wrong or whose describe fails is registered with status
``error`` and the reason, never skipped; a tier-2 plugin without a container runtime is
registered with status ``no_container_runtime``.
"""
from __future__ import annotations

import functools
import hashlib
import os
import sys
import tomllib
from collections.abc import Callable
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

from sqlalchemy.orm import Session

from benchbook.domain.plugin_registry import Described, replace_all
from benchbook.domain.progress import Progress, silent
from benchbook.runner.errors import StepFailed
from benchbook.runner.plugin_host import builtin, container
from benchbook.runner.plugin_host.frames import violation
from benchbook.runner.plugin_host.host import PluginProcess

DESCRIBE_TIMEOUT = 20.0
"""Seconds a plugin has to answer ``describe``."""
DEFAULT_STEP_TIMEOUT = 60.0
"""Seconds a step may take unless ``plugin.toml`` or the workflow step says otherwise."""
MANIFEST = "plugin.toml"
MAX_POOL_SIZE = 16
"""Largest ``pool_size`` a ``plugin.toml`` may ask for."""
FINGERPRINT_FILES = 2000
"""Files of a plugin folder :func:`fingerprint` looks at, at most (the rest are not seen)."""
SKIPPED_FOLDERS = frozenset({"__pycache__", "node_modules"})
"""Folders :func:`fingerprint` does not look into (besides hidden ones): what running and
installing write, not what the plugin author edits."""


def _contract(final: dict[str, Any]) -> dict[str, Any]:
    if final["type"] == "error":
        err = final["error"]
        raise StepFailed(err["kind"], f"describe failed: {err['message']}")
    return final


def describe_in_process(name: str, factory: Callable[[], object], *, builtin_: bool, source: str) -> Described:
    """Describe an in-process plugin (built-in or from an entry point)."""
    try:
        contract = builtin.as_plugin(factory()).describe()
        problem = violation(contract, "describe_result")
        if problem:
            raise StepFailed("protocol_error", f"its describe_result breaks the protocol: {problem}")
        return Described(id=contract["id"], tier="builtin", builtin=builtin_, source=source, contract=contract,
                         launch={"entry_point": name})
    except Exception as exc:  # noqa: BLE001 (a third-party plugin may fail in any way: list it with its error)
        return Described(id=name, tier="builtin", builtin=builtin_, source=source, status="error",
                         error=f"{type(exc).__name__}: {exc}", launch={"entry_point": name})


def in_process_plugins() -> dict[str, Callable[[], object]]:
    """Entry name → loader of every in-process plugin: the built-ins, then the entry points
    (what a loader returns goes through :func:`.builtin.as_plugin`)."""
    found: dict[str, Callable[[], object]] = dict(builtin.BUILTINS)
    for ep in entry_points(group=builtin.ENTRY_POINT_GROUP):
        found.setdefault(ep.name, ep.load)
    return found


@functools.cache
def installed_in_process() -> dict[str, Callable[[], object]]:
    """:func:`in_process_plugins` as of the last discovery: steps look their plugin up here
    instead of scanning the installed packages' entry points on every step (a registry entry
    only exists after a discovery, which clears this)."""
    return in_process_plugins()


def read_manifest(folder: Path) -> dict[str, Any]:
    """The launch settings of a plugin folder from its ``plugin.toml``, with ``{python}``
    replaced and the folder added. Raises ``ValueError`` naming what is wrong."""
    try:
        with (folder / MANIFEST).open("rb") as fh:
            raw = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise ValueError(f"{MANIFEST} is not valid TOML: {exc}") from None
    unknown = set(raw) - {"command", "tier", "image", "memory", "cpus", "timeout", "pool_size"}
    if unknown:
        raise ValueError(f"{MANIFEST} has unknown keys: {', '.join(sorted(unknown))}")
    tier = raw.get("tier", 1)
    if tier not in (1, 2):
        raise ValueError(f"{MANIFEST}: tier must be 1 or 2, not {tier!r}")
    launch: dict[str, Any] = {"folder": str(folder), "tier": tier,
                              "timeout": float(raw.get("timeout", DEFAULT_STEP_TIMEOUT))}
    if tier == 1:
        command = raw.get("command")
        if not isinstance(command, list) or not command or not all(isinstance(a, str) for a in command):
            raise ValueError(f"{MANIFEST}: command must be a non-empty list of strings (argv)")
        launch["command"] = [a.replace("{python}", sys.executable) for a in command]
        size = raw.get("pool_size", 1)
        if isinstance(size, bool) or not isinstance(size, int) or not 1 <= size <= MAX_POOL_SIZE:
            raise ValueError(f"{MANIFEST}: pool_size must be an integer from 1 to {MAX_POOL_SIZE}, not {size!r}")
        launch["pool_size"] = size
    else:
        if not isinstance(raw.get("image"), str) or not raw["image"]:
            raise ValueError(f"{MANIFEST}: a tier-2 plugin needs image")
        launch |= {"image": raw["image"], "memory": raw.get("memory"), "cpus": raw.get("cpus")}
    if launch["timeout"] <= 0:
        raise ValueError(f"{MANIFEST}: timeout must be a positive number of seconds")
    return launch


def fingerprint(folder: Path) -> str:
    """A digest of the files below ``folder`` as they are now: each file's path, size and
    modification time (nanoseconds), hidden files and folders and :data:`SKIPPED_FOLDERS` left
    out, at most :data:`FINGERPRINT_FILES` files. Empty text when ``folder`` cannot be read.
    About 10 µs a file (stat calls only, no file is read)."""
    digest = hashlib.sha256()
    seen = 0
    try:
        for where, folders, files in os.walk(folder):
            folders[:] = sorted(f for f in folders if not f.startswith(".") and f not in SKIPPED_FOLDERS)
            for name in sorted(files):
                if name.startswith(".") or seen >= FINGERPRINT_FILES:
                    continue
                seen += 1
                path = os.path.join(where, name)
                try:
                    st = os.stat(path)
                except OSError:
                    continue
                digest.update(f"{os.path.relpath(path, folder)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    except OSError:
        return ""
    return digest.hexdigest()


def describe_folder(folder: Path, runtime: str) -> Described:
    """Describe the project plugin in ``folder`` (tier 1 in a subprocess, tier 2 in a container;
    scratch folders in the project's, ``folder``'s grandparent: ``<project>/plugins/<name>``)."""
    project_root = folder.parent.parent
    source = f"project:plugins/{folder.name}"
    try:
        launch = read_manifest(folder)
    except (ValueError, OSError) as exc:
        return Described(id=folder.name, tier="1", builtin=False, source=source, status="error", error=str(exc))
    tier = str(launch["tier"])
    try:
        if tier == "1":
            launch["fingerprint"] = fingerprint(folder)
            stderr: list[str] = []
            with PluginProcess(launch["command"], cwd=folder, log=lambda _s, line: stderr.append(line),
                               project_root=project_root) as proc:
                contract = _contract(proc.request({"type": "describe"}, timeout=DESCRIBE_TIMEOUT))
        elif not container.runtime_available(runtime):
            return Described(id=folder.name, tier=tier, builtin=False, source=source, status="no_container_runtime",
                             error=f"no container runtime: {runtime!r} is not installed", launch=launch)
        else:
            contract = _contract(container.operate(runtime, {**launch, "id": folder.name}, {"type": "describe"},
                                                   cwd=folder, timeout=DESCRIBE_TIMEOUT, project_root=project_root))
    except StepFailed as exc:
        return Described(id=folder.name, tier=tier, builtin=False, source=source, status="error",
                         error=f"{exc.kind}: {exc.message}", launch=launch)
    return Described(id=contract["id"], tier=tier, builtin=False, source=source, contract=contract, launch=launch)


def discover(plugins_dir: Path, *, runtime: str | None = None, progress: Progress = silent) -> list[Described]:
    """Every plugin of every source (see the module docstring), each described once; reports
    ``progress("describing plugins", done, total)`` after each describe (in-process plugins and
    the folders of ``plugins_dir`` with a manifest)."""
    installed_in_process.cache_clear()
    in_process = in_process_plugins()
    folders = sorted(folder for folder in plugins_dir.iterdir()
                     if folder.is_dir() and (folder / MANIFEST).is_file()) if plugins_dir.is_dir() else []
    total = len(in_process) + len(folders)
    progress("describing plugins", 0, total)
    found = []
    for name, factory in in_process.items():
        found.append(describe_in_process(name, factory, builtin_=name in builtin.BUILTINS,
                                         source="builtin" if name in builtin.BUILTINS else f"entry_point:{name}"))
        progress("describing plugins", len(found), total)
    rt = container.runtime_command(runtime)
    for folder in folders:
        found.append(describe_folder(folder, rt))
        progress("describing plugins", len(found), total)
    return found


def refresh(session: Session, plugins_dir: Path, *, runtime: str | None = None) -> dict[str, list[str]]:
    """Re-describe every plugin and make the registry hold what was found; returns what
    changed (``added``, ``changed``, ``removed``, ``unchanged``, ``failed``: lists of ids).
    The describes run before the caller's transaction writes anything."""
    return replace_all(session, discover(plugins_dir, runtime=runtime))
