"""RPC plugin for the SDK tests: calls every ctx RPC method once and reports what came back.

A denied ``update_record`` (kind ``capability_denied``) is caught and reported; the plugin goes
on. Any other RPC failure is left uncaught, so it fails the run.
"""
from __future__ import annotations

from benchbook.plugin import Plugin, PluginRpcError

plugin = Plugin(
    id="sdk-rpc",
    name="RPC",
    description="Calls the host",
    category="test",
    outputs={"report": {"type": "json", "required": True}},
    capabilities=["get_context_record", "get_file", "store_file", "update_record", "create_record",
                  "find_records", "get_schema", "commit"],
)


@plugin.run
def run(ctx, inputs, config):
    ctx.log("starting")
    record = ctx.get_context_record()
    small = ctx.get_file(record["data"]["small"])
    big = ctx.get_file(record["data"]["big"])
    stored = ctx.store_file("upper.txt", small.upper())
    stored_big = ctx.store_file("big.bin", big)
    try:
        updated = ctx.update_record(record["id"], {"size": len(small)})
        denied = None
    except PluginRpcError as exc:
        updated = None
        denied = {"kind": exc.kind, "message": exc.message, "retryable": exc.retryable}
        ctx.log(f"not updated: {exc.kind}")
    child = ctx.create_record("samples", "aliquot", {"volume": 5}, parent_record_id=record["id"])
    found = ctx.find_records(schema="aliquot", filter={"field": "volume", "op": "gt", "value": 1}, limit=5)
    schema = ctx.get_schema("aliquot")
    ctx.commit()
    return {"report": {
        "small": small.decode(),
        "big_size": len(big),
        "big_ok": big == bytes(range(256)) * (len(big) // 256),
        "stored": stored,
        "stored_big": stored_big,
        "updated": updated,
        "denied": denied,
        "child": child["id"],
        "found": found["total"],
        "schema": schema["name"],
        "capabilities": list(ctx.capabilities),
        "tier": ctx.tier,
    }}
