"""The project folder and its ``benchbook.toml``.

A project is a folder holding::

    benchbook.toml   settings: [user] name, [database] url, [automation] paused, [limits]
    benchbook.db     the embedded SQLite database (WAL), unless [database] url says otherwise
    files/           content store, files/ab/abcdef… keyed by sha256
    workflows/       workflow definitions (YAML)
    plugins/         tier-1 plugins

It is found by ``--project DIR``, else ``$BENCHBOOK_PROJECT``, else the nearest
``benchbook.toml`` upwards from the working directory, else a default project in the
user data directory (created on first use).
"""
from __future__ import annotations

import functools
import getpass
import os
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from benchbook.settings.limits import Limits

CONFIG_NAME = "benchbook.toml"
DEFAULT_CONFIG = """\
# benchbook project settings
[user]
# name = "Your Name"      # shown as the actor of your changes in history; defaults to the OS user

[database]
# url = "postgresql+psycopg://user@127.0.0.1:5432/benchbook"   # default: benchbook.db in this folder

[automation]
paused = false
"""


@dataclass(frozen=True)
class Project:
    """An opened project folder.

    Attributes: ``root`` (folder), ``settings`` (parsed ``benchbook.toml``).
    """

    root: Path
    settings: dict[str, Any] = field(default_factory=dict)

    @property
    def database_url(self) -> str:
        """SQLAlchemy URL: ``[database] url`` or ``sqlite:///<root>/benchbook.db``."""
        url = self.settings.get("database", {}).get("url")
        return str(url) if url else f"sqlite:///{self.root / 'benchbook.db'}"

    @property
    def files_dir(self) -> Path:
        """Content store folder (``files/``)."""
        return self.root / "files"

    @property
    def actor(self) -> str:
        """Who changes are attributed to: ``[user] name`` or the OS user (unverified)."""
        name = self.settings.get("user", {}).get("name")
        return str(name) if name else os_user()

    @property
    def limits(self) -> Limits:
        """The ``[limits]`` table as :class:`benchbook.settings.limits.Limits` (defaults for missing
        keys; ``docs/limits.md``). Raises ``ValueError`` for an unknown key or a bad value."""
        return Limits.from_table(self.settings.get("limits"))

    @property
    def paused(self) -> bool:
        """``[automation] paused``, read from ``benchbook.toml`` now (not from :attr:`settings`):
        the server and every command-line session share the switch (docs/automation.md *The switch*)."""
        return read_paused(self.root)

    @classmethod
    def init(cls, root: Path | str) -> Project:
        """Create (or reuse) a project folder at ``root`` and return it opened."""
        root = Path(root).expanduser().resolve()
        for sub in ("", "files", "workflows", "plugins"):
            (root / sub).mkdir(parents=True, exist_ok=True)
        cfg = root / CONFIG_NAME
        if not cfg.exists():
            cfg.write_text(DEFAULT_CONFIG)
        return cls.open(root)

    @classmethod
    def open(cls, root: Path | str) -> Project:
        """Open an existing project folder; raises ``FileNotFoundError`` without ``benchbook.toml``."""
        root = Path(root).expanduser().resolve()
        cfg = root / CONFIG_NAME
        if not cfg.exists():
            raise FileNotFoundError(f"{root} is not a benchbook project (no {CONFIG_NAME})")
        with cfg.open("rb") as fh:
            settings = tomllib.load(fh)
        (root / "files").mkdir(exist_ok=True)
        return cls(root=root, settings=settings)

    @classmethod
    def locate(cls, explicit: Path | str | None = None) -> Project:
        """Find the project as described in the module docstring, creating the default one."""
        if explicit:
            return cls.init(explicit)
        env = os.environ.get("BENCHBOOK_PROJECT")
        if env:
            return cls.init(env)
        here = Path.cwd().resolve()
        for folder in (here, *here.parents):
            if (folder / CONFIG_NAME).exists():
                return cls.open(folder)
        return cls.init(default_project_root())


@functools.cache
def os_user() -> str:
    """The OS user's name (read once: every change asks, and the user database lookup behind
    ``getpass.getuser`` costs about 25 µs)."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user database entry (containers)
        return os.environ.get("USER", "unknown")


def default_project_root() -> Path:
    """The default project's folder: ``default`` in the user data folder (``platformdirs``)."""
    return Path(platformdirs.user_data_dir("benchbook")) / "default"


def read_paused(root: Path) -> bool:
    """Whether automation is paused: ``[automation] paused`` of ``root``'s ``benchbook.toml``
    (false when the file, the table or the key is missing or unreadable)."""
    try:
        with (root / CONFIG_NAME).open("rb") as fh:
            settings = tomllib.load(fh)
    except (OSError, tomllib.TOMLDecodeError):
        return False
    automation = settings.get("automation")
    return isinstance(automation, dict) and automation.get("paused") is True


def write_paused(root: Path, paused: bool) -> None:
    """Set ``[automation] paused`` in ``root``'s ``benchbook.toml``, keeping everything else of
    the file as it was (comments, order, spacing: ``tomlkit``). The file is replaced atomically."""
    import tomlkit

    cfg = root / CONFIG_NAME
    doc = tomlkit.parse(cfg.read_text(encoding="utf-8")) if cfg.exists() else tomlkit.document()
    automation = doc.get("automation")
    if not isinstance(automation, dict):
        automation = tomlkit.table()
        doc["automation"] = automation
    automation["paused"] = paused
    tmp = cfg.with_name(f".{CONFIG_NAME}.{os.getpid()}.tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    tmp.replace(cfg)
