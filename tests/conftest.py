"""Shared fixtures: the real app over ASGI on a real database.

Every API test runs on SQLite (a real file in a temporary project) and on a fresh PostgreSQL
database made for this test session on the server named by ``BENCHBOOK_TEST_PG``
(``postgresql+psycopg://…/test``), or, when that variable is unset, on the server found on
127.0.0.1:5432 (user ``postgres``, database ``test``; then exported as ``BENCHBOOK_TEST_PG``
for the tests that read the variable). ``BENCHBOOK_TEST_PG=`` (empty) turns them off. Without a
server the PostgreSQL tests are skipped (the API tests run on SQLite only), and the skips and the
report's first and last lines say why. One app per backend is built per session; tables are
emptied before each test.

Hypothesis profiles, chosen by ``HYPOTHESIS_PROFILE``: ``ci`` (the default) is derandomized so
that a CI failure reproduces locally; ``deep`` runs five times as many examples from random
seeds. Both print the ``@reproduce_failure`` blob of a failing example. The property tests take
their example counts from the profile (scaled per test), never a fixed number of their own.
"""
from __future__ import annotations

import os
import shutil
import socket
import sys
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings
from sqlalchemy import Engine, create_engine, event, exists, literal, select, text, union_all
from sqlalchemy.engine import make_url
from sqlalchemy.exc import SQLAlchemyError
from starlette.testclient import TestClient

from benchbook.http.app import create_app
from benchbook.persistence.db import Database, open_database
from benchbook.persistence.field_indexes import FIELD_INDEX_PREFIX, FIELD_STATISTICS_PREFIX
from benchbook.persistence.tables import AuditDay, Base, RecordCount, RecordDay
from benchbook.settings.config import Project

# pytest keeps the test modules it has rewritten for its assertions in __pycache__ (git ignores
# it), unless PYTHONDONTWRITEBYTECODE is set, as on some machines: then every test process
# rewrites all of them again at each run (6 of the 12 s it took to collect). The setting stays
# in force for everything else; only this process writes its cache.
sys.dont_write_bytecode = False

settings.register_profile(
    "ci", max_examples=100, derandomize=True, database=None, deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("deep", settings.get_profile("ci"), max_examples=500, derandomize=False)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

LOCAL_PG = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def find_postgres() -> tuple[str | None, str]:
    """The PostgreSQL server to test against and how it was chosen, or None and why there is none."""
    if "BENCHBOOK_TEST_PG" in os.environ:
        url = os.environ["BENCHBOOK_TEST_PG"]
        if not url:
            return None, "BENCHBOOK_TEST_PG is set empty, which turns them off"
        return url, "named by BENCHBOOK_TEST_PG"
    try:
        socket.create_connection(("127.0.0.1", 5432), timeout=10).close()  # refused at once where none listens
    except OSError as exc:
        return None, (f"no server answering on 127.0.0.1:5432 ({exc}); "
                      "set BENCHBOOK_TEST_PG to name another server")
    try:
        engine = create_engine(LOCAL_PG, connect_args={"connect_timeout": 10})
    except ImportError as exc:
        return None, f"psycopg is not installed ({exc}): pip install -e '.[test,postgres]'"
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as exc:
        why = " ".join(str(getattr(exc, "orig", None) or exc).split())
        return None, f"a server answers on 127.0.0.1:5432 but connecting to {LOCAL_PG} failed: {why}"
    finally:
        engine.dispose()
    return LOCAL_PG, "found on 127.0.0.1:5432 (BENCHBOOK_TEST_PG is unset)"


PG_URL, PG_WHY = find_postgres()
if PG_URL:
    os.environ["BENCHBOOK_TEST_PG"] = PG_URL  # tests that read the variable themselves use the server found
# Without a server the API tests run on SQLite only; the report's header and last line say why.
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)] if PG_URL else ["sqlite"]


