"""The record filter tree (spec *Shared rules*; docs/filters.md) and ancestor sorting, on every
backend: each tree's SQL answer is compared with a plain-Python oracle over the same records.

The dataset (collection ``flab``, timezone America/New_York): site → sample → measurement, plus an
unrelated top-level ``instrument``. Sample's ``label`` shadows site's; measurement inherits
``label``, ``tags``, ``count``, ``depth`` from sample and ``region``, ``elevation`` from site.
Measurement ``at`` has its own timezone (Asia/Tokyo). One measurement is deleted. Instrument holds
the field types the chain does not: url, file, file_list, reference (to site) and reference_list (to
sample); in the tables ``"@S1"`` stands for record S1's id and ``"@f1"`` for uploaded file f1's sha256.

References lead back into the chain, for paths through references (``kit.home.region``): each
site's ``kits`` (a reference_list) and each sample's ``kit`` (a reference, which measurements
inherit) name instruments, added once the instruments exist (:data:`KITS`); instrument I5 is
deleted while a site and a sample still reference it.
"""
from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from starlette.testclient import TestClient

from benchbook.domain.records import paths
from benchbook.http.app import create_app
from benchbook.settings.config import Project
from tests.api.helpers import make_collection, make_record, make_schema
from tests.conftest import PG_URL, PG_WHY, Api, empty_tables

TZ = "America/New_York"
PARENT = {"site": None, "sample": "site", "measurement": "sample", "instrument": None}
FIELDS: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {
    "site": {"label": ("string", {}), "region": ("string", {}), "elevation": ("integer", {}),
             "opened": ("date", {}), "active": ("boolean", {}), "tags": ("tags", {})},
    "sample": {"label": ("string", {}), "depth": ("float", {}), "count": ("integer", {}),
               "taken_on": ("date", {}), "taken_at": ("datetime", {}), "ok": ("boolean", {}),
               "tags": ("tags", {})},
    "measurement": {"value": ("float", {}), "n": ("integer", {}),
                    "at": ("datetime", {"timezone": "Asia/Tokyo"}), "note": ("string", {}),
                    "flags": ("tags", {}), "passed": ("boolean", {})},
    "instrument": {"model": ("string", {}), "manual": ("url", {}), "photo": ("file", {}),
                   "scans": ("file_list", {}), "home": ("reference", {"schema": "site"}),
                   "used_on": ("reference_list", {"schema": "sample"})},
}
SITES = {
    "S1": {"label": "North Ridge", "region": "Alps", "elevation": 2100, "opened": "2020-05-01",
           "active": True, "tags": ["alpine", "cold"]},
    "S2": {"label": "south bay", "region": "Coast", "elevation": 5, "opened": "2021-01-15", "active": False,
           "tags": ["coastal"]},
    "S3": {"label": "Élan"},
    "S4": {"label": "Empty", "region": "Alps", "elevation": 40},
}
SAMPLES = {
    "A1": ("S1", {"label": "a-one", "depth": 1.5, "count": 3, "taken_on": "2024-05-03",
                  "taken_at": "2024-05-03T23:30:00", "ok": True, "tags": ["x", "y"]}),
    "A2": ("S1", {"label": "A_two%", "depth": 10.0, "count": 0, "taken_on": "2024-05-04",
                  "taken_at": "2024-05-04T00:30:00-04:00", "ok": False, "tags": ["y"]}),
    "A3": ("S2", {"label": "Alpha", "count": 7, "taken_on": "2023-12-31",
                  "taken_at": "2024-01-01T04:59:59.999999Z"}),
    "A4": ("S2", {"depth": 2.0, "ok": True, "tags": ["x"]}),
    "A5": ("S3", {"label": "north", "depth": 0.0, "count": 3, "taken_on": "2024-05-03",
                  "taken_at": "2024-05-03T00:00:00", "ok": False, "tags": ["z", "X"]}),
}
MEASUREMENTS = {
    "M1": ("A1", {"value": 1.0, "n": 1, "at": "2024-05-04T12:00:00", "note": "first try", "flags": ["good"],
                  "passed": True}),
    "M2": ("A1", {"value": 2.5, "n": 2, "at": "2024-05-04T03:00:00Z", "note": "Second",
                  "flags": ["bad", "good"], "passed": False}),
    "M3": ("A2", {"n": 3, "note": "100% done", "passed": True}),
    "M4": ("A3", {"value": -4.0, "at": "2024-01-01T00:00:00+09:00", "flags": ["bad"]}),
    "M5": ("A4", {"value": 1000.0, "n": 10, "at": "2024-06-01T09:00:00", "note": "tail_end",
                  "flags": ["good"], "passed": True}),
    "M6": ("A5", {"value": 0.0, "n": 0, "at": "2024-05-03T13:00:00", "note": "Élan check", "passed": False}),
    "M7": ("A5", {"value": 99.0, "note": "ghost", "flags": ["ghost"]}),  # deleted
}
INSTRUMENTS = {
    "I1": {"model": "North X", "manual": "https://example.org/Manuals/x.pdf", "photo": "@f1",
           "scans": ["@f1", "@f2"], "home": "@S1", "used_on": ["@A1", "@A2"]},
    "I2": {},
    "I3": {"model": "Probe", "manual": "ftp://files.example.net/probe_v2.txt", "photo": "@f2", "scans": ["@f3"],
           "home": "@S2", "used_on": ["@A2"]},
    "I4": {"model": "Spare", "home": "@S1"},
    "I5": {"model": "Gone", "home": "@S2", "used_on": ["@A3"]},  # deleted
}
KIT_FIELDS = {"site": ("kits", "reference_list"), "sample": ("kit", "reference")}
KITS = {"S1": ["@I1", "@I5"], "S2": ["@I3", "@I4"], "S4": ["@I5"],
        "A1": "@I1", "A2": "@I3", "A3": "@I2", "A4": "@I5"}
DELETED = ("M7", "I5")
FILES = {"f1": b"first file", "f2": b"second file", "f3": b"third file"}
EXPECTED_LIVE = len(SITES) + len(SAMPLES) + len(MEASUREMENTS) + len(INSTRUMENTS) - len(DELETED)
for _schema, (_name, _type) in KIT_FIELDS.items():
    FIELDS[_schema][_name] = (_type, {"schema": "instrument"})


# ------------------------------------------------------------------------------------ dataset

class Lab:
    """The dataset as the API lists it: ``records`` by id, ``key`` (S1, A1, …) → id and back."""

    def __init__(self, records: list[dict[str, Any]], keys: dict[str, str]) -> None:
        self.records = {r["id"]: r for r in records}
        self.id_of = keys
        self.key_of = {v: k for k, v in keys.items()}

    def keys(self, ids: set[str] | list[str]) -> list[str]:
        return sorted(self.key_of[i] for i in ids)

    def real(self, value: Any) -> Any:
        """``value`` with each ``"@key"`` (a record or file of the table) replaced by its id/sha256."""
        if isinstance(value, str) and value.startswith("@"):
            return self.id_of[value[1:]]
        if isinstance(value, list):
            return [self.real(v) for v in value]
        if isinstance(value, dict):
            return {k: self.real(v) for k, v in value.items()}
        return value


_BUILT: dict[int, tuple[str, Lab]] = {}


def _build(api: Any) -> Lab:
    empty_tables(api)
    for name in ("site", "sample", "measurement", "instrument"):
        fields = [{"name": n, "type": t, "restrictions": r} for n, (t, r) in FIELDS[name].items()
                  if n != KIT_FIELDS.get(name, ("",))[0]]
        make_schema(api, name, fields, **({"parent": PARENT[name]} if PARENT[name] else {}))
    make_schema(api, "orphan", [{"name": "x", "type": "string"}])
    make_collection(api, "flab", ["site", "sample", "measurement", "instrument"], timezone=TZ,
                    description="filter-tree dataset")
    keys: dict[str, str] = {}
    for key, content in FILES.items():
        keys[key] = api.ok("POST", "/files", 201, files={"file": (f"{key}.bin", content)})["sha256"]
    for key, data in SITES.items():
        keys[key] = make_record(api, "flab", "site", data)["id"]
    for key, (parent, data) in SAMPLES.items():
        keys[key] = make_record(api, "flab", "sample", data, parent=keys[parent])["id"]
    for key, (parent, data) in MEASUREMENTS.items():
        keys[key] = make_record(api, "flab", "measurement", data, parent=keys[parent])["id"]
    for key, data in INSTRUMENTS.items():
        real = {k: [keys[i[1:]] for i in v] if isinstance(v, list) else keys[v[1:]] if v.startswith("@") else v
                for k, v in data.items()}
        keys[key] = make_record(api, "flab", "instrument", real)["id"]
    for schema, (name, type_) in KIT_FIELDS.items():  # after the instruments: a cycle of references
        api.ok("POST", f"/schemas/{schema}/fields", 201,
               json={"name": name, "type": type_, "restrictions": {"schema": "instrument"}})
    for key, kit in KITS.items():
        name = KIT_FIELDS["site" if key[0] == "S" else "sample"][0]
        value = [keys[k[1:]] for k in kit] if isinstance(kit, list) else keys[kit[1:]]
        api.ok("PATCH", f"/records/{keys[key]}", json={"data": {name: value}})
    for key in DELETED:  # force: I5 is still referenced (kept pointing at a deleted record)
        api.ok("DELETE", f"/records/{keys.pop(key)}", 204, params={"force": "true"})
    page = api.ok("GET", "/collections/flab/records", params={"limit": 1000})
    assert page["total"] == EXPECTED_LIVE
    return Lab(page["items"], keys)


