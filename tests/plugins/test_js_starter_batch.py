"""Batch runs in the JavaScript starter (issue 36 item 2; ``plugin-protocol/js/README.md``,
*Batches*): ``serve({batch: true, run(items, config, ctx)})`` answers a list of inputs with an
array in the same order, per-item errors included. ``example-batch-plugin.js`` under a real
``node``, every frame it sends checked against the schema."""
from __future__ import annotations

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
  inputs: {{ n: {{ type: 'integer' }} }}, outputs: {{ n: {{ type: 'integer' }} }},
  run(items, config) {{
    if (config.how === 'short') return items.slice(1);
    if (config.how === 'throw') throw new Error('all of it');
    return items.map((i) => (i.n === 1 ? new Error('one is odd') : (i.n === 2 ? 'two' : {{ n: i.n }})));
  }},
}});
"""


def test_what_breaks_the_whole_batch_is_one_error_frame_and_plain_errors_fail_their_item(tmp_path: Path) -> None:
    script = tmp_path / "broken.js"
    script.write_text(BROKEN.format(sdk=str(JS / "benchbook-plugin.js")))
    plugin = NodePlugin(script, tmp_path)
    try:
        answer = final(plugin, [{"n": 0}, {"n": 1}, {"n": 2}])
        assert answer["outputs"] == [{"n": 0}, None, None]
        assert [(e["index"], e["kind"], e["message"]) for e in answer["errors"]] == [
            (1, "plugin_error", "one is odd"),
            (2, "invalid_output", "an element of the returned array is neither an object of outputs nor an Error")]
        short = final(plugin, [{"n": 0}, {"n": 3}], how="short")["error"]
        assert short["kind"] == "invalid_output" and "one element per input (2)" in short["message"]
        assert final(plugin, [{"n": 0}], how="throw")["error"] == {"kind": "plugin_error", "message": "all of it",
                                                                  "retryable": False}
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
