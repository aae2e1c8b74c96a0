"""SQLAlchemy 2 declarative tables: the single description of the database.

Alembic migrations in ``migrations/`` are generated from and checked against these
(``alembic check`` runs in the tests). Record values live in ``records.data`` as a JSON
object keyed by *field id* (so renames keep data and history readable); links from
reference and file fields are mirrored into ``record_links`` so "who points at this"
questions are indexed lookups instead of JSON scans.

Soft delete: ``deleted_at`` null means live. ``delete_op`` names the operation that
deleted a row (a batch id, or the audit entry id of a single delete), so a restore brings
back exactly what was deleted together and never what was deleted on its own earlier.
"""
from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, ClassVar

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    TypeDecorator,
    event,
    false,
    func,
    literal_column,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Connection, Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.sql.elements import BindParameter, ColumnElement

from benchbook.persistence import entry_triggers, field_indexes

NAMING = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JSONType = JSON().with_variant(JSONB(), "postgresql")
LIVE = text("deleted_at IS NULL")
HAS_PARENT = text("parent_id IS NOT NULL")
HAS_DELETE_OP = text("delete_op IS NOT NULL")
HAS_NAME = text("natural_name IS NOT NULL")
SCHEMA_THINGS = text("entity_type IN ('schema', 'field')")
COLLECTION_THINGS = text("entity_type = 'dataset'")
LONE = text("batch_id IS NULL")
EDITS = text("action = 'update'")
EDITS_INDEX = "ix_audit_entries_edits"
# entries holding sync rows: a device's every sent entry gets `sync = []`, the few that met a row
# more (GET /remote's open_conflicts; migration 0028)
HAS_ROWS = {"sqlite": text("sync IS NOT NULL AND sync != '[]'"),
            "postgresql": text("sync IS NOT NULL AND sync != '[]'::jsonb")}
"""The edits among the history entries (migration 0022): ``GET /audit/storage`` counts those
still stored whole (``domain.history.storage``) without reading every entry."""


class ValuesJSON(JSON):
    """JSON whose ``column[key]`` renders the key as an SQL literal, not a bound parameter:
    ``JSON_EXTRACT(records.data, '$."<field id>"')``. SQLite uses an index on an expression only
    for a query holding the very same expression, constants included, so this is what lets the
    per-field indexes (:func:`~benchbook.persistence.field_indexes.field_index_ddl`) serve filters and sorts."""

    class Comparator(JSON.Comparator[Any]):
        def _setup_getitem(self, index: Any) -> Any:
            operator, expr, result_type = super()._setup_getitem(index)  # type: ignore[no-untyped-call]
            if isinstance(expr, BindParameter):
                expr = expr._clone()
                expr.literal_execute = True
            return operator, expr, result_type

    comparator_factory = Comparator


RecordValues = ValuesJSON().with_variant(JSONB(), "postgresql")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend (SQLite stores it naive)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def utcnow() -> datetime:
    """The current instant, timezone-aware UTC."""
    return datetime.now(UTC)


class Base(DeclarativeBase):
    """Declarative base with Alembic's recommended naming convention."""

    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {dict[str, Any]: JSONType, list[Any]: JSONType,
                                                     datetime: UTCDateTime}


class Collection(Base):
    """A collection (``dataset`` in the API's names: ``dataset_id``, ``entity_type``): records of a chosen set of schemas."""

    __tablename__ = "collections"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    description: Mapped[str | None] = mapped_column(Text)
    scope: Mapped[str] = mapped_column(String(10), default="local")
    timezone: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None]
    delete_op: Mapped[str | None] = mapped_column(String(32))
    __table_args__ = (
        Index("uq_collections_live_name", "name", unique=True, sqlite_where=LIVE, postgresql_where=LIVE),
    )


class CollectionSchema(Base):
    """Which schemas a collection is for (ordered)."""

    __tablename__ = "collection_schemas"
    collection_id: Mapped[str] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"),
                                               primary_key=True)
    schema_id: Mapped[str] = mapped_column(ForeignKey("schemas.id", ondelete="CASCADE"), primary_key=True)
    position: Mapped[int] = mapped_column(default=0)