@pytest.fixture
def lab(backend_app: Any) -> tuple[Any, Lab]:
    """The dataset, built once per backend and rebuilt when another test emptied the tables."""
    api = backend_app
    cached = _BUILT.get(id(api))
    r = api.get("/collections/flab")
    if (cached is None or r.status_code != 200 or r.json().get("record_count") != EXPECTED_LIVE
            or api.get(f"/records/{cached[0]}").status_code != 200):
        lab_ = _build(api)
        _BUILT[id(api)] = (lab_.id_of["S1"], lab_)
    return api, _BUILT[id(api)][1]


# ------------------------------------------------------------------------------------- oracle

ASCII_FOLD = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def ancestors(schema: str) -> list[str]:
    out, current = [], PARENT[schema]
    while current:
        out.append(current)
        current = PARENT[current]
    return out


def resolve(schema: str, name: str) -> tuple[int, str] | None:
    for steps, owner in enumerate([schema, *ancestors(schema)]):
        if name in FIELDS[owner]:
            return steps, owner
    return None


def _instant(text: str, zone: str) -> datetime:
    d = datetime.fromisoformat(text)
    return (d if d.tzinfo else d.replace(tzinfo=ZoneInfo(zone))).astimezone(UTC)


def value_test(ftype: str, restr: dict[str, Any], op: str, value: Any, stored: Any) -> bool:
    if op == "is_null":
        return (stored is None) == (value is not False)
    if op == "ne":
        return not value_test(ftype, restr, "eq", value, stored)
    if stored is None:
        return False
    if ftype in ("tags", "file_list", "reference_list"):
        norm = (lambda v: v.strip().lower()) if ftype == "file_list" else str.strip
        return any(norm(v) in stored for v in (value if op == "in" else [value]))
    if ftype in ("integer", "float"):
        conv: Any = float
        have: Any = float(stored)
    elif ftype == "datetime":
        zone = restr.get("timezone") or TZ
        conv = lambda v: _instant(v, zone)
        have = _instant(stored, "UTC")
    elif ftype == "boolean":
        conv = lambda v: v if isinstance(v, bool) else {"yes": True, "no": False}[v]
        have = stored
    elif ftype in ("file", "url", "reference"):  # trimmed; a sha256 in any case
        conv = (lambda v: v.strip().lower()) if ftype == "file" else str.strip
        have = stored
    else:
        conv = lambda v: v
        have = stored
    if op == "in":
        return any(have == conv(v) for v in value)
    want = conv(value)
    if op == "eq":
        return bool(have == want)
    if op == "contains":
        return want.translate(ASCII_FOLD) in have.translate(ASCII_FOLD)
    return {"gt": have > want, "gte": have >= want, "lt": have < want, "lte": have <= want}[op]


def up(lab: Lab, rec: dict[str, Any] | None, steps: int) -> dict[str, Any] | None:
    for _ in range(steps):
        if rec is None or rec["parent_record_id"] is None:
            return None
        rec = lab.records.get(rec["parent_record_id"])
    return rec


def path_values(lab: Lab, rec: dict[str, Any] | None, schema: str,
                parts: list[str]) -> list[tuple[str, dict[str, Any], Any]]:
    """``(type, restrictions, stored value)`` of the path's last part for each record it ends on,
    starting from ``rec`` (of ``schema``, or None): through single references exactly one (the
    value None when a target is missing or deleted), through a reference_list one per live target."""
    found = resolve(schema, parts[0])
    if found is None:  # a target's own column (natural_name, id)
        return [("string", {}, rec.get(parts[0]) if rec else None)]
    steps, owner = found
    ftype, restr = FIELDS[owner][parts[0]]
    holder = up(lab, rec, steps)
    stored = holder["data"].get(parts[0]) if holder else None
    if len(parts) == 1:
        return [(ftype, restr, stored)]
    ids = stored if isinstance(stored, list) else [stored] if stored else []
    targets: list[Any] = [lab.records[i] for i in ids if i in lab.records]  # live ones only
    if ftype == "reference":
        targets = targets or [None]
    return [v for t in targets for v in path_values(lab, t, restr["schema"], parts[1:])]


def crosses_list(schema: str, parts: list[str]) -> bool:
    """Whether the path ``parts`` on ``schema`` follows a reference_list."""
    for part in parts[:-1]:
        _steps, owner = resolve(schema, part)  # type: ignore[misc]
        ftype, restr = FIELDS[owner][part]
        if ftype == "reference_list":
            return True
        schema = restr["schema"]
    return False


def leaf_matches(lab: Lab, rec: dict[str, Any], leaf: dict[str, Any]) -> bool:
    base = rec["schema_name"]
    target = leaf.get("schema") or base
    parts = leaf["field"].split(".")
    found = resolve(target, parts[0])
    if found is None:
        return False
    steps, owner = found

    def test(subject: dict[str, Any] | None) -> bool:
        """The leaf on ``subject``, the record holding the (first) field: through a reference_list
        ANY live target passing it; else the one value reached (None when there is none)."""
        tested = [value_test(ftype, restr, leaf["op"], leaf.get("value"), stored)
                  for ftype, restr, stored in path_values(lab, subject, owner, parts)]
        return any(tested) if crosses_list(owner, parts) else tested[0]

    if target == base or target in ancestors(base):
        distance = 0 if target == base else ancestors(base).index(target) + 1
        return test(up(lab, rec, distance + steps))
    if base in ancestors(target):
        depth = ancestors(target).index(base) + 1
        below = [d for d in lab.records.values()
                 if d["schema_name"] == target and (up(lab, d, depth) or {}).get("id") == rec["id"]]
        return any(test(up(lab, d, steps)) for d in below)
    return False


def matches(lab: Lab, rec: dict[str, Any], node: dict[str, Any]) -> bool:
    if "and" in node:
        return all(matches(lab, rec, n) for n in node["and"])
    if "or" in node:
        return any(matches(lab, rec, n) for n in node["or"])
    return leaf_matches(lab, rec, node)


def oracle(lab: Lab, schema: str | None, tree: dict[str, Any]) -> list[str]:
    return lab.keys([r["id"] for r in lab.records.values()
                     if (schema is None or r["schema_name"] == schema) and matches(lab, r, tree)])


def listed(api: Any, lab: Lab, schema: str | None, tree: Any) -> list[str]:
    params: dict[str, Any] = {"filter": tree if isinstance(tree, str) else json.dumps(tree), "limit": 1000}
    if schema:
        params["schema"] = schema
    return lab.keys([r["id"] for r in api.ok("GET", "/collections/flab/records", params=params)["items"]])


# ----------------------------------------------------------------------------- the table

def L(field: str, op: str, value: Any = ..., schema: str | None = None) -> dict[str, Any]:
    leaf: dict[str, Any] = {"field": field, "op": op}
    if value is not ...:
        leaf["value"] = value
    if schema:
        leaf["schema"] = schema
    return leaf


