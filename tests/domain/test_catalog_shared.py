"""The catalog kept between sessions (domain/catalog/shared.py, migration 0012): every change to
schemas, fields, collections and the schemas of collections replaces the catalog token, so a
session never reads what another kept from before a change it can see, a rolled-back change
is never seen by anyone else, and a session sees its own changes at once. On SQLite and
PostgreSQL (the triggers differ)."""
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import delete, insert, select, text, update

from benchbook.domain.catalog import shared
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.fields import create_field, delete_field
from benchbook.domain.catalog.lookup import SchemaCache, find_collection, find_schema
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.persistence.db import Database
from benchbook.persistence.tables import CatalogToken, Collection, CollectionSchema, Field, Schema
from tests.conftest import statements_sent


@pytest.fixture
def db(empty_database: Database, tmp_path: Path) -> Iterator[Database]:
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "plot", "fields": [{"name": "region", "type": "integer"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["plot"]})
    yield empty_database


def token(db: Database) -> str | None:
    with db.session() as s:
        found: str | None = s.scalar(select(CatalogToken.token))
        return found


def field_names(db: Database) -> list[str]:
    with db.session() as s:
        return [f.name for f in SchemaCache(s).meta(find_schema(s, "plot").id).fields]


def test_every_write_to_a_catalog_table_replaces_the_token(db: Database) -> None:
    with db.session() as s:
        schema_id, collection_id = find_schema(s, "plot").id, find_collection(s, "lab").id
    writes: list[Any] = [
        update(Schema).where(Schema.id == schema_id).values(label="Plot"),
        insert(Field).values(id="F" * 26, schema_id=schema_id, name="extra", type="string", required=False,
                             restrictions={}, position=9),
        delete(Field).where(Field.id == "F" * 26),
        update(Collection).where(Collection.id == collection_id).values(description="d"),
        delete(CollectionSchema).where(CollectionSchema.collection_id == collection_id),
    ]
    seen = {token(db)}
    for statement in writes:
        with db.engine.begin() as conn:
            conn.execute(statement)
        seen.add(token(db))
    assert None not in seen and len(seen) == len(writes) + 1


def test_a_field_added_by_another_session_is_seen_by_the_next_one(db: Database, tmp_path: Path) -> None:
    assert field_names(db) == ["region"]  # kept now
    with db.session() as s, s.begin():
        create_field(Ctx(session=s, actor="t", files_dir=tmp_path), "plot", {"name": "depth", "type": "float"})
    assert field_names(db) == ["region", "depth"]
    with db.session() as s, s.begin():
        delete_field(Ctx(session=s, actor="t", files_dir=tmp_path), "plot", "depth")
    assert field_names(db) == ["region"]


def test_a_change_by_plain_sql_is_seen_too(db: Database) -> None:
    assert field_names(db) == ["region"]
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE fields SET name = 'area' WHERE name = 'region'"))
    assert field_names(db) == ["area"]


def test_a_change_rolled_back_is_seen_by_its_own_session_and_by_nobody_else(db: Database, tmp_path: Path) -> None:
    assert field_names(db) == ["region"]
    with db.session() as s:
        s.begin()
        before = SchemaCache(s).meta(find_schema(s, "plot").id)
        create_field(Ctx(session=s, actor="t", files_dir=tmp_path), "plot", {"name": "depth", "type": "float"})
        assert [f.name for f in before.fields] == ["region"]  # a cache keeps what it read for its request
        assert [f.name for f in SchemaCache(s).meta(before.schema.id).fields] == ["region", "depth"]
        s.rollback()
    assert field_names(db) == ["region"]


def lookups(db: Database) -> list[str]:
    """The statements of one request's catalog lookups: a schema's meta twice, its collection,
    its child schemas."""
    with db.session() as s:
        schema_id, collection_id = find_schema(s, "plot").id, find_collection(s, "lab").id
        with statements_sent(db.engine) as statements:
            cache = SchemaCache(s)
            cache.meta(schema_id)
            cache.collection(collection_id)
            cache.child_names(schema_id)
            SchemaCache(s).meta(schema_id)
    return statements


