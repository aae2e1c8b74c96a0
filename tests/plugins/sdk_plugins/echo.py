"""Echo plugin for the SDK tests: every input comes back as the output of the same name."""
from __future__ import annotations

import datetime as dt

import pandas as pd

from benchbook.plugin import Plugin

plugin = Plugin(
    id="sdk-echo",
    name="Echo",
    description="Returns its inputs",
    category="test",
    inputs={
        "blob": {"type": "bytes", "description": "any bytes"},
        "table": {"type": "table", "description": "any table"},
        "count": {"type": "integer", "description": "an integer", "required": True},
        "ratio": "float",
        "label": "string",
        "flag": "boolean",
        "day": "date",
        "moment": "datetime",
        "doc": "json",
        "file": "file",
    },
    outputs={
        "blob": "bytes",
        "table": "table",
        "count": {"type": "integer", "required": True},
        "ratio": "float",
        "label": "string",
        "flag": "boolean",
        "day": "date",
        "moment": "datetime",
        "doc": "json",
        "file": "file",
        "seen": {"type": "json", "description": "Python types and pandas dtypes the run function got"},
    },
    config_schema={
        "type": "object",
        "properties": {"mode": {"enum": ["echo", "shout"], "default": "echo"}, "times": {"type": "integer"}},
        "additionalProperties": False,
    },
)


def _seen(value: object) -> object:
    if isinstance(value, pd.DataFrame):
        return {name: str(dtype) for name, dtype in value.dtypes.items()}
    return type(value).__name__


@plugin.run
def run(ctx, inputs, config):
    outputs = {name: value for name, value in inputs.items() if value is not None}
    seen = {name: _seen(value) for name, value in inputs.items()}
    table = inputs["table"]
    if table is not None and len(table) and "d" in table.columns:
        seen["table.day.first"] = type(table["d"].dropna().iloc[0]).__name__
    if isinstance(inputs["day"], dt.date):
        outputs["day"] = inputs["day"] + dt.timedelta(days=1)
    outputs["seen"] = {"types": seen, "config": config}
    return outputs