def pytest_report_header() -> list[str]:
    pg = (f"PostgreSQL tests: on, {make_url(PG_URL).render_as_string(hide_password=True)} {PG_WHY}" if PG_URL
          else f"PostgreSQL tests: skipped, {PG_WHY}")
    profile = settings.default
    hypothesis = (f"hypothesis profile {settings.get_current_profile_name()!r} (HYPOTHESIS_PROFILE):"
                  f" max_examples={profile.max_examples}, derandomize={profile.derandomize}")
    return [pg, hypothesis]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not PG_URL:
        terminalreporter.write_line(f"PostgreSQL tests skipped: {PG_WHY}", yellow=True)


@contextmanager
def new_pg_database(prefix: str = "benchbook_test") -> Iterator[str]:
    """The URL of a new, empty PostgreSQL database on the server of ``PG_URL``, dropped on the
    way out; skips the test where no server answers."""
    if not PG_URL:
        pytest.skip(f"PostgreSQL tests skipped: {PG_WHY}")
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    name = f"{prefix}_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    try:
        yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database on the server of ``PG_URL``, dropped afterwards."""
    with new_pg_database() as url:
        yield url


class Api:
    """A test client for one backend: ``api.get("/collections")`` → ``/api/collections``."""

    def __init__(self, client: TestClient, project: Project, app: Any) -> None:
        self.client = client
        self.project = project
        self.app = app

    def request(self, method: str, path: str, **kw: Any) -> Any:
        return self.client.request(method, "/api" + path, **kw)

    def get(self, path: str, **kw: Any) -> Any:
        return self.request("GET", path, **kw)

    def post(self, path: str, **kw: Any) -> Any:
        return self.request("POST", path, **kw)

    def patch(self, path: str, **kw: Any) -> Any:
        return self.request("PATCH", path, **kw)

    def put(self, path: str, **kw: Any) -> Any:
        return self.request("PUT", path, **kw)

    def delete(self, path: str, **kw: Any) -> Any:
        return self.request("DELETE", path, **kw)

    def ok(self, method: str, path: str, status: int = 200, **kw: Any) -> Any:
        """Send and assert ``status``; returns the JSON body (None for 204)."""
        r = self.request(method, path, **kw)
        assert r.status_code == status, f"{method} {path}: {r.status_code} {r.text}"
        return None if r.status_code == 204 else r.json()


@pytest.fixture(scope="session", params=BACKENDS)
def backend_app(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    """One app per backend for the whole session."""
    root = tmp_path_factory.mktemp(f"project-{request.param}")
    project = Project.init(root)
    if request.param == "postgres":
        url = request.getfixturevalue("pg_database")
        project = Project(root=project.root, settings={**project.settings, "database": {"url": url}})
    app = create_app(project)
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        yield Api(client, project, app)
    app.services.db.engine.dispose()


def field_indexes(conn: Any) -> set[str]:
    """Names of the per-field indexes on ``records`` (``field_indexes.field_index_ddl``), read from
    the catalog: SQLAlchemy does not reflect expression indexes."""
    sql = ("SELECT indexname FROM pg_indexes WHERE tablename = 'records'" if conn.dialect.name == "postgresql"
           else "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'records'")
    return {name for name in conn.execute(text(sql)).scalars() if name.startswith(FIELD_INDEX_PREFIX)}


def drop_field_objects(conn: Any) -> None:
    """Drop the per-field indexes and statistics (``field_indexes.field_index_ddl``,
    ``field_statistics_ddl``) that emptying the ``fields`` table leaves behind: deleting rows
    fires no hook, and a shared test database otherwise gathers thousands of them on
    ``records``, which every insert, ``TRUNCATE`` and ``ANALYZE`` then pays for."""
    if conn.dialect.name == "postgresql":
        stats = conn.execute(text(f"SELECT stxname FROM pg_statistic_ext "
                                  f"WHERE stxname LIKE '{FIELD_STATISTICS_PREFIX}%'")).scalars().all()
        for name in stats:
            conn.execute(text(f'DROP STATISTICS IF EXISTS "{name}"'))
    for name in field_indexes(conn):
        conn.execute(text(f'DROP INDEX IF EXISTS "{name}"'))


def empty_tables(api: Api) -> None:
    """Delete every row of every table (fast reset between tests), and the per-field indexes
    and statistics the fields had (:func:`drop_field_objects`)."""
    with api.app.services.db.engine.begin() as conn:
        drop_field_objects(conn)
        delete_rows(conn)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    """An emptied database on each backend in turn (test ids ``[sqlite]``, ``[postgres]``): a
    SQLite file in ``tmp_path``, or the session's PostgreSQL test database (skipped, saying why,
    without a server); its engine is disposed afterwards."""
    if request.param == "sqlite":
        database = open_database(migrated_copy(request, tmp_path / "test.db"))
    else:
        database = open_empty_database(request.getfixturevalue("pg_database"))
    yield database
    database.engine.dispose()


@contextmanager
def statements_sent(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements ``engine`` sends to the database while the block runs, in order (the
    list is filled as they are sent)."""
    sent: list[str] = []

    def note(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", note)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", note)