def test_what_is_kept_costs_one_read_of_the_token_per_transaction(db: Database) -> None:
    shared.forget()
    assert len(lookups(db)) > 3
    assert [q for q in lookups(db) if "catalog_token" not in q] == []
    assert len(lookups(db)) == 1


def test_kept_values_are_read_only_copies_not_rows_of_a_session(db: Database) -> None:
    with db.session() as s:
        meta = SchemaCache(s).meta(find_schema(s, "plot").id)
        assert meta.plain and not isinstance(meta.schema, Schema) and not any(isinstance(f, Field) for f in meta.fields)


def test_without_a_token_row_nothing_is_shared(db: Database) -> None:
    with db.engine.begin() as conn:
        conn.execute(delete(CatalogToken))
    assert field_names(db) == ["region"]
    with db.engine.begin() as conn:
        conn.execute(text("UPDATE fields SET name = 'area' WHERE name = 'region'"))
    assert field_names(db) == ["area"]
    assert token(db) is not None  # the trigger made the row again


def token_reads_after(db: Database, statement: Any) -> int:
    """How many times a transaction reads the token again for a kept value after ``statement``:
    0 when the statement cannot have changed the catalog."""
    with db.session() as s, s.begin():
        schema_id = find_schema(s, "plot").id
        SchemaCache(s).meta(schema_id)
        if isinstance(statement, str):
            s.connection().exec_driver_sql(statement)
        else:
            s.execute(statement)
        with statements_sent(db.engine) as sql:
            SchemaCache(s).meta(schema_id)
        return sum("catalog_token" in q for q in sql)


@pytest.mark.parametrize(("statement", "read_again"), [
    (select(Schema.id), False),
    (text("SELECT 1"), False),
    # a WITH query that only reads (the record and its ancestors)
    (select(select(Schema.id).cte("c", recursive=True).c.id), False),
    # SQL text that plainly writes another table (rows_insert's multi-row INSERT)
    ("INSERT INTO record_days (day, dataset_id, schema_id, created) VALUES ('2026-01-01', 'c', 's', 0)", False),
    ("UPDATE record_days SET created = created WHERE day = 'x'", False),
    ("DELETE FROM record_days WHERE day = 'x'", False),
    # may have changed the catalog: a write to a catalog table, or text not known to be a read
    ("UPDATE schemas SET label = label", True),
    ('INSERT INTO "fields" (id) SELECT id FROM fields WHERE 1 = 0', True),
    ("DELETE FROM collection_schemas WHERE 1 = 0", True),
    (text("UPDATE schemas SET label = label"), True),
    ("WITH x AS (SELECT 1) UPDATE schemas SET label = label", True),
])
def test_a_statement_makes_the_token_read_again_only_when_it_may_have_changed_the_catalog(
        db: Database, statement: Any, read_again: bool) -> None:
    assert (token_reads_after(db, statement) > 0) == read_again


def test_a_select_with_a_writing_cte_counts_as_a_write() -> None:
    from sqlalchemy.dialects import postgresql

    changed = update(Schema).values(label="x").returning(Schema.id).cte("changed")
    compiled = select(changed.c.id).compile(dialect=postgresql.dialect())
    assert not shared._only_selects(compiled)
    assert shared._only_selects(select(Schema.id).compile(dialect=postgresql.dialect()))


def test_a_record_create_with_the_catalog_kept_reads_only_the_collection_lock(db: Database, tmp_path: Path) -> None:
    from benchbook.domain.records.writes import create_record

    def create() -> list[str]:
        with db.session() as s, s.begin(), statements_sent(db.engine) as sql:
            create_record(Ctx(session=s, actor="tester", files_dir=tmp_path), "lab",
                          {"schema_name": "plot", "data": {"region": 3}})
        return sql

    create()
    sql = create()
    assert not [q for q in sql if "FROM schemas" in q or "FROM fields" in q or "collection_schemas" in q], sql
    assert [q for q in sql if "FROM collections" in q] == [q for q in sql if "deleted_at IS NULL" in q
                                                           and "FROM collections" in q]  # the lock alone
    with db.session() as s:
        assert s.scalar(select(text("count(*)")).select_from(text("records"))) == 2
