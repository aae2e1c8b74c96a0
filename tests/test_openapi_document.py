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

    from benchbook.http.app import create_app
    from benchbook.settings.config import Project

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


def _operation_parameters(document: dict[str, Any]) -> dict[str, tuple[dict[str, Any], set[str]]]:
    """operationId → (operation, names of its parameters, path-level ones included)."""
    def name(p: dict[str, Any]) -> str:
        if "$ref" in p:
            p = document["components"]["parameters"][p["$ref"].rsplit("/", 1)[-1]]
        return str(p["name"])
    out = {}
    for item in document["paths"].values():
        for method, operation in item.items():
            if method in HTTP_METHODS:
                names = {name(p) for p in [*item.get("parameters", []), *operation.get("parameters", [])]}
                out[operation["operationId"]] = (operation, names)
    return out


def test_links_name_real_operations_parameters_and_response_fields(document: dict[str, Any]) -> None:
    """Every link (schemathesis's stateful phase follows them, tests/fuzz) targets an existing
    operation, fills only parameters it has, from properties the response has."""
    by_id = _operation_parameters(document)
    seen = 0
    for op_id, (operation, _) in by_id.items():
        for status, response in operation.get("responses", {}).items():
            for link_name, link in response.get("links", {}).items():
                seen += 1
                where = f"{op_id} {status} links.{link_name}"
                assert link["operationId"] in by_id, where
                target_params = by_id[link["operationId"]][1]
                schema = response["content"]["application/json"]["schema"]
                if "$ref" in schema:
                    schema = document["components"]["schemas"][schema["$ref"].rsplit("/", 1)[-1]]
                for param, expression in link["parameters"].items():
                    assert param in target_params, f"{where}: {link['operationId']} has no parameter {param!r}"
                    match = re.fullmatch(r"\$response\.body#/(\w+)", expression)
                    assert match and match[1] in schema["properties"], f"{where}: {expression!r}"
    assert seen >= 7


def _parameter_schema(document: dict[str, Any], name: str) -> dict[str, Any]:
    schema = document["components"]["parameters"][name]["schema"]
    assert isinstance(schema, dict)
    return schema


@pytest.mark.parametrize("parameter", ["AuditSince", "AnalyticsStart", "AnalyticsEnd"])
def test_instant_patterns_admit_only_what_the_server_parses(document: dict[str, Any], parameter: str) -> None:
    """``since``, ``start`` and ``end`` carry one pattern (a ``date-time`` format would refuse a
    date): every day it admits exists (30-day months, February 29 in leap years only), and the
    domain takes every text it admits, a zone that puts it past year 9999 in UTC included."""
    import calendar

    from hypothesis import given
    from hypothesis import strategies as st

    from benchbook.domain.analytics import parse_instant
    from benchbook.domain.history.entries import parse_since

    pattern = _parameter_schema(document, parameter)["pattern"]
    assert pattern == _parameter_schema(document, "AuditSince")["pattern"]
    for good in ("2024-02-29", "2000-02-29", "2024-01-01T10", "2024-01-01 10:00", "2024-01-01T10:00:00.123456Z",
                 "2024-01-01T10:00:00+05:30", "9999-12-31T23:59:59.999999-23:59", "1000-01-01T00:00+23:59"):
        assert re.search(pattern, good), good
        parse_since(good), parse_instant("start", good), parse_instant("end", good)
    for bad in ("", "yesterday", "2024-1-1", "2024-01-01T", "20240101", "2024-13-01", "2024-01-01T24:00", "0000-01-01",
                "2023-02-29", "1900-02-29", "2024-04-31", "2024-02-30"):
        assert not re.search(pattern, bad), bad
    for year in (1000, 1004, 1900, 2000, 2023, 2024, 2100, 2400, 9996, 9999):  # every day of these years, and only those
        for month in range(1, 13):
            for d in range(1, 32):
                text = f"{year}-{month:02d}-{d:02d}"
                assert bool(re.search(pattern, text)) == (d <= calendar.monthrange(year, month)[1]), text

    @given(st.from_regex(pattern))
    def admitted_parse(text: str) -> None:
        parse_since(text), parse_instant("start", text), parse_instant("end", text)

    admitted_parse()


