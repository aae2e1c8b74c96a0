"""A record's create and delete entries keep its values, name and parent only once the record
changes (migrations 0017 and 0023, ``domain.history.own_values``): written with the schema's and
the collection's names alone, they answer the whole record as it was created, and as it was when
deleted, whatever happens to the record afterwards, on both backends."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from benchbook.domain.catalog.collections import create_collection, delete_collection, purge_collection
from benchbook.domain.catalog.fields import delete_field, purge_field
from benchbook.domain.catalog.lookup import SchemaCache
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history import storage as history_storage
from benchbook.domain.history.entries import entry_responses
from benchbook.domain.history.events import list_events
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.rows import identity, purge_records, restore_records
from benchbook.domain.records.writes import create_record, delete_records, update_record
from benchbook.persistence import entry_triggers
from benchbook.persistence.db import Database, alembic_config, upgrade
from benchbook.persistence.tables import AuditEntry, Collection, Record
from tests.conftest import statements_sent
from tests.domain.data_sets import DataSets
from tests.waiting import HANG

CREATED = {"label": "first", "n": 1}


def lab(ctx: Ctx) -> None:
    """Schemas site → sample (label, n), collection ``lab`` with one site."""
    create_schema(ctx, {"name": "site", "fields": [{"name": "name", "type": "string"}]})
    create_schema(ctx, {"name": "sample", "parent": "site", "display_template": "{label}", "fields": [
        {"name": "label", "type": "string"}, {"name": "n", "type": "integer"}]})
    create_collection(ctx, {"name": "lab", "schemas": ["site", "sample"]})
    create_record(ctx, "lab", {"schema_name": "site", "data": {"name": "North"}})


@pytest.fixture
def db(data_sets: DataSets) -> Iterator[Database]:
    """The data set of :func:`lab` for this test alone: every test here writes (on SQLite a copy
    of the file built once per module, without migrating a new file for each test)."""
    with data_sets.fresh(lab) as database:
        yield database


def ctx_of(s: Session) -> Ctx:
    return Ctx(session=s, actor="tester", files_dir=Path("."))


def site_id(s: Session) -> str:
    return s.scalars(select(Record.id).where(Record.parent_id.is_(None))).one()


def new_sample(db: Database, *, bulk: bool) -> str:
    """A sample holding ``CREATED``, made by a single create or the bulk path."""
    with db.session() as s, s.begin():
        body = {"schema_name": "sample", "parent_record_id": site_id(s), "data": dict(CREATED)}
        if bulk:
            return bulk_create_records(ctx_of(s), "lab", [body])[0]
        return create_record(ctx_of(s), "lab", body).id


def stored_create(db: Database, record_id: str) -> dict[str, Any]:
    """The create entry's ``new_data`` as the database holds it."""
    with db.engine.connect() as conn:
        table = AuditEntry.__table__
        return dict(conn.execute(select(table.c.new_data).where(
            table.c.entity_id == record_id, table.c.action == "create")).scalar_one())


def stored_old(db: Database, record_id: str, action: str) -> dict[str, Any]:
    """The ``old_data`` of the record's one ``action`` entry as the database holds it (columns
    named: it reads a database an older revision left too)."""
    with db.engine.connect() as conn:
        table = AuditEntry.__table__
        return dict(conn.execute(select(table.c.old_data).where(
            table.c.entity_id == record_id, table.c.action == action)).scalar_one())


def create_read(s: Session, record_id: str) -> dict[str, Any]:
    """The create entry as the API shapes it (``entry_responses``)."""
    entry = s.scalars(select(AuditEntry).where(AuditEntry.entity_id == record_id, AuditEntry.action == "create")).one()
    return entry_responses(s, [entry])[0]


def field_ids(s: Session) -> dict[str, str]:
    from benchbook.persistence.tables import Field
    return {f.name: f.id for f in s.scalars(select(Field))}


def created_values(s: Session) -> dict[str, Any]:
    ids = field_ids(s)
    return {ids[k]: v for k, v in CREATED.items()}


def whole_identity(s: Session, record_id: str, *, collection: bool = True) -> dict[str, Any]:
    """The record's identity as it stands now (``rows.identity``; a delete's names no collection)."""
    rec = s.get(Record, record_id)
    coll = s.get(Collection, rec.dataset_id) if collection else None
    return identity(rec, SchemaCache(s).meta(rec.schema_id), coll)


