"""History entries per UTC day, action and entity type, kept by SQLite (migration 0021,
``persistence.audit_days``): after every kind of write the kept counts equal a count of the
entries, and the history chart answers from them, whole days and parts of days alike; on
PostgreSQL nothing is kept and the answers are the same."""
from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import delete, func, select, text, update
from sqlalchemy.orm import Session

from benchbook.domain import analytics
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.writes import create_record, delete_records, update_record
from benchbook.maintenance.doctor import present_indexes
from benchbook.persistence import audit_days
from benchbook.persistence.db import Database, alembic_config, upgrade
from benchbook.persistence.tables import AuditDay, AuditEntry, Record

AUDIT_DAY_INDEX = "ix_audit_entries_day"  # made by migration 0018, dropped by 0021 on SQLite

MOMENTS = [datetime(2024, 3, d, h, m, tzinfo=UTC) for d, h, m in
           ((1, 0, 0), (1, 9, 30), (1, 23, 59), (2, 0, 0), (2, 12, 0), (3, 6, 15), (4, 0, 0))]
BOUNDS = [None, "2024-03-01", "2024-03-01T09:30:00Z", "2024-03-01T10:00:00Z", "2024-03-02", "2024-03-02T12:00:00Z",
          "2024-03-03T06:15:00+00:00", "2024-03-03T08:00:00+02:00", "2024-03-04"]


@pytest.fixture
def db(empty_database: Database) -> Iterator[Database]:
    with empty_database.session() as s, s.begin():
        ctx = ctx_of(s)
        create_schema(ctx, {"name": "site", "fields": [{"name": "name", "type": "string"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["site"]})
    yield empty_database


def ctx_of(s: Session) -> Ctx:
    return Ctx(session=s, actor="tester", files_dir=Path("."))


def exact(s: Session) -> dict[tuple[str, str, str], int]:
    day = func.substr(AuditEntry.timestamp, 1, 10)
    return {(d, a, e): n for d, a, e, n in s.execute(
        select(day, AuditEntry.action, AuditEntry.entity_type, func.count())
        .group_by(day, AuditEntry.action, AuditEntry.entity_type))}


def kept(s: Session) -> dict[tuple[str, str, str], int]:
    rows = s.execute(select(AuditDay.day, AuditDay.action, AuditDay.entity_type, AuditDay.entries))
    return {(d, a, e): int(n) for d, a, e, n in rows if n}


def keeps(db: Database) -> bool:
    return audit_days.kept(db.engine.dialect.name)


def _writes(s: Session) -> None:
    ctx = ctx_of(s)
    rec = create_record(ctx, "lab", {"schema_name": "site", "data": {"name": "North"}})
    bulk_create_records(ctx, "lab", [{"schema_name": "site", "data": {"name": f"s{i}"}} for i in range(4)])
    update_record(ctx, rec.id, {"data": {"name": "South"}})
    delete_records(ctx, [rec], force=True)


def _moved_and_removed(s: Session) -> None:  # by any statement: another day, another action, gone
    first, second, third = s.scalars(select(AuditEntry.id).order_by(AuditEntry.id).limit(3)).all()
    s.execute(update(AuditEntry).where(AuditEntry.id == first).values(timestamp=datetime(2020, 2, 3, tzinfo=UTC)))
    s.execute(update(AuditEntry).where(AuditEntry.id == second).values(action="restore"))
    s.execute(delete(AuditEntry).where(AuditEntry.id == third))


def test_the_kept_days_follow_every_kind_of_write(db: Database) -> None:
    for step in (_writes, _writes, _moved_and_removed):
        with db.session() as s, s.begin():
            step(s)
        with db.session() as s:
            assert kept(s) == (exact(s) if keeps(db) else {}), step.__name__


def test_the_history_chart_counts_whole_days_and_parts_of_days(db: Database) -> None:
    """Every pair of bounds counts what a count of the entries themselves gives: SQLite from the
    kept days and the parts of days, PostgreSQL from the entries."""
    with db.session() as s, s.begin():
        _writes(s)
        for i, eid in enumerate(s.scalars(select(AuditEntry.id).order_by(AuditEntry.id)).all()):
            s.execute(update(AuditEntry).where(AuditEntry.id == eid).values(timestamp=MOMENTS[i % len(MOMENTS)]))
    with db.session() as s:
        rows = s.execute(select(AuditEntry.timestamp, AuditEntry.action, AuditEntry.entity_type)).all()
        for start, end in itertools.product(BOUNDS, BOUNDS):
            low, high = analytics.parse_instant("start", start), analytics.parse_instant("end", end)
            expected = Counter((at.astimezone(UTC).date().isoformat(), a, e) for at, a, e in rows
                               if (low is None or at >= low) and (high is None or at < high))
            got = analytics.audit_events(s, start=start, end=end)["items"]
            assert {(i["bucket"], i["action"], i["entity_type"]): i["count"] for i in got} == expected, (start, end)
            only = analytics.audit_events(s, start=start, end=end, action="create", entity_type="record")["items"]
            assert {(i["bucket"], i["action"], i["entity_type"]): i["count"] for i in only} == {
                k: n for k, n in expected.items() if k[1:] == ("create", "record")}, (start, end)
        if keeps(db):
            s.execute(text("UPDATE audit_days SET entries = entries + 10"))  # what is read is what is kept
            assert sum(i["count"] for i in analytics.audit_events(s, start="2024-03-02", end="2024-03-03")["items"]) \
                == sum(1 for at, _, _ in rows if at.date().isoformat() == "2024-03-02") + 10 * s.scalar(
                    select(func.count()).select_from(AuditDay).where(AuditDay.day == "2024-03-02"))
            s.rollback()


def test_the_upgrade_counts_the_entries_and_the_downgrade_brings_the_index_back(db: Database) -> None:
    url = db.engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0020_record_days")
    try:
        with db.engine.connect() as conn:
            assert (AUDIT_DAY_INDEX in present_indexes(conn)) is keeps(db)
        with db.session() as s, s.begin():
            _writes(s)  # written while nothing counted
            assert s.scalar(select(func.count()).select_from(Record)) == 5
    finally:
        upgrade(db.engine)
    with db.session() as s:
        assert kept(s) == (exact(s) if keeps(db) else {})
    if keeps(db):
        with db.engine.connect() as conn:
            assert audit_days.present(conn) == set(audit_days.TRIGGERS)
            assert AUDIT_DAY_INDEX not in present_indexes(conn)