class Schema(Base):
    """A kind of record. ``parent_id`` nests its records under records of another schema."""

    __tablename__ = "schemas"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    name: Mapped[str] = mapped_column(String(63))
    label: Mapped[str | None] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("schemas.id"))
    display_template: Mapped[str | None] = mapped_column(Text)
    unique_keys: Mapped[list[Any]] = mapped_column(default=list)  # lists of field ids
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None]
    delete_op: Mapped[str | None] = mapped_column(String(32))
    __table_args__ = (
        Index("uq_schemas_live_name", "name", unique=True, sqlite_where=LIVE, postgresql_where=LIVE),
    )


class Field(Base):
    """A field of a schema; ``type`` is one of ``domain.dtypes.FIELD_TYPES``."""

    __tablename__ = "fields"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    schema_id: Mapped[str] = mapped_column(ForeignKey("schemas.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(63))
    label: Mapped[str | None] = mapped_column(String(200))
    type: Mapped[str] = mapped_column(String(20))
    required: Mapped[bool] = mapped_column(Boolean, default=False)
    restrictions: Mapped[dict[str, Any]] = mapped_column(default=dict)
    default: Mapped[Any] = mapped_column(JSONType, nullable=True)
    position: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None]
    __table_args__ = (
        Index("uq_fields_live_name", "schema_id", "name", unique=True, sqlite_where=LIVE,
              postgresql_where=LIVE),
    )


class View(Base):
    """A saved view of a schema's records table (OpenAPI ``AuditLogResponse`` names ``view`` among the audited
    things; its fields are ours: docs/decisions.md *Storage*). ``dataset_id`` null: the view is
    offered in every collection holding the schema. ``filter`` is a filter tree (object),
    ``columns`` and ``sort`` lists of strings as the record list takes them."""

    __tablename__ = "views"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    schema_id: Mapped[str] = mapped_column(ForeignKey("schemas.id", ondelete="CASCADE"), index=True)
    dataset_id: Mapped[str | None] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    name: Mapped[str] = mapped_column(String(63))
    label: Mapped[str | None] = mapped_column(String(200))
    description: Mapped[str | None] = mapped_column(Text)
    columns: Mapped[list[Any]] = mapped_column(default=list)
    filter: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    sort: Mapped[list[Any]] = mapped_column(default=list)
    search: Mapped[str | None] = mapped_column(Text)
    page_size: Mapped[int | None] = mapped_column(Integer)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None]
    __table_args__ = (
        Index("uq_views_live_name", "schema_id", "name", unique=True, sqlite_where=LIVE,
              postgresql_where=LIVE),
    )


class Record(Base):
    """A record: values keyed by field id in ``data``; optional parent record."""

    __tablename__ = "records"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(ForeignKey("collections.id", ondelete="CASCADE"))
    schema_id: Mapped[str] = mapped_column(ForeignKey("schemas.id"))
    parent_id: Mapped[str | None] = mapped_column(ForeignKey("records.id", ondelete="CASCADE"))
    data: Mapped[dict[str, Any]] = mapped_column(RecordValues, default=dict)
    natural_name: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)
    deleted_at: Mapped[datetime | None]
    delete_op: Mapped[str | None] = mapped_column(String(32))
    __table_args__ = (
        Index("ix_records_listing", "dataset_id", "schema_id", "deleted_at", "id"),
        # partial: most records have neither, and SQLite's statistics count all those NULLs as one
        # value, after which the planner scans the table for "parent_id IN (...)" (migration 0003);
        # deleted_at and schema_id make child counts and live descendants index-only
        Index("ix_records_parent_id", "parent_id", "deleted_at", "schema_id", sqlite_where=HAS_PARENT,
              postgresql_where=HAS_PARENT),
        Index("ix_records_delete_op", "delete_op", sqlite_where=HAS_DELETE_OP, postgresql_where=HAS_DELETE_OP),
        Index("ix_records_schema", "schema_id"),
        # pages sorted by a base column, walked in its order (lists._sorted_page; migration 0016)
        Index("ix_records_created_at", "created_at"),
        Index("ix_records_updated_at", "updated_at"),
        # with id: names repeat (a template of one field), and id breaks their ties in the sort
        Index("ix_records_natural_name", "natural_name", "id", sqlite_where=HAS_NAME, postgresql_where=HAS_NAME),
    )


