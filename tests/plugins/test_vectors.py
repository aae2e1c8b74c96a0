"""The conformance vectors (``plugin-protocol/vectors/``) against ``frames.schema.json``.

Every vector must come out as it says: valid ones pass, invalid ones fail with a message (the
error's JSON path plus its text, including the branch errors of ``oneOf``) containing the
vector's ``violation``. The set must keep covering every frame type in its direction, both
valid and invalid, and every form of the value envelopes, RPC methods, tools, log streams and
port types.
"""
from __future__ import annotations

import json
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from jsonschema.exceptions import ValidationError

PROTOCOL = Path(__file__).resolve().parents[2] / "plugin-protocol"
VECTORS = PROTOCOL / "vectors"
VECTOR_FILES = sorted(VECTORS.glob("*.json"))
DEFINITION = {"host_to_plugin": "host_frame", "plugin_to_host": "plugin_frame"}
HOST_TYPES = {"describe", "run", "rpc_result", "error"}
PLUGIN_TYPES = {"describe_result", "result", "error", "log", "rpc_call"}
RPC_METHODS = {"get_file", "update_record", "create_record", "commit", "call_tool"}
TOOLS = {"get_context_record", "find_records", "get_schema", "store_file"}
PORT_TYPES = {"integer", "float", "string", "boolean", "date", "datetime", "bytes", "table", "file", "json"}


@cache
def schema() -> dict[str, Any]:
    return json.loads((PROTOCOL / "frames.schema.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@cache
def validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema()["$defs"]})


def load(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def definition_and_instance(vector: dict[str, Any]) -> tuple[str, Any]:
    if "envelope" in vector:
        return vector["envelope"], vector["value"]
    return DEFINITION[vector["direction"]], vector["frame"]


def messages(errors: Iterator[ValidationError]) -> list[str]:
    out: list[str] = []
    for err in errors:
        out.append(f"{err.json_path}: {err.message}")
        out.extend(messages(iter(err.context or [])))
    return out


def test_schema_is_valid_2020_12() -> None:
    Draft202012Validator.check_schema(schema())


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_vector_file_format(path: Path) -> None:
    vector = load(path)
    valid = path.name.endswith(".valid.json")
    assert valid or path.name.endswith(".invalid.json"), "name ends in .valid.json or .invalid.json"
    assert vector["valid"] is valid
    assert isinstance(vector["description"], str) and vector["description"]
    if "envelope" in vector:
        expected = {"description", "envelope", "valid", "value"}
        assert vector["envelope"] in ("binary", "table")
    else:
        expected = {"description", "direction", "valid", "frame"}
        assert vector["direction"] in DEFINITION
    if not valid:
        expected.add("violation")
        assert isinstance(vector["violation"], str) and vector["violation"]
    assert set(vector) == expected


@pytest.mark.parametrize("path", VECTOR_FILES, ids=lambda p: p.name)
def test_vector(path: Path) -> None:
    vector = load(path)
    definition, instance = definition_and_instance(vector)
    found = messages(validator(definition).iter_errors(instance))
    if vector["valid"]:
        assert found == []
    else:
        assert found, "an invalid vector passed validation"
        assert any(vector["violation"] in m for m in found), f"{vector['violation']!r} not in {found}"


def test_vectors_cover_the_protocol() -> None:
    """Every frame type in its direction, valid and invalid; every envelope form; every RPC method,
    tool, log stream and port type in a valid frame. Removing vectors fails this test."""
    seen: set[tuple[str, ...]] = set()
    for path in VECTOR_FILES:
        vector = load(path)
        flag = "valid" if vector["valid"] else "invalid"
        if "envelope" in vector:
            seen.add(("envelope", vector["envelope"], flag))
            if vector["valid"]:
                seen.add(("encoding", vector["envelope"], vector["value"]["encoding"]))
            continue
        frame = vector["frame"]
        kind = frame.get("type") if isinstance(frame, dict) else None
        seen.add(("frame", vector["direction"], str(kind), flag))
        if not vector["valid"] or not isinstance(frame, dict):
            continue
        if kind == "rpc_call":
            seen.add(("method", frame["method"]))
            if frame["method"] == "call_tool":
                seen.add(("tool", frame["params"]["tool"]))
        if kind == "log":
            seen.add(("stream", frame.get("stream", "log")))
        if kind == "describe_result":
            seen.update(("port", port["type"]) for port in {**frame["inputs"], **frame["outputs"]}.values())
    wanted: set[tuple[str, ...]] = {("frame", "host_to_plugin", t, f) for t in HOST_TYPES for f in ("valid", "invalid")}
    wanted |= {("frame", "plugin_to_host", t, f) for t in PLUGIN_TYPES for f in ("valid", "invalid")}
    wanted |= {("envelope", e, f) for e in ("binary", "table") for f in ("valid", "invalid")}
    wanted |= {("encoding", "binary", "base64"), ("encoding", "binary", "path"),
               ("encoding", "table", "inline"), ("encoding", "table", "ndjson_path")}
    wanted |= {("method", m) for m in RPC_METHODS} | {("tool", t) for t in TOOLS}
    wanted |= {("stream", s) for s in ("log", "stdout", "stderr")} | {("port", p) for p in PORT_TYPES}
    assert wanted - seen == set()