CASES: list[tuple[str, str | None, dict[str, Any], list[str]]] = [
    # own fields: numbers
    ("int-eq", "sample", L("count", "eq", 3), ["A1", "A5"]),
    ("int-ne-matches-missing", "sample", L("count", "ne", 3), ["A2", "A3", "A4"]),
    ("int-gt", "sample", L("count", "gt", 2), ["A1", "A3", "A5"]),
    ("int-gte", "sample", L("count", "gte", 3), ["A1", "A3", "A5"]),
    ("int-lt", "sample", L("count", "lt", 3), ["A2"]),
    ("int-lte-zero", "sample", L("count", "lte", 0), ["A2"]),
    ("int-in", "sample", L("count", "in", [0, 7]), ["A2", "A3"]),
    ("int-in-empty", "sample", L("count", "in", []), []),
    ("int-gt-fraction", "sample", L("count", "gt", 2.5), ["A1", "A3", "A5"]),
    ("int-numeric-string", "sample", L("count", "eq", "7"), ["A3"]),
    ("int-is-null", "sample", L("count", "is_null"), ["A4"]),
    ("int-is-null-false", "sample", L("count", "is_null", False), ["A1", "A2", "A3", "A5"]),
    ("float-gt", "sample", L("depth", "gt", 1.5), ["A4", "A2"]),
    ("float-lte", "sample", L("depth", "lte", 2), ["A1", "A4", "A5"]),
    ("float-eq-int-value", "sample", L("depth", "eq", 10), ["A2"]),
    ("float-ne", "sample", L("depth", "ne", 2.0), ["A1", "A2", "A3", "A5"]),
    ("float-negative", "measurement", L("value", "lt", 0), ["M4"]),
    # strings
    ("str-eq-case-sensitive", "sample", L("label", "eq", "alpha"), []),
    ("str-eq", "sample", L("label", "eq", "Alpha"), ["A3"]),
    ("str-contains-ci", "sample", L("label", "contains", "A"), ["A1", "A2", "A3"]),
    ("str-contains-underscore-literal", "sample", L("label", "contains", "a_"), ["A2"]),
    ("str-contains-percent-literal", "sample", L("label", "contains", "%"), ["A2"]),
    ("str-contains-upper", "sample", L("label", "contains", "NOR"), ["A5"]),
    ("str-contains-non-ascii-exact", "site", L("label", "contains", "Éla"), ["S3"]),
    ("str-contains-non-ascii-not-folded", "site", L("label", "contains", "éla"), []),
    ("str-gt-code-point", "sample", L("label", "gt", "B"), ["A1", "A5"]),
    ("str-lt", "sample", L("label", "lt", "a"), ["A2", "A3"]),
    ("str-in", "sample", L("label", "in", ["north", "Alpha", "nope"]), ["A3", "A5"]),
    ("str-ne", "sample", L("label", "ne", "north"), ["A1", "A2", "A3", "A4"]),
    # dates and datetimes (collection zone America/New_York; measurement.at in Asia/Tokyo)
    ("date-eq", "sample", L("taken_on", "eq", "2024-05-03"), ["A1", "A5"]),
    ("date-gt", "sample", L("taken_on", "gt", "2024-05-03"), ["A2"]),
    ("date-lte", "sample", L("taken_on", "lte", "2024-05-03"), ["A1", "A3", "A5"]),
    ("date-in", "sample", L("taken_on", "in", ["2023-12-31", "2024-05-04"]), ["A2", "A3"]),
    ("date-is-null", "sample", L("taken_on", "is_null", True), ["A4"]),
    ("dt-date-is-local-midnight", "sample", L("taken_at", "gte", "2024-05-04"), ["A2"]),
    ("dt-local-eq", "sample", L("taken_at", "eq", "2024-05-03T23:30:00"), ["A1"]),
    ("dt-utc-eq", "sample", L("taken_at", "eq", "2024-05-04T03:30:00Z"), ["A1"]),
    ("dt-offset-lt", "sample", L("taken_at", "lt", "2024-05-04T00:00:00-04:00"), ["A1", "A3", "A5"]),
    ("dt-microseconds", "sample", L("taken_at", "gt", "2023-12-31T23:59:59"), ["A1", "A2", "A3", "A5"]),
    ("dt-microseconds-exact", "sample", L("taken_at", "gt", "2023-12-31T23:59:59.999999"),
     ["A1", "A2", "A5"]),
    ("dt-field-zone", "measurement", L("at", "eq", "2024-05-04T12:00:00"), ["M1", "M2"]),  # same instant
    ("dt-field-zone-date", "measurement", L("at", "lt", "2024-05-04"), ["M4", "M6"]),
    # booleans
    ("bool-eq-true", "sample", L("ok", "eq", True), ["A1", "A4"]),
    ("bool-eq-false", "sample", L("ok", "eq", False), ["A2", "A5"]),
    ("bool-ne-true", "sample", L("ok", "ne", True), ["A2", "A3", "A5"]),
    ("bool-word", "sample", L("ok", "eq", "yes"), ["A1", "A4"]),
    ("bool-in", "sample", L("ok", "in", [True, False]), ["A1", "A2", "A4", "A5"]),
    ("bool-is-null", "sample", L("ok", "is_null"), ["A3"]),
    # tags (one item: membership)
    ("tags-eq-member", "sample", L("tags", "eq", "x"), ["A1", "A4"]),
    ("tags-contains", "sample", L("tags", "contains", "y"), ["A1", "A2"]),
    ("tags-case-sensitive", "sample", L("tags", "contains", "X"), ["A5"]),
    ("tags-ne", "sample", L("tags", "ne", "x"), ["A2", "A3", "A5"]),
    ("tags-in-any", "sample", L("tags", "in", ["z", "y"]), ["A1", "A2", "A5"]),
    ("tags-is-null", "sample", L("tags", "is_null"), ["A3"]),
    ("tags-trimmed", "measurement", L("flags", "contains", " bad "), ["M2", "M4"]),
    # urls (like strings, without gt…lte)
    ("url-eq", "instrument", L("manual", "eq", "https://example.org/Manuals/x.pdf"), ["I1"]),
    ("url-eq-case-sensitive", "instrument", L("manual", "eq", "https://example.org/manuals/x.pdf"), []),
    ("url-eq-trimmed", "instrument", L("manual", "eq", " ftp://files.example.net/probe_v2.txt "), ["I3"]),
    ("url-contains-ci", "instrument", L("manual", "contains", "MANUALS"), ["I1"]),
    ("url-contains-underscore-literal", "instrument", L("manual", "contains", "_v"), ["I3"]),
    ("url-ne", "instrument", L("manual", "ne", "https://example.org/Manuals/x.pdf"), ["I2", "I3", "I4"]),
    ("url-in", "instrument", L("manual", "in", ["ftp://files.example.net/probe_v2.txt", "https://no.example"]),
     ["I3"]),
    ("url-is-null", "instrument", L("manual", "is_null"), ["I2", "I4"]),
    # files (sha256)
    ("file-eq", "instrument", L("photo", "eq", "@f1"), ["I1"]),
    ("file-ne", "instrument", L("photo", "ne", "@f1"), ["I2", "I3", "I4"]),
    ("file-in", "instrument", L("photo", "in", ["@f2", "@f3"]), ["I3"]),
    ("file-is-null-false", "instrument", L("photo", "is_null", False), ["I1", "I3"]),
    # file lists (one item: membership)
    ("files-eq-member", "instrument", L("scans", "eq", "@f2"), ["I1"]),
    ("files-contains", "instrument", L("scans", "contains", "@f1"), ["I1"]),
    ("files-ne", "instrument", L("scans", "ne", "@f1"), ["I2", "I3", "I4"]),
    ("files-in-any", "instrument", L("scans", "in", ["@f3", "@f2"]), ["I1", "I3"]),
    ("files-is-null", "instrument", L("scans", "is_null"), ["I2", "I4"]),
    # references (record id)
    ("ref-eq", "instrument", L("home", "eq", "@S1"), ["I1", "I4"]),
    ("ref-ne", "instrument", L("home", "ne", "@S1"), ["I2", "I3"]),
    ("ref-in", "instrument", L("home", "in", ["@S2", "@S3"]), ["I3"]),
    ("ref-is-null", "instrument", L("home", "is_null"), ["I2"]),
    ("ref-unknown-id", "instrument", L("home", "eq", "no-such-record"), []),
    # reference lists (one item: membership)
    ("refs-eq-member", "instrument", L("used_on", "eq", "@A2"), ["I1", "I3"]),
    ("refs-contains", "instrument", L("used_on", "contains", "@A1"), ["I1"]),
    ("refs-ne", "instrument", L("used_on", "ne", "@A2"), ["I2", "I4"]),
    ("refs-in-any", "instrument", L("used_on", "in", ["@A1", "@A3"]), ["I1"]),
    ("refs-is-null-false", "instrument", L("used_on", "is_null", False), ["I1", "I3"]),
    ("link-types-and", "instrument", {"and": [L("home", "eq", "@S1"), L("scans", "is_null", False)]}, ["I1"]),
    # inherited fields
    ("inherited-grandparent", "sample", L("region", "eq", "Alps"), ["A1", "A2"]),
    ("inherited-is-null", "sample", L("region", "is_null"), ["A5"]),
    ("inherited-ne", "sample", L("region", "ne", "Alps"), ["A3", "A4", "A5"]),
    ("inherited-nearest-shadows", "measurement", L("label", "contains", "one"), ["M1", "M2"]),
    ("inherited-two-up", "measurement", L("elevation", "gt", 100), ["M1", "M2", "M3"]),
    ("inherited-tags-from-sample", "measurement", L("tags", "eq", "y"), ["M1", "M2", "M3"]),
    # ancestor leaves
    ("ancestor-own-not-shadowed", "measurement", L("label", "eq", "North Ridge", "site"), ["M1", "M2", "M3"]),
    ("ancestor-bool", "sample", L("active", "eq", True, "site"), ["A1", "A2"]),
    ("ancestor-grandparent-tags", "measurement", L("tags", "contains", "coastal", "site"), ["M4", "M5"]),
    ("ancestor-inherits", "measurement", L("region", "eq", "Coast", "sample"), ["M4", "M5"]),
    ("ancestor-ne-missing", "sample", L("elevation", "ne", 5, "site"), ["A1", "A2", "A5"]),
    ("ancestor-is-null", "measurement", L("depth", "is_null", True, "sample"), ["M4"]),
    ("self-schema-named", "sample", L("count", "eq", 3, "sample"), ["A1", "A5"]),
    # descendant leaves: ANY live descendant
    ("desc-grandchildren", "site", L("flags", "contains", "bad", "measurement"), ["S1", "S2"]),
    ("desc-children", "site", L("count", "gt", 5, "sample"), ["S2"]),
    ("desc-ne-any", "site", L("ok", "ne", True, "sample"), ["S1", "S2", "S3"]),
    ("desc-is-null", "site", L("note", "is_null", True, "measurement"), ["S2"]),
    ("desc-deleted-ignored", "site", L("note", "contains", "ghost", "measurement"), []),
    ("desc-bool", "sample", L("passed", "eq", True, "measurement"), ["A1", "A2", "A4"]),
    ("desc-inherited-from-base", "site", L("region", "eq", "Alps", "measurement"), ["S1"]),
    ("desc-inherited-between", "site", L("depth", "gt", 1, "measurement"), ["S1", "S2"]),
    ("desc-inherited-above-base", "sample", L("elevation", "gt", 100, "measurement"), ["A1", "A2"]),
    ("desc-datetime", "site", L("at", "gte", "2024-05-04T12:00:00+09:00", "measurement"), ["S1", "S2"]),
    # groups
    ("and", "sample", {"and": [L("count", "gte", 3), L("ok", "eq", False)]}, ["A5"]),
    ("or", "sample", {"or": [L("count", "eq", 0), L("tags", "eq", "z")]}, ["A2", "A5"]),
    ("nested", "sample", {"or": [{"and": [L("region", "eq", "Alps"), L("depth", "gt", 5)]},
                                 {"and": [L("ok", "is_null", False), {"or": [L("label", "is_null"),
                                                                             L("label", "eq", "north")]}]}]},
     ["A2", "A4", "A5"]),
    ("mixed-levels", "sample", {"and": [L("tags", "contains", "coastal", "site"),
                                        L("value", "lt", 0, "measurement")]}, ["A3"]),
    ("single-leaf-group", "measurement", {"and": [{"or": [{"and": [L("n", "gte", 3)]}]}]}, ["M3", "M5"]),
    # no query schema: each schema resolves the name itself; lacking it means no match
    ("all-own-and-inherited", None, L("label", "contains", "n"), ["A1", "A5", "M1", "M2", "M6", "S1", "S3"]),
    ("all-only-owners", None, L("count", "gte", 3), ["A1", "A3", "A5", "M1", "M2", "M4", "M6"]),
    ("all-is-null-needs-field", None, L("count", "is_null"), ["A4", "M5"]),
    ("all-ancestor-leaf", None, L("region", "eq", "Alps", "site"),
     ["A1", "A2", "M1", "M2", "M3", "S1", "S4"]),
    ("all-descendant-leaf", None, L("passed", "eq", False, "measurement"),
     ["A1", "A5", "M2", "M6", "S1", "S3"]),
    ("all-unrelated-schema", None, L("model", "contains", "north", "instrument"), ["I1"]),
    ("all-other-schema-only", None, L("model", "is_null"), ["I2"]),
    ("all-reference", None, L("home", "eq", "@S1"), ["I1", "I4"]),
    # paths through references (a deleted target reads as none)
    ("path-eq", "sample", L("kit.model", "eq", "Probe"), ["A2"]),
    ("path-ne-without-target", "sample", L("kit.model", "ne", "Probe"), ["A1", "A3", "A4", "A5"]),
    ("path-is-null", "sample", L("kit.model", "is_null"), ["A3", "A4", "A5"]),
    ("path-is-null-false", "sample", L("kit.model", "is_null", False), ["A1", "A2"]),
    ("path-contains", "sample", L("kit.model", "contains", "x"), ["A1"]),
    ("path-deleted-target", "sample", L("kit.model", "eq", "Gone"), []),
    ("path-in", "sample", L("kit.model", "in", ["Probe", "North X", "Gone"]), ["A1", "A2"]),
    ("path-gt-code-point", "sample", L("kit.model", "gt", "O"), ["A2"]),
    ("path-target-id", "sample", L("kit.id", "eq", "@I3"), ["A2"]),
    ("path-two-hops", "sample", L("kit.home.region", "eq", "Alps"), ["A1"]),
    ("paths-alone-in-groups", "sample", {"or": [{"and": [L("kit.model", "eq", "Probe")]},
                                                {"and": [L("kit.home.region", "eq", "Alps")]}]}, ["A1", "A2"]),
    ("path-two-hops-number", "sample", L("kit.home.elevation", "lt", 100), ["A2"]),
    ("path-two-hops-ne", "sample", L("kit.home.region", "ne", "Alps"), ["A2", "A3", "A4", "A5"]),
    ("path-two-hops-date", "instrument", L("used_on.taken_on", "gte", "2024-05-04"), ["I1", "I3"]),
    ("path-inherited-reference", "measurement", L("kit.model", "eq", "North X"), ["M1", "M2"]),
    ("path-inherited-on-target", "sample", L("kit.used_on.region", "eq", "Alps"), ["A1", "A2"]),
    ("path-reference", "instrument", L("home.elevation", "gte", 100), ["I1", "I4"]),
    ("path-list-any", "site", L("kits.model", "eq", "Spare"), ["S2"]),
    ("path-list-ne-any", "site", L("kits.model", "ne", "Probe"), ["S1", "S2"]),
    ("path-list-deleted-ignored", "site", L("kits.model", "eq", "Gone"), []),
    ("path-list-is-null-needs-a-target", "site", L("kits.home.region", "is_null"), []),
    ("path-list-then-reference", "site", L("kits.home.label", "eq", "North Ridge"), ["S1", "S2"]),
    ("path-reference-then-list", "sample", L("kit.used_on.count", "gt", 2), ["A1"]),
    ("path-list-tags", "instrument", L("used_on.tags", "eq", "y"), ["I1", "I3"]),
    ("path-inherited-list", "measurement", L("kits.model", "eq", "Probe"), ["M4", "M5"]),
    ("path-ancestor-leaf", "measurement", L("kits.model", "eq", "Probe", "site"), ["M4", "M5"]),
    ("path-descendant-leaf", "site", L("kit.model", "eq", "Probe", "sample"), ["S1"]),
    ("path-and-plain", "sample", {"and": [L("kit.home.region", "eq", "Coast"), L("count", "eq", 0)]}, ["A2"]),
    ("all-path", None, L("kit.model", "eq", "North X"), ["A1", "M1", "M2"]),
]