class RecordLink(Base):
    """A reference or file value of a record: ``kind`` is ``record`` or ``file``."""

    __tablename__ = "record_links"
    source_id: Mapped[str] = mapped_column(ForeignKey("records.id", ondelete="CASCADE"), primary_key=True)
    field_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    target_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))
    __table_args__ = (Index("ix_record_links_target", "target_id"),)


class StoredFile(Base):
    """A file in the content store (``files/ab/abcdef…``), stored once per sha256."""

    __tablename__ = "files"
    sha256: Mapped[str] = mapped_column(String(64), primary_key=True)
    filename: Mapped[str] = mapped_column(Text)
    size: Mapped[int] = mapped_column(Integer)
    content_type: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class Plugin(Base):
    """A plugin as discovered: its ``describe_result`` captured once (plugin-protocol/README.md *Capabilities*) and
    where it came from. ``tier`` is ``"1"`` (subprocess), ``"2"`` (container) or ``"builtin"``;
    ``status`` is ``ok``, ``error`` (``error`` says why: describe failed, bad ``plugin.toml``, an
    id taken by another plugin) or ``no_container_runtime``."""

    __tablename__ = "plugins"
    id: Mapped[str] = mapped_column(String(100), primary_key=True)
    name: Mapped[str] = mapped_column(Text)
    description: Mapped[str] = mapped_column(Text, default="")
    category: Mapped[str] = mapped_column(String(100), default="")
    capabilities: Mapped[list[Any]] = mapped_column(default=list)
    inputs: Mapped[dict[str, Any]] = mapped_column(default=dict)
    outputs: Mapped[dict[str, Any]] = mapped_column(default=dict)
    config_schema: Mapped[dict[str, Any]] = mapped_column(default=dict)
    batch: Mapped[bool] = mapped_column(Boolean, default=False, server_default=false())
    tier: Mapped[str] = mapped_column(String(10))
    builtin: Mapped[bool] = mapped_column(Boolean, default=False)
    source: Mapped[str] = mapped_column(Text)
    status: Mapped[str] = mapped_column(String(30))
    error: Mapped[str | None] = mapped_column(Text)
    launch: Mapped[dict[str, Any]] = mapped_column(default=dict)
    described_at: Mapped[datetime] = mapped_column(default=utcnow)


class AuditBatch(Base):
    """A batch: many changes shown as one event in history (OpenAPI ``AuditBatchResponse``)."""

    __tablename__ = "audit_batches"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    kind: Mapped[str] = mapped_column(String(20))
    label: Mapped[str | None] = mapped_column(Text)
    ref: Mapped[str | None] = mapped_column(String(64))
    actor: Mapped[str | None] = mapped_column(String(200))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    # what GET /audit/events shows of the batch, kept with its entries' transaction
    # (domain.history.batch_figures; migration 0010): entries, the newest entry's time, and the
    # entries per "action entity_type" (its parts)
    entry_count: Mapped[int] = mapped_column(default=0, server_default=text("0"))
    last_at: Mapped[datetime | None] = mapped_column(nullable=True)
    parts: Mapped[dict[str, Any]] = mapped_column(default=dict, server_default=text("'{}'"))
    __table_args__ = (Index("ix_audit_batches_last_at", "last_at", "id"),)


