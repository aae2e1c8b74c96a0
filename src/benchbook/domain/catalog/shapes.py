"""What the API shows of the catalog: a field (OpenAPI ``FieldResponse``), a schema with its
fields (``SchemaResponse``), a collection (``DatasetResponse``: the document's schemas call a
collection a *dataset*), a saved view (``ViewResponse``), what restoring a deleted field, schema
or collection would do (``RestorePlanResponse``) and a field type (``FieldTypeResponse``), as
types: :mod:`.fields`, :mod:`.schemas`, :mod:`.collections` and :mod:`.views` build them, the
handlers answer them, and ``tests/test_response_shapes.py`` holds them to the document's keys.
Times are ISO 8601 text.

The builders write every key, the optional ones (``NotRequired``, as the document's
``required`` leaves them) too.

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import Any, NotRequired, TypedDict


class FieldResponse(TypedDict):
    """OpenAPI ``FieldResponse``: a field of a schema: its stable ``id`` (records' values are
    keyed by it), ``type`` (a field type's name), ``restrictions`` (``{}`` for none), ``default``
    (any JSON value, None for none), ``position`` in the schema's field order and ``deleted_at``
    (None while live)."""

    id: str
    name: str
    label: NotRequired[str | None]
    type: str
    required: bool
    restrictions: NotRequired[dict[str, Any]]
    default: NotRequired[Any]
    position: NotRequired[int]
    deleted_at: NotRequired[str | None]


class SchemaResponse(TypedDict):
    """OpenAPI ``SchemaResponse``: a schema with its live ``fields`` in order, its
    ``unique_keys`` as lists of field names, its ``parent`` schema by name (None for a top-level
    schema) and ``deleted_at`` (None while live)."""

    id: str
    name: str
    label: NotRequired[str | None]
    description: NotRequired[str | None]
    parent: NotRequired[str | None]
    display_template: NotRequired[str | None]
    fields: list[FieldResponse]
    unique_keys: list[list[str]]
    deleted_at: NotRequired[str | None]
    created_at: NotRequired[str]
    updated_at: NotRequired[str]


class CollectionResponse(TypedDict):
    """OpenAPI ``DatasetResponse``: a collection: ``record_count`` its live records (for a deleted
    collection, its deleted records that would come back with it), ``schemas`` the names of the
    live schemas it is for, in order, ``scope`` ``local`` or ``global``, ``timezone`` an IANA name
    (None: UTC) and ``deleted_at`` (None while live)."""

    id: str
    name: str
    description: str | None
    record_count: int
    schemas: NotRequired[list[str]]
    scope: NotRequired[str]
    timezone: NotRequired[str | None]
    deleted_at: NotRequired[str | None]
    created_at: NotRequired[str]
    updated_at: NotRequired[str]


class ViewResponse(TypedDict):
    """OpenAPI ``ViewResponse``: a saved view of a schema's records table: ``schema`` and
    ``collection`` by name (``collection`` None: every collection holding the schema), the
    ``columns`` shown, the record ``filter`` tree (None for none), ``sort`` keys, ``search`` text
    and ``page_size`` (None: the table's), ``deleted_at`` None while live.

    ``schema`` is typed ``str | None`` though the document's is a non-nullable string: the builder
    writes None when it finds no schema row for the view (the database deletes a schema's views
    with it, so the API should never show it)."""

    id: str
    name: str
    label: NotRequired[str | None]
    description: NotRequired[str | None]
    schema: str | None
    collection: NotRequired[str | None]
    columns: list[str]
    filter: NotRequired[dict[str, Any] | None]
    sort: list[str]
    search: NotRequired[str | None]
    page_size: NotRequired[int | None]
    created_at: str
    updated_at: str
    deleted_at: NotRequired[str | None]


class RestoreBlocker(TypedDict):
    """``RestorePlanResponse.blocked_by``: the deleted thing to restore first (``kind``
    ``collection``, ``schema`` or ``record``), by id and name. The builders write all three keys;
    the document requires none."""

    kind: NotRequired[str]
    id: NotRequired[str]
    name: NotRequired[str | None]


class RestorePlanResponse(TypedDict):
    """OpenAPI ``RestorePlanResponse``: what restoring a deleted field, schema or collection
    would do: ``records`` the records that come back with it, ``can_restore`` and, when it
    cannot, why (``blocked``, in plain words) and what to restore first (``blocked_by``);
    ``deleted_at`` ISO 8601 text, None for a live thing. The catalog's plans write every key but
    ``referrers`` and ``cleared_references`` (a record's plan's own)."""

    kind: str
    id: str
    name: str | None
    records: int
    can_restore: bool
    blocked: NotRequired[str | None]
    blocked_by: NotRequired[RestoreBlocker | None]
    collection: NotRequired[str | None]
    collection_id: NotRequired[str | None]
    conflict: NotRequired[dict[str, Any] | None]
    deleted_at: NotRequired[str | None]
    parents_needed: NotRequired[int | None]
    schema_name: NotRequired[str | None]
    referrers: NotRequired[dict[str, int] | None]
    cleared_references: NotRequired[int | None]


class FieldTypeResponse(TypedDict):
    """OpenAPI ``FieldTypeResponse``: a field type: ``restrictions`` the restriction keys it
    accepts, ``operators`` the filter operators that apply to it."""

    name: str
    label: str
    description: str
    restrictions: list[str]
    operators: list[str]
