"""The cyclic garbage collector is paused while a bulk call works (domain/collector.py): the
reading of an import's file, the import, the set-based create, the delete of many and the
restore-all run with it off, and it is on again afterwards however the call ends, when several
calls nest or overlap in threads."""
from __future__ import annotations

import gc
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from benchbook.domain import collector
from benchbook.domain.catalog.collections import create_collection
from benchbook.domain.catalog.schemas import create_schema
from benchbook.domain.context import Ctx
from benchbook.domain.errors import NotFound
from benchbook.domain.history import restore_all as restore_all_module
from benchbook.domain.history.restore_all import restore_all
from benchbook.domain.imports import readers, run
from benchbook.domain.imports.readers import read_table
from benchbook.domain.imports.run import ImportOptions, import_table
from benchbook.domain.records import bulk, deleting, rows
from benchbook.domain.records.bulk import bulk_create_records
from benchbook.domain.records.deleting import delete_by_query
from benchbook.domain.records.queries import RecordQuery
from benchbook.persistence.db import Database
from tests.waiting import HANG


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    """Each test starts with the collector on and leaves it as it found it."""
    was = gc.isenabled()
    gc.enable()
    yield
    (gc.enable if was else gc.disable)()


def test_paused_for_the_block_and_on_again_after() -> None:
    with collector.paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_when_the_block_raises() -> None:
    with pytest.raises(ZeroDivisionError), collector.paused():
        1 / 0  # noqa: B018
    assert gc.isenabled()


def test_nested_blocks_keep_it_paused_until_the_outer_one_ends() -> None:
    with collector.paused():
        with collector.paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_off_before_stays_off() -> None:
    gc.disable()
    with collector.paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_overlapping_blocks_in_threads_turn_it_on_when_the_last_one_ends() -> None:
    first_in, second_in, first_may_end, first_ended = (threading.Event() for _ in range(4))
    seen: dict[str, bool] = {}

    def first() -> None:
        with collector.paused():
            first_in.set()
            first_may_end.wait(HANG)
        first_ended.set()

    def second() -> None:
        first_in.wait(HANG)
        with collector.paused():
            second_in.set()
            first_ended.wait(HANG)
            seen["after the first ended"] = gc.isenabled()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for t in threads:
        t.start()
    second_in.wait(HANG)
    first_may_end.set()
    for t in threads:
        t.join(10)
    assert seen == {"after the first ended": False}
    assert gc.isenabled()


def _watch(monkeypatch: pytest.MonkeyPatch, module: Any, name: str, seen: list[tuple[str, bool]]) -> None:
    """Note ``name`` and whether the collector is on each time ``module.name`` is called."""
    real: Callable[..., Any] = getattr(module, name)

    def watched(*args: Any, **kwargs: Any) -> Any:
        seen.append((name, gc.isenabled()))
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, watched)


def test_bulk_calls_run_with_the_collector_paused(empty_database: Database, tmp_path: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[str, bool]] = []
    _watch(monkeypatch, readers, "_read_delimited", seen)  # the file read into rows
    _watch(monkeypatch, run, "merge_new_rows", seen)  # the import's check, before it writes
    _watch(monkeypatch, bulk, "insert_rows", seen)  # the set-based create's records
    _watch(monkeypatch, deleting, "record_rows", seen)  # the records a delete by query reads
    _watch(monkeypatch, rows, "insert_entries", seen)  # the delete's and the restore's entries
    _watch(monkeypatch, restore_all_module, "select_deleted", seen)  # what a restore-all reads
    with empty_database.session() as s, s.begin():
        ctx = Ctx(session=s, actor="tester", files_dir=tmp_path)
        create_schema(ctx, {"name": "day", "fields": [{"name": "t", "type": "float"}]})
        create_collection(ctx, {"name": "lab", "schemas": ["day"]})
        result = import_table(ctx, read_table(b"t\n1.5\n2.5\n", "days.csv"), ImportOptions(collection="lab", schema="day"))
        assert result.created == 2 and gc.isenabled()
        bulk_create_records(ctx, "lab", [{"schema_name": "day", "data": {"t": 3.5}}])
        assert gc.isenabled()
        assert delete_by_query(ctx, "lab", RecordQuery(), force=True)["deleted"] == 3 and gc.isenabled()
        assert restore_all(ctx)["restored"] == 3 and gc.isenabled()
        with pytest.raises(NotFound):
            bulk_create_records(ctx, "nowhere", [{"schema_name": "day", "data": {}}])
        assert gc.isenabled()
    assert {name for name, _ in seen} == {"_read_delimited", "merge_new_rows", "insert_rows", "record_rows", "insert_entries",
                                          "select_deleted"}
    assert [name for name, on in seen if on] == []
