"""Models and migrations never drift apart (``alembic check`` on a freshly upgraded database)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from alembic import command

from benchbook.persistence.db import alembic_config, open_database


def check(url: str) -> None:
    db = open_database(url)
    try:
        command.check(alembic_config(url))
    finally:
        db.engine.dispose()


def test_sqlite_models_match_migrations(tmp_path: Path) -> None:
    check(f"sqlite:///{tmp_path / 'check.db'}")


@pytest.mark.postgres
def test_postgres_models_match_migrations(pg_database: str) -> None:
    check(pg_database)


def test_upgrade_is_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'twice.db'}"
    open_database(url).engine.dispose()
    open_database(url).engine.dispose()
    assert os.path.getsize(tmp_path / "twice.db") > 0
