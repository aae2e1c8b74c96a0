"""Valid requests where the OpenAPI document cannot say what valid is (tests/fuzz).

The document says what it can (patterns, enums, formats, sizes, "exactly one of"); the rest is
in its descriptions: what a filter tree holds (its grammar, and fields that are data: a record
schema's, or the ones ``GET /audit/filter-fields`` and ``GET /jobs/filter-fields`` list), that a
record's ``data`` is described by its schema, which restrictions a field type takes, what a
workflow's YAML and an imported file hold. schemathesis generates from the document alone, so
just before a case it means to be valid is sent, :func:`make_valid` makes those parts valid too,
from the seeded things and the server's own descriptors, keeping the generated values where it
can. Cases generated to be invalid are left alone. Every choice is a hash of the generated
values, so it is as reproducible as the generation (docs/decisions.md, *What the document says*).
"""
from __future__ import annotations

import csv
import io
import json
import zlib
import zoneinfo
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: A filter vocabulary: field name → ``{type, operators, choices}`` (RunFieldResponse's keys).
Vocabulary = Mapping[str, Mapping[str, Any]]
REFERENCE_TYPES = ("reference", "reference_list")
#: What ``format: iana-timezone`` holds: a zone of the server's time zone database (the system's
#: ``localtime`` and ``posixrules`` files are no IANA zones; the server refuses them).
ZONES = sorted(zoneinfo.available_timezones() - {"localtime", "posixrules"})


@dataclass
class Seeded:
    """The seeded things and the server's descriptors that valid values are drawn from."""

    schema: str
    field: str
    records: Vocabulary  # the seeded record schema's fields as a filter vocabulary
    history: Vocabulary  # GET /audit/filter-fields
    runs: Vocabulary  # GET /jobs/filter-fields
    plugin_input: tuple[str, str] = ("benchbook.text-stats", "text")  # a built-in and its required input


def _hash(*raw: Any) -> int:
    return zlib.crc32(json.dumps(raw, sort_keys=True, default=repr).encode())


def pick(options: Sequence[Any], *raw: Any) -> Any:
    """One of ``options``, chosen by the generated ``raw`` values."""
    return options[_hash(*raw) % len(options)]


def text(raw: Any, fallback: str) -> str:
    """``raw`` when it is text a value can hold (not blank, NUL-free, short), else ``fallback``
    with a part of the hash, so values stay varied."""
    if isinstance(raw, str) and raw.strip() and "\x00" not in raw and len(raw) <= 200:
        return raw
    return f"{fallback}{_hash(raw) % 1000}"


# ----------------------------------------------------------------------------------- filters

def _value(spec: Mapping[str, Any], op: str, raw: Any) -> Any:
    choices = spec.get("choices")
    if choices:
        return pick(choices, raw)
    kind = spec.get("type")
    if kind == "datetime":
        return pick(["2024-01-01", "2024-06-30T12:00:00", "2030-01-01T00:00:00Z"], raw)
    if kind in ("integer", "float"):
        return _hash(raw) % 7
    return text(raw if op != "contains" else (raw[:3] if isinstance(raw, str) else raw), "v")


def leaf(raw: Any, vocabulary: Vocabulary) -> dict[str, Any]:
    """A leaf the vocabulary's field takes: an operator it lists, a value of its type."""
    name = pick(sorted(vocabulary), raw)
    spec = vocabulary[name]
    op = pick(list(spec["operators"]), raw, "op")
    given = raw.get("value") if isinstance(raw, dict) else raw
    out: dict[str, Any] = {"field": name, "op": op}
    if op == "is_null":
        choice = pick([True, False, None], raw, "null")
        if choice is not None:
            out["value"] = choice
    elif op == "in":
        items = given if isinstance(given, list) else [given]
        out["value"] = [str(_value(spec, "eq", (item, i))) if spec.get("type") not in ("integer", "float")
                        else _value(spec, "eq", (item, i)) for i, item in enumerate(items[:3])]
    else:
        out["value"] = _value(spec, op, given)
    return out


def tree(raw: Any, vocabulary: Vocabulary, depth: int = 0) -> dict[str, Any]:
    """A filter tree of the generated ``raw`` one's shape (its groups kept, empty ones made
    leaves) whose every leaf :func:`leaf` makes valid."""
    if isinstance(raw, dict) and len(raw) == 1 and depth < 4:
        [(key, children)] = raw.items()
        if key in ("and", "or") and isinstance(children, list) and children:
            return {key: [tree(c, vocabulary, depth + 1) for c in children[:4]]}
    return leaf(raw, vocabulary)


def _vocabulary_of(path: str, seeded: Seeded) -> Vocabulary:
    if path.startswith("/audit"):
        return seeded.history
    if path.startswith("/jobs"):
        return seeded.runs
    return seeded.records


# ----------------------------------------------------------------------------------- bodies

def field_body(body: dict[str, Any], seeded: Seeded, *, update: bool) -> None:
    """A field's create or update body whose restrictions and default its type takes: none but
    a reference's target (the seeded schema); an update keeps the field's own (its type is
    stored)."""
    if update:
        body["restrictions"] = None
    elif body.get("type") in REFERENCE_TYPES:
        body["restrictions"] = {"schema": seeded.schema}
    else:
        body["restrictions"] = {}
    body["default"] = None


def workflow(name: str, raw: Any, seeded: Seeded) -> str:
    """The YAML of a workflow that has no problems: the seeded schema, run by hand, one step of
    a built-in plugin reading the seeded field."""
    plugin, port = seeded.plugin_input
    step = pick(["count", "stats", "words"], raw)
    return json.dumps({"name": name, "description": text(raw, "fuzz"), "record_schema": seeded.schema,
                       "triggers": {"manual": {}},
                       "steps": [{"id": step, "plugin": plugin, "inputs": {port: f"record.{seeded.field}"}}]})


def import_file(raw: Any, seeded: Seeded) -> bytes:
    """A CSV of the seeded schema's field, a row or a few."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow([seeded.field])
    writer.writerows([text(r, "row")] for r in (raw if isinstance(raw, list) else [raw])[:3])
    return out.getvalue().encode()


# ------------------------------------------------------------------------------------- cases

def _positive(case: Any) -> bool:
    """Whether ``case`` was generated valid, every part of it (a case invalid in one part is
    left as it is: its refusal is what is checked)."""
    return case.meta is not None and bool(case.meta.generation.mode.is_positive)


def make_valid(case: Any, seeded: Seeded) -> None:
    """Make the parts of ``case`` that were generated valid (by the document) valid by the rules
    the document only describes (module docstring)."""
    path, method = case.operation.path, case.method.upper()
    if not _positive(case):
        return
    for container in (case.query, case.body):  # changed in place: a case's attribute set anew is
        _no_nul(container)                       # judged again by schemathesis, a null body as invalid
    query = case.query if isinstance(case.query, dict) else None
    if query is not None:
        if isinstance(query.get("filter"), str):
            try:
                raw = json.loads(query["filter"])
            except ValueError:
                raw = query["filter"]
            query["filter"] = json.dumps(tree(raw, _vocabulary_of(path, seeded)))
        if query.get("within") is not None and not query.get("schema"):
            del query["within"]  # `within` requires `schema` (described; no OpenAPI 3.0 keyword says it)
    body = case.body
    if not isinstance(body, dict):
        return
    if isinstance(body.get("filter"), dict):
        body["filter"] = tree(body["filter"], _vocabulary_of(path, seeded))
    if path in ("/collections/{dataset_name}/records", "/records/{record_id}") and method in ("POST", "PATCH"):
        if isinstance(body.get("data"), dict):
            body["data"] = {seeded.field: text(next(iter(body["data"].values()), None), "value")}
        if method == "POST" and _hash(body.get("schema_name")) % 2 == 0:
            body["schema_name"], body["parent_record_id"] = seeded.schema, None
    elif path == "/schemas" and method == "POST":
        fields = body.get("fields")
        if isinstance(fields, list):
            named = {f.get("name"): f for f in fields if isinstance(f, dict)}  # a name once (described)
            body["fields"] = list(named.values())
            for f in body["fields"]:
                field_body(f, seeded, update=False)
    elif path == "/schemas/{name}/fields" and method == "POST":
        field_body(body, seeded, update=False)
    elif path == "/schemas/{name}/fields/{field}" and method == "PATCH":
        field_body(body, seeded, update=True)
    elif path == "/workflows/{name}" and method == "PUT" and isinstance(body.get("content"), str):
        body["content"] = workflow(case.path_parameters["name"], body["content"], seeded)
    elif path == "/collections/{name_or_id}/import" and method == "POST":
        _import_form(body, seeded)
    elif path in ("/collections", "/collections/{name_or_id}") and body.get("timezone") not in (None, "", *ZONES):
        body["timezone"] = pick(ZONES, body["timezone"])  # the coverage phase draws from the pattern alone


def _no_nul(value: Any) -> Any:
    """``value`` with NUL characters in its text replaced, lists and dicts in place: text holding
    one is refused anywhere (the document's introduction; schemathesis's coverage phase still
    draws them in arrays)."""
    if isinstance(value, str):
        return value.replace("\x00", "\u2400")
    if isinstance(value, list):
        value[:] = [_no_nul(v) for v in value]
    elif isinstance(value, dict):
        for k, v in value.items():
            value[k] = _no_nul(v)
    return value


def _import_form(body: dict[str, Any], seeded: Seeded) -> None:
    """An import of a small CSV of the seeded schema: the options that name things of the file
    (its format, encoding, sheet, delimiter, date form, key columns) are left to their defaults.
    No ``key``: rows matching more than one stored record are a 422 of domain/imports, a clash
    with stored data the fuzz leaves alone (docs/decisions.md)."""
    body["file"] = import_file(body.get("file"), seeded)
    for option in ("format", "encoding", "sheet", "delimiter", "date_format", "key", "parent_key"):
        body.pop(option, None)
    body["create_schema"] = False
    body["schema"] = seeded.schema
