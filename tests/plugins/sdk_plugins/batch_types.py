"""A batch plugin over every port type: ``mode`` "echo" sends the frame back as it came (each
column as the output of the same name), "computed" returns numpy/pandas values (float64
integers, Timestamps for dates, arrays for json); ``seen`` reports dtypes and cell types."""
import numpy as np
import pandas as pd

from benchbook.plugin import Plugin

TYPES = ["integer", "float", "string", "boolean", "date", "datetime", "json", "bytes", "table"]

plugin = Plugin(
    id="batch-types", name="Batch types", category="test",
    inputs={t: {"type": t} for t in TYPES},
    outputs={**{t: {"type": t} for t in TYPES}, "seen": {"type": "json"}},
    config_schema={"type": "object", "properties": {"mode": {"type": "string", "enum": ["echo", "computed"]}}},
)


def cell_types(frame, i):
    return {c: type(frame[c].iat[i]).__name__ for c in frame.columns}


@plugin.run(batch=True)
def run(ctx, frame, config):
    seen = [{"dtypes": {c: str(t) for c, t in frame.dtypes.items()}, "cells": cell_types(frame, i),
             "index": [int(x) for x in frame.index], "type": type(frame.index).__name__} for i in range(len(frame))]
    if config.get("mode") == "computed":
        n = len(frame)
        return pd.DataFrame({
            "integer": np.array([1.0, np.nan, 3.0][:n]),           # float64 holding integers
            "float": np.array([0.5, np.nan, 2.0][:n]),
            "boolean": np.array([True, False, True][:n]),
            "date": pd.to_datetime(["2024-02-29", None, "2024-03-01"][:n]),  # Timestamps / NaT
            "datetime": pd.to_datetime(["2024-02-29T10:00:00Z", None, None][:n], utc=True),
            "json": [np.arange(2), np.int64(7), None][:n],
        }, index=[10, 11, 12][:n])  # the index is ignored
    out = frame.copy()
    out["seen"] = seen
    return out
