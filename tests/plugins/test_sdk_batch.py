"""Batch runs in the Python SDK (issue 36 item 2; :mod:`benchbook.plugin.batches`): a run
function registered with ``@plugin.run(batch=True)`` gets a pandas frame of many runs' inputs and
answers one list, with per-item errors. Real plugin processes (``python -m benchbook.plugin``),
one per sample plugin for the whole module; every frame they send is checked against the schema
(jsonschema in :class:`PluginProcess`, and :func:`validate_plugin_frame`)."""
from __future__ import annotations

import base64
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from benchbook.plugin import validate_plugin_frame
from tests.plugins.test_sdk import PLUGINS, PluginProcess, error_of, run_frame

ITEMS = [{"minutes": 3, "carrier": "UA", "day": "2013-01-01"}, {"minutes": 95, "carrier": "AA"},
         {"minutes": None, "carrier": None}, {"minutes": -4, "carrier": "B6"}]


@pytest.fixture(scope="module")
def plugin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[[str], PluginProcess]]:
    """``plugin("batcher")``: that sample plugin's one process for this module (tier 1 loop)."""
    started: dict[str, PluginProcess] = {}

    def get(name: str) -> PluginProcess:
        if name not in started:
            home = tmp_path_factory.mktemp(name)
            (home / "scratch").mkdir()
            started[name] = PluginProcess([sys.executable, "-m", "benchbook.plugin", str(PLUGINS / f"{name}.py")],
                                          home / "scratch", home)
        return started[name]

    yield get
    codes = {}
    for name, proc in started.items():
        codes[name] = proc.close()
        proc.dispose()
    assert set(codes.values()) <= {0}, codes


def answer(proc: PluginProcess, items: Any, **config: Any) -> tuple[dict[str, Any], list[str]]:
    """Send one run frame; the final frame (checked with the SDK's own validator too) and the
    log messages before it."""
    final, logs, _ = proc.turn(run_frame(items, config))  # type: ignore[arg-type]
    validate_plugin_frame(final)
    if final["type"] == "result" and isinstance(items, list):
        assert len(final["outputs"]) == len(items)
    return final, [log["message"] for log in logs]


def test_the_describe_result_says_batch_only_for_a_batch_plugin(plugin: Callable[[str], PluginProcess]) -> None:
    final, _, _ = plugin("batcher").turn({"type": "describe"})
    assert final["batch"] is True
    final, _, _ = plugin("echo").turn({"type": "describe"})
    assert "batch" not in final  # unchanged for plugins registered with plain @plugin.run


def test_one_frame_of_many_runs_is_answered_in_order_with_nullable_columns(
        plugin: Callable[[str], PluginProcess]) -> None:
    proc = plugin("batcher")
    final, logs = answer(proc, ITEMS)
    assert logs == ["4 row(s)"] and "errors" not in final
    assert [(o["label"], o["late"], o["minutes"]) for o in final["outputs"]] == [
        ("on time", False, 3), ("late", True, 95), (None, None, None), ("on time", False, -4)]
    assert all(isinstance(o["minutes"], int) for o in final["outputs"] if o["minutes"] is not None)
    assert final["outputs"][0]["dtypes"] == {"minutes": "Int64", "carrier": "string", "day": "object"}


def test_per_item_errors_from_an_error_column_or_a_list(plugin: Callable[[str], PluginProcess]) -> None:
    proc = plugin("batcher")
    # the error column: a message, a PluginError with its own kind and retryable
    final, _ = answer(proc, ITEMS, returns="errors")
    assert [o is None for o in final["outputs"]] == [False, False, True, True]
    assert final["errors"] == [{"index": 2, "kind": "plugin_error", "message": "no carrier", "retryable": False},
                               {"index": 3, "kind": "too_early", "message": "negative", "retryable": True}]
    # a list holding output dicts and PluginErrors
    final, _ = answer(proc, ITEMS[:3], returns="list")
    assert final["outputs"] == [{"label": "row 0"}, None, {"label": "row 2"}]
    assert final["errors"] == [{"index": 1, "kind": "plugin_error", "message": "odd row", "retryable": False}]


def test_an_item_that_breaks_its_ports_fails_alone_and_the_rest_run(plugin: Callable[[str], PluginProcess]) -> None:
    proc = plugin("batcher")
    final, logs = answer(proc, [{"minutes": "three"}, {"minutes": 20}, {"nope": 1}])
    assert logs == ["1 row(s)"]  # only the good item reached the run function
    assert final["outputs"][1]["label"] == "late" and final["outputs"][0] is None and final["outputs"][2] is None
    assert [(e["index"], e["kind"]) for e in final["errors"]] == [(0, "invalid_input"), (2, "invalid_input")]
    # outputs that break the contract: that item's own invalid_output
    final, _ = answer(proc, ITEMS[:3], returns="bad-row")
    assert final["outputs"][0] is not None and final["outputs"][2] is not None and final["outputs"][1] is None
    assert [(e["index"], e["kind"]) for e in final["errors"]] == [(1, "invalid_output")]
    assert "output 'late' (boolean)" in final["errors"][0]["message"]


