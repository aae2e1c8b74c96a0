"""`benchbook init` makes a project folder whose database exists and is migrated (README)."""
from __future__ import annotations

import sqlite3
from pathlib import Path

from alembic.script import ScriptDirectory
from click.testing import CliRunner

from benchbook.cli.main import build_cli
from benchbook.persistence.db import alembic_config
from benchbook.settings.config import Project


def invoke(*args: str) -> str:
    result = CliRunner().invoke(build_cli(), list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output.strip()


def revision(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return str(conn.execute("SELECT version_num FROM alembic_version").fetchone()[0])


def head() -> str:
    return str(ScriptDirectory.from_config(alembic_config("sqlite://")).get_current_head())


def test_init_creates_the_folder_and_the_migrated_database(tmp_path: Path) -> None:
    folder = tmp_path / "myproject"
    assert invoke("init", str(folder)) == str(folder.resolve())
    assert {p.name for p in folder.iterdir()} >= {"benchbook.toml", "benchbook.db", "files", "workflows", "plugins"}
    assert revision(folder / "benchbook.db") == head()
    with sqlite3.connect(folder / "benchbook.db") as conn:
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"records", "audit_entries", "collections", "schemas"} <= tables


def test_init_reuses_a_project_and_keeps_its_data(tmp_path: Path) -> None:
    folder = tmp_path / "p"
    invoke("init", str(folder))
    invoke("--project", str(folder), "collections", "create", "--name", "kept")
    assert invoke("init", str(folder)) == str(folder.resolve())
    assert '"kept"' in invoke("--project", str(folder), "collections", "list")
    assert Project.open(folder).database_url.endswith("benchbook.db")


def test_init_defaults_to_the_project_option(tmp_path: Path) -> None:
    folder = tmp_path / "chosen"
    assert invoke("--project", str(folder), "init") == str(folder.resolve())
    assert (folder / "benchbook.db").is_file()