@pytest.mark.parametrize("bulk", [False, True], ids=["single", "bulk"])
def test_a_create_entry_is_written_with_the_names_alone_and_read_whole(db: Database, bulk: bool) -> None:
    rid = new_sample(db, bulk=bulk)
    assert stored_create(db, rid) == {"schema_name": "sample", "collection": "lab"}
    with db.session() as s:
        read = create_read(s, rid)
        assert read["new_data"] == {**whole_identity(s, rid), "data": created_values(s)}
        assert read["new_data"]["natural_name"] == "first" and read["new_data"]["parent_record_id"] == site_id(s)
        assert list(read["new_data"]) == ["id", "schema_name", "dataset_id", "collection", "parent_record_id",
                                          "natural_name", "data"]
        assert {c["field"]: c["after"] for c in read["changes"]} == created_values(s)


def _update(s: Session, rid: str) -> None:
    update_record(ctx_of(s), rid, {"data": {"label": "second", "n": 2}})


def _soft_delete_and_restore(s: Session, rid: str) -> None:
    rec = s.get(Record, rid)
    delete_records(ctx_of(s), [rec], force=False)
    restore_records(ctx_of(s), [rec])


def _purge(s: Session, rid: str) -> None:
    purge_records(ctx_of(s), [s.get(Record, rid)])


def _purge_parent(s: Session, rid: str) -> None:  # the database cascades to the sample
    s.execute(text("DELETE FROM records WHERE id = :id"), {"id": site_id(s)})


def _purge_collection(s: Session, rid: str) -> None:
    delete_collection(ctx_of(s), "lab")
    purge_collection(ctx_of(s), "lab")


def _purge_field(s: Session, rid: str) -> None:
    delete_field(ctx_of(s), "sample", "n")
    purge_field(ctx_of(s), "sample", "n")


def _any_statement(s: Session, rid: str) -> None:
    s.execute(update(Record).where(Record.id == rid).values(data={}))


def _any_rename(s: Session, rid: str) -> None:  # as derived.follow_names renames a child
    s.execute(update(Record).where(Record.id == rid).values(natural_name="renamed"))


def _move(s: Session, rid: str) -> None:
    other = create_record(ctx_of(s), "lab", {"schema_name": "site", "data": {"name": "South"}}).id
    update_record(ctx_of(s), rid, {"parent_record_id": other})


CHANGES: dict[str, tuple[Callable[[Session, str], None], bool]] = {
    # what happens to the record → (it, whether the values are copied into the entry)
    "update": (_update, True),
    "soft delete and restore": (_soft_delete_and_restore, False),
    "purge": (_purge, True),
    "cascade from the parent": (_purge_parent, True),
    "purge of its collection": (_purge_collection, True),
    "purge of a field": (_purge_field, True),
    "any UPDATE of its values": (_any_statement, True),
    "any UPDATE of its name": (_any_rename, True),
    "a move to another parent": (_move, True),
}


@pytest.mark.parametrize("bulk", [False, True], ids=["single", "bulk"])
@pytest.mark.parametrize("change", list(CHANGES))
def test_the_values_it_was_created_with_survive_whatever_follows(db: Database, change: str, bulk: bool) -> None:
    rid = new_sample(db, bulk=bulk)
    with db.session() as s:
        expected = created_values(s)
        created = create_read(s, rid)["new_data"]
    act, copies = CHANGES[change]
    with db.session() as s, s.begin():
        act(s, rid)
    stored = stored_create(db, rid)
    assert ("data" in stored) is copies  # copied in only when the record's values, name or parent change or it goes
    if copies:
        assert stored == {"schema_name": "sample", "collection": "lab", "natural_name": "first",
                          "parent_record_id": created["parent_record_id"], "data": expected}
    with db.session() as s:
        read = create_read(s, rid)
        assert read["new_data"] == created
        assert {c["field"]: c["after"] for c in read["changes"]} == expected


def test_a_change_later_in_the_same_transaction_is_seen(db: Database) -> None:
    """The session still holds the entry as written (no values); the reader asks the database."""
    with db.session() as s, s.begin():
        rid = create_record(ctx_of(s), "lab", {"schema_name": "sample", "parent_record_id": site_id(s),
                                               "data": dict(CREATED)}).id
        loaded = s.scalars(select(AuditEntry).where(AuditEntry.entity_id == rid)).one()
        assert "data" not in loaded.new_data
        _update(s, rid)
        assert create_read(s, rid)["new_data"]["data"] == created_values(s)
        assert s.get(Record, rid).data != created_values(s)


