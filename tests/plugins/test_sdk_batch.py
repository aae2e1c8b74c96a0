"""Batch runs in the Python SDK (issue 36 item 2; :mod:`benchbook.plugin.batches`): a run
function registered with ``@plugin.run(batch=True)`` gets a pandas frame of many runs' inputs and
answers one list, with per-item errors. A real plugin process throughout (``python -m
benchbook.plugin``), every frame it sends checked against the schema."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.plugins.test_sdk import PluginProcess, error_of, run_frame

ITEMS = [{"minutes": 3, "carrier": "UA", "day": "2013-01-01"}, {"minutes": 95, "carrier": "AA"},
         {"minutes": None, "carrier": None}, {"minutes": -4, "carrier": "B6"}]


def answer(proc: PluginProcess, items: Any, **config: Any) -> tuple[dict[str, Any], list[str]]:
    final, logs, _ = proc.turn(run_frame(items, config))  # type: ignore[arg-type]
    return final, [log["message"] for log in logs]


def test_the_describe_result_says_batch(start: Callable[..., PluginProcess]) -> None:
    proc = start("batcher")
    final, _, _ = proc.turn({"type": "describe"})
    assert final["batch"] is True
    proc.close()


def test_one_frame_of_many_runs_is_answered_in_order_with_nullable_columns(start: Callable[..., PluginProcess]) -> None:
    proc = start("batcher")
    final, logs = answer(proc, ITEMS)
    assert logs == ["4 row(s)"] and "errors" not in final
    assert [(o["label"], o["late"], o["minutes"]) for o in final["outputs"]] == [
        ("on time", False, 3), ("late", True, 95), (None, None, None), ("on time", False, -4)]
    assert final["outputs"][0]["dtypes"] == {"minutes": "Int64", "carrier": "string", "day": "object"}
    # per-item failures, from the error column: a message, a PluginError with its own kind
    final, _ = answer(proc, ITEMS, returns="errors")
    assert [o is None for o in final["outputs"]] == [False, False, True, True]
    assert final["errors"] == [{"index": 2, "kind": "plugin_error", "message": "no carrier", "retryable": False},
                               {"index": 3, "kind": "too_early", "message": "negative", "retryable": True}]
    # from a list holding PluginErrors
    final, _ = answer(proc, ITEMS[:3], returns="list")
    assert final["outputs"] == [{"label": "row 0"}, None, {"label": "row 2"}]
    assert final["errors"] == [{"index": 1, "kind": "plugin_error", "message": "odd row", "retryable": False}]
    assert proc.close() == 0


def test_an_item_that_breaks_its_ports_fails_alone_and_the_rest_run(start: Callable[..., PluginProcess]) -> None:
    proc = start("batcher")
    final, logs = answer(proc, [{"minutes": "three"}, {"minutes": 20}, {"nope": 1}])
    assert logs == ["1 row(s)"]  # only the good item reached the run function
    assert final["outputs"][1]["label"] == "late" and final["outputs"][0] is None and final["outputs"][2] is None
    assert [(e["index"], e["kind"]) for e in final["errors"]] == [(0, "invalid_input"), (2, "invalid_input")]
    final, _ = answer(proc, ITEMS[:2], returns="bad-type")
    assert [(e["index"], e["kind"]) for e in final["errors"]] == [(0, "invalid_output"), (1, "invalid_output")]
    proc.close()


def test_what_breaks_the_whole_frame_is_one_error(start: Callable[..., PluginProcess]) -> None:
    proc = start("batcher")
    for returns, kind, words in [("short", "invalid_output", "returned 1 row(s) for 2"),
                                 ("extra", "invalid_output", "undeclared output columns ['surprise']"),
                                 ("boom", "plugin_error", "the whole batch broke")]:
        final, _ = answer(proc, ITEMS[:2], returns=returns)
        error = error_of(final)
        assert (error["kind"], words in error["message"]) == (kind, True), error
    # one run's inputs as an object (a host that does not batch): a plain result
    final, _ = answer(proc, {"minutes": 40})
    assert final["outputs"]["label"] == "late"
    proc.close()


def test_a_plugin_without_batch_refuses_a_list(start: Callable[..., PluginProcess]) -> None:
    proc = start("echo")
    final, _ = answer(proc, [{}])
    error = error_of(final)
    assert error["kind"] == "protocol_error" and "does not take batches" in error["message"]
    proc.close()
