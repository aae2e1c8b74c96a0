"""The history's text search (``domain.history.text_match``): testing each JSON document's text
before walking it finds exactly what the walk alone finds, on both backends, whatever the text
(escaped characters, numbers, keys, letters of any case or script); and the events page built in
one statement pages and counts as before."""
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.history import restore_all, text_match
from benchbook.domain.history.events import list_events
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.writes import create_record, delete_records, update_record
from benchbook.persistence.db import Database
from benchbook.persistence.tables import Field, Record
from tests.domain.data_sets import DataSets

VALUES = [
    {"label": 'say "hi" twice', "x": 1e20, "n": 12345, "note": "back\\slash and tab\there", "flag": True,
     "tags": ["a", "b"]},
    {"label": "Café crème", "x": 0.1 + 0.2, "n": -7, "note": "THETA upper", "flag": False, "tags": ["key:value"]},
    {"label": "plain theta", "x": 2.5, "n": 0, "note": "100% sure_enough"},
]
QUERIES = ["true", "rue", "fals", "null", "ull", "1,", ",", ":", "[", "]", "{", "2.5,", "a,b", "key:", '"hi"', 'say "', "hi", "back\\slash", "\\", "tab\t", "café", "CAFÉ", "crème", "theta", "THETA",
           "1.0e", "1e+20", "e+20", "0.3", "0.30000000000000004", "12345", "-7", "2.5", "nan", "inf",
           "100%", "_enough", "%", "plain", "sample", "lab", "first", "renamed"]


def lab(ctx: Ctx) -> None:
    """Schemas site → sample (label, x, n, note), collection ``lab``: a site, three samples made
    in one batch and one alone, one of them edited and one deleted."""
    s = ctx.session
    create_schema(ctx, {"name": "site", "fields": [{"name": "name", "type": "string"}]})
    create_schema(ctx, {"name": "sample", "parent": "site", "display_template": "{label}", "fields": [
        {"name": "label", "type": "string"}, {"name": "x", "type": "float"},
        {"name": "n", "type": "integer"}, {"name": "note", "type": "string"},
        {"name": "flag", "type": "boolean"}, {"name": "tags", "type": "tags"}]})
    create_collection(ctx, {"name": "lab", "schemas": ["site", "sample"]})
    site = create_record(ctx, "lab", {"schema_name": "site", "data": {"name": "North"}}).id
    ids = bulk_create_records(ctx, "lab", [{"schema_name": "sample", "parent_record_id": site, "data": v}
                                           for v in VALUES[:2]])
    alone = create_record(ctx, "lab", {"schema_name": "sample", "parent_record_id": site, "data": VALUES[2]}).id
    update_record(ctx, ids[0], {"data": {"note": "first edit"}})
    delete_records(ctx, [s.get(Record, alone)], force=False)


@pytest.fixture
def db(data_sets: DataSets) -> Iterator[Database]:
    """The data set of :func:`lab`, built once per backend: every test here only reads it."""
    with data_sets.shared(lab) as database:
        yield database


def walked(monkeypatch: pytest.MonkeyPatch, s: Session, q: str, **page: Any) -> dict[str, Any]:
    """The events page as the walk alone finds it (no test of the documents' text)."""
    with monkeypatch.context() as m:
        m.setattr(text_match, "text_test_holds", lambda _q: False)
        m.setattr(text_match, "text_alone_holds", lambda _q: False)
        return list_events(s, q=q, tree=None, sort=None, **page)


@pytest.mark.parametrize("q", [*QUERIES, "a field id"])
def test_the_text_test_finds_what_the_walk_finds(db: Database, monkeypatch: pytest.MonkeyPatch, q: str) -> None:
    with db.session() as s:
        if q == "a field id":  # a part of a key of every sample's values (and of the field's own entries)
            q = s.scalar(select(Field.id).where(Field.name == "label"))[4:14].lower()
        for page in ({"limit": 50, "offset": 0}, {"limit": 2, "offset": 1}):
            assert list_events(s, q=q, tree=None, sort=None, **page) == walked(monkeypatch, s, q, **page)


def test_what_the_search_finds(db: Database) -> None:
    """A few answers spelled out, so that the comparison above cannot pass on two empty pages."""
    def found(q: str) -> int:
        with db.session() as s:
            return int(list_events(s, q=q, tree=None, sort=None, limit=50, offset=0)["total"])
    assert found('say "hi"') == 2  # the batch (its create), the edit (the name in its identity)
    assert found("theta") == 3  # the batch, and the lone sample's create and delete
    assert found("back\\slash") == 2  # the batch, and the edit that changed the note
    assert found("café") == 1 and found("12345") == 1 and found("100%") == 2 and found("1%") == 0
    assert found("first edit") == 1  # the edit alone: the batch's create holds the values it was made with


def test_the_text_alone_decides_only_where_it_cannot_err() -> None:
    assert text_match.text_alone_holds("alpha") and text_match.text_alone_holds("café")
    for q in ("theta", "01M8", "true", "ul", "a,b", "key:value", "[x", '"hi"', "1.0e"):
        assert not text_match.text_alone_holds(q), q


def test_the_text_test_is_skipped_where_it_could_miss() -> None:
    assert text_match.text_test_holds("theta") and text_match.text_test_holds("café crème")
    assert text_match.text_test_holds("12 monkeys") and text_match.text_test_holds("100%")
    for q in ('"hi"', "back\\slash", "tab\t", "1.0e", "1e+20", "-7", "0.3", "nan", "Infinity"):
        assert not text_match.text_test_holds(q), q


def test_a_page_past_the_end_still_counts(db: Database) -> None:
    with db.session() as s:
        first = list_events(s, q="theta", tree=None, sort=None, limit=50, offset=0)
        past = list_events(s, q="theta", tree=None, sort=None, limit=50, offset=10)
    assert first["total"] == 3 and past == {**first, "items": [], "offset": 10}


def test_restore_all_finds_a_deleted_record_by_its_name(db: Database) -> None:
    with db.session() as s:
        assert restore_all.plan(s, q="plain theta")["records"] == 1
        assert restore_all.plan(s, q="nothing like it")["records"] == 0
