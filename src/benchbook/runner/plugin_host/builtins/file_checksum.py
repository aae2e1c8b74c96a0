"""``benchbook.file-checksum``: size and md5/sha1 of a stored file."""
from __future__ import annotations

import hashlib
from typing import Any

from benchbook.plugin import Context, Plugin

plugin = Plugin(
    id="benchbook.file-checksum", name="File checksum", category="files",
    description="Reads a stored file and reports its size and a checksum (md5 or sha1) to check against a "
                "supplier's listing.",
    inputs={"file": {"type": "file", "required": True, "description": "the stored file"}},
    outputs={"checksum": {"type": "string", "description": "hex digest"},
             "size": {"type": "integer", "description": "bytes"}},
    config_schema={"type": "object", "properties": {"algorithm": {"enum": ["md5", "sha1"], "default": "md5"}},
                   "additionalProperties": False},
    capabilities=["get_file"],
)


@plugin.run
def run(ctx: Context, inputs: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    content = ctx.get_file(inputs["file"])
    return {"checksum": hashlib.new(config["algorithm"], content).hexdigest(), "size": len(content)}