@pytest.mark.parametrize(("items", "config", "kind", "words"), [
    (ITEMS[:2], {"returns": "short"}, "invalid_output", "returned 1 row(s) for 2"),
    (ITEMS[:3], {"returns": "list-short"}, "invalid_output", "returned 2 element(s) for 3"),
    (ITEMS[:2], {"returns": "extra"}, "invalid_output", "undeclared output columns ['surprise']"),
    (ITEMS[:2], {"returns": "boom"}, "plugin_error", "the whole batch broke"),
    (ITEMS[:2], {"returns": 5}, "invalid_config", "config does not match"),
])
def test_what_breaks_the_whole_frame_is_one_error(plugin: Callable[[str], PluginProcess], items: Any,
                                                  config: dict[str, Any], kind: str, words: str) -> None:
    final, _ = answer(plugin("batcher"), items, **config)
    error = error_of(final)
    assert (error["kind"], words in error["message"]) == (kind, True), error


def test_one_object_of_inputs_is_answered_as_a_single_run(plugin: Callable[[str], PluginProcess]) -> None:
    proc = plugin("batcher")  # a host that does not batch: a plain result, or that item's error frame
    final, logs = answer(proc, {"minutes": 40})
    assert logs == ["1 row(s)"] and final["outputs"]["label"] == "late" and "errors" not in final
    final, _ = answer(proc, {"minutes": -1, "carrier": "UA"}, returns="errors")
    assert error_of(final) == {"kind": "too_early", "message": "negative", "retryable": True}


def test_a_plugin_without_batch_refuses_a_list(plugin: Callable[[str], PluginProcess]) -> None:
    final, _ = answer(plugin("echo"), [{"count": 1}])
    error = error_of(final)
    assert error["kind"] == "protocol_error" and "does not take batches" in error["message"]


TABLE = {"encoding": "inline", "columns": ["i"], "dtypes": {"i": "integer"}, "data": {"i": [1, None]}}
FULL = {"integer": 5, "float": 1.5, "string": "é", "boolean": True, "date": "2024-02-29",
        "datetime": "2024-02-29T12:00:00+02:00", "json": {"k": [1, None]},
        "bytes": {"encoding": "base64", "data": base64.b64encode(b"\x00hi").decode()}, "table": TABLE}


def test_every_port_type_round_trips_through_the_frame(plugin: Callable[[str], PluginProcess]) -> None:
    final, _ = answer(plugin("batch_types"), [FULL, {}, {"integer": 7, "float": 2}], mode="echo")
    assert "errors" not in final
    full, empty, some = final["outputs"]
    seen = full.pop("seen")
    assert seen["dtypes"] == {"integer": "Int64", "float": "Float64", "string": "string", "boolean": "boolean",
                              "date": "object", "datetime": "datetime64[us, UTC]", "json": "object",
                              "bytes": "object", "table": "object"}
    assert seen["index"] == [0, 1, 2] and seen["type"] == "RangeIndex"
    assert seen["cells"] == {"integer": "int64", "float": "float64", "string": "str", "boolean": "bool",
                             "date": "date", "datetime": "Timestamp", "json": "dict", "bytes": "bytes",
                             "table": "DataFrame"}
    assert full["datetime"] == "2024-02-29T10:00:00+00:00"  # the instant, in UTC as in a table
    assert {k: full[k] for k in ("integer", "float", "string", "boolean", "date", "json")} == {
        k: FULL[k] for k in ("integer", "float", "string", "boolean", "date", "json")}
    assert isinstance(full["integer"], int)
    assert base64.b64decode(full["bytes"]["data"]) == b"\x00hi"
    assert full["table"]["dtypes"] == {"i": "integer"} and full["table"]["data"] == {"i": [1, None]}
    assert empty["seen"]["cells"]["integer"] == "NAType" and empty["seen"]["cells"]["date"] == "NoneType"
    assert {k: v for k, v in empty.items() if k != "seen"} == dict.fromkeys(FULL)
    assert some["integer"] == 7 and isinstance(some["integer"], int) and some["float"] == 2.0


def test_numpy_and_pandas_values_become_plain_values_of_the_ports_type(
        plugin: Callable[[str], PluginProcess]) -> None:
    final, _ = answer(plugin("batch_types"), [{}, {}, {}], mode="computed")
    assert "errors" not in final, final["errors"]
    first, second, third = final["outputs"]
    assert first["integer"] == 1 and isinstance(first["integer"], int) and third["integer"] == 3
    assert first["float"] == 0.5 and first["boolean"] is True and second["boolean"] is False
    assert first["date"] == "2024-02-29" and third["date"] == "2024-03-01"
    assert first["datetime"] == "2024-02-29T10:00:00+00:00"
    assert first["json"] == [0, 1] and second["json"] == 7
    assert all(second[k] is None for k in ("integer", "float", "date", "datetime"))
    assert first["string"] is None and first["table"] is None  # no column: null
