"""Shared fixtures: the real app over ASGI on a real database.

Every API test runs on SQLite (a real file in a temporary project) and, when
``BENCHBOOK_TEST_PG`` names a PostgreSQL server (``postgresql+psycopg://…/test``), on a
fresh PostgreSQL database made for this test session. One app per backend is built per
session; tables are emptied before each test.
"""
from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from starlette.testclient import TestClient

from benchbook.app import create_app
from benchbook.config import Project
from benchbook.persistence.db import Database, open_database
from benchbook.persistence.tables import Base

PG_URL = os.environ.get("BENCHBOOK_TEST_PG")
BACKENDS = ["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)] if PG_URL else ["sqlite"]


@pytest.fixture(scope="session")
def pg_database() -> Iterator[str]:
    """A fresh PostgreSQL database on the ``BENCHBOOK_TEST_PG`` server, dropped afterwards."""
    if not PG_URL:
        pytest.skip("BENCHBOOK_TEST_PG is not set: no PostgreSQL server to test against")
    admin = create_engine(PG_URL, isolation_level="AUTOCOMMIT")
    name = f"benchbook_test_{uuid.uuid4().hex[:10]}"
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    yield make_url(PG_URL).set(database=name).render_as_string(hide_password=False)
    with admin.connect() as conn:
        conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    admin.dispose()


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


def empty_tables(api: Api) -> None:
    """Delete every row of every table (fast reset between tests)."""
    engine = api.app.services.db.engine
    with engine.begin() as conn:
        if engine.dialect.name == "postgresql":
            names = ", ".join(f'"{t.name}"' for t in Base.metadata.sorted_tables)
            conn.execute(text(f"TRUNCATE {names} CASCADE"))
        else:
            for table in reversed(Base.metadata.sorted_tables):
                conn.execute(table.delete())


def open_empty_database(url: str) -> Database:
    """``open_database(url)`` with every table emptied (the PostgreSQL test database is shared
    by the whole session)."""
    database = open_database(url)
    with database.engine.begin() as conn:
        for table in reversed(Base.metadata.sorted_tables):
            conn.execute(table.delete())
    return database


@pytest.fixture
def api(backend_app: Api) -> Api:
    """The app with empty tables."""
    empty_tables(backend_app)
    return backend_app


@pytest.fixture
def tmp_project(tmp_path: Path) -> Project:
    """A fresh SQLite project folder."""
    return Project.init(tmp_path / "project")
