"""Small builders shared by the API tests."""
from __future__ import annotations

from typing import Any

SAMPLE_FIELDS = [
    {"name": "site", "type": "string", "required": True},
    {"name": "depth_m", "type": "float", "restrictions": {"min": 0}},
    {"name": "count", "type": "integer"},
    {"name": "taken_at", "type": "datetime"},
    {"name": "taken_on", "type": "date"},
    {"name": "tags", "type": "tags"},
]


def make_schema(api: Any, name: str, fields: list[dict[str, Any]] | None = None, **extra: Any) -> dict[str, Any]:
    return api.ok("POST", "/schemas", 201, json={"name": name, "fields": fields or [], **extra})


def make_collection(api: Any, name: str, schemas: list[str], **extra: Any) -> dict[str, Any]:
    return api.ok("POST", "/collections", 201, json={"name": name, "schemas": schemas, **extra})


def make_record(api: Any, collection: str, schema: str, data: dict[str, Any] | None = None,
                parent: str | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"schema_name": schema, "data": data or {}}
    if parent:
        body["parent_record_id"] = parent
    return api.ok("POST", f"/collections/{collection}/records", 201, json=body)


def study_tree(api: Any) -> dict[str, Any]:
    """study → sample → measurement in collection ``lab``."""
    make_schema(api, "study", [{"name": "title", "type": "string", "required": True}],
                display_template="{title}")
    make_schema(api, "sample", SAMPLE_FIELDS, parent="study", display_template="{site}-{taken_on:YYYY-MM}")
    make_schema(api, "measurement", [{"name": "value", "type": "float"}], parent="sample")
    make_collection(api, "lab", ["study", "sample", "measurement"])
    study = make_record(api, "lab", "study", {"title": "Lake survey"})
    sample = make_record(api, "lab", "sample", {"site": "North", "depth_m": 2.5, "taken_on": "2024-05-03"},
                         parent=study["id"])
    return {"study": study, "sample": sample}