def test_an_update_that_changes_no_value_name_or_parent_copies_nothing(db: Database) -> None:
    rid = new_sample(db, bulk=True)
    with db.session() as s, s.begin():
        rec = s.get(Record, rid)
        values, name, parent = dict(rec.data), rec.natural_name, rec.parent_id
        s.execute(update(Record).where(Record.id == rid).values(data=values, natural_name=name, parent_id=parent,
                                                                updated_at=rec.created_at))
    assert "data" not in stored_create(db, rid)


def test_an_entry_written_before_0023_keeps_its_own_name(db: Database) -> None:
    """A key the entry holds is never overwritten by the record's (``json_insert``, ``||``)."""
    rid = new_sample(db, bulk=False)
    with db.session() as s, s.begin():  # as 0017 wrote it: the whole identity, no values
        whole = {k: v for k, v in create_read(s, rid)["new_data"].items() if k != "data"}
        s.execute(update(AuditEntry).where(AuditEntry.entity_id == rid, AuditEntry.action == "create")
                  .values(new_data=whole))
    with db.session() as s, s.begin():
        s.execute(update(Record).where(Record.id == rid).values(natural_name="later"))
    with db.session() as s, s.begin():
        _update(s, rid)
    assert stored_create(db, rid) == {**whole, "data": created_values_of(db)}


def entry_values(db: Database, record_id: str, action: str) -> list[dict[str, Any]]:
    """``(old_data, new_data)`` of each of the record's ``action`` entries as the database holds
    them and as the API shapes them, oldest first: ``[{"stored": …, "read": …}]``."""
    with db.session() as s:
        entries = list(s.scalars(select(AuditEntry).where(AuditEntry.entity_id == record_id, AuditEntry.action == action)
                                 .order_by(AuditEntry.id)))
        stored = [dict(s.execute(select(AuditEntry.__table__.c.old_data).where(AuditEntry.id == e.id)).scalar_one())
                  for e in entries]
        return [{"stored": st, "read": read} for st, read in zip(stored, entry_responses(s, entries))]


def test_a_delete_entry_keeps_the_values_lost_whatever_follows(db: Database) -> None:
    rid = new_sample(db, bulk=True)
    with db.session() as s, s.begin():
        delete_records(ctx_of(s), [s.get(Record, rid)], force=False)
        expected = created_values(s)
    [first] = entry_values(db, rid, "delete")
    assert first["stored"] == {"schema_name": "sample", "collection": None}
    with db.session() as s:
        assert first["read"]["old_data"] == {**whole_identity(s, rid, collection=False), "data": expected}
    assert {c["field"]: (c["before"], c["after"]) for c in first["read"]["changes"]} == {
        k: (v, None) for k, v in expected.items()}  # a delete lists the values lost
    with db.session() as s, s.begin():  # back, edited, deleted again, purged
        restore_records(ctx_of(s), [s.get(Record, rid)])
        _update(s, rid)
        second_values = dict(s.get(Record, rid).data)
        delete_records(ctx_of(s), [s.get(Record, rid)], force=False)
    first, second = entry_values(db, rid, "delete")
    assert first["stored"]["data"] == expected  # copied in by the edit
    assert "data" not in second["stored"] and second["read"]["old_data"]["data"] == second_values
    with db.session() as s, s.begin():
        _purge(s, rid)
    first, second = entry_values(db, rid, "delete")
    assert second["stored"]["data"] == second_values  # copied in by the purge
    assert first["read"]["old_data"]["data"] == expected
    with db.session() as s:
        assert create_read(s, rid)["new_data"]["data"] == expected


def test_the_events_search_finds_values_the_record_still_holds(db: Database) -> None:
    rid = new_sample(db, bulk=False)
    with db.session() as s:
        found = list_events(s, q="first", tree=None, sort=None, limit=10, offset=0)
        assert [e["entry"]["entity_id"] for e in found["items"]] == [rid]
        assert list_events(s, q="second", tree=None, sort=None, limit=10, offset=0)["items"] == []
    with db.session() as s, s.begin():
        _update(s, rid)
    with db.session() as s:  # the create entry by its values then, the update by both
        found = list_events(s, q="first", tree=None, sort=None, limit=10, offset=0)
        assert sorted(e["entry"]["action"] for e in found["items"]) == ["create", "update"]
        found = list_events(s, q="second", tree=None, sort=None, limit=10, offset=0)
        assert [e["entry"]["action"] for e in found["items"]] == ["update"]
    with db.session() as s, s.begin():
        delete_records(ctx_of(s), [s.get(Record, rid)], force=False)
    with db.session() as s:  # the delete entry by the values it lost, still the record's own
        found = list_events(s, q="second", tree=None, sort=None, limit=10, offset=0)
        assert sorted(e["entry"]["action"] for e in found["items"]) == ["delete", "update"]


