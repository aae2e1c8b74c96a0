"""The bulk create path (domain/records/bulk.py) stores exactly what create_record stores, row for row:
the same records, links and history entries; and it reports the same problem for each bad row.

Each scenario runs the same rows twice in one database, rolled back in between: once through
``create_record`` (with its record ids fixed to known ones) and once through
``bulk_create_records`` given those ids, then compares what the database holds.
"""
from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from sqlalchemy import JSON, Engine, Table, delete, select, text

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.lookup import SchemaCache, find_collection
from benchbook.domain.catalog.schemas import create_schema, set_unique_keys
from benchbook.domain.context import Ctx
from benchbook.domain.errors import BenchbookError
from benchbook.domain.history import entries as audit
from benchbook.domain.ids import new_id
from benchbook.domain.imports.run import _file_lookup
from benchbook.domain.records import bulk
from benchbook.domain.records.bulk import RowProblems, bulk_create_records
from benchbook.domain.records.rows import (
    kept_identity,
    purge_records,
    restore_records,
    soft_delete_records,
)
from benchbook.domain.records.rows import snapshot as record_snapshot
from benchbook.domain.records.values import merge_values
from benchbook.domain.records.writes import create_record
from benchbook.persistence.db import Database
from benchbook.persistence.tables import AuditEntry, Record, RecordLink, Schema, StoredFile, utcnow
from tests.conftest import statements_sent

PG_URL = os.environ.get("BENCHBOOK_TEST_PG")
SHA_PNG, SHA_CSV = "a" * 64, "b" * 64
SAMPLE_FIELDS = [
    {"name": "label", "type": "string", "required": True, "restrictions": {"choices": ["N", "S", "E", "W"]}},
    {"name": "count", "type": "integer", "restrictions": {"min": 0}},
    {"name": "depth", "type": "float", "default": 1.5},
    {"name": "taken_on", "type": "date"},
    {"name": "taken_at", "type": "datetime"},
    {"name": "ok", "type": "boolean"},
    {"name": "tags", "type": "tags"},
    {"name": "home", "type": "reference", "restrictions": {"schema": "site"}},
    {"name": "others", "type": "reference_list", "restrictions": {"schema": "site"}},
    {"name": "image", "type": "file", "restrictions": {"accept": [".png"]}},
    {"name": "attachments", "type": "file_list"},
    {"name": "link", "type": "url"},
]