class AuditEntry(Base):
    """One change (OpenAPI ``AuditLogResponse``), written in the change's own transaction. A record
    entry stores its values once, in ``old_data``/``new_data``, and ``changes`` empty: they are
    derived when read (``domain.history.entries.record_changes``)."""

    __tablename__ = "audit_entries"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    action: Mapped[str] = mapped_column(String(10))
    entity_type: Mapped[str] = mapped_column(String(10))
    entity_id: Mapped[str] = mapped_column(String(32))
    timestamp: Mapped[datetime] = mapped_column(default=utcnow, index=True)
    actor: Mapped[str | None] = mapped_column(String(200))
    changes: Mapped[list[Any]] = mapped_column(default=list)
    old_data: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    new_data: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    batch_id: Mapped[str | None] = mapped_column(ForeignKey("audit_batches.id"), index=True)
    request_id: Mapped[str | None] = mapped_column(String(64))
    dataset_id: Mapped[str | None] = mapped_column(String(32))
    schema_id: Mapped[str | None] = mapped_column(String(32))
    # sync (migration 0027, docs/sync.md): the authority's number of the entry; the device name
    # the authority stamped; the entry's sync rows (OpenAPI ``AuditLogResponse.sync``)
    seq: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    device: Mapped[str | None] = mapped_column(String(100), nullable=True)
    sync: Mapped[list[Any] | None] = mapped_column(JSONType, nullable=True)
    __table_args__ = (
        Index("ix_audit_entries_seq", "seq", unique=True),
        Index("ix_audit_entries_unsequenced", "id", sqlite_where=text("seq IS NULL"),
              postgresql_where=text("seq IS NULL")),
        Index("ix_audit_entries_entity", "entity_type", "entity_id"),
        # a schema's and a collection's own history (GET /schemas/{name}/audit, /collections/{name}/audit):
        # only their entries, not every record entry filed under them (migration 0008)
        Index("ix_audit_entries_schema_things", "schema_id", sqlite_where=SCHEMA_THINGS,
              postgresql_where=SCHEMA_THINGS),
        Index("ix_audit_entries_collection_things", "dataset_id", sqlite_where=COLLECTION_THINGS,
              postgresql_where=COLLECTION_THINGS),
        # the changes made outside any batch, newest first (GET /audit/events; migration 0010)
        Index("ix_audit_entries_lone", "timestamp", "id", sqlite_where=LONE, postgresql_where=LONE),
        # the edits, which history.storage checks for unchanged values (migration 0022)
        Index(EDITS_INDEX, "id", sqlite_where=EDITS, postgresql_where=EDITS),
        # the entries holding sync rows (a device's open_conflicts; migration 0028)
        Index("ix_audit_entries_rows", "id", sqlite_where=HAS_ROWS["sqlite"], postgresql_where=HAS_ROWS["postgresql"]),
        # record create and delete entries still holding values (history.storage; migration 0017)
        *(Index(entry_triggers.INDEXES[action], "id", sqlite_where=text(entry_triggers.holding("sqlite", action, column)),
                postgresql_where=text(entry_triggers.holding("postgresql", action, column)))
          for action, column in entry_triggers.KINDS),
        # and those still holding the identity written before migration 0023 (migration 0024)
        *(Index(entry_triggers.IDENTITY_INDEXES[action], "id",
                sqlite_where=text(entry_triggers.holding("sqlite", action, column, key="id")),
                postgresql_where=text(entry_triggers.holding("postgresql", action, column, key="id")))
          for action, column in entry_triggers.KINDS),
    )


class AuditEventCount(Base):
    """How many events the history holds (``total`` of ``GET /audit/events`` without a filter):
    batches holding entries plus entries made outside any batch, kept in the transaction that
    writes them (``domain.history.batch_figures``; migration 0011). The total is the sum over a
    few slots: on PostgreSQL concurrent writers add to different slots instead of queueing on
    one row."""

    __tablename__ = "audit_event_counts"
    slot: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    events: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))


class RecordCount(Base):
    """How many live records each collection holds of each schema (``record_count`` of a
    collection, ``record-counts`` without a filter), kept on SQLite by triggers on ``records``
    (``persistence.record_counts``; migration 0019) as rows are written, deleted, restored and
    purged. Empty on PostgreSQL, which counts the records when asked."""

    __tablename__ = "record_counts"
    dataset_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    schema_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    live: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))