@pytest.mark.parametrize("schema, tree, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_filter_tree_matches_oracle(lab: Any, schema: str | None, tree: dict[str, Any],
                                    expected: list[str]) -> None:
    api, data = lab
    tree = data.real(tree)
    want = oracle(data, schema, tree)
    assert want == sorted(expected), "the table and the oracle disagree"
    assert listed(api, data, schema, tree) == want


PATH_CASES = [c for c in CASES if c[0].startswith(("path-", "all-path"))]


@pytest.mark.parametrize("sources, ids", [(0, paths.TARGET_IDS), (paths.SOURCE_IDS, 0)],
                         ids=["links looked up per record", "targets by subquery"])
def test_paths_answer_alike_whatever_the_plan(lab: Any, monkeypatch: pytest.MonkeyPatch, sources: int,
                                              ids: int) -> None:
    """The other ways of answering a path (paths.path_test) match the same records: each
    listed record's own links looked up (many referrers), the targets found by a subquery (many
    targets)."""
    api, data = lab
    monkeypatch.setattr(paths, "SOURCE_IDS", sources)
    monkeypatch.setattr(paths, "TARGET_IDS", ids)
    for name, schema, tree, expected in PATH_CASES:
        assert listed(api, data, schema, data.real(tree)) == sorted(expected), name


NON_C_COLLATIONS = [  # (what, the CREATE DATABASE options): the first this server can make is used
    ("ICU root locale und", "LOCALE_PROVIDER icu ICU_LOCALE 'und' LOCALE 'C.UTF-8'"),
    ("libc en_US.UTF-8", "LC_COLLATE 'en_US.UTF-8' LC_CTYPE 'en_US.UTF-8'"),
]


@pytest.fixture(scope="module")
def non_c_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Any, Lab]]:
    """The dataset on a PostgreSQL database of its own whose default collation is a natural
    language's (``"a" < "B"``), unlike the session's C.UTF-8 test database, where code point order
    and the database's order are one; dropped afterwards."""
    if not PG_URL:
        pytest.skip(f"PostgreSQL tests skipped: {PG_WHY}")
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    name = f"benchbook_test_collation_{uuid.uuid4().hex[:10]}"
    tried = []
    with admin.connect() as conn:
        for what, options in NON_C_COLLATIONS:
            try:
                conn.execute(text(f'CREATE DATABASE "{name}" TEMPLATE template0 {options}'))
                break
            except SQLAlchemyError as exc:
                tried.append(f"{what}: {' '.join(str(getattr(exc, 'orig', exc)).split())}")
        else:
            admin.dispose()
            pytest.skip(f"this PostgreSQL server makes no database with a non-C collation ({'; '.join(tried)})")
    url = make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    try:
        project = Project.init(tmp_path_factory.mktemp("project-collation"))
        project = Project(root=project.root, settings={**project.settings, "database": {"url": url}})
        app = create_app(project)
        with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
            api = Api(client, project, app)
            with app.services.db.engine.connect() as conn:
                assert conn.execute(text("SELECT 'a' < 'B'")).scalar() is True, "the collation is not a natural one"
            yield api, _build(api)
        app.services.db.engine.dispose()
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def _compares_text(schema: str | None, tree: dict[str, Any]) -> bool:
    """Whether ``tree`` is one leaf ordering values stored as text (strings, dates, datetimes)."""
    target = tree.get("schema") or schema
    found = resolve(target, tree["field"]) if target and "field" in tree else None
    return (found is not None and tree["op"] in ("gt", "gte", "lt", "lte")
            and FIELDS[found[1]][tree["field"]][0] not in ("integer", "float"))