@pytest.fixture
def db(empty_database: Database, tmp_path: Path) -> Iterator[Database]:
    """A fresh database with schemas site → sample, collections ``lab`` (local, Europe/Oslo)
    and ``shared`` (global), two sites in each and two uploaded files."""
    database = empty_database
    with database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "site", "display_template": "{name}", "fields": [
            {"name": "name", "type": "string", "required": True}, {"name": "code", "type": "integer"}]})
        set_unique_keys(ctx, "site", [["code"]])
        create_schema(ctx, {"name": "sample", "parent": "site", "fields": SAMPLE_FIELDS,
                            "display_template": "{label}-{taken_on:YYYY-MM} {count}"})
        create_schema(ctx, {"name": "note", "fields": [{"name": "text", "type": "string"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["site", "sample"], "timezone": "Europe/Oslo"})
        create_collection(ctx, {"name": "shared", "schemas": ["site", "note"], "scope": "global"})
        create_collection(ctx, {"name": "private", "schemas": ["site"]})
        s.add_all([StoredFile(sha256=SHA_PNG, filename="plot.png", size=10),
                   StoredFile(sha256=SHA_CSV, filename="table.csv", size=20)])
        for coll, name, code in (("lab", "North", 1), ("lab", "South", 2), ("shared", "Far", 1),
                                 ("private", "Hidden", 1)):
            create_record(ctx, coll, {"schema_name": "site", "data": {"name": name, "code": code}})
        audit.open_batch(ctx, "import", label="test")
    yield database


def existing(database: Database) -> dict[str, str]:
    with database.session() as s:
        return {r.natural_name: r.id for r in s.query(Record)}


def resolve(value: Any, names: dict[str, str]) -> Any:
    """Rows name records symbolically: ``@North`` an existing one, ``@3`` row 3 of the same call."""
    if isinstance(value, str) and value.startswith("@"):
        return names.get(value[1:], value)
    if isinstance(value, list):
        return [resolve(v, names) for v in value]
    if isinstance(value, dict):
        return {k: resolve(v, names) for k, v in value.items()}
    return value


def _columns(table: Table, leave_out: tuple[str, ...]) -> str:
    """Every column of ``table`` but ``leave_out``, JSON as the database's own text, and
    whether it is SQL NULL (a JSON null and a NULL differ in the database)."""
    out = []
    for c in table.columns:
        if c.name in leave_out:
            continue
        json_type = isinstance(c.type, JSON) or isinstance(getattr(c.type, "impl", None), JSON)
        out += [f"CAST({c.name} AS TEXT)" if json_type else c.name, f"{c.name} IS NULL"]
    return ", ".join(out)


def snapshot(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """What the database holds about records, column by column, but ids of entries and times."""
    queries = {
        "records": f"SELECT {_columns(Record.__table__, ('created_at', 'updated_at'))}, created_at = updated_at "
                   "FROM records ORDER BY id",
        "links": f"SELECT {_columns(RecordLink.__table__, ())} FROM record_links "
                 "ORDER BY source_id, field_id, target_id",
        "entries": f"SELECT {_columns(AuditEntry.__table__, ('id', 'timestamp'))} FROM audit_entries "
                   "WHERE entity_type = 'record' ORDER BY entity_id",
        "live": "SELECT a.entity_id FROM audit_entries a JOIN records r ON r.id = a.entity_id "
                "WHERE a.timestamp < r.updated_at ORDER BY 1",
    }
    with engine.connect() as conn:
        return {k: [tuple(row) for row in conn.execute(text(q))] for k, q in queries.items()}


def run_single(database: Database, collection: str, rows: list[dict[str, Any]], ids: list[str],
               ) -> tuple[dict[str, list[tuple[Any, ...]]], list[tuple[int, str]]]:
    """The rows through create_record one by one (like the CSV import did): problems, and what
    was stored; rolled back afterwards."""
    names = {**existing(database), **{str(i): rid for i, rid in enumerate(ids)}}
    problems = []
    with database.session() as s:
        tx = s.begin()
        ctx = Ctx(session=s, actor="tester", files_dir=Path("."), request_id="req-1")
        ctx.batch_id = s.scalar(text("SELECT id FROM audit_batches"))
        with mock.patch("benchbook.domain.records.writes.new_id", side_effect=iter(ids).__next__):
            for i, row in enumerate(rows):
                try:
                    create_record(ctx, collection, resolve(row, names))
                except BenchbookError as exc:
                    problems.append((i, exc.detail))
        s.flush()
        stored = snapshot_in(s)
        tx.rollback()
    return stored, problems


def snapshot_in(session: Any) -> dict[str, list[tuple[Any, ...]]]:
    return snapshot(_SessionEngine(session))  # type: ignore[arg-type]


class _SessionEngine:
    """Lets :func:`snapshot` read inside an open session's transaction."""

    def __init__(self, session: Any) -> None:
        self.session = session

    def connect(self) -> Any:
        conn = self.session.connection()

        class _Ctx:
            def __enter__(self) -> Any:
                return conn

            def __exit__(self, *exc: object) -> None:
                return None
        return _Ctx()


def checked_values(s: Any, collection: str, rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each row's values as ``merge_values`` stores them for a new record, as the import's check
    hands them to the bulk create (its ``stored``)."""
    coll = find_collection(s, collection)
    cache = SchemaCache(s)
    lookup = _file_lookup(s)
    out = []
    for row in rows:
        schema_id = s.scalar(select(Schema.id).where(Schema.name == row["schema_name"]))
        values, problems = merge_values(cache.meta(schema_id), coll, row.get("data") or {}, current=None,
                                        loc=("data",), file_lookup=lookup)
        assert problems == [], problems
        out.append(values)
    return out


def run_bulk(database: Database, collection: str, rows: list[dict[str, Any]], ids: list[str], *,
             chunk: int = bulk.CHUNK, checked: bool = False,
             ) -> tuple[dict[str, list[tuple[Any, ...]]], list[tuple[int, str]]]:
    """The rows through ``bulk_create_records`` (``checked``: with their values already stored
    by ``merge_values``, as the import gives them): problems, and what was stored; rolled back."""
    names = {**existing(database), **{str(i): rid for i, rid in enumerate(ids)}}
    problems: list[tuple[int, str]] = []
    with database.session() as s, mock.patch.object(bulk, "CHUNK", chunk):
        tx = s.begin()
        ctx = Ctx(session=s, actor="tester", files_dir=Path("."), request_id="req-1")
        ctx.batch_id = s.scalar(text("SELECT id FROM audit_batches"))
        given = resolve(rows, names)
        stored = checked_values(s, collection, given) if checked else None
        try:
            assert bulk_create_records(ctx, collection, given, ids=ids, stored=stored) == ids
        except RowProblems as exc:
            problems = exc.problems
        stored = snapshot_in(s)
        tx.rollback()
    return stored, problems


GOOD_ROWS: list[dict[str, Any]] = [
    {"schema_name": "site", "data": {"name": "West", "code": 3}},
    {"schema_name": "site", "parent_record_id": None, "data": {"name": "Unnumbered"}},
    {"schema_name": "sample", "parent_record_id": "@North", "data": {
        "label": "N", "count": "7", "taken_on": "2024-05-03", "taken_at": "2024-05-03 10:00", "ok": "yes",
        "tags": "a, b,a", "home": "@South", "others": ["@Far", "@North"], "image": SHA_PNG.upper(),
        "attachments": f"{SHA_PNG},{SHA_CSV}", "link": " https://example.org/x "}},
    {"schema_name": "sample", "parent_record_id": "@0", "data": {"label": "S", "depth": None, "count": 0}},
    {"schema_name": "sample", "parent_record_id": "@0", "data": {"label": "E", "home": "@0", "others": ["@0", "@North"]}},
    {"schema_name": "sample", "parent_record_id": "@South", "data": {"label": "W", "depth": "2e3", "tags": []}},
    {"schema_name": "site", "data": {"name": "Ten", "code": 10.0}},
]


@pytest.mark.parametrize("chunk", [1000, 2])
def test_bulk_stores_what_create_record_stores(db: Database, chunk: int) -> None:
    rows = GOOD_ROWS
    ids = [new_id() for _ in rows]
    single, single_problems = run_single(db, "lab", rows, ids)
    many, many_problems = run_bulk(db, "lab", rows, ids, chunk=chunk)
    assert single_problems == many_problems == []
    assert len(many["records"]) == 4 + len(rows) and len(many["entries"]) == 4 + len(rows)
    assert many["links"] and many["live"] == []
    assert many == single


def test_values_checked_before_are_stored_as_they_are_and_references_still_checked(db: Database) -> None:
    ids = [new_id() for _ in GOOD_ROWS]
    plain, _ = run_bulk(db, "lab", GOOD_ROWS, ids, chunk=3)
    checked, problems = run_bulk(db, "lab", GOOD_ROWS, ids, chunk=3, checked=True)
    assert problems == [] and checked == plain
    bad = [GOOD_ROWS[0], {"schema_name": "sample", "parent_record_id": "@North",
                          "data": {"label": "N", "home": "@Hidden", "others": ["01ARZ3NDEKTSV4RRFFQ69G5FAV"]}}]
    _, problems = run_bulk(db, "lab", bad, [new_id(), new_id()], checked=True)
    assert [i for i, _ in problems] == [1] and "home" in problems[0][1] and "others" in problems[0][1]


BAD_ROWS: list[dict[str, Any]] = [
    {"schema_name": "site", "data": {"name": "Fine", "code": 5}},                        # 0 fine
    {"schema_name": "nope", "data": {}},                                                  # 1 unknown schema
    {"schema_name": "note", "data": {"text": "x"}},                                      # 2 schema not in collection
    {"schema_name": "sample", "data": {"label": "N"}},                                   # 3 parent missing
    {"schema_name": "sample", "parent_record_id": "01ARZ3NDEKTSV4RRFFQ69G5FAV", "data": {"label": "N"}},  # 4
    {"schema_name": "sample", "parent_record_id": "@Far", "data": {"label": "N"}},       # 5 other collection
    {"schema_name": "site", "parent_record_id": "@North", "data": {"name": "x"}},        # 6 top-level
    {"schema_name": "sample", "parent_record_id": "@North", "data": {"label": "Q", "count": "-1", "bogus": 1,
                                                                      "ok": "maybe", "taken_on": "May"}},  # 7
    {"schema_name": "sample", "parent_record_id": "@North", "data": {"count": 1}},      # 8 required missing
    {"schema_name": "sample", "parent_record_id": "@North", "data": {
        "label": "N", "home": "@Hidden", "others": ["01ARZ3NDEKTSV4RRFFQ69G5FAV", "@0"]}},  # 9 references
    {"schema_name": "sample", "parent_record_id": "@North", "data": {
        "label": "N", "image": SHA_CSV, "attachments": ["c" * 64, "nothex"]}},          # 10 files
    {"schema_name": "site", "data": {"name": "Clash", "code": 1}},                      # 11 clash with North
    {"schema_name": "site", "data": {"name": "Clash again", "code": 5}},                # 12 clash with row 0
    {"schema_name": "site", "data": {"name": "No code is fine"}},                        # 13 fine
    {"schema_name": "sample", "parent_record_id": "@0", "data": {"label": "S", "home": "@North"}},  # 14 fine
    {"schema_name": "sample", "parent_record_id": "nort", "data": {"label": "S"}},       # 15 short prefix
]


@pytest.mark.parametrize("chunk", [1000, 3])
def test_bulk_reports_each_bad_row_as_create_record_would(db: Database, chunk: int) -> None:
    ids = [new_id() for _ in BAD_ROWS]
    _, single_problems = run_single(db, "lab", BAD_ROWS, ids)
    _, many_problems = run_bulk(db, "lab", BAD_ROWS, ids, chunk=chunk)
    assert [i for i, _ in many_problems] == [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 15]
    assert many_problems == single_problems
    assert "code" in dict(many_problems)[11] and ids[0] in dict(many_problems)[12]


def test_bad_rows_write_nothing_once_rolled_back(db: Database) -> None:
    rows = [{"schema_name": "site", "data": {"name": f"s{i}", "code": 100 + i}} for i in range(5)]
    rows.append({"schema_name": "site", "data": {"code": "x"}})
    with db.session() as s, pytest.raises(RowProblems) as err, s.begin():
        bulk_create_records(Ctx(session=s, actor=None, files_dir=Path(".")), "lab", rows)
    assert [i for i, _ in err.value.problems] == [5]
    assert "name: a value is required" in err.value.problems[0][1]
    assert len(existing(db)) == 4


def test_bulk_without_unique_keys_skips_the_sibling_queries(db: Database) -> None:
    rows = [{"schema_name": "sample", "parent_record_id": "@North", "data": {"label": "N", "count": i}}
            for i in range(10)]
    names = existing(db)
    with statements_sent(db.engine) as statements, db.session() as s, s.begin():
        ids = bulk_create_records(Ctx(session=s, actor=None, files_dir=Path(".")), "lab", resolve(rows, names))
    selects = [q for q in statements if q.lstrip().upper().startswith("SELECT")]
    assert len(ids) == 10 and len(selects) < 12  # lookups per call, not per row



def test_parents_are_read_and_locked_once_per_call(db: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each chunk reads (``FOR SHARE``) only the parents no earlier chunk of the call read: on
    PostgreSQL locking the same rows again for every chunk took most of an import's time."""
    monkeypatch.setattr(bulk, "CHUNK", 3)
    names = existing(db)
    rows = [{"schema_name": "sample", "parent_record_id": f"@{'North' if i % 2 else 'South'}",
             "data": {"label": "N", "count": i}} for i in range(10)]
    rows.append({"schema_name": "sample", "parent_record_id": "@Hidden", "data": {"label": "S"}})
    with statements_sent(db.engine) as statements, db.session() as s, s.begin():
        ids = bulk_create_records(Ctx(session=s, actor=None, files_dir=Path(".")), "lab", resolve(rows[:10], names))
    parent_reads = [q for q in statements if q.lstrip().upper().startswith("SELECT RECORDS.ID, RECORDS.SCHEMA_ID")]
    assert len(ids) == 10 and len(parent_reads) == 1  # four chunks, both parents read by the first
    with db.session() as s, s.begin():
        assert {r.parent_id for r in s.query(Record).filter(Record.id.in_(ids))} == {names["North"], names["South"]}
    with db.session() as s, pytest.raises(RowProblems) as err, s.begin():  # a parent in another collection
        bulk_create_records(Ctx(session=s, actor=None, files_dir=Path(".")), "lab", resolve(rows, names))
    assert [i for i, _ in err.value.problems] == [10]

# ------------------------------------------------------------------ delete, restore, purge
# The set-based bodies of soft_delete_records / restore_records / purge_records against the
# per-record code they replaced (kept here as the reference, built on audit.write).

def reference_soft_delete(ctx: Ctx, records: list[Record], *, op: str) -> None:
    cache = SchemaCache(ctx.session)
    now = utcnow()
    for rec in records:
        meta = cache.meta(rec.schema_id)
        audit.write(ctx, "delete", "record", rec.id, changes=[],  # the rest: the record's own (0017, 0023)
                    old=kept_identity(meta), dataset_id=rec.dataset_id, schema_id=rec.schema_id)
        rec.deleted_at = now
        rec.delete_op = op


def reference_restore(ctx: Ctx, records: list[Record]) -> None:
    cache = SchemaCache(ctx.session)
    now = utcnow()
    for rec in records:
        meta = cache.meta(rec.schema_id)
        rec.deleted_at = None
        rec.delete_op = None
        rec.updated_at = now
        ident = kept_identity(meta)  # the rest: the entry's columns, the record's own (0025)
        audit.write(ctx, "restore", "record", rec.id, old=ident, new=ident, dataset_id=rec.dataset_id,
                    schema_id=rec.schema_id)


def reference_purge(ctx: Ctx, records: list[Record]) -> None:
    cache = SchemaCache(ctx.session)
    for rec in records:
        meta = cache.meta(rec.schema_id)
        audit.write(ctx, "purge", "record", rec.id, changes=[],  # read back from old_data
                    old=record_snapshot(rec, meta), dataset_id=rec.dataset_id, schema_id=rec.schema_id)
    ids = [r.id for r in records]
    s = ctx.session
    s.flush()
    s.execute(delete(RecordLink).where(RecordLink.source_id.in_(ids)))
    s.execute(delete(Record).where(Record.id.in_(ids)).execution_options(synchronize_session=False))
    for rec in records:
        s.expunge(rec)


def lifecycle_snapshot(session: Any) -> dict[str, list[tuple[Any, ...]]]:
    queries = {
        "records": f"SELECT {_columns(Record.__table__, ('created_at', 'updated_at', 'deleted_at'))}, "
                   "deleted_at IS NULL FROM records ORDER BY id",
        "links": f"SELECT {_columns(RecordLink.__table__, ())} FROM record_links "
                 "ORDER BY source_id, field_id, target_id",
        "entries": f"SELECT {_columns(AuditEntry.__table__, ('id', 'timestamp'))} FROM audit_entries "
                   "WHERE entity_type = 'record' ORDER BY entity_id, timestamp",
        "edited": "SELECT a.entity_id FROM audit_entries a JOIN records r ON r.id = a.entity_id "
                  "WHERE a.timestamp < r.updated_at AND a.action = 'restore' ORDER BY 1",
    }
    conn = session.connection()
    return {k: [tuple(row) for row in conn.execute(text(q))] for k, q in queries.items()}


def both_ways(database: Database, prepare: Any, reference: Any, actual: Any) -> None:
    """Run ``reference`` and ``actual`` on the records ``prepare`` picks, each in its own rolled
    back transaction, and compare what the database holds and what the session shows."""
    seen = []
    for change in (reference, actual):
        with database.session() as s:
            tx = s.begin()
            ctx = Ctx(session=s, actor="tester", files_dir=Path("."), request_id="req-2")
            ctx.batch_id = s.scalar(text("SELECT id FROM audit_batches"))
            records = prepare(s)
            change(ctx, records)
            s.flush()
            shown = [(r.id, r.deleted_at is None, r.delete_op) for r in records if r in s]
            seen.append((lifecycle_snapshot(s), shown))
            tx.rollback()
    assert seen[0] == seen[1]


def samples(s: Any) -> list[Record]:
    return list(s.scalars(select(Record).where(Record.schema_id == select(Schema.id).where(
        Schema.name == "sample").scalar_subquery()).order_by(Record.id)))


def create_samples(database: Database) -> None:
    names = existing(database)
    with database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=Path("."))
        bulk_create_records(ctx, "lab", resolve(GOOD_ROWS[2:6:3] * 3, {**names, "0": names["South"]}))


def test_set_based_delete_restore_purge_write_the_same_entries(db: Database) -> None:
    create_samples(db)
    both_ways(db, samples, lambda ctx, recs: reference_soft_delete(ctx, recs, op="OP1"),
              lambda ctx, recs: soft_delete_records(ctx, recs, op="OP1"))
    with db.session() as s, s.begin():
        soft_delete_records(Ctx(session=s, actor="tester", files_dir=Path(".")), samples(s), op="OP2")
    both_ways(db, samples, reference_restore, restore_records)
    both_ways(db, samples, reference_purge, purge_records)