def test_ai_address_pattern_admits_only_what_the_server_takes(document: dict[str, Any]) -> None:
    """``base_url`` (settings, local models) carries the server's own rule for an address
    (``check_base_url``: http or https, a host, a port 1-65535, printable ASCII), or empty."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from benchbook.domain.ai.config import check_base_url

    pattern = document["components"]["schemas"]["AiConfigUpdate"]["properties"]["base_url"]["pattern"]
    local = document["paths"]["/ai/local/models"]["get"]["parameters"][0]
    assert local["name"] == "base_url" and local["schema"]["pattern"] == pattern
    for good in ("", "http://localhost:11434/v1", "https://api.example.com/v1?x=1#y", "http://[::1]:8080/",
                 "http://10.0.0.1:65535"):
        assert re.search(pattern, good), good
    for bad in ("http://", "ftp://a", "http://a:0", "http://a:65536", "http://a b", "http:///x", "http://[::::]/",
                "http://é.example/", "localhost:11434"):
        assert not re.search(pattern, bad), bad

    @settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
    @given(st.from_regex(pattern, fullmatch=True).filter(bool))
    def admitted(text: str) -> None:
        check_base_url(text, ["body", "base_url"])

    admitted()


def test_ai_key_and_model_patterns_admit_only_what_the_server_takes(document: dict[str, Any]) -> None:
    """``api_key`` (printable ASCII, spaces around it taken off, or empty) and ``model`` (no
    control characters) carry the server's own checks of them (``ai.config._check``)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from benchbook.domain.ai.config import _check

    properties = document["components"]["schemas"]["AiConfigUpdate"]["properties"]

    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(st.from_regex(properties["api_key"]["pattern"], fullmatch=True).filter(lambda t: len(t) <= 1000),
           st.from_regex(properties["model"]["pattern"], fullmatch=True).filter(lambda t: len(t) <= 200))
    def admitted(key: str, model: str) -> None:
        _check({"api_key": key, "model": model})

    admitted()


def test_timezone_pattern_admits_every_zone_the_server_knows(document: dict[str, Any]) -> None:
    """A collection's ``timezone`` is ``format: iana-timezone`` with a pattern of the names' form:
    every zone of the installed time zone database fits it (a new tzdata with a name of another
    form fails here, not in a client), and ``""`` (unset) does."""
    import zoneinfo

    schemas = document["components"]["schemas"]
    for body in ("DatasetCreate", "DatasetUpdate"):
        timezone = schemas[body]["properties"]["timezone"]
        assert timezone["format"] == "iana-timezone"
        pattern = timezone["pattern"]
        for name in [*zoneinfo.available_timezones(), ""]:
            assert re.search(pattern, name) and len(name) <= timezone["maxLength"], (body, name)
        for bad in ("Europe Berlin", "/UTC", "UTC/", "Europe//Berlin", "../etc/passwd", "Ürümqi"):
            assert not re.search(pattern, bad), (body, bad)