TEXT_ORDER_CASES = [c for c in CASES if _compares_text(c[1], c[2])]


@pytest.mark.postgres
@pytest.mark.parametrize("schema, tree, expected", [c[1:] for c in TEXT_ORDER_CASES],
                         ids=[c[0] for c in TEXT_ORDER_CASES])
def test_text_is_compared_in_code_point_order_whatever_the_database_collation(
        non_c_lab: Any, schema: str | None, tree: dict[str, Any], expected: list[str]) -> None:
    api, data = non_c_lab
    assert listed(api, data, schema, data.real(tree)) == oracle(data, schema, data.real(tree)) == sorted(expected)


def test_a_sort_prefix_names_a_schema_before_a_field(api: Any) -> None:
    """``site.name`` sorts by the ancestor schema ``site`` even where the listed schema has a
    reference field ``site``; ``obs.site.name`` (the listed schema first) follows the reference.
    A filter leaf's dotted field is always a path (schemas go in ``schema``)."""
    make_schema(api, "site", [{"name": "name", "type": "string"}])
    make_schema(api, "place", [{"name": "name", "type": "string"}])
    make_schema(api, "obs", [{"name": "site", "type": "reference", "restrictions": {"schema": "place"}}],
                parent="site")
    make_collection(api, "amb", ["site", "place", "obs"])
    sites = [make_record(api, "amb", "site", {"name": n})["id"] for n in ("b", "a")]
    places = [make_record(api, "amb", "place", {"name": n})["id"] for n in ("z", "y")]
    obs = [make_record(api, "amb", "obs", {"site": places[1 - i]}, parent=sites[i])["id"] for i in range(2)]

    def listed_ids(**params: Any) -> list[str]:
        return [r["id"] for r in api.ok("GET", "/collections/amb/records", params={"schema": "obs", **params})["items"]]
    assert listed_ids(sort="site.name") == [obs[1], obs[0]]  # the ancestor site: a < b
    assert listed_ids(sort="obs.site.name") == [obs[0], obs[1]]  # the referenced place: y < z
    assert listed_ids(filter=json.dumps(L("site.name", "eq", "y"))) == [obs[0]]
    assert listed_ids(filter=json.dumps(L("name", "eq", "a", "site"))) == [obs[1]]


def test_inherited_fields_are_looked_up_at_most_32_schemas_up(api: Any) -> None:
    """Two chains of 34 schemas' records, one record a level in each: the bottom one inherits
    from the 32 above it (SQLite answered 500 from 12 up), not from the 33rd, and finds its own
    chain's value, never the other chain's (deep ancestors are found by joining the levels)."""
    for i in range(34):
        make_schema(api, f"level{i}", [{"name": f"f{i}", "type": "string"}],
                    **({"parent": f"level{i - 1}"} if i else {}))
    make_collection(api, "deep", [f"level{i}" for i in range(34)])
    bottoms = []
    for value in ("x", "y"):
        parent = None
        for i in range(34):
            parent = make_record(api, "deep", f"level{i}", {f"f{i}": value}, parent=parent)["id"]
        bottoms.append(parent)

    def found(up: int, op: str, value: str) -> Any:
        return api.get("/collections/deep/records",
                       params={"schema": "level33", "filter": json.dumps(L(f"f{33 - up}", op, value))})
    x, y = bottoms
    for up in (1, 9, 10, 12, 32):
        assert [sorted(i["id"] for i in found(up, op, value).json()["items"])
                for op, value in (("eq", "x"), ("eq", "y"), ("ne", "x"), ("ne", "z"))] == [[x], [y], [y], sorted([x, y])]
    r = found(33, "eq", "x")
    assert r.status_code == 404 and r.json()["errors"][0]["type"] == "unknown_field", r.text
    # a descendant's field inherited from far above the listed records: theirs, through the descendant
    middles = api.ok("GET", "/collections/deep/records", params={"schema": "level10", "filter": json.dumps(
        L("f0", "eq", "y", "level11"))})["items"]
    assert [m["id"] for m in middles] == [api.ok("GET", f"/records/{y}")["ancestors"][10]["id"]]


def test_filter_counts_export_and_delete_follow_the_filter(lab: Any) -> None:
    api, data = lab
    tree = {"or": [L("region", "eq", "Alps"), L("flags", "contains", "bad", "measurement")]}
    counts = api.ok("GET", "/collections/flab/record-counts", params={"filter": json.dumps(tree)})
    keys = oracle(data, None, tree)
    assert counts["counts"] == {s: sum(k[0] == s[0].upper() for k in keys) for s in PARENT}
    assert counts["counts"] == {"site": 3, "sample": 3, "measurement": 4, "instrument": 0}
    r = api.get("/collections/flab/export.csv",
                params={"filter": json.dumps(L("n", "gte", 3)), "schema": "measurement"})
    assert r.status_code == 200 and r.text.count("\n") == 3  # header + M3 + M5
    where = api.ok("GET", "/collections/flab/records",
                   params={"schema": "sample", "where": "ok=true",
                           "filter": json.dumps(L("count", "is_null", False))})
    assert data.keys([i["id"] for i in where["items"]]) == ["A1"]


def test_delete_by_filter(lab: Any) -> None:
    api, data = lab
    out = api.ok("DELETE", "/collections/flab/records",
                 params={"schema": "measurement", "filter": json.dumps(L("passed", "eq", False))})
    assert out["deleted"] == 2
    left = api.ok("GET", "/collections/flab/records", params={"schema": "measurement", "limit": 1000})
    assert data.keys([i["id"] for i in left["items"]]) == ["M1", "M3", "M4", "M5"]
    _BUILT.clear()  # changed the dataset: the next test rebuilds it


# ------------------------------------------------------------------------------------ sorting

def sort_oracle(data: Lab, schema: str, name: str, desc: bool) -> list[str]:
    prefix, dot, field = name.partition(".")
    target, distance = (prefix, ancestors(schema).index(prefix) + 1) if dot else (schema, 0)
    steps, _owner = resolve(target, field if dot else name) or (0, target)
    rows = [r for r in data.records.values() if r["schema_name"] == schema]

    def value(r: dict[str, Any]) -> Any:
        a = up(data, r, distance + steps)
        return a["data"].get(field if dot else name) if a else None

    rows.sort(key=lambda r: r["id"])
    present = sorted([r for r in rows if value(r) is not None], key=value, reverse=desc)  # stable: ties by id
    return [data.key_of[r["id"]] for r in present + [r for r in rows if value(r) is None]]


@pytest.mark.parametrize("schema, sort, desc", [
    ("measurement", "site.elevation", True),
    ("measurement", "site.elevation", False),
    ("measurement", "sample.depth", False),
    ("measurement", "sample.depth", True),
    ("measurement", "elevation", False),  # inherited, no prefix
    ("measurement", "sample.region", True),  # ancestor's inherited field
    ("sample", "site.opened", False),
    ("sample", "site.label", True),
])
def test_sort_by_ancestor_field(lab: Any, schema: str, sort: str, desc: bool) -> None:
    api, data = lab
    page = api.ok("GET", "/collections/flab/records",
                  params={"schema": schema, "sort": f"{sort}:{'desc' if desc else 'asc'}", "limit": 1000})
    assert [data.key_of[i["id"]] for i in page["items"]] == sort_oracle(data, schema, sort, desc)


def test_sort_by_ancestor_then_own_field(lab: Any) -> None:
    api, data = lab
    page = api.ok("GET", "/collections/flab/records",
                  params={"schema": "measurement", "sort": ["site.label:desc", "n:desc"], "limit": 1000})
    assert [data.key_of[i["id"]] for i in page["items"]][:4] == ["M6", "M5", "M4", "M3"]
    natural = api.ok("GET", "/collections/flab/records",
                     params={"schema": "sample", "sort": "site.natural_name", "limit": 1000})
    assert [data.key_of[i["id"]] for i in natural["items"]][-1] == "A5"  # Élan sorts after ASCII


def path_sort_oracle(data: Lab, schema: str, name: str, desc: bool) -> list[str]:
    """The records of ``schema`` sorted by the path ``name`` ([schema.]path: a first part naming
    an ancestor schema starts there), missing values last, ties by id."""
    parts = name.split(".")
    distance = 0
    if parts[0] in ancestors(schema):
        distance, parts = ancestors(schema).index(parts[0]) + 1, parts[1:]
    elif parts[0] == schema:
        parts = parts[1:]
    start = [*ancestors(schema)][distance - 1] if distance else schema
    rows = sorted((r for r in data.records.values() if r["schema_name"] == schema), key=lambda r: r["id"])

    def value(r: dict[str, Any]) -> Any:
        return path_values(data, up(data, r, distance), start, parts)[0][2]

    present = sorted([r for r in rows if value(r) is not None], key=value, reverse=desc)
    return [data.key_of[r["id"]] for r in present + [r for r in rows if value(r) is None]]


