"""Finding the plugin: import a plugin file (or module) and pick its one ``Plugin`` instance."""
from __future__ import annotations

import importlib
import importlib.util
import sys
import traceback
from pathlib import Path
from types import ModuleType

from benchbook.plugin.declaration import Plugin
from benchbook.plugin.errors import PluginDefinitionError, PluginError
from benchbook.plugin.runtime import loading_plugin

MODULE_NAME = "__benchbook_plugin__"
"""The module name a plugin file is imported under (its ``__name__`` is not ``__main__``, so
an ``if __name__ == "__main__": plugin.main()`` block does not run)."""


def _import(target: str) -> ModuleType:
    path = Path(target)
    if path.suffix != ".py" and not path.exists():
        return importlib.import_module(target)
    if not path.is_file():
        raise FileNotFoundError(f"no plugin file {target}")
    path = path.resolve()
    sys.path.insert(0, str(path.parent))
    spec = importlib.util.spec_from_file_location(MODULE_NAME, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[MODULE_NAME] = module
    spec.loader.exec_module(module)
    return module


def find_plugin(module: ModuleType) -> Plugin:
    """The one :class:`Plugin` among the module's globals (the same instance under several
    names counts once). Raises :class:`PluginDefinitionError` for none or several."""
    found: dict[int, tuple[str, Plugin]] = {}
    for name, value in vars(module).items():
        if isinstance(value, Plugin):
            found.setdefault(id(value), (name, value))
    if len(found) != 1:
        names = sorted(name for name, _ in found.values())
        what = "no Plugin instance" if not found else f"{len(found)} Plugin instances ({', '.join(names)})"
        raise PluginDefinitionError(f"{module.__file__ or module.__name__} defines {what}; it must define exactly one")
    ((_, plugin),) = found.values()
    return plugin


def load_plugin(target: str) -> Plugin:
    """Import ``target`` — a ``.py`` file (its folder goes first on ``sys.path``, so sibling
    modules import) or, when no such file exists and it does not end in ``.py``, a dotted
    module name — and return its one :class:`Plugin`. Raises :class:`PluginError` kind
    ``plugin_error`` whatever went wrong (missing file, exception at import, no or several
    plugins); the traceback of an exception at import goes to standard error."""
    try:
        with loading_plugin():
            module = _import(target)
        return find_plugin(module)
    except PluginDefinitionError as exc:
        raise PluginError("plugin_error", f"cannot load plugin {target}: {exc}") from None
    except (Exception, SystemExit) as exc:  # noqa: BLE001 (plugin code may fail in any way: report it)
        traceback.print_exception(exc, file=sys.stderr)
        raise PluginError("plugin_error", f"cannot load plugin {target}: {type(exc).__name__}: {exc}") from None
