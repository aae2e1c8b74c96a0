"""A plugin script that serves itself: ``python selfmain.py [describe|run]``."""
from __future__ import annotations

from benchbook.plugin import Plugin

plugin = Plugin(id="sdk-selfmain", name="Self main", inputs={"x": "integer"}, outputs={"y": "integer"})


@plugin.run
def run(ctx, inputs, config):
    print("stray")
    return {"y": (inputs["x"] or 0) * 2}


if __name__ == "__main__":
    plugin.main()