@pytest.mark.parametrize("schema, sort", [
    ("sample", "kit.model"),
    ("sample", "sample.kit.model"),  # the listed schema's name first: the same
    ("sample", "kit.home.elevation"),  # two hops
    ("sample", "kit.home.label"),
    ("measurement", "kit.model"),  # an inherited reference
    ("measurement", "sample.kit.home.opened"),  # an ancestor's reference
    ("measurement", "kit.home.region"),  # an inherited reference, then two hops
    ("instrument", "home.elevation"),
    ("instrument", "home.id"),
])
@pytest.mark.parametrize("desc", [False, True], ids=["asc", "desc"])
def test_sort_through_references(lab: Any, schema: str, sort: str, desc: bool) -> None:
    """A deleted target (A4's kit) reads as no value: such records sort last with the others."""
    api, data = lab
    page = api.ok("GET", "/collections/flab/records",
                  params={"schema": schema, "sort": f"{sort}:{'desc' if desc else 'asc'}", "limit": 1000})
    got = [data.key_of[i["id"]] for i in page["items"]]
    assert got == path_sort_oracle(data, schema, sort, desc)
    if schema == "sample" and sort == "kit.model":
        assert got == (["A2", "A1"] if desc else ["A1", "A2"]) + ["A3", "A4", "A5"]


def test_sort_through_a_reference_without_schema(lab: Any) -> None:
    """Without ``schema`` each schema whose records reach the path is sorted by it, the others last."""
    api, data = lab
    page = api.ok("GET", "/collections/flab/records", params={"sort": "kit.model:desc", "limit": 1000})
    got = [data.key_of[i["id"]] for i in page["items"]]
    assert [k for k in got if k in ("A1", "A2", "M1", "M2", "M3")] == ["A2", "M3", "A1", "M1", "M2"]


@pytest.mark.parametrize("schema, sort, loc, status", [
    ("measurement", "instrument.model", ["query", "sort", 0], 409),  # a schema, but no ancestor
    ("measurement", "nosuch.model", ["query", "sort", 0], 404),
    ("measurement", "site.nope", ["query", "sort", 0], 404),
    ("sample", "measurement.value", ["query", "sort", 0], 409),
    ("sample", "nope", ["query", "sort", 0], 404),
    ("sample", "nope:up", ["query", "sort", 0], 422),
    ("sample", "kit.nope", ["query", "sort", 0], 404),
    ("sample", "kit.home.nope", ["query", "sort", 0], 404),
    ("sample", "label.x", ["query", "sort", 0], 422),  # no reference to follow
    ("site", "kits.model", ["query", "sort", 0], 422),  # a reference_list: many values
    ("measurement", "kit..model", ["query", "sort", 0], 422),
])
def test_sort_refusals(lab: Any, schema: str, sort: str, loc: list[Any], status: int) -> None:
    """404 for a name that is nothing, 409 for a schema elsewhere in the tree, 422 for the form."""
    api, _ = lab
    r = api.get("/collections/flab/records", params={"schema": schema, "sort": sort})
    assert r.status_code == status, r.text
    assert r.json()["errors"][0]["loc"] == loc


# --------------------------------------------------------------------------------- refusals

F = ["query", "filter"]
REFUSALS: list[tuple[str, str | None, Any, list[Any], str]] = [
    ("not-json", "sample", "{nope", F, "JSON"),
    ("not-object", "sample", [], F, "group"),
    ("null", "sample", None, F, "group"),
    ("empty-object", "sample", {}, F, "group"),
    ("empty-group", "sample", {"and": []}, [*F, "and"], "non-empty"),
    ("group-not-list", "sample", {"or": L("count", "eq", 1)}, [*F, "or"], "non-empty"),
    ("two-keys", "sample", {"and": [L("count", "eq", 1)], "or": [L("count", "eq", 1)]}, F, "exactly one key"),
    ("group-extra-key", "sample", {"and": [L("count", "eq", 1)], "field": "x"}, F, "exactly one key"),
    ("nested-unknown-field", "sample",
     {"and": [L("count", "eq", 1), {"or": [L("cnt", "eq", 1)]}]}, [*F, "and", 1, "or", 0], "cnt"),
    ("unknown-field-all", None, {"and": [L("nope", "eq", 1)]}, [*F, "and", 0], "nope"),
    ("field-missing", "sample", {"op": "eq", "value": 1}, F, "field"),
    ("field-not-string", "sample", {"field": 3, "op": "eq", "value": 1}, F, "field"),
    ("unknown-op", "sample", {"or": [L("count", "like", 1)]}, [*F, "or", 0], "count"),
    ("op-missing", "sample", {"field": "count", "value": 1}, F, "op"),
    ("extra-leaf-key", "sample", {**L("count", "eq", 1), "negate": True}, F, "negate"),
    ("in-not-list", "sample", L("count", "in", 3), F, "list"),
    ("in-bad-item", "sample", L("count", "in", [1, "x"]), F, "value[1]"),
    ("wrong-type", "sample", L("count", "eq", "abc"), F, "count"),
    ("bool-for-number", "sample", L("count", "gt", True), F, "count"),
    ("bad-date", "sample", L("taken_on", "gt", "2024-13-01"), F, "taken_on"),
    ("bad-datetime", "sample", L("taken_at", "gt", "soon"), F, "taken_at"),
    ("bad-bool", "sample", L("ok", "eq", "perhaps"), F, "ok"),
    ("value-missing", "sample", L("count", "eq"), F, "blank"),
    ("blank-value", "sample", L("label", "eq", ""), F, "is_null"),
    ("list-for-eq", "sample", L("tags", "eq", ["x", "y"]), F, "in"),
    ("object-value", "sample", L("label", "eq", {"a": 1}), F, "label"),
    ("contains-on-int", "sample", L("count", "contains", 3), F, "does not apply"),
    ("gt-on-bool", "sample", L("ok", "gt", True), F, "does not apply"),
    ("gt-on-tags", "sample", L("tags", "gt", "x"), F, "does not apply"),
    ("gt-on-url", "instrument", L("manual", "gt", "https://a.example"), F, "does not apply"),
    ("contains-on-file", "instrument", L("photo", "contains", "ab"), F, "does not apply"),
    ("gt-on-reference", "instrument", L("home", "gt", "x"), F, "does not apply"),
    ("not-a-sha256", "instrument", L("photo", "eq", "not-a-sha"), F, "sha256"),
    ("not-a-sha256-item", "instrument", L("scans", "in", ["a" * 64, "zz"]), F, "value[1]"),
    ("reference-not-string", "instrument", L("home", "eq", 5), F, "home"),
    ("list-for-eq-references", "instrument", L("used_on", "eq", ["a", "b"]), F, "in"),
    ("is-null-not-bool", "sample", L("count", "is_null", "yes"), F, "is_null"),
    ("unknown-schema", "sample", L("count", "eq", 1, "nosuch"), F, "nosuch"),
    ("schema-not-in-collection", "sample", L("x", "eq", "a", "orphan"), F, "orphan"),
    ("schema-unrelated", "sample", {"and": [L("model", "eq", "a", "instrument")]}, [*F, "and", 0],
     "instrument"),
    ("field-unknown-on-ancestor", "sample", L("depth", "eq", 1, "site"), F, "depth"),
    ("schema-not-string", "sample", L("count", "eq", 1, ["site"]), F, "schema"),  # type: ignore[arg-type]
    ("nul-in-value", "sample", {"or": [L("label", "contains", "a\x00")]}, [*F, "or", 0], "NUL"),
    ("surrogate-in-item", "sample", L("tags", "in", ["x", "\ud800"]), F, "surrogate"),
    ("nul-in-schema", "sample", L("label", "eq", "a", "si\x00te"), F, "NUL"),
    ("huge-integer", "sample", '{"field": "count", "op": "eq", "value": ' + "9" * 5000 + "}", F, "digits"),
    ("path-after-non-reference", "sample", L("label.x", "eq", "a"), F, "not a reference"),
    ("path-unknown-field", "sample", L("kit.nope", "eq", "a"), F, "kit.nope"),
    ("path-unknown-two-hops", "sample", {"or": [L("kit.home.nope", "eq", "a")]}, [*F, "or", 0], "kit.home.nope"),
    ("path-unknown-first", "sample", L("nope.model", "eq", "a"), F, "nope.model"),
    ("path-empty-part", "sample", L("kit..model", "eq", "a"), F, "single dots"),
    ("path-op-not-for-type", "sample", L("kit.home.active", "gt", 1), F, "does not apply"),
    ("path-bad-value", "sample", L("kit.home.elevation", "eq", "high"), F, "elevation"),
    ("too-deep", "sample", json.loads('{"and": [' * 40 + json.dumps(L("count", "eq", 1)) + "]}" * 40),
     [*F, *["and", 0] * 33], "deeper"),
]


REFUSAL_STATUS = {"nested-unknown-field": 404, "unknown-field-all": 404, "unknown-schema": 404,
                  "field-unknown-on-ancestor": 404, "schema-not-in-collection": 409, "schema-unrelated": 409,
                  "path-unknown-field": 404, "path-unknown-two-hops": 404, "path-unknown-first": 404}


@pytest.mark.parametrize("schema, tree, loc, words", [c[1:] for c in REFUSALS], ids=[c[0] for c in REFUSALS])
def test_filter_refusals(lab: Any, schema: str | None, tree: Any, loc: list[Any], words: str,
                         request: pytest.FixtureRequest) -> None:
    """422 for a tree that is wrong in itself, 404 when it names a field or schema that does not
    exist, 409 for a schema of another collection or part of the tree (REFUSAL_STATUS)."""
    api, _ = lab
    params: dict[str, Any] = {"filter": tree if isinstance(tree, str) else json.dumps(tree)}
    if schema:
        params["schema"] = schema
    r = api.get("/collections/flab/records", params=params)
    assert r.status_code == REFUSAL_STATUS.get(request.node.callspec.id.split("-", 1)[1], 422), r.text
    body = r.json()
    assert isinstance(body["detail"], str) and words.lower() in body["detail"].lower(), body
    assert [e["loc"] for e in body["errors"]] == [loc]


