"""History benchmarks (issue: "History you can trust"), run on demand, never in the tests.

    python bench/history.py [--records 100000]

Prints, measured in the same run on fresh SQLite projects:
- import rate through the domain with history, and without it (audit writes switched off in
  this process only), and their ratio (target >= 0.6);
- the time to delete every record of the collection as one batch and bring them all back with
  restore-all (target < 10 s at 100,000 records).
"""
from __future__ import annotations

import argparse
import tempfile
import time
from contextlib import contextmanager
from collections.abc import Iterator
from unittest import mock

from benchbook.config import Project
from benchbook.domain import audit
from benchbook.domain.catalog import SchemaCache
from benchbook.domain.collections import create_collection
from benchbook.domain.context import Ctx
from benchbook.domain.queries import RecordQuery
from benchbook.domain.record_lists import delete_by_query
from benchbook.domain.records import create_record
from benchbook.domain.restore_all import restore_all
from benchbook.domain.schemas import create_schema
from benchbook.persistence.db import open_database

FIELDS = [{"name": "n", "type": "integer"}, {"name": "x", "type": "float"}, {"name": "label", "type": "string"},
          {"name": "day", "type": "date"}]


@contextmanager
def project_ctx() -> Iterator[tuple[Ctx, object]]:
    project = Project.init(tempfile.mkdtemp(prefix="benchbook-bench-"))
    db = open_database(project.database_url)
    with db.session() as session:
        yield Ctx(session=session, actor="bench", files_dir=project.files_dir), session
    db.engine.dispose()


def load(ctx: Ctx, session: object, n: int) -> float:
    with session.begin():  # type: ignore[attr-defined]
        create_schema(ctx, {"name": "item", "fields": FIELDS})
        create_collection(ctx, {"name": "bench", "schemas": ["item"]})
    cache = SchemaCache(ctx.session)
    start = time.perf_counter()
    with session.begin():  # type: ignore[attr-defined]
        for i in range(n):
            create_record(ctx, "bench", {"schema_name": "item", "data": {
                "n": i, "x": i / 7, "label": f"item {i}", "day": f"2024-{1 + i % 12:02d}-{1 + i % 28:02d}"}},
                cache=cache)
    return n / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    n = parser.parse_args().records
    with project_ctx() as (ctx, session):
        with_history = load(ctx, session, n)
        start = time.perf_counter()
        with session.begin():  # type: ignore[attr-defined]
            deleted = delete_by_query(ctx, "bench", RecordQuery(), force=True)["deleted"]
        delete_s = time.perf_counter() - start
        start = time.perf_counter()
        with session.begin():  # type: ignore[attr-defined]
            result = restore_all(ctx)
        restore_s = time.perf_counter() - start
    with project_ctx() as (ctx, session), mock.patch.object(audit, "write"):
        without_history = load(ctx, session, n)
    print(f"records: {n}")
    print(f"import with history:    {with_history:10.0f} records/s")
    print(f"import without history: {without_history:10.0f} records/s")
    print(f"ratio with/without:     {with_history / without_history:10.2f}   (target >= 0.60)")
    print(f"delete {deleted} records as one batch: {delete_s:8.2f} s")
    print(f"restore-all ({result['records']} back, {result['blocked']} blocked): {restore_s:8.2f} s")
    print(f"delete + restore-all:   {delete_s + restore_s:10.2f} s   (target < 10 s at 100,000)")


if __name__ == "__main__":
    main()
