"""Failing plugin for the SDK tests: config ``mode`` chooses how the run goes wrong."""
from __future__ import annotations

import datetime as dt
import sys

from benchbook.plugin import Plugin, PluginError

plugin = Plugin(
    id="sdk-failing",
    name="Failing",
    outputs={"when": "datetime", "n": {"type": "integer", "required": True}},
    config_schema={
        "type": "object",
        "required": ["mode"],
        "properties": {"mode": {"enum": ["ok", "raise", "empty", "plugin_error", "exit", "undeclared",
                                         "naive", "not_dict", "missing"]}},
    },
)


@plugin.run
def run(ctx, inputs, config):
    mode = config["mode"]
    if mode == "raise":
        raise ValueError("boom")
    if mode == "empty":
        raise RuntimeError()
    if mode == "plugin_error":
        raise PluginError("sample_missing", "no sample sheet", retryable=True)
    if mode == "exit":
        sys.exit(3)
    if mode == "undeclared":
        return {"n": 1, "extra": 2}
    if mode == "naive":
        return {"n": 1, "when": dt.datetime(2024, 1, 1)}
    if mode == "not_dict":
        return [1]
    if mode == "missing":
        return {}
    return {"n": 1, "when": dt.datetime(2024, 1, 1, tzinfo=dt.UTC)}