def test_display_template_pattern_admits_only_what_the_server_parses(document: dict[str, Any]) -> None:
    """A display template's pattern (literal text, ``{{``/``}}``, ``{field}`` or
    ``{field:FORMAT}`` with a slug name) admits only templates the server parses and renders;
    whether the fields exist is for the server to say (409)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from benchbook.domain.catalog.naming import natural_name, placeholders

    schemas = document["components"]["schemas"]
    pattern = schemas["SchemaCreate"]["properties"]["display_template"]["pattern"]
    assert schemas["SchemaUpdate"]["properties"]["display_template"]["pattern"] == pattern
    for good in ("", "{site}-{taken_on:YYYY-MM}", "{mass:.1f} g", "{{literal}}"):
        assert re.search(pattern, good), good
    for bad in ("{", "}", "{site", "{[}", "{Site}", "{0}", "{a!r}", "{a:{b}}"):
        assert not re.search(pattern, bad), bad

    @settings(suppress_health_check=[HealthCheck.too_slow])
    @given(st.from_regex(pattern, fullmatch=True))
    def admitted(template: str) -> None:
        names = placeholders(template)
        for kind, value in (("string", "x"), ("float", 1.5), ("date", "2024-01-31"), ("datetime", "2024-01-31T10:00:00")):
            natural_name(template, dict.fromkeys(names, value), dict.fromkeys(names, kind))

    admitted()


def test_where_pattern_is_the_servers_field_equals_value_rule(document: dict[str, Any]) -> None:
    """``where`` items carry the domain's own syntax rule (domain/records/queries.py: a name
    that is not blank after stripping, ``=``, anything): the pattern admits a string exactly
    when that rule does (whether the field exists is for the server to say)."""
    from hypothesis import given
    from hypothesis import strategies as st

    pattern = _parameter_schema(document, "RecordWhere")["items"]["pattern"]

    def domain_accepts(clause: str) -> bool:
        name, sep, _ = clause.partition("=")
        return bool(sep and name.strip())

    for text in ("site=A", " site = A=B", "a=", "=A", " =A", "site", "", "\x1c=", "\x1fa="):
        assert bool(re.search(pattern, text)) == domain_accepts(text), text

    @given(st.text(alphabet=st.sampled_from(["a", "=", " ", "\t", "\n", "\u00a0", "\x1c", "\x1f", "é"]), max_size=8))
    def same_rule(text: str) -> None:
        assert bool(re.search(pattern, text)) == domain_accepts(text), repr(text)

    same_rule()


def test_filter_parameters_are_json_text(document: dict[str, Any]) -> None:
    """Every query parameter named ``filter`` is documented as JSON text (``format: json``, a
    string: a ``content`` parameter is dropped by client generators and not validated by
    Connexion 3.3); tests/fuzz draws filter trees for that format."""
    found = 0
    for path, item in document["paths"].items():
        for method, operation in item.items():
            if method not in HTTP_METHODS:
                continue
            for p in [*item.get("parameters", []), *operation.get("parameters", [])]:
                if "$ref" in p:
                    p = document["components"]["parameters"][p["$ref"].rsplit("/", 1)[-1]]
                if p["name"] == "filter" and p["in"] == "query":
                    found += 1
                    assert p["schema"] == {"type": "string", "format": "json"}, f"{method.upper()} {path}"
    assert found >= 9


def test_repeated_query_values_keep_their_commas(tmp_path: Path) -> None:
    """``where`` (``style: form``, ``explode: true``) is one item per repetition, commas kept:
    Connexion's own parser split ``note=a,b`` into ``note=a`` and ``b`` (contract.QueryParser)."""
    from starlette.testclient import TestClient

    from benchbook.http.app import create_app
    from benchbook.settings.config import Project

    app = create_app(Project.init(tmp_path / "project"))
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            made = client.post("/api/schemas", json={"name": "s", "fields": [
                {"name": "note", "type": "string"}, {"name": "n", "type": "integer"}]})
            assert made.status_code == 201, made.text
            assert client.post("/api/collections", json={"name": "c", "schemas": ["s"]}).status_code == 201
            for note, n in (("a,b", 1), ("a", 2), ("b", 3)):
                assert client.post("/api/collections/c/records",
                                   json={"schema_name": "s", "data": {"note": note, "n": n}}).status_code == 201
            comma = client.get("/api/collections/c/records", params=[("where", "note=a,b")])
            both = client.get("/api/collections/c/records", params=[("where", "note=a"), ("where", "n=2")])
            sort = client.get("/api/collections/c/records", params=[("schema", "s"), ("sort", "n:desc")])
    finally:
        app.services.db.engine.dispose()
    assert comma.status_code == 200 and [r["data"]["n"] for r in comma.json()["items"]] == [1], comma.text
    assert both.status_code == 200 and [r["data"]["n"] for r in both.json()["items"]] == [2], both.text
    assert [r["data"]["n"] for r in sort.json()["items"]] == [3, 2, 1]
