"""What the API shows of a history entry (OpenAPI ``AuditLogResponse`` and its ``AuditChange``
rows), of a page of them (``PaginatedAuditLogResponse``), of a batch (``AuditBatchResponse``) and
of the history's events (``AuditEventResponse``, ``AuditEventPart``,
``PaginatedAuditEventResponse``), as types: :mod:`.entries` and :mod:`.events` build them, the
handlers answer them, and ``tests/test_response_shapes.py`` holds them to the document's keys.

No ``from __future__ import annotations`` here: on Python 3.11 a TypedDict whose annotations
are strings counts every ``NotRequired`` key as required (``__required_keys__``)."""
from typing import Any, NotRequired, TypedDict


class AuditChange(TypedDict):
    """OpenAPI ``AuditChange``: one field's value before and after a change."""

    field: str
    label: NotRequired[str | None]
    dtype: NotRequired[str | None]
    before: NotRequired[Any]
    after: NotRequired[Any]
    deleted: NotRequired[bool | None]


class AuditLogResponse(TypedDict):
    """OpenAPI ``AuditLogResponse``: one history entry."""

    id: str
    action: str
    entity_type: str
    entity_id: str
    timestamp: str
    actor: NotRequired[str | None]
    changes: NotRequired[list[AuditChange]]
    device: NotRequired[str | None]
    new_data: NotRequired[dict[str, Any] | None]
    old_data: NotRequired[dict[str, Any] | None]
    now: NotRequired[dict[str, Any] | None]
    value_labels: NotRequired[dict[str, str]]
    sync: NotRequired[list[dict[str, Any]]]
    batch_id: NotRequired[str | None]


class AuditBatchResponse(TypedDict):
    """OpenAPI ``AuditBatchResponse``: a history batch. ``kind`` is one of
    ``entries.BATCH_KINDS``; ``created_at`` ISO 8601 text; ``label`` and ``ref`` (a workflow
    batch's run id) None when not given."""

    id: str
    kind: str
    created_at: str
    label: NotRequired[str | None]
    ref: NotRequired[str | None]


class PaginatedAuditLogResponse(TypedDict):
    """OpenAPI ``PaginatedAuditLogResponse``: one page of history entries, ``limit`` from
    ``offset``, of ``total`` matching."""

    items: list[AuditLogResponse]
    total: int
    offset: int
    limit: int


class AuditEventPart(TypedDict):
    """OpenAPI ``AuditEventPart``: how many of a batch's entries have this action and entity type."""

    action: str
    entity_type: str
    count: int


class AuditEventResponse(TypedDict):
    """OpenAPI ``AuditEventResponse``: one event of the history, a batch (``kind`` ``batch``:
    ``batch`` and its ``parts``; ``entry`` None) or an entry outside any batch (``kind``
    ``entry``: ``entry``; ``batch`` None, ``parts`` empty). ``timestamp`` ISO 8601 text, its
    latest change; ``count`` its entries."""

    id: str
    kind: str
    timestamp: str
    count: int
    actor: NotRequired[str | None]
    device: NotRequired[str | None]
    entry: NotRequired[AuditLogResponse | None]
    batch: NotRequired[AuditBatchResponse | None]
    parts: NotRequired[list[AuditEventPart]]


class PaginatedAuditEventResponse(TypedDict):
    """OpenAPI ``PaginatedAuditEventResponse``: one page of the history's events, ``limit`` from
    ``offset``, of ``total``."""

    items: list[AuditEventResponse]
    total: int
    offset: int
    limit: int
