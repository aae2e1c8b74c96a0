"""Issue 37 items 1 and 8, the API side: a run names its record (``record_name``, the record's
natural name; null once it is deleted) in the run and in the run list, and each completed step
keeps what it returned (``outputs``, ``outputs_bytes``; outputs over 16 KiB are not kept)."""
from __future__ import annotations

import json
from datetime import UTC, date, datetime
from typing import Any

import pandas as pd

from benchbook.runner import step_outputs
from tests.runner.automation_helpers import STATS, auto, runs, workflow

__all__ = ["auto"]  # a fixture


def test_a_run_names_its_record_and_keeps_each_step_s_outputs(api: Any, auto: dict[str, Any]) -> None:
    workflow(api, "count-words", STATS)
    rec = auto["make"]({"notes": "one two three"})
    api.ok("POST", "/jobs/drain")
    [job] = runs(api)
    name = api.ok("GET", f"/records/{rec['id']}")["natural_name"]
    assert name and job["record_name"] == name
    assert api.ok("GET", f"/jobs/{job['id']}")["record_name"] == name
    [step] = job["step_executions"]
    assert step["outputs"]["words"] == 3 and step["outputs"]["characters"] == 13, step
    assert step["outputs_bytes"] == len(json.dumps(step["outputs"], ensure_ascii=False).encode())

    api.ok("DELETE", f"/records/{rec['id']}", 204)
    assert [j["record_name"] for j in runs(api)] == [None]
    assert api.ok("GET", f"/jobs/{job['id']}")["record_name"] is None


def test_outputs_are_kept_as_json_and_large_ones_are_not() -> None:
    table = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    got = step_outputs.kept({"blob": b"\x00" * 10, "rows": table, "on": date(2024, 2, 29),
                             "at": datetime(2024, 1, 2, 3, 4, tzinfo=UTC), "odd": float("nan"),
                             "list": [1, {"k": b"ab"}], "text": "ünïcode"})
    assert got["outputs"] == {"blob": {"type": "bytes", "size": 10}, "rows": {"type": "table", "rows": 2, "columns": ["a", "b"]},
                              "on": "2024-02-29", "at": "2024-01-02T03:04:00+00:00", "odd": "nan",
                              "list": [1, {"k": {"type": "bytes", "size": 2}}], "text": "ünïcode"}
    assert got["outputs_bytes"] == len(json.dumps(got["outputs"], ensure_ascii=False).encode())
    large = step_outputs.kept({"text": "x" * step_outputs.KEPT_BYTES})
    assert large["outputs"] is None and large["outputs_bytes"] > step_outputs.KEPT_BYTES
