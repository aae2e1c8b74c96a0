"""History stores each fact once (issue 15): record entries keep their values in
``old_data``/``new_data`` only and store ``changes`` empty; the AuditChange rows are derived when
read, exactly the rows the writer's ``value_changes`` lists, with labels and dtypes from the
field table by id."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.fields import update_field
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.catalog.schemas import create_schema, delete_schema, purge_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history.entries import entry_responses
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.rows import find_record, value_changes
from benchbook.domain.records.writes import create_record, delete_records, update_record
from benchbook.persistence.db import Database
from benchbook.persistence.tables import AuditEntry

FIELDS = [{"name": "name", "type": "string", "label": "Name"}, {"name": "n", "type": "integer"},
          {"name": "x", "type": "float"}, {"name": "tags", "type": "tags"}]


@pytest.fixture
def db(empty_database: Database, tmp_path: Path) -> Iterator[Database]:
    database = empty_database
    with database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "site", "display_template": "{name}", "fields": FIELDS[:1]})
        create_schema(ctx, {"name": "obs", "parent": "site", "fields": FIELDS})
        create_collection(ctx, {"name": "lab", "schemas": ["site", "obs"]})
    yield database


def test_record_entries_store_values_once_and_read_as_before(db: Database, tmp_path: Path) -> None:
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        a = create_record(ctx, "lab", {"schema_name": "site", "data": {"name": "A"}})
        b = create_record(ctx, "lab", {"schema_name": "site", "data": {"name": "B"}})
        one = create_record(ctx, "lab", {"schema_name": "obs", "parent_record_id": a.id,
                                         "data": {"name": "o1", "n": 1, "x": 2.5, "tags": ["p", "q"]}})
        [bulk_id] = bulk_create_records(ctx, "lab", [{"schema_name": "obs", "parent_record_id": b.id,
                                                      "data": {"n": 7, "tags": ["r"]}}])
        first = dict(one.data)
        update_record(ctx, one.id, {"data": {"n": None, "x": 3.0}, "parent_record_id": b.id})
        second = dict(one.data)
        update_record(ctx, bulk_id, {"data": {"name": "renamed"}})
        update_field(ctx, "obs", "n", {"label": "Count"})  # labels are read as they are now
    with db.session() as s:
        entries = list(s.scalars(select(AuditEntry).where(AuditEntry.entity_type == "record")
                                 .order_by(AuditEntry.timestamp, AuditEntry.id)))
        assert len(entries) == 6
        assert all(e.changes == [] for e in entries)  # stored once: the values live in old/new data only
        create = next(e for e in entries if e.entity_id == one.id and e.action == "create")
        assert create.old_data is None and create.new_data is not None and create.new_data["data"] == first
        move = next(e for e in entries if e.entity_id == one.id and e.action == "update")
        assert move.new_data is not None and set(move.new_data["data"]) == set(first) ^ set(second) | {
            k for k in first if first[k] != second.get(k)}

        meta = SchemaCache(s).meta(one.schema_id)
        by_id = {e["id"]: e for e in entry_responses(s, entries)}
        assert by_id[create.id]["changes"] == value_changes(meta, {}, first)
        assert [c["label"] for c in by_id[create.id]["changes"]] == ["Name", "Count", "x", "tags"]
        assert by_id[move.id]["changes"] == [
            {"field": "parent_record_id", "label": "parent", "dtype": "reference", "before": a.id, "after": b.id,
             "deleted": None}, *value_changes(meta, first, second)]
        bulk_create = next(e for e in entries if e.entity_id == bulk_id and e.action == "create")
        assert [(c["dtype"], c["before"], c["after"]) for c in by_id[bulk_create.id]["changes"]] == [
            ("integer", None, 7), ("tags", None, ["r"])]


def test_a_purged_schemas_entries_keep_their_values(db: Database, tmp_path: Path) -> None:
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "gone", "fields": [{"name": "v", "type": "integer"}]})
        create_collection(ctx, {"name": "tmp", "schemas": ["gone"]})
        rec = create_record(ctx, "tmp", {"schema_name": "gone", "data": {"v": 3}})
        fid = next(iter(rec.data))
    with db.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        delete_records(ctx, [find_record(s, rec.id)], force=True)
        delete_schema(ctx, "gone")
        purge_schema(ctx, "gone")
    with db.session() as s:
        entry = s.scalars(select(AuditEntry).where(AuditEntry.entity_id == rec.id, AuditEntry.action == "create")).one()
        [shaped] = entry_responses(s, [entry])
        assert shaped["changes"] == [{"field": fid, "label": None, "dtype": None, "before": None, "after": 3,
                                      "deleted": True}]
