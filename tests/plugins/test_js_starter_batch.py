"""Batch runs in the JavaScript starter (issue 36 item 2; ``plugin-protocol/js/README.md``,
*Batches*): ``serve({batch: true, run(items, config, ctx)})`` answers a list of inputs with an
array in the same order, per-item errors included. ``example-batch-plugin.js`` under a real
``node``, every frame it sends checked against the schema."""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest

from tests.plugins.test_js_starter import EXAMPLE, JS, NODE, NodePlugin

pytestmark = pytest.mark.skipif(NODE is None, reason="node is not on PATH, so the JavaScript starter cannot run")
BATCH_EXAMPLE = JS / "example-batch-plugin.js"


def final(plugin: NodePlugin, inputs: Any, **config: Any) -> dict[str, Any]:
    return plugin.request({"type": "run", "inputs": inputs, "config": config})[-1]


def test_a_batch_is_answered_in_order_with_an_error_for_each_failed_item(tmp_path: Path) -> None:
    plugin = NodePlugin(BATCH_EXAMPLE, tmp_path)
    try:
        assert plugin.request({"type": "describe"})[-1]["batch"] is True
        frames = plugin.request({"type": "run", "inputs": [{"minutes": 3}, {"minutes": None}, {"minutes": 40},
                                                           {"minutes": -2}], "config": {}})
        assert [f["message"] for f in frames if f["type"] == "log"] == ["4 delay(s)"]
        assert frames[-1] == {"type": "result", "outputs": [{"label": "on time"}, None, {"label": "late"},
                                                            {"label": "early"}],
                              "errors": [{"index": 1, "kind": "invalid_input", "message": "no delay",
                                          "retryable": False}]}
        assert final(plugin, [{"minutes": 20}], late_after=30)["outputs"] == [{"label": "on time"}]
        # one run's inputs as an object (a host that does not batch): a plain answer, or its error
        assert final(plugin, {"minutes": 99}) == {"type": "result", "outputs": {"label": "late"}}
        assert final(plugin, {})["error"]["kind"] == "invalid_input"
        assert plugin.close() == 0
    finally:
        plugin.shutdown()


BROKEN = """'use strict';
const bb = require({sdk!r});
bb.serve({{
  id: 'broken', name: 'Broken', capabilities: [], batch: true,
  inputs: {{ n: {{ type: 'integer' }}, b: {{ type: 'bytes' }} }},
  outputs: {{ n: {{ type: 'integer' }}, size: {{ type: 'integer' }}, blob: {{ type: 'bytes' }} }},
  run(items, config, ctx) {{
    if (items.length === 0) throw new Error('run() got no items');
    ctx.log(`got ${{items.map((i) => i.n).join(',')}}`);
    if (config.how === 'short') return items.slice(1);
    if (config.how === 'object') return {{ n: 1 }};
    if (config.how === 'throw') throw new Error('all of it');
    if (config.how === 'later') return Promise.resolve(items.map((i) => ({{ n: i.n * 10 }})));
    return items.map((i) => {{
      if (i.n === 1) return new Error('one is odd');
      if (i.n === 2) return 'two';
      if (i.n === 3) return new bb.PluginError('rate_limited', 'three later', {{ retryable: true }});
      if (i.n === 4) return {{ n: 4, blob: 4 }};
      if (i.n === 5) return {{ n: 5n }};
      return {{ n: i.n, size: i.b ? i.b.length : null }};
    }});
  }},
}});
"""


def test_what_breaks_the_whole_batch_is_one_error_frame_and_errors_fail_their_item(tmp_path: Path) -> None:
    script = tmp_path / "broken.js"
    script.write_text(BROKEN.format(sdk=str(JS / "benchbook-plugin.js")))
    plugin = NodePlugin(script, tmp_path)
    try:
        frames = plugin.request({"type": "run", "config": {}, "inputs": [
            {"n": 0}, {"n": 1}, {"n": 2}, {"n": 3}, {"n": 4}, {"n": 5},
            {"n": 6, "b": {"encoding": "base64", "data": base64.b64encode(b"abc").decode()}}]})
        answer = frames[-1]
        assert [f["message"] for f in frames if f["type"] == "log"] == ["got 0,1,2,3,4,5,6"]
        assert answer["outputs"] == [{"n": 0, "size": None}, None, None, None, None, None, {"n": 6, "size": 3}]
        errors = {e["index"]: e for e in answer["errors"]}
        assert [e["index"] for e in answer["errors"]] == [1, 2, 3, 4, 5]
        assert errors[1] == {"index": 1, "kind": "plugin_error", "message": "one is odd", "retryable": False}
        assert errors[2]["kind"] == "invalid_output" and "neither an object of outputs nor an Error" in errors[2]["message"]
        assert errors[3] == {"index": 3, "kind": "rate_limited", "message": "three later", "retryable": True}
        assert errors[4]["kind"] == "invalid_output" and errors[4]["retryable"] is False  # a number as bytes
        assert errors[5]["kind"] == "invalid_output" and "BigInt" in errors[5]["message"]

        # an item whose inputs cannot be decoded fails alone and never reaches run(); positions map back
        missing = str(tmp_path / "missing.bin")
        frames = plugin.request({"type": "run", "config": {}, "inputs": [
            {"n": 7}, {"n": 8, "b": {"encoding": "path", "path": missing}}, {"n": 9}]})
        assert [f["message"] for f in frames if f["type"] == "log"] == ["got 7,9"]
        assert frames[-1]["outputs"] == [{"n": 7, "size": None}, None, {"n": 9, "size": None}]
        [bad] = frames[-1]["errors"]
        assert bad["index"] == 1 and bad["kind"] == "invalid_input" and "missing.bin" in bad["message"]
        every = final(plugin, [{"b": {"encoding": "path", "path": missing}}])  # run() not called at all
        assert every["outputs"] == [None] and every["errors"][0]["kind"] == "invalid_input"

        assert final(plugin, [{"n": 1}, {"n": 2}], how="later")["outputs"] == [{"n": 10}, {"n": 20}]
        short = final(plugin, [{"n": 0}, {"n": 3}], how="short")["error"]
        assert short["kind"] == "invalid_output" and "one element per input (2)" in short["message"]
        not_array = final(plugin, [{"n": 0}], how="object")
        assert not_array["type"] == "error" and not_array["error"]["kind"] == "invalid_output"
        assert final(plugin, [{"n": 0}], how="throw")["error"] == {"kind": "plugin_error", "message": "all of it",
                                                                  "retryable": False}
        # one run's inputs as an object: a plain result, or its item error as the run's error frame
        assert final(plugin, {"n": 6}) == {"type": "result", "outputs": {"n": 6, "size": None}}
        assert final(plugin, {"n": 3})["error"] == {"kind": "rate_limited", "message": "three later",
                                                    "retryable": True}
        assert plugin.close() == 0
    finally:
        plugin.shutdown()


def test_a_plugin_without_batch_refuses_a_list(tmp_path: Path) -> None:
    plugin = NodePlugin(EXAMPLE, tmp_path)
    try:
        error = final(plugin, [{"text": "a b"}])["error"]
        assert error["kind"] == "protocol_error" and "does not take batches" in error["message"]
        assert "batch" not in plugin.request({"type": "describe"})[-1]
        assert plugin.close() == 0
    finally:
        plugin.shutdown()
