"""What the API shows of a record (OpenAPI ``RecordResponse`` and the objects inside it), of
a page of records (``PaginatedRecordResponse``) and of a page of record deletions
(``PaginatedDeletedRecordsResponse``, ``DeletedRecordsResponse``, ``DeletedRecordExample``:
built by :mod:`.deleted`), as types: :mod:`.shaping` builds them, the handlers answer them, and
``tests/test_response_shapes.py`` holds them to the document's keys.

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import Any, NotRequired, TypedDict


class RecordRef(TypedDict):
    """OpenAPI ``RecordRef``: a record named by its id, schema and natural name."""

    id: str
    schema_name: str
    natural_name: str | None


class DeletedFieldValue(TypedDict):
    """OpenAPI ``DeletedFieldValue``: a value the record holds for a field deleted from its schema."""

    field_id: str
    name: str
    label: NotRequired[str | None]
    type: str
    value: NotRequired[Any]


class FileLabel(TypedDict):
    """One value of ``RecordResponse.file_labels``: a stored file's name, size and type."""

    filename: str
    size: int
    content_type: str | None


class RecordResponse(TypedDict):
    """OpenAPI ``RecordResponse``."""

    id: str
    dataset_id: str
    schema_name: str
    parent_record_id: str | None
    data: dict[str, Any]
    natural_name: str | None
    created_at: str
    updated_at: str
    collection: NotRequired[str | None]
    ancestors: NotRequired[list[RecordRef] | None]
    child_counts: NotRequired[dict[str, int] | None]
    deleted_above: NotRequired[list[RecordRef] | None]
    deleted_at: NotRequired[str | None]
    deleted_fields: NotRequired[list[DeletedFieldValue] | None]
    derived: NotRequired[dict[str, Any] | None]
    reference_collections: NotRequired[dict[str, str] | None]
    reference_labels: NotRequired[dict[str, str | None] | None]
    file_labels: NotRequired[dict[str, FileLabel] | None]


class PaginatedRecordResponse(TypedDict):
    """OpenAPI ``PaginatedRecordResponse``: one page of records, ``limit`` from ``offset``;
    ``total`` matches in all, a lower bound when ``total_exact`` is false (the count ran out of
    its budget)."""

    items: list[RecordResponse]
    total: int
    total_exact: bool
    offset: int
    limit: int


class DeletedRecordExample(TypedDict):
    """OpenAPI ``DeletedRecordExample``: one record of a deletion, named."""

    id: str
    natural_name: str | None
    schema_name: str
    collection: str


class DeletedRecordsResponse(TypedDict):
    """OpenAPI ``DeletedRecordsResponse``: one record deletion still in effect: its ``op``, when
    (``deleted_at``, ISO 8601 text), how many of its records are still deleted (``count``), their
    collections' and schemas' names (sorted), up to 5 ``examples``, its history batch
    (``batch_id``, None for a record deleted on its own) and its record when ``count`` is 1
    (``record_id``, else None)."""

    op: str
    deleted_at: str
    count: int
    collections: list[str]
    schemas: list[str]
    examples: list[DeletedRecordExample]
    batch_id: str | None
    record_id: str | None


class PaginatedDeletedRecordsResponse(TypedDict):
    """OpenAPI ``PaginatedDeletedRecordsResponse``: one page of record deletions, ``limit`` from
    ``offset``, of ``total``."""

    items: list[DeletedRecordsResponse]
    total: int
    offset: int
    limit: int


class RecordCountsResponse(TypedDict):
    """OpenAPI ``RecordCountsResponse``: live records matching a query, by schema name
    (``counts``, every schema of the collection, 0 included), and their ``total``."""

    counts: dict[str, int]
    total: int
