"""The hand-maintained OpenAPI document is valid, covers the spec and names its handlers consistently."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml
from openapi_spec_validator import validate

ROOT = Path(__file__).resolve().parents[1]
DOCUMENT = ROOT / "openapi" / "openapi.yaml"
SPEC_OPERATIONS = Path(__file__).resolve().with_name("spec_operations.txt")

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    loaded = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    assert isinstance(loaded, dict)
    return loaded


def operations(document: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [
        (method.upper(), path, operation)
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in HTTP_METHODS
    ]


def test_document_is_valid_openapi_3_0(document: dict[str, Any]) -> None:
    assert document["openapi"] == "3.0.3"
    validate(document)


def norm(path: str) -> str:
    """A path with its parameters as ``{}``: the spec and the document may name them differently
    (the spec itself writes ``/collections/{name}`` and ``/collections/{name_or_id}``)."""
    return re.sub(r"\{[^}]*\}", "{}", path)


def spec_operations() -> dict[str, list[tuple[str, str]]]:
    """``tests/spec_operations.txt``: the spec's operations by spec section, in file order."""
    sections: dict[str, list[tuple[str, str]]] = {}
    section = None
    for number, line in enumerate(SPEC_OPERATIONS.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            section = line[3:].strip()
            assert section not in sections, f"spec_operations.txt:{number}: section {section!r} twice"
            sections[section] = []
        elif line.strip() and not line.startswith("#"):
            match = re.fullmatch(r"(GET|POST|PUT|PATCH|DELETE) (/\S*)", line)
            assert match, f"spec_operations.txt:{number}: not 'METHOD /path': {line!r}"
            assert section is not None, f"spec_operations.txt:{number}: operation before any section"
            sections[section].append((match[1], match[2]))
    return sections


# Spec operations the document does not have yet, by spec section: the parts of the service not
# built yet (automation and runs, AI, analytics). Shrink this as they are built; the test fails
# when an operation goes missing that is not listed here, and when a listed one exists.
NOT_BUILT_YET: dict[str, set[str]] = {
}


def test_spec_operations_list_is_well_formed() -> None:
    text = SPEC_OPERATIONS.read_text(encoding="utf-8")
    assert text.startswith("# ") and "service-spec.md" in text.split("\n## ")[0]  # says where it came from
    sections = spec_operations()
    assert sections and all(sections.values()), sections
    every = [(method, norm(path)) for ops in sections.values() for method, path in ops]
    assert len(every) == len(set(every)), [op for op, n in Counter(every).items() if n > 1]
    for section, names in NOT_BUILT_YET.items():  # the not-built list names real spec operations
        listed = {f"{method} {path}" for method, path in sections.get(section, [])}
        assert names <= listed, f"{section}: not in tests/spec_operations.txt: {sorted(names - listed)}"


def test_document_has_every_spec_operation_but_those_not_built_yet(document: dict[str, Any]) -> None:
    have = {(method, norm(path)) for method, path, _ in operations(document)}
    sections = spec_operations()
    missing = {section: {f"{method} {path}" for method, path in ops if (method, norm(path)) not in have}
               for section, ops in sections.items()}
    unexpected = {section: sorted(ops - NOT_BUILT_YET.get(section, set()))
                  for section, ops in missing.items() if ops - NOT_BUILT_YET.get(section, set())}
    assert unexpected == {}, ("spec operations missing from openapi/openapi.yaml (same method, same path) "
                              f"that NOT_BUILT_YET does not list: {unexpected}")
    now_built = {section: sorted(names - missing.get(section, set()))
                 for section, names in NOT_BUILT_YET.items() if names - missing.get(section, set())}
    assert now_built == {}, f"built now: take them out of NOT_BUILT_YET: {now_built}"


def test_operation_ids_are_unique_and_named_tag_dot_function(document: dict[str, Any]) -> None:
    ops = operations(document)
    assert ops, "the document has no operations"
    counts = Counter(operation.get("operationId") for _, _, operation in ops)
    assert [op_id for op_id, n in counts.items() if n > 1] == []
    for method, path, operation in ops:
        op_id = operation.get("operationId")
        tags = operation.get("tags") or []
        assert op_id, f"{method} {path} has no operationId"
        assert tags, f"{method} {path} has no tags"
        assert re.fullmatch(r"[a-z_]+\.[a-z_][a-z0-9_]*", op_id), f"{method} {path}: {op_id!r}"
        module, _ = op_id.split(".")
        assert module == tags[0], f"{method} {path}: {op_id!r} does not start with its tag {tags[0]!r}"


def _nodes(node: Any, path: str = "") -> list[tuple[str, dict[str, Any]]]:
    """Every schema-like mapping in ``node`` with its JSON pointer-ish path."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, dict):
        found.append((path, node))
        for key, value in node.items():
            found += _nodes(value, f"{path}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            found += _nodes(value, f"{path}/{i}")
    return found


def test_nullable_unions_are_spelled_so_client_generators_build_them(document: dict[str, Any]) -> None:
    """The two spellings openapi-python-client cannot build cleanly (docs/decisions.md, *Server*):
    a nullable enum with a ``type`` (three copies of the enum) and a nullable inline object as a
    property of a nullable component (the component is dropped with a warning).
    tests/test_generated_client.py runs the generator itself."""
    typed_enums = [path for path, node in _nodes(document)
                   if node.get("nullable") and "enum" in node and node.get("type") not in (None, "object")]
    assert typed_enums == [], "write a nullable enum as `nullable: true` + `enum: [..., null]`, no `type`"
    inline = [f"{name}.{prop}" for name, schema in document["components"]["schemas"].items() if schema.get("nullable")
              for prop, sub in (schema.get("properties") or {}).items()
              if sub.get("nullable") and sub.get("type") == "object"]
    assert inline == [], "spell these `anyOf: [{$ref: …}, {type: object, nullable: true, enum: [null]}]`"


def test_served_document_is_the_one_connexion_validates_with(tmp_path: Path) -> None:
    """Spec *Versioning* 3: ``/openapi.json`` is the running server's description. It is the very
    mapping Connexion routes and validates with (its ``$ref``s kept), with the configured limits."""
    from starlette.testclient import TestClient

    from benchbook.app import create_app
    from benchbook.config import Project

    app = create_app(Project.init(tmp_path / "project"))
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            root, api = client.get("/openapi.json"), client.get("/api/openapi.json")
            as_yaml = client.get("/api/openapi.yaml")
            head = client.head("/openapi.json")
            post = client.post("/openapi.json")
    finally:
        app.services.db.engine.dispose()
    assert root.status_code == api.status_code == as_yaml.status_code == 200
    assert root.content == api.content and root.headers["content-type"] == "application/json"
    assert yaml.safe_load(as_yaml.text) == root.json()
    assert head.status_code == 200 and head.content == b"" and head.headers["content-length"] == str(len(root.content))
    assert post.status_code == 405 and post.headers["allow"] == "GET, HEAD" and post.json() == {
        "detail": "Method Not Allowed"}
    served = root.json()
    validated = app.middleware.apis[0].specification.raw  # what connexion.AsyncApp.add_api was given
    assert served == json.loads(json.dumps(validated))
    assert served["servers"] == [{"url": "/api"}]
    written = yaml.safe_load(DOCUMENT.read_text(encoding="utf-8"))
    assert set(served["components"]["schemas"]) == set(written["components"]["schemas"])
    assert served["paths"].keys() == written["paths"].keys()