def test_schema_id_in_leaf_and_named_leaf_in_message(lab: Any) -> None:
    api, data = lab
    site_id = api.ok("GET", "/schemas/site")["id"]
    assert listed(api, data, "sample", L("active", "eq", True, site_id)) == ["A1", "A2"]
    r = api.get("/collections/flab/records", params={"schema": "sample", "filter": json.dumps(
        {"and": [L("count", "eq", 1), {"or": [L("ok", "eq", True), L("ok", "gt", 1)]}]})})
    assert r.status_code == 422
    assert r.json()["detail"].startswith("filter and/1/or/1 (field 'ok')")


def test_file_sha256_matches_in_any_case(lab: Any) -> None:
    api, data = lab
    sha = data.id_of["f1"].upper()
    assert listed(api, data, "instrument", L("photo", "eq", f" {sha} ")) == ["I1"]
    assert listed(api, data, "instrument", L("scans", "contains", sha)) == ["I1"]


# ---------------------------------------------------------------------------- random trees

POOLS: dict[str, list[Any]] = {
    "integer": [0, 3, 7, 5, 40, 2100, -1, 2.5, 10],
    "float": [0, 1.5, 2.0, 10, -4, 1000, 2.5, 99],
    "string": ["North Ridge", "south bay", "Élan", "a-one", "A_two%", "Alpha", "north", "first try", "Second",
               "100% done", "a", "N", "ALP", "%", "_", "é", "Alps", "Coast", "o", "B"],
    "date": ["2024-05-03", "2024-05-04", "2023-12-31", "2020-05-01", "2021-01-15"],
    "datetime": ["2024-05-04", "2024-05-04T03:30:00Z", "2024-05-03T23:30:00", "2024-01-01T00:00:00+09:00",
                 "2024-05-04T12:00:00", "2023-12-31T23:59:59.999999", "2024-05-03"],
    "boolean": [True, False],
    "tags": ["x", "y", "z", "X", "good", "bad", "alpine", "coastal", "cold", "ghost"],
}
OPS = {"integer": ["eq", "ne", "gt", "gte", "lt", "lte", "in", "is_null"],
       "float": ["eq", "ne", "gt", "gte", "lt", "lte", "in", "is_null"],
       "string": ["eq", "ne", "gt", "gte", "lt", "lte", "contains", "in", "is_null"],
       "date": ["eq", "ne", "gt", "gte", "lt", "lte", "in", "is_null"],
       "datetime": ["eq", "ne", "gt", "gte", "lt", "lte", "in", "is_null"],
       "boolean": ["eq", "ne", "in", "is_null"],
       "tags": ["eq", "ne", "contains", "in", "is_null"]}
CHAIN = ["site", "sample", "measurement"]
PATHS = {"kit.model": "string", "kit.home.region": "string", "kit.home.elevation": "integer",
         "kit.used_on.count": "integer", "kit.used_on.region": "string", "kit.used_on.tags": "tags",
         "kits.model": "string", "kits.home.elevation": "integer", "kits.used_on.taken_on": "date"}
"""Paths through references the random trees draw, with their last field's type."""


def field_type(name: str) -> str:
    return PATHS.get(name) or next(FIELDS[s][name][0] for s in CHAIN if name in FIELDS[s])


@st.composite
def leaves(draw: Any, base: str | None) -> dict[str, Any]:
    target = draw(st.sampled_from([None, *CHAIN]))
    on = target or base
    names = sorted({n for s in ([on] if on else CHAIN) for a in [s, *ancestors(s)] for n in FIELDS[a]
                    if not FIELDS[a][n][0].startswith("reference")} |
                   {p for p in PATHS if any(resolve(s, p.split(".")[0]) for s in ([on] if on else CHAIN))})
    name = draw(st.sampled_from(names))
    type_ = field_type(name)
    op = draw(st.sampled_from(OPS[type_]))
    if op == "is_null":
        value: Any = draw(st.sampled_from([..., True, False]))
    elif op == "in":
        value = draw(st.lists(st.sampled_from(POOLS[type_]), max_size=3))
    else:
        value = draw(st.sampled_from(POOLS[type_]))
    return L(name, op, value, target)


def trees(base: str | None) -> Any:
    return st.recursive(leaves(base), lambda inner: st.dictionaries(
        st.sampled_from(["and", "or"]), st.lists(inner, min_size=1, max_size=3), min_size=1, max_size=1),
        max_leaves=6)


@pytest.mark.property  # README's command leaves it out; .ci/run runs it with the deep profile
def test_random_trees_match_oracle(lab: Any) -> None:
    api, data = lab

    @settings(max_examples=settings.default.max_examples * 6 // 10, deadline=None,  # profile: tests/conftest.py
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from([None, *CHAIN]).flatmap(lambda base: st.tuples(st.just(base), trees(base))))
    def check(case: tuple[str | None, dict[str, Any]]) -> None:
        base, tree = case
        assert listed(api, data, base, tree) == oracle(data, base, tree), json.dumps(tree)

    check()


JSON_SCALARS = st.one_of(st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=False),
                         st.text(max_size=8), st.sampled_from(["label", "count", "tags", "site", "measurement",
                                                               "eq", "in", "is_null", "contains", "gt", "2024-05-04"]))
NODE_KEYS = st.sampled_from(["and", "or", "field", "op", "value", "schema", "x"])


@pytest.mark.property  # README's command leaves it out; .ci/run runs it with the deep profile
def test_arbitrary_json_is_answered_or_refused_never_fails(lab: Any) -> None:
    api, _ = lab
    anything = st.recursive(JSON_SCALARS, lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(NODE_KEYS, inner, max_size=4)), max_leaves=10)

    @settings(max_examples=settings.default.max_examples * 8 // 10, deadline=None,  # profile: tests/conftest.py
              suppress_health_check=[HealthCheck.too_slow])
    @given(st.sampled_from([None, *CHAIN]), anything)
    def check(schema: str | None, tree: Any) -> None:
        params = {"filter": json.dumps(tree), **({"schema": schema} if schema else {})}
        r = api.get("/collections/flab/records", params=params)
        # 422 for a tree wrong in itself, 404 for a field or schema that is nothing, 409 for a schema
        # elsewhere in the tree (test_filter_refusals above); every refusal points at the filter
        assert r.status_code in (200, 404, 409, 422), (r.status_code, r.text)
        if r.status_code != 200:
            assert r.json()["errors"][0]["loc"][:2] == ["query", "filter"], r.text

    check()


