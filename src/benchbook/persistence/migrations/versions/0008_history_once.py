"""history once: record entries keep their values once; schema and collection history indexes

A record entry written before stored every value twice: ``changes`` (field id, label, dtype,
before, after per value) and ``old_data``/``new_data`` (issue 15: ``audit_entries`` was 8x the
bare JSON table). From now on ``changes`` of a record entry is stored empty and derived when read
(``domain.history.entries.record_changes``). This upgrade empties the stored ``changes`` of every
record entry whose derivation gives back exactly what the API answers today: the same rows in the
same order, with the same ``field``, ``dtype``, ``before`` and ``after`` (compared as JSON text),
and, for a field no longer in the field table, the same ``label`` and ``deleted``. Entries that do
not match (fields reordered or deleted since, a purged schema) keep their ``changes``: they read
exactly as before either way. The room given up stays inside a SQLite file until
``POST /audit/storage/reclaim``.

Indexes: ``audit_entries.schema_id`` and ``dataset_id`` were indexed over every entry, record
entries included (one index entry per record change); the only queries filtering on them ask for
a schema's own entries (``entity_type IN ('schema', 'field')``) and a collection's own
(``entity_type = 'dataset'``), so both become partial indexes on exactly those entries.

Revision ID: 0008_history_once
Revises: 0007_growth_index
Create Date: 2026-11-23
"""
from __future__ import annotations

import json
from typing import Any

import sqlalchemy as sa
from alembic import op

revision = "0008_history_once"
down_revision = "0007_growth_index"
branch_labels = None
depends_on = None

CHUNK = 1000
_ENTRIES = sa.table("audit_entries", sa.column("id", sa.String), sa.column("action", sa.String),
                    sa.column("entity_type", sa.String), sa.column("schema_id", sa.String),
                    sa.column("changes", sa.JSON), sa.column("old_data", sa.JSON), sa.column("new_data", sa.JSON))
_FIELDS = sa.table("fields", sa.column("id", sa.String), sa.column("schema_id", sa.String),
                   sa.column("name", sa.String), sa.column("label", sa.String), sa.column("type", sa.String),
                   sa.column("position", sa.Integer), sa.column("created_at", sa.DateTime),
                   sa.column("deleted_at", sa.DateTime))


def _text(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _derived(action: str, old: dict[str, Any] | None, new: dict[str, Any] | None,
             specs: list[tuple[str, str, str, bool]]) -> list[dict[str, Any]]:
    """What the reader derives (frozen copy of ``record_changes`` as of this revision)."""
    old, new = old or {}, new or {}
    out: list[dict[str, Any]] = []
    if action == "update" and old.get("parent_record_id") != new.get("parent_record_id"):
        out.append({"field": "parent_record_id", "label": "parent", "dtype": "reference",
                    "before": old.get("parent_record_id"), "after": new.get("parent_record_id"), "deleted": None})
    before, after = old.get("data") or {}, new.get("data") or {}
    out += [{"field": fid, "label": label, "dtype": dtype, "before": b, "after": a, "deleted": deleted}
            for fid, label, dtype, deleted in specs if (b := before.get(fid)) != (a := after.get(fid))]
    known = {s[0] for s in specs}
    out += [{"field": k, "label": None, "dtype": None, "before": before.get(k), "after": after.get(k),
             "deleted": True} for k in sorted((before.keys() | after.keys()) - known) if before.get(k) != after.get(k)]
    return out


def _as_read(changes: list[Any], labels: dict[str, tuple[str, bool]]) -> list[Any]:
    """Stored changes as the API answers them (label and ``deleted`` of a known field as it is now)."""
    out = []
    for c in changes:
        c = dict(c) if isinstance(c, dict) else c
        if isinstance(c, dict) and str(c.get("field")) in labels:
            c["label"], c["deleted"] = labels[str(c["field"])]
        out.append(c)
    return out


def upgrade() -> None:
    with op.batch_alter_table("audit_entries", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_entries_dataset_id")
        batch_op.drop_index("ix_audit_entries_schema_id")
    op.create_index("ix_audit_entries_schema_things", "audit_entries", ["schema_id"],
                    sqlite_where=sa.text("entity_type IN ('schema', 'field')"),
                    postgresql_where=sa.text("entity_type IN ('schema', 'field')"))
    op.create_index("ix_audit_entries_collection_things", "audit_entries", ["dataset_id"],
                    sqlite_where=sa.text("entity_type = 'dataset'"),
                    postgresql_where=sa.text("entity_type = 'dataset'"))

    conn = op.get_bind()
    specs: dict[str, list[tuple[str, str, str, bool]]] = {}
    labels: dict[str, tuple[str, bool]] = {}
    every = conn.execute(sa.select(_FIELDS.c.id, _FIELDS.c.schema_id, _FIELDS.c.name, _FIELDS.c.label,
                                   _FIELDS.c.type, _FIELDS.c.deleted_at)
                         .order_by(_FIELDS.c.position, _FIELDS.c.created_at)).all()
    for live in (True, False):  # live fields first, then deleted ones, each in schema order
        for fid, schema_id, name, label, dtype, deleted_at in every:
            if (deleted_at is None) == live:
                specs.setdefault(schema_id, []).append((fid, label or name, dtype, deleted_at is not None))
                labels[fid] = (label or name, deleted_at is not None)
    after = ""
    while True:
        rows = conn.execute(sa.select(_ENTRIES.c.id, _ENTRIES.c.action, _ENTRIES.c.schema_id, _ENTRIES.c.changes,
                                      _ENTRIES.c.old_data, _ENTRIES.c.new_data)
                            .where(_ENTRIES.c.entity_type == "record", _ENTRIES.c.id > after)
                            .order_by(_ENTRIES.c.id).limit(CHUNK)).all()
        if not rows:
            break
        after = rows[-1][0]
        once = [eid for eid, action, schema_id, changes, old, new in rows
                if changes and _text(_as_read(changes, labels)) == _text(
                    _derived(action, old, new, specs.get(schema_id or "", [])))]
        if once:
            conn.execute(sa.text("UPDATE audit_entries SET changes = '[]' WHERE id IN :ids")
                         .bindparams(sa.bindparam("ids", expanding=True)), {"ids": once})


def downgrade() -> None:
    """Indexes only: entries stored once stay so (this code's readers derive their changes)."""
    op.drop_index("ix_audit_entries_collection_things", table_name="audit_entries")
    op.drop_index("ix_audit_entries_schema_things", table_name="audit_entries")
    with op.batch_alter_table("audit_entries", schema=None) as batch_op:
        batch_op.create_index("ix_audit_entries_schema_id", ["schema_id"], unique=False)
        batch_op.create_index("ix_audit_entries_dataset_id", ["dataset_id"], unique=False)