class RecordDay(Base):
    """How many records each collection holds of each schema created on each UTC day
    (``YYYY-MM-DD``), deleted or not, purged ones no longer (the growth chart), kept on SQLite by
    triggers on ``records`` (``persistence.record_counts``; migration 0020). Empty on PostgreSQL,
    which groups the records when asked."""

    __tablename__ = "record_days"
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    dataset_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    schema_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    created: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))


class AuditDay(Base):
    """How many history entries there are of each action and entity type on each UTC day
    (``YYYY-MM-DD``; the history chart), kept on SQLite by triggers on ``audit_entries``
    (``persistence.audit_days``; migration 0021). Empty on PostgreSQL, which groups the entries
    when asked."""

    __tablename__ = "audit_days"
    day: Mapped[str] = mapped_column(String(10), primary_key=True)
    action: Mapped[str] = mapped_column(String(10), primary_key=True)
    entity_type: Mapped[str] = mapped_column(String(10), primary_key=True)
    entries: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))


class CatalogToken(Base):
    """One row whose ``token`` the database replaces with a new random value whenever a row of
    ``schemas``, ``fields``, ``collections`` or ``collection_schemas`` changes (triggers made by
    migration 0012, which see). ``domain.catalog.shared`` keeps catalog rows under it."""

    __tablename__ = "catalog_token"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    token: Mapped[str] = mapped_column(String(64))


class SyncDevice(Base):
    """A device of this project as an authority (docs/sync.md): its one-use invite and its token,
    both kept only as sha256 digests (the secrets are shown once, never stored)."""

    __tablename__ = "sync_devices"
    name: Mapped[str] = mapped_column(String(100), primary_key=True)
    invite_sha256: Mapped[str | None] = mapped_column(String(64), unique=True)
    invite_expires_at: Mapped[datetime | None] = mapped_column(nullable=True)
    token_sha256: Mapped[str | None] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    joined_at: Mapped[datetime | None] = mapped_column(nullable=True)
    last_seen_at: Mapped[datetime | None] = mapped_column(nullable=True)
    revoked_at: Mapped[datetime | None] = mapped_column(nullable=True)


class SyncAnswer(Base):
    """The authority's answer to one pushed entry (``{id, status, seq, rows}``), written in the
    push's transaction: a resend gets it back and changes nothing (docs/sync.md)."""

    __tablename__ = "sync_answers"
    entry_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    device: Mapped[str] = mapped_column(String(100))
    answer: Mapped[dict[str, Any]] = mapped_column(JSONType)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class SyncState(Base):
    """One row (id 1): this project's sync id and, as an authority, ``head`` (the last sequence
    number given); as a device, the remote it follows and how far it has read its feed."""

    __tablename__ = "sync_state"
    id: Mapped[int] = mapped_column(primary_key=True, autoincrement=False)
    project_id: Mapped[str] = mapped_column(String(32))
    head: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    remote_url: Mapped[str | None] = mapped_column(Text, nullable=True)
    remote_device: Mapped[str | None] = mapped_column(String(100), nullable=True)
    remote_project_id: Mapped[str | None] = mapped_column(String(32), nullable=True)
    cursor: Mapped[int] = mapped_column(BigInteger, default=0, server_default=text("0"))
    last_sync_at: Mapped[datetime | None] = mapped_column(nullable=True)
    error: Mapped[str | None] = mapped_column(Text, nullable=True)
    # a device's first copy by snapshot under way (migration 0028; domain.sync.copy): its stage
    # (``records``, ``history``), the authority's head it is level with, the records page cursor
    copy_stage: Mapped[str | None] = mapped_column(String(10), nullable=True)
    copy_head: Mapped[int | None] = mapped_column(BigInteger, nullable=True)
    copy_after: Mapped[str | None] = mapped_column(String(100), nullable=True)


