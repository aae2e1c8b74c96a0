"""Data sets built once per module and backend for the domain tests (:class:`DataSets`, the
fixture ``data_sets`` of ``tests/domain/conftest.py``)."""
from __future__ import annotations

import itertools
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

from sqlalchemy import text

from benchbook.domain.context import Ctx
from benchbook.persistence.db import Database, open_database
from benchbook.persistence.tables import Base
from tests.conftest import field_indexes, open_empty_database

Build = Callable[[Ctx], object]
"""Makes a data set through the domain code, in one transaction (``ctx.session``)."""


class DataSets:
    """A module's data sets on one backend, each made once by its ``build`` (issue 38: a module's
    3,000 records made again for each of its 42 tests cost 28 s of setup).

    :meth:`shared` is for a test that only reads its data, :meth:`fresh` for one that writes.
    Each gives the test a :class:`Database` with an engine of its own (no connection, setting
    or handler outlives the test), disposed afterwards.

    On SQLite a data set is built once into a template file and every test, reading or writing,
    gets a copy of it (SQLite's backup API: milliseconds), a database of its own as the test's
    own fixture gave it, without the migrations and the build.

    On PostgreSQL the data sets live in the session's test database (``pg_database``; one per
    xdist worker), which holds one at a time: :meth:`shared` builds the set there once (emptying
    the database first) and hands the same data to each reading test, building it again only
    after a :meth:`fresh` (which empties the database and builds the set for the one test that
    writes to it). After each shared test the rows of every table and the per-field indexes are
    compared with what the build left, so that a test which writes to a shared set fails
    instead of changing what the next test reads. A module using this fixture must not empty
    the session's database otherwise (``empty_database``, ``api``), which would take the data
    from under it.
    """

    def __init__(self, backend: str, url: str | None, root: Path) -> None:
        self.backend = backend
        self.url = url  # PostgreSQL: the session's test database
        self.root = root
        self.templates: dict[Build, Path] = {}  # SQLite: a file per data set, as built
        self.holding: tuple[Build, dict[str, Any]] | None = None  # PostgreSQL: the set held as built, its rows
        self.copies = itertools.count()

    @contextmanager
    def shared(self, build: Build) -> Iterator[Database]:
        """The data set of ``build`` for a test that only reads it (see the class)."""
        if self.backend == "sqlite":
            with self._copy(build) as database:
                yield database
            return
        assert self.url is not None
        if self.holding is None or self.holding[0] is not build:
            self.holding = None
            self._build(self.url, build).engine.dispose()
            self.holding = (build, rows_of(self.url))
        database = open_database(self.url)
        try:
            yield database
        finally:
            database.engine.dispose()
        built, after = self.holding[1], rows_of(self.url)
        if after != built:
            self.holding = None  # built again for the next test
            changed = {key: (built[key], after[key]) for key in built if built[key] != after[key]}
            raise AssertionError(f"a test of a shared data set wrote to it (before, after): {changed}")

    @contextmanager
    def fresh(self, build: Build) -> Iterator[Database]:
        """The data set of ``build`` made for this test alone, which may write to it."""
        if self.backend == "sqlite":
            with self._copy(build) as database:
                yield database
            return
        assert self.url is not None
        self.holding = None
        database = self._build(self.url, build)
        try:
            yield database
        finally:
            database.engine.dispose()

    def _build(self, url: str, build: Build) -> Database:
        database = open_empty_database(url)
        if database.engine.dialect.name == "postgresql":
            # dead rows gone (autovacuum may be off, or late): the emptying truncates the tables
            # holding rows, but rows a test deleted itself stay behind as dead rows, and a few
            # builds of 3,000 records deleted row by row made text_match's scans of audit_entries
            # 50 times slower in the next module
            names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
            with database.engine.connect().execution_options(isolation_level="AUTOCOMMIT") as conn:
                conn.execute(text(f"VACUUM {names}"))
        with database.session() as s, s.begin():
            build(Ctx(session=s, actor="tester", files_dir=self.root / "files"))
        return database

    @contextmanager
    def _copy(self, build: Build) -> Iterator[Database]:
        if build not in self.templates:
            template = self.root / f"template-{len(self.templates)}.db"
            self._build(f"sqlite:///{template}", build).engine.dispose()
            self.templates[build] = template
        target = self.root / f"copy-{next(self.copies)}.db"
        with closing(sqlite3.connect(self.templates[build])) as source, closing(sqlite3.connect(target)) as copy:
            source.backup(copy)
        database = open_database(f"sqlite:///{target}")
        try:
            yield database
        finally:
            database.engine.dispose()
            for path in (target, target.with_name(target.name + "-wal"), target.with_name(target.name + "-shm")):
                path.unlink(missing_ok=True)


def rows_of(url: str) -> dict[str, Any]:
    """How many rows each table holds, the newest change of a record and the per-field indexes
    at ``url``: what a test that only reads leaves as it found it."""
    database = open_database(url)
    try:
        with database.engine.connect() as conn:
            counts = " UNION ALL ".join(f"SELECT '{t.name}', count(*) FROM \"{t.name}\""
                                        for t in Base.metadata.sorted_tables)
            return {**{name: count for name, count in conn.execute(text(counts))},
                    "newest record change": conn.execute(text("SELECT max(updated_at) FROM records")).scalar(),
                    "per-field indexes": sorted(field_indexes(conn))}
    finally:
        database.engine.dispose()
