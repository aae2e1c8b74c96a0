"""``benchbook.text-stats``: words, characters and lines of a text."""
from __future__ import annotations

from typing import Any

from benchbook.plugin import Context, Plugin

plugin = Plugin(
    id="benchbook.text-stats", name="Text statistics", category="text",
    description="Counts the words, characters and lines of a text (e.g. a notes field).",
    inputs={"text": {"type": "string", "required": True, "description": "the text to count"}},
    outputs={"words": {"type": "integer", "description": "whitespace-separated words"},
             "characters": {"type": "integer", "description": "characters, spaces included"},
             "lines": {"type": "integer", "description": "lines (a final line without newline counts)"}},
    config_schema={"type": "object", "properties": {}, "additionalProperties": False},
)


@plugin.run
def run(ctx: Context, inputs: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    text: str = inputs["text"]
    return {"words": len(text.split()), "characters": len(text), "lines": len(text.splitlines())}