def test_the_events_search_finds_what_is_read_from_the_record_or_the_entry(db: Database) -> None:
    """The name, parent, id and collection id a create entry no longer stores (0023) are found
    as they are answered: the record's while it is unchanged, the copied ones after."""
    rid = new_sample(db, bulk=True)

    def creates(q: str) -> list[str]:
        with db.session() as s:
            found = list_events(s, q=q, tree=None, sort=None, limit=10, offset=0)["items"]
        return [e["entry"]["entity_id"] for e in found if e["kind"] == "entry" and e["entry"]["action"] == "create"] + \
            [e["batch"]["id"] for e in found if e["kind"] == "batch"]

    with db.session() as s:
        site, collection = site_id(s), s.get(Record, rid).dataset_id
    assert creates(rid) == [rid] and creates(rid[-6:].lower()) == [rid]
    assert set(creates(site)) == {site, rid}  # the site's own create, and the sample's by its parent
    assert set(creates(collection)) == {collection, site, rid}
    with db.session() as s, s.begin():
        s.execute(update(Record).where(Record.id == rid).values(natural_name="renamed"))
    assert creates("renamed") == []
    with db.session() as s:
        assert create_read(s, rid)["new_data"]["natural_name"] == "first"


def test_the_downgrade_to_0022_writes_the_identity_back(db: Database) -> None:
    created = new_sample(db, bulk=True)
    deleted = new_sample(db, bulk=False)
    with db.session() as s, s.begin():
        delete_records(ctx_of(s), [s.get(Record, deleted)], force=False)
    with db.session() as s:
        before = {rid: (create_read(s, rid), entry_values(db, rid, "delete")) for rid in (created, deleted)}
    url = db.engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0022_edits_index")
    try:
        for rid in (created, deleted):
            whole = before[rid][0]["new_data"]
            assert stored_create(db, rid) == {k: v for k, v in whole.items() if k != "data"}
        [gone] = before[deleted][1]
        assert stored_old(db, deleted, "delete") == {
            k: v for k, v in gone["read"]["old_data"].items() if k != "data"}
        assert triggers(db) == set(entry_triggers.TRIGGERS)
        with db.session() as s, s.begin():  # 0017's triggers: a rename alone copies nothing
            s.execute(update(Record).where(Record.id == created).values(natural_name="renamed"))
        assert "data" not in stored_create(db, created)
    finally:
        upgrade(db.engine)
    with db.session() as s:
        assert create_read(s, created) == before[created][0]
        assert create_read(s, deleted) == before[deleted][0]
    assert entry_values(db, deleted, "delete")[0]["read"] == before[deleted][1][0]["read"]


def restored(db: Database) -> tuple[str, dict[str, Any]]:
    """A sample deleted and restored: ``(its id, its restore entry as answered)``."""
    rid = new_sample(db, bulk=True)
    with db.session() as s, s.begin():
        delete_records(ctx_of(s), [s.get(Record, rid)], force=False)
    with db.session() as s, s.begin():
        restore_records(ctx_of(s), [s.get(Record, rid)])
    [entry] = entry_values(db, rid, "restore")
    return rid, entry["read"]


