"""What the runner reads of the project's files on every write or run, kept until the file
changes: each workflow file's outline (:func:`outlines`) and whether automation is paused
(:func:`paused`, from ``benchbook.toml``)."""
from __future__ import annotations

import threading
from pathlib import Path

import yaml

from benchbook.runner import workflows
from benchbook.settings.config import CONFIG_NAME, read_paused

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