class Job(Base):
    """A workflow run (OpenAPI ``WorkflowJobResponse``), queued in the transaction of the change that
    triggered it. ``status``: ``pending``, ``running``, ``completed``, ``failed``, ``cancelled``.
    ``inputs`` keeps what a rerun repeats; ``cancel_requested`` stops a running run before its
    next step."""

    __tablename__ = "jobs"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    workflow_name: Mapped[str] = mapped_column(String(200), index=True)
    record_id: Mapped[str] = mapped_column(String(32), index=True)
    schema_name: Mapped[str] = mapped_column(String(100))
    trigger: Mapped[str] = mapped_column(String(20))
    status: Mapped[str] = mapped_column(String(20))
    error: Mapped[str | None] = mapped_column(Text)
    error_details: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    log: Mapped[str | None] = mapped_column(Text)
    step_executions: Mapped[list[Any] | None] = mapped_column(JSONType, nullable=True)
    affected_records: Mapped[list[Any] | None] = mapped_column(JSONType, nullable=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    started_at: Mapped[datetime | None]
    finished_at: Mapped[datetime | None]
    depth: Mapped[int] = mapped_column(Integer, default=0)
    trigger_detail: Mapped[dict[str, Any] | None] = mapped_column(JSONType, nullable=True)
    problems: Mapped[int] = mapped_column(Integer, default=0)
    inputs: Mapped[dict[str, Any]] = mapped_column(default=dict)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    __table_args__ = (Index("ix_jobs_status_created", "status", "created_at"),)


class WorkerLease(Base):
    """Who drains the run queue of this database now: one worker per project, across processes
    (a server and CLI sessions). A lease whose ``expires_at`` has passed may be taken over."""

    __tablename__ = "worker_leases"
    name: Mapped[str] = mapped_column(String(50), primary_key=True)
    holder: Mapped[str] = mapped_column(String(200))
    expires_at: Mapped[datetime]


class AiUsage(Base):
    """One request to an AI model (docs/decisions.md *ai-usage-rows*; OpenAPI ``GET /ai/usage``),
    written in a transaction of its own as soon as the provider answered or failed, so it is
    kept even when the chat that made it fails later. ``ok`` false: the request failed,
    ``error_kind`` says how (``unreachable``, ``timeout``, ``key_refused``, ``rate_limited``,
    ``provider_error``, ``bad_response``) and the token counts are 0."""

    __tablename__ = "ai_usage"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    provider: Mapped[str] = mapped_column(String(20))
    model: Mapped[str] = mapped_column(String(200))
    input_tokens: Mapped[int] = mapped_column(Integer, default=0)
    output_tokens: Mapped[int] = mapped_column(Integer, default=0)
    total_tokens: Mapped[int] = mapped_column(Integer, default=0)
    ok: Mapped[bool] = mapped_column(Boolean, default=True)
    error_kind: Mapped[str | None] = mapped_column(String(40))
    created_at: Mapped[datetime] = mapped_column(default=utcnow, index=True)


# The UTC day of a timestamp on SQLite, as the kept counts (``persistence.record_counts``,
# ``persistence.audit_days``) and the analytics queries compute it.

def sqlite_day(column: Any) -> ColumnElement[Any]:
    """The UTC day ``YYYY-MM-DD`` of a :class:`UTCDateTime` column on SQLite, which keeps it as
    naive UTC text ``YYYY-MM-DD HH:MM:SS.ffffff``: its first ten characters (far cheaper than a
    date function per row). Literal arguments, not bound ones, so the growth index's expression
    and the analytics queries' are the same expression to SQLite's planner."""
    return func.substr(column, literal_column("1"), literal_column("10"))


# the per-field indexes (persistence/field_indexes.py) are made and dropped with their fields
@event.listens_for(Field, "after_insert")
def _create_field_index(_mapper: Any, connection: Connection, field: Field) -> None:
    for ddl in (field_indexes.field_index_ddl(connection.dialect, field.id, field.type),
                field_indexes.field_statistics_ddl(connection.dialect, field.id, field.type)):
        if ddl:
            connection.execute(text(ddl))


@event.listens_for(Field, "after_delete")
def _drop_field_index(_mapper: Any, connection: Connection, field: Field) -> None:
    connection.execute(text(f"DROP INDEX IF EXISTS {field_indexes.field_index_name(field.id)}"))
    if connection.dialect.name == "postgresql":
        connection.execute(text(f"DROP STATISTICS IF EXISTS {field_indexes.field_statistics_name(field.id)}"))
