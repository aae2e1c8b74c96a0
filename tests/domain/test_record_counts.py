"""The live records of each collection and schema, kept by SQLite (migration 0019,
``persistence.record_counts``): after every kind of write the kept counts equal a count of the
records themselves, and the collection, ``record-counts`` and ``analytics/records/counts``
answers use them; on PostgreSQL
nothing is kept and the answers are the same."""
from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import func, inspect, select, text, update
from sqlalchemy.orm import Session

from benchbook.domain import analytics
from benchbook.domain.catalog.collections import (
    collection_response,
    create_collection,
    delete_collection,
    purge_collection,
    restore_collection,
)
from benchbook.domain.catalog.lookup import find_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.lists import record_counts
from benchbook.domain.records.queries import RecordQuery
from benchbook.domain.records.rows import purge_records, restore_records
from benchbook.domain.records.writes import create_record, delete_records
from benchbook.maintenance.doctor import present_indexes
from benchbook.persistence import record_counts as kept_counts
from benchbook.persistence.db import Database, alembic_config, upgrade
from benchbook.persistence.tables import Collection, Record, RecordCount, RecordDay, Schema

GROWTH_INDEX = "ix_records_created_day"  # made by migration 0007, dropped by 0020 on SQLite


@pytest.fixture
def db(empty_database: Database, tmp_path: Path) -> Iterator[Database]:
    """Schemas site → sample, note; collections ``lab`` (site, sample) and ``desk`` (note)."""
    with empty_database.session() as s, s.begin():
        ctx = ctx_of(s)
        create_schema(ctx, {"name": "site", "fields": [{"name": "name", "type": "string"}]})
        create_schema(ctx, {"name": "sample", "parent": "site", "fields": [{"name": "n", "type": "integer"}]})
        create_schema(ctx, {"name": "note", "fields": [{"name": "text", "type": "string"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["site", "sample"]})
        create_collection(ctx, {"name": "desk", "schemas": ["note"]})
    yield empty_database


def ctx_of(s: Session) -> Ctx:
    return Ctx(session=s, actor="tester", files_dir=Path("."))


def exact(s: Session) -> dict[tuple[str, str], int]:
    return {(d, sc): n for d, sc, n in s.execute(
        select(Record.dataset_id, Record.schema_id, func.count()).where(Record.deleted_at.is_(None))
        .group_by(Record.dataset_id, Record.schema_id))}


def kept(s: Session) -> dict[tuple[str, str], int]:
    rows = s.execute(select(RecordCount.dataset_id, RecordCount.schema_id, RecordCount.live))
    return {(d, sc): int(n) for d, sc, n in rows if n}


def exact_days(s: Session) -> dict[tuple[str, str, str], int]:
    day = func.substr(Record.created_at, 1, 10)
    return {(d, c, sc): n for d, c, sc, n in s.execute(
        select(day, Record.dataset_id, Record.schema_id, func.count()).group_by(day, Record.dataset_id, Record.schema_id))}


def kept_days(s: Session) -> dict[tuple[str, str, str], int]:
    rows = s.execute(select(RecordDay.day, RecordDay.dataset_id, RecordDay.schema_id, RecordDay.created))
    return {(day, d, sc): int(n) for day, d, sc, n in rows if n}


def keeps(db: Database) -> bool:
    return kept_counts.kept(db.engine.dialect.name)


def sites(s: Session) -> list[Record]:
    return list(s.scalars(select(Record).where(Record.parent_id.is_(None), Record.deleted_at.is_(None))
                          .order_by(Record.id)))


def _create(s: Session) -> None:
    site = create_record(ctx_of(s), "lab", {"schema_name": "site", "data": {"name": "North"}})
    bulk_create_records(ctx_of(s), "lab", [{"schema_name": "sample", "parent_record_id": site.id, "data": {"n": i}}
                                          for i in range(5)])
    bulk_create_records(ctx_of(s), "desk", [{"schema_name": "note", "data": {"text": "t"}} for _ in range(3)])


def _delete_one_with_children(s: Session) -> None:
    delete_records(ctx_of(s), sites(s)[:1], force=True)


def _restore(s: Session) -> None:
    restore_records(ctx_of(s), list(s.scalars(select(Record).where(Record.deleted_at.is_not(None)))))


def _purge_samples(s: Session) -> None:
    purge_records(ctx_of(s), list(s.scalars(select(Record).where(Record.parent_id.is_not(None)).limit(2))))


def _cascade(s: Session) -> None:  # the database deletes the children with their parent
    s.execute(text("DELETE FROM records WHERE id = :id"), {"id": sites(s)[0].id})


def _collection_deleted_restored_purged(s: Session) -> None:
    delete_collection(ctx_of(s), "desk")
    restore_collection(ctx_of(s), "desk")
    delete_collection(ctx_of(s), "desk")
    purge_collection(ctx_of(s), "desk")


def _moved_by_any_statement(s: Session) -> None:  # to another collection and schema, and a deleted one
    note = s.scalars(select(Record.id).where(Record.parent_id.is_(None), Record.deleted_at.is_(None))).first()
    desk = find_collection(s, "desk").id
    s.execute(update(Record).where(Record.id == note).values(dataset_id=desk))
    s.execute(text("INSERT INTO records (id, dataset_id, schema_id, data, created_at, updated_at, deleted_at) "
                   "SELECT 'X' || id, dataset_id, schema_id, data, created_at, updated_at, created_at "
                   "FROM records WHERE id = :id"), {"id": note})


def _backdated(s: Session) -> None:  # another day, and another time of the same day
    (first, _), (second, at) = s.execute(select(Record.id, Record.created_at).order_by(Record.id).limit(2)).all()
    s.execute(update(Record).where(Record.id == first).values(created_at=datetime(2020, 2, 3, 4, 5, 6, tzinfo=UTC)))
    s.execute(update(Record).where(Record.id == second).values(created_at=at + timedelta(seconds=1)))


STEPS: list[Callable[[Session], None]] = [_create, _create, _delete_one_with_children, _restore, _purge_samples,
                                          _create, _cascade, _moved_by_any_statement, _backdated,
                                          _collection_deleted_restored_purged]


MOMENTS = [datetime(2024, 3, d, h, m, tzinfo=UTC) for d, h, m in
           ((1, 0, 0), (1, 9, 30), (1, 23, 59), (2, 0, 0), (2, 12, 0), (3, 6, 15), (4, 0, 0))]
BOUNDS = [None, "2024-03-01", "2024-03-01T09:30:00Z", "2024-03-01T10:00:00Z", "2024-03-02", "2024-03-02T12:00:00Z",
          "2024-03-03T06:15:00+00:00", "2024-03-03T08:00:00+02:00", "2024-03-04"]


def test_the_growth_chart_counts_whole_days_and_parts_of_days(db: Database) -> None:
    """Every pair of bounds (whole days, times of day, the same day, none) counts what a count of
    the records themselves gives: SQLite from the kept days and the parts of days, PostgreSQL
    from the records."""
    with db.session() as s, s.begin():
        for _ in range(2):
            _create(s)
        ids = s.scalars(select(Record.id).order_by(Record.id)).all()
        for i, rid in enumerate(ids):
            s.execute(update(Record).where(Record.id == rid).values(created_at=MOMENTS[i % len(MOMENTS)]))
    with db.session() as s:
        rows = s.execute(select(Record.created_at, Record.dataset_id, Record.schema_id)).all()
        names = {**dict(s.execute(select(Collection.id, Collection.name)).all()),
                 **dict(s.execute(select(Schema.id, Schema.name)).all())}
        for start, end in itertools.product(BOUNDS, BOUNDS):
            low = analytics.parse_instant("start", start)
            high = analytics.parse_instant("end", end)
            expected = Counter((at.astimezone(UTC).date().isoformat(), names[d], names[sc]) for at, d, sc in rows
                               if (low is None or at >= low) and (high is None or at < high))
            got = analytics.records_growth(s, start=start, end=end)["items"]
            assert {(i["bucket"], i["dataset"], i["schema_name"]): i["count"] for i in got} == expected, (start, end)


def test_the_kept_counts_follow_every_kind_of_write(db: Database) -> None:
    for step in STEPS:
        with db.session() as s, s.begin():
            step(s)
        with db.session() as s:
            assert kept(s) == (exact(s) if keeps(db) else {}), step.__name__
            assert kept_days(s) == (exact_days(s) if keeps(db) else {}), step.__name__


def test_collections_and_record_counts_answer_from_them(db: Database) -> None:
    for step in STEPS[:3]:
        with db.session() as s, s.begin():
            step(s)
    with db.session() as s:
        lab = find_collection(s, "lab")
        live = exact(s)
        assert collection_response(s, lab)["record_count"] == sum(n for (d, _), n in live.items() if d == lab.id) == 6
        assert record_counts(s, "lab", RecordQuery()) == {"counts": {"site": 1, "sample": 5}, "total": 6}
        assert record_counts(s, "lab", RecordQuery(schema="sample")) == {"counts": {"sample": 5}, "total": 5}
        filtered = RecordQuery(schema="sample", filter='{"field": "n", "op": "lt", "value": 2}')
        assert record_counts(s, "lab", filtered) == {"counts": {"sample": 2}, "total": 2}
        counted = {"items": [{"dataset": "desk", "schema_name": "note", "count": 6},
                             {"dataset": "lab", "schema_name": "sample", "count": 5},
                             {"dataset": "lab", "schema_name": "site", "count": 1}]}
        assert analytics.records_counts(s) == counted
        assert analytics.records_counts(s, collection="lab", schema="site") == {"items": [counted["items"][2]]}
        assert analytics.records_counts(s, collection="nowhere") == {"items": []}
        if keeps(db):
            s.execute(text("UPDATE record_counts SET live = live + 100"))  # what is read is what is kept
            assert collection_response(s, lab)["record_count"] == 206
            assert [i["count"] for i in analytics.records_counts(s)["items"]] == [106, 105, 101]
            s.execute(text("UPDATE record_counts SET live = 0 WHERE live = 101"))  # none left: not listed
            assert [i["count"] for i in analytics.records_counts(s)["items"]] == [106, 105]
            s.rollback()


def test_the_upgrade_counts_the_records_and_the_downgrade_drops_the_triggers(db: Database) -> None:
    with db.session() as s, s.begin():
        _create(s)
        before = exact(s)
    url = db.engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0018_audit_day_index")
    try:
        with db.engine.begin() as conn:  # written while nothing counted
            conn.execute(text("DELETE FROM records WHERE parent_id IS NOT NULL"))
    finally:
        upgrade(db.engine)
    with db.session() as s:
        assert exact(s) != before
        assert kept(s) == (exact(s) if keeps(db) else {})
        assert kept_days(s) == (exact_days(s) if keeps(db) else {})
    if keeps(db):
        with db.engine.connect() as conn:
            assert kept_counts.present(conn) == {*kept_counts.TRIGGERS, *kept_counts.DAY_TRIGGERS}
            assert GROWTH_INDEX not in present_indexes(conn)
    command.downgrade(alembic_config(url), "0019_record_counts")
    try:
        with db.engine.connect() as conn:
            assert "record_days" not in inspect(conn).get_table_names()
            assert (GROWTH_INDEX in present_indexes(conn)) is keeps(db)
            if keeps(db):
                assert kept_counts.present(conn) == set(kept_counts.TRIGGERS)
    finally:
        upgrade(db.engine)