def stored_restore(db: Database, record_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    with db.engine.connect() as conn:
        table = AuditEntry.__table__
        old, new = conn.execute(select(table.c.old_data, table.c.new_data).where(
            table.c.entity_id == record_id, table.c.action == "restore")).one()
        return dict(old), dict(new)


@pytest.mark.parametrize("change", ["rename", "move", "purge"])
def test_a_restore_entry_stores_the_names_alone_and_keeps_the_record_as_it_was(db: Database, change: str) -> None:
    rid, read = restored(db)
    names = {"schema_name": "sample", "collection": None}
    assert stored_restore(db, rid) == (names, names)
    with db.session() as s:
        ident = whole_identity(s, rid, collection=False)
    assert read["old_data"] == read["new_data"] == ident and read["changes"] == []
    with db.session() as s, s.begin():
        {"rename": _any_rename, "move": _move, "purge": _purge}[change](s, rid)
    copied = {**names, "natural_name": "first", "parent_record_id": ident["parent_record_id"]}
    assert stored_restore(db, rid) == (copied, copied)
    after = entry_values(db, rid, "restore")[0]["read"]
    assert {k: v for k, v in after.items() if k != "now"} == {k: v for k, v in read.items() if k != "now"}


def test_the_events_search_finds_a_restore_by_the_name_it_was_made_under(db: Database) -> None:
    rid, _ = restored(db)

    def actions(q: str) -> list[str]:
        with db.session() as s:
            found = list_events(s, q=q, tree=None, sort=None, limit=10, offset=0)["items"]
        return sorted(e["entry"]["action"] for e in found if e["kind"] == "entry" and e["entry"]["entity_id"] == rid)

    assert actions("first") == ["create", "delete", "restore"] and actions(rid[-8:]) == ["create", "delete", "restore"]
    with db.session() as s, s.begin():
        s.execute(update(Record).where(Record.id == rid).values(natural_name="renamed"))
    assert actions("renamed") == [] and actions("first") == ["create", "delete", "restore"]


def test_the_downgrade_to_0024_writes_the_restore_identity_back(db: Database) -> None:
    rid, read = restored(db)
    url = db.engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0024_identity_index")
    try:
        assert stored_restore(db, rid) == (read["old_data"], read["new_data"])
        with db.session() as s, s.begin():  # 0023's triggers leave restore entries alone
            s.execute(update(Record).where(Record.id == rid).values(natural_name="renamed"))
        assert stored_restore(db, rid)[1]["natural_name"] == "first"
    finally:
        upgrade(db.engine)
    assert entry_values(db, rid, "restore")[0]["read"] == read


def test_an_edit_stores_neither_ids_and_reads_them_from_its_columns(db: Database) -> None:
    rid = new_sample(db, bulk=True)
    with db.session() as s, s.begin():
        _update(s, rid)
        ident = whole_identity(s, rid)
        collection = s.get(Record, rid).dataset_id
    [edit] = entry_values(db, rid, "update")
    with db.engine.connect() as conn:
        table = AuditEntry.__table__
        old, new = conn.execute(select(table.c.old_data, table.c.new_data).where(
            table.c.entity_id == rid, table.c.action == "update")).one()
    assert "id" not in old and "id" not in new and "dataset_id" not in old and "dataset_id" not in new
    assert old["natural_name"] == new["natural_name"] == "second"  # the name of the edit's time stays
    for column in (edit["read"]["old_data"], edit["read"]["new_data"]):
        assert column["id"] == rid and column["dataset_id"] == collection
        assert list(column)[:6] == ["id", "schema_name", "dataset_id", "collection", "parent_record_id", "natural_name"]
    ids = field_ids_of(db)
    assert edit["read"]["new_data"] == {**ident, "data": {ids["label"]: "second", ids["n"]: 2}}
    assert {c["field"]: (c["before"], c["after"]) for c in edit["read"]["changes"]} == {
        ids["label"]: ("first", "second"), ids["n"]: (1, 2)}
    with db.session() as s:  # found by the record's id, as when the id was stored
        found = list_events(s, q=rid, tree=None, sort=None, limit=10, offset=0)["items"]
        assert sorted(e["entry"]["action"] for e in found) == ["create", "update"]
    command.downgrade(alembic_config(db.engine.url.render_as_string(hide_password=False)), "0025_restore_identity")
    try:
        assert stored_old(db, rid, "update")["id"] == rid  # written back
    finally:
        upgrade(db.engine)
    assert entry_values(db, rid, "update")[0]["read"] == edit["read"]


def field_ids_of(db: Database) -> dict[str, str]:
    with db.session() as s:
        return field_ids(s)


def triggers(db: Database) -> set[str]:
    with db.engine.connect() as conn:
        return entry_triggers.present(conn)


def test_the_downgrade_copies_the_values_in_and_the_upgrade_keeps_them(db: Database) -> None:
    rid = new_sample(db, bulk=True)
    with db.session() as s:
        before = create_read(s, rid)
    assert triggers(db) == set(entry_triggers.TRIGGERS) == {"records_keep_own_values_update",
                                                        "records_keep_own_values_delete"}
    url = db.engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0016_sort_indexes")
    try:
        assert triggers(db) == set()
        assert stored_create(db, rid)["data"] == before["new_data"]["data"]
    finally:
        upgrade(db.engine)
    assert stored_create(db, rid) == before["new_data"]  # an entry with values is read as it is
    with db.session() as s:
        assert create_read(s, rid) == before


def test_entries_written_before_0017_are_converted_in_the_background(db: Database) -> None:
    """A database written by the layout before 0017 (what the downgrade leaves: every create
    entry holding its values) reads the same before and after the conversion, which drops the
    values of the create entries whose record still holds them, and only those."""
    kept = [new_sample(db, bulk=bulk) for bulk in (False, True, True)]
    edited = new_sample(db, bulk=False)
    with db.session() as s, s.begin():
        _update(s, edited)
        site = site_id(s)
        delete_records(ctx_of(s), [s.get(Record, kept[0])], force=False)
    url = db.engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0016_sort_indexes")
    upgrade(db.engine)
    assert all("data" in stored_create(db, rid) for rid in [*kept, edited, site])
    with db.session() as s:
        expected = entry_responses(s, list(s.scalars(select(AuditEntry).order_by(AuditEntry.id))))
        # the six creates and deletes (five hold values their record holds, all six the identity
        # the downgrade through 0023 wrote back) and the edit (its ids, written back through 0026)
        assert history_storage.count_whole(s) == 6 + 1
    state = history_storage.HistoryStorage(db.engine)
    with statements_sent(db.engine) as sent:  # each step counts what it converts
        assert state.start() and state.wait(HANG) and state.total == 7 and state.done == 5 + 6 + 1
    if db.engine.dialect.name == "postgresql":  # a writer of one of the records waits for the conversion
        assert any("FROM records" in sql and "FOR SHARE" in sql for sql in sent)
    assert all("data" not in stored_create(db, rid) for rid in [*kept, site])
    assert "data" not in entry_values(db, kept[0], "delete")[0]["stored"]
    assert stored_create(db, edited)["data"] == {**created_values_of(db)}
    with db.session() as s:
        assert history_storage.count_whole(s) == 0
        assert entry_responses(s, list(s.scalars(select(AuditEntry).order_by(AuditEntry.id)))) == expected


def test_entries_written_before_0023_drop_their_identity_in_the_background(db: Database) -> None:
    """A database written by the layout before 0023 (what the downgrade to 0022 leaves: every
    create and delete entry holding the record's whole identity) reads the same before and after
    the conversion, which drops ``id`` and ``dataset_id`` from them all and the name and parent
    where the entry has no values and the record holds the same."""
    kept = new_sample(db, bulk=True)
    renamed = new_sample(db, bulk=False)
    edited = new_sample(db, bulk=False)
    deleted = new_sample(db, bulk=True)
    with db.session() as s, s.begin():
        _update(s, edited)
        delete_records(ctx_of(s), [s.get(Record, deleted)], force=False)
    url = db.engine.url.render_as_string(hide_password=False)
    command.downgrade(alembic_config(url), "0022_edits_index")
    with db.session() as s, s.begin():  # 0017's triggers: the entry keeps the name it was written with
        s.execute(update(Record).where(Record.id == renamed).values(natural_name="renamed"))
    upgrade(db.engine)
    with db.session() as s:
        site = site_id(s)
        expected = entry_responses(s, list(s.scalars(select(AuditEntry).order_by(AuditEntry.id))))
        assert history_storage.count_whole(s) == 6 + 1  # five creates (the site's too), a delete, the edit
    state = history_storage.HistoryStorage(db.engine)
    with statements_sent(db.engine) as sent:
        assert state.start() and state.wait(HANG) and state.done == 6 + 1
    if db.engine.dialect.name == "postgresql":  # a writer of one of the records waits for the conversion
        assert any("FROM records" in sql and "FOR SHARE" in sql for sql in sent)
    names = {"schema_name": "sample", "collection": "lab"}
    assert stored_create(db, kept) == names and stored_create(db, deleted) == names
    assert stored_create(db, renamed) == {**names, "natural_name": "first"}  # not the record's
    with db.session() as s:
        assert stored_create(db, edited) == {**names, "natural_name": "first", "parent_record_id": site,
                                             "data": created_values(s)}  # values of its own: kept whole
    assert entry_values(db, deleted, "delete")[0]["stored"] == {"schema_name": "sample", "collection": None}
    [edit] = entry_values(db, edited, "update")
    assert "id" not in edit["stored"] and "dataset_id" not in edit["stored"] and edit["read"]["old_data"]["id"] == edited
    with db.session() as s:
        assert history_storage.count_whole(s) == 0
        assert entry_responses(s, list(s.scalars(select(AuditEntry).order_by(AuditEntry.id)))) == expected


def created_values_of(db: Database) -> dict[str, Any]:
    with db.session() as s:
        return created_values(s)