def open_empty_database(url: str) -> Database:
    """``open_database(url)`` with every table emptied (the PostgreSQL test database is shared
    by the whole session)."""
    database = open_database(url)
    with database.engine.begin() as conn:
        drop_field_objects(conn)
        delete_rows(conn)
    return database


KEPT_COUNTS = (RecordCount.__table__, RecordDay.__table__, AuditDay.__table__)


def delete_rows(conn: Any) -> None:
    """Empty every table that holds any row (one statement finds them: a test leaves most tables
    empty). On PostgreSQL one ``TRUNCATE`` of those (68 ms for every table, a few ms for the few
    a test filled; a ``DELETE`` would leave dead rows that every later scan reads while the
    test server's autovacuum is off); on SQLite ``DELETE``, the kept record counts and days last,
    since deleting the records and entries counts them down (migrations 0019 to 0021's triggers)."""
    tables = [t for t in reversed(Base.metadata.sorted_tables) if t not in KEPT_COUNTS] + list(KEPT_COUNTS)
    probes = [select(literal(i)).where(exists().select_from(t)) for i, t in enumerate(tables)]
    filled = [tables[i] for i in sorted(conn.execute(union_all(*probes)).scalars())]
    if filled and conn.dialect.name == "postgresql":
        conn.execute(text("TRUNCATE " + ", ".join(f'"{t.name}"' for t in filled) + " CASCADE"))
        return
    for table in filled:
        conn.execute(table.delete())


@pytest.fixture
def api(backend_app: Api) -> Api:
    """The app with empty tables."""
    empty_tables(backend_app)
    return backend_app


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An empty SQLite database at the newest migration, made once per test process: tests copy
    it (:func:`migrated_copy`) instead of running every migration again (about 0.2 s each)."""
    path = tmp_path_factory.mktemp("sqlite-template") / "template.db"
    open_database(f"sqlite:///{path}").engine.dispose()  # the last connection closed: no -wal file left
    return path


def migrated_copy(request: pytest.FixtureRequest, path: Path) -> str:
    """Copy :func:`sqlite_template` to ``path`` and return its URL: a fresh database already at
    the newest migration (what ``open_database`` would make of an absent file)."""
    shutil.copyfile(request.getfixturevalue("sqlite_template"), path)
    return f"sqlite:///{path}"


@pytest.fixture
def tmp_project(request: pytest.FixtureRequest, tmp_path: Path) -> Project:
    """A fresh SQLite project folder whose database is already at the newest migration (a copy
    of :func:`sqlite_template`, as the first command on a new project leaves it)."""
    project = Project.init(tmp_path / "project")
    url = make_url(project.database_url)
    assert url.get_backend_name() == "sqlite" and url.database, project.database_url
    migrated_copy(request, Path(url.database))
    return project
