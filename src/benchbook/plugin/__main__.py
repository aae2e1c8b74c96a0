"""``python -m benchbook.plugin PLUGIN_FILE [describe|run]``: serve a plugin file.

Standard output is isolated first, then the file is imported (it must define exactly one
``Plugin``), then it is served: no mode → the tier 1 frame loop until end of input; ``describe``
or ``run`` → the tier 2 one-shot. Exit status: 0 served; 1 the plugin could not be loaded (every
frame read is answered with an ``error`` frame kind ``plugin_error`` saying why) or the tier 2
frame was missing or of the wrong type; 2 bad arguments.
"""
from __future__ import annotations

import sys
from collections.abc import Sequence

from benchbook.plugin.errors import PluginError
from benchbook.plugin.isolation import isolate
from benchbook.plugin.loader import load_plugin
from benchbook.plugin.runtime import serve, serve_failure

USAGE = "usage: python -m benchbook.plugin PLUGIN_FILE_OR_MODULE [describe|run]"


def main(argv: Sequence[str] | None = None) -> int:
    """Parse ``argv`` (default ``sys.argv[1:]``), isolate, load and serve; returns the exit
    status given in the module docstring."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not 1 <= len(args) <= 2 or args[0] in ("-h", "--help") or (len(args) == 2 and args[1] not in ("describe", "run")):
        sys.stderr.write(USAGE + "\n")
        return 2
    isolate()
    mode = args[1] if len(args) == 2 else None
    try:
        plugin = load_plugin(args[0])
    except PluginError as exc:
        sys.stderr.write(f"benchbook.plugin: {exc.message}\n")
        return serve_failure(exc, mode)
    return serve(plugin, mode)


if __name__ == "__main__":
    raise SystemExit(main())