EXACT_REFUSALS: list[tuple[str, Any, list[Any], str, str, str]] = [
    # (id, tree, loc, what the detail says after "filter ", the error entry's msg, its type)
    ("is-null-not-bool", L("count", "is_null", "yes"), F,
     "root (field 'count'): is_null takes true, false or no value", "count: is_null takes true, false or no value",
     "bool_type"),
    ("in-not-list", {"or": [L("count", "in", 3)]}, [*F, "or", 0],
     "or/0 (field 'count'): in needs a list of values", "count: in needs a list of values", "list_type"),
    ("eq-list", {"and": [L("count", "eq", 1), L("count", "eq", [1, 2])]}, [*F, "and", 1],
     "and/1 (field 'count'): eq takes one value (in takes a list: any of its items)",
     "count: eq takes one value (in takes a list: any of its items)", "value_type"),
    ("gt-not-a-number", L("count", "gt", "many"), F,
     "root (field 'count'): value 'many' does not suit integer field 'count': 'many' is not a number",
     "count: value 'many' does not suit integer field 'count': 'many' is not a number", "float_parsing"),
    ("blank-value", L("count", "eq", "  "), F,
     "root (field 'count'): value is missing or blank (use is_null to find records without a value)",
     "count: value is missing or blank (use is_null to find records without a value)", "missing"),
    ("blank-item", L("count", "in", [1, ""]), F,
     "root (field 'count'): value[1] is missing or blank (use is_null to find records without a value)",
     "count: value[1] is missing or blank (use is_null to find records without a value)", "missing"),
    ("unknown-op", L("count", "near", 1), F,
     "root (field 'count'): unknown op 'near' (use eq, ne, gt, gte, lt, lte, contains, in, is_null)",
     "count: unknown op 'near' (use eq, ne, gt, gte, lt, lte, contains, in, is_null)", "unknown_op"),
    ("unknown-key", {**L("count", "eq", 1), "colour": "red"}, F,
     "root (field 'count'): unknown keys ['colour'] (a leaf has field, op, value, schema)",
     "count: unknown keys ['colour'] (a leaf has field, op, value, schema)", "filter"),
    ("no-field", {"op": "eq", "value": 1}, F, "root: a leaf needs field (a field name)",
     "a leaf needs field (a field name)", "filter"),
    ("no-field-and-unknown-key", {"op": "eq", "colour": 1}, F,
     "root: a leaf needs field (a field name); unknown keys ['colour']",
     "a leaf needs field (a field name); unknown keys ['colour']", "filter"),
    ("nul", L("label", "eq", "a\x00b"), F,
     "root (field 'label'): text with a NUL character or a lone surrogate cannot be stored, so cannot match",
     "label: text with a NUL character or a lone surrogate cannot be stored, so cannot match", "string_unicode"),
    ("empty-group", {"and": []}, [*F, "and"], "and: and needs a non-empty list of nodes",
     "and needs a non-empty list of nodes", "filter"),
    ("nested-empty-group", {"and": [{"or": []}]}, [*F, "and", 0, "or"],
     "and/0/or: or needs a non-empty list of nodes", "or needs a non-empty list of nodes", "filter"),
    ("not-a-node", {"and": [5]}, [*F, "and", 0],
     'and/0: each node must be a group ({"and": [...]} or {"or": [...]}) or a leaf object ({field, op, value, schema})',
     'each node must be a group ({"and": [...]} or {"or": [...]}) or a leaf object ({field, op, value, schema})',
     "filter"),
    ("two-keyed-group", {"and": [L("count", "eq", 1)], "or": [L("count", "eq", 2)]}, F,
     "root: a group has exactly one key, and or or (got ['and', 'or'])",
     "a group has exactly one key, and or or (got ['and', 'or'])", "filter"),
    ("op-not-for-type", L("tags", "gt", "x"), F,
     "root (field 'tags'): op 'gt' does not apply to tags fields (use eq, ne, contains, in, is_null)",
     "tags: op 'gt' does not apply to tags fields (use eq, ne, contains, in, is_null)", "op"),
    ("eq-object", L("count", "eq", {"a": 1}), F, "root (field 'count'): eq takes one value",
     "count: eq takes one value", "value_type"),
    ("nul-in-a-key", L("label", "eq", {"a\x00": 1}), F,
     "root (field 'label'): text with a NUL character or a lone surrogate cannot be stored, so cannot match",
     "label: text with a NUL character or a lone surrogate cannot be stored, so cannot match", "string_unicode"),
    ("schema-not-a-name", L("count", "eq", 1, ["site"]), F, "root (field 'count'): schema must be a schema name",
     "count: schema must be a schema name", "filter"),
    ("unknown-schema", L("count", "eq", 1, "nosuch"), F, "root (field 'count'): unknown schema 'nosuch'",
     "count: unknown schema 'nosuch'", "unknown_schema"),
    ("schema-not-in-collection", L("x", "eq", "a", "orphan"), F,
     "root (field 'x'): schema 'orphan' is not one of collection 'flab''s",
     "x: schema 'orphan' is not one of collection 'flab''s", "schema"),
    ("schema-unrelated", {"and": [L("model", "eq", "a", "instrument")]}, [*F, "and", 0],
     "and/0 (field 'model'): schema 'instrument' is neither 'sample' nor one of its ancestor or descendant schemas",
     "model: schema 'instrument' is neither 'sample' nor one of its ancestor or descendant schemas", "schema"),
    ("field-unknown-on-ancestor", L("depth", "eq", 1, "site"), F,
     "root (field 'depth'): unknown field 'depth' of schema 'site' (own or inherited)",
     "depth: unknown field 'depth' of schema 'site' (own or inherited)", "unknown_field"),
]
EXACT_STATUS = {"unknown-schema": 404, "field-unknown-on-ancestor": 404, "schema-not-in-collection": 409,
                "schema-unrelated": 409}
"""The refusals of :data:`EXACT_REFUSALS` that are not 422: a name that is nothing is 404, a
schema elsewhere 409."""


@pytest.mark.parametrize("tree, loc, detail, msg, type_", [c[1:] for c in EXACT_REFUSALS],
                         ids=[c[0] for c in EXACT_REFUSALS])
def test_a_refusal_says_exactly_what_is_wrong_and_where(lab: Any, tree: Any, loc: list[Any], detail: str, msg: str,
                                                        type_: str, request: pytest.FixtureRequest) -> None:
    """The refusal's words as a person reads them: where in the tree (``root`` or the path of
    groups and positions), the field, what is wrong; the error entry's ``msg``, ``type`` and
    ``input`` (the node itself) as a client reads them; its status (:data:`EXACT_STATUS`)."""
    api, _ = lab
    r = api.get("/collections/flab/records", params={"schema": "sample", "filter": json.dumps(tree)})
    assert r.status_code == EXACT_STATUS.get(request.node.callspec.id.split("-", 1)[1], 422), r.text
    body = r.json()
    node = tree
    for step in loc[2:]:
        node = node[step]
    assert body["detail"] == f"filter {detail}"
    assert [(e["loc"], e["msg"], e["type"], e["input"]) for e in body["errors"]] == [(loc, msg, type_, node)]


def test_text_is_matched_as_typed_while_tags_and_urls_are_matched_trimmed(api: Any) -> None:
    """A string field keeps the spaces a person typed, so a filter matches them exactly; tags
    and URLs are stored trimmed, so a filter's value for them is trimmed too."""
    api.ok("POST", "/schemas", 201, json={"name": "note", "fields": [
        {"name": "text", "type": "string"}, {"name": "tags", "type": "tags"}, {"name": "link", "type": "url"}]})
    api.ok("POST", "/collections", 201, json={"name": "notes", "schemas": ["note"]})
    made = api.ok("POST", "/collections/notes/records", 201, json={"schema_name": "note", "data": {
        "text": " padded ", "tags": ["x"], "link": "https://a.example/"}})

    def found(leaf: dict[str, Any]) -> list[str]:
        page = api.ok("GET", "/collections/notes/records", params={"filter": json.dumps(leaf)})
        return [r["id"] for r in page["items"]]

    assert found(L("text", "eq", " padded ")) == [made["id"]]
    assert found(L("text", "eq", "padded")) == []
    assert found(L("tags", "contains", " x ")) == [made["id"]]
    assert found(L("link", "eq", "  https://a.example/ ")) == [made["id"]]
    # in: any of the values listed, so an empty list matches nothing, on a plain field and on a list
    assert found(L("text", "in", [" padded "])) == [made["id"]]
    assert found(L("text", "in", [])) == found(L("tags", "in", [])) == []


def test_across_a_collection_a_path_one_schema_cannot_follow_still_matches_where_another_can(api: Any) -> None:
    """Without ``schema`` a leaf is tried on every schema of the collection: ``owner.name`` is no
    path on ``alpha`` (its ``owner`` is text), so alpha's records do not match it, while it
    follows ``beta``'s reference; only where no schema can take it is the refusal the path's."""
    make_schema(api, "person", [{"name": "name", "type": "string"}])
    make_schema(api, "alpha", [{"name": "owner", "type": "string"}])
    make_schema(api, "beta", [{"name": "owner", "type": "reference", "restrictions": {"schema": "person"}}])
    make_collection(api, "mixed", ["person", "alpha", "beta"])
    ada = make_record(api, "mixed", "person", {"name": "Ada"})["id"]
    make_record(api, "mixed", "alpha", {"owner": "Ada"})
    owned = make_record(api, "mixed", "beta", {"owner": ada})["id"]

    def get(tree: dict[str, Any], **params: Any) -> Any:
        return api.get("/collections/mixed/records", params={"filter": json.dumps(tree), **params})
    assert [r["id"] for r in get(L("owner.name", "eq", "Ada")).json()["items"]] == [owned]
    r = get(L("owner.name", "eq", "Ada"), schema="alpha")
    assert (r.status_code, r.json()["errors"][0]["type"]) == (422, "path"), r.text
    assert r.json()["detail"] == ("filter root (field 'owner.name'): 'owner' is a string field, not a reference: "
                                  "nothing to follow in 'owner.name'")
    r = get(L("nope", "eq", 1))
    everywhere = "filter root (field 'nope'): unknown field 'nope' of any schema of collection 'mixed' (own or inherited)"
    assert (r.status_code, r.json()["detail"]) == (404, everywhere), r.text
    r = get(L("nope", "eq", 1), schema="beta")
    on_beta = "filter root (field 'nope'): unknown field 'nope' of schema 'beta' (own or inherited)"
    assert (r.status_code, r.json()["detail"]) == (404, on_beta), r.text


def test_a_filter_that_is_not_json_is_refused_with_its_first_200_characters(api: Any) -> None:
    api.ok("POST", "/schemas", 201, json={"name": "note", "fields": [{"name": "text", "type": "string"}]})
    api.ok("POST", "/collections", 201, json={"name": "notes", "schemas": ["note"]})
    broken = '{"field": "text", "op": "eq", "value": "' + "x" * 300
    deep = "[" * 5000

    def refused(text: str) -> tuple[int, str, list[tuple[Any, ...]]]:
        r = api.get("/collections/notes/records", params={"filter": text})
        body = r.json()
        return r.status_code, body["detail"], [(e["loc"], e["msg"], e["type"], e["input"]) for e in body["errors"]]
    msg = "invalid JSON: Unterminated string starting at"
    assert refused(broken) == (422, f"filter: {msg}", [(["query", "filter"], msg, "json_invalid", broken[:200])])
    assert refused(deep) == (422, "filter: nested too deep",
                             [(["query", "filter"], "nested too deep", "json_invalid", deep[:200])])
