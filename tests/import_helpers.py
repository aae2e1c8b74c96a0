"""Shared by tests/test_import_*.py: run the CLI on a project, read its database."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result
from sqlalchemy import select

from benchbook.cli.main import build_cli
from benchbook.persistence.db import open_database
from benchbook.persistence.tables import Record
from benchbook.settings.config import Project

DATA = Path(__file__).resolve().parent / "data"


def cli(project: Project, *args: str) -> Result:
    """``benchbook --project P ARGS`` in process (exceptions become exit codes, as for a user)."""
    return CliRunner().invoke(build_cli(), ["--project", str(project.root), *args])


def ok(project: Project, *args: str) -> Result:
    out = cli(project, *args)
    assert out.exit_code == 0, out.output
    return out


def query(project: Project, statement: Any) -> list[Any]:
    db = open_database(project.database_url)
    try:
        with db.session() as s:
            return list(s.execute(statement))
    finally:
        db.engine.dispose()


def records(project: Project, schema_name: str | None = None) -> list[Any]:
    """Live records (id, parent_id, data, natural_name), in id order."""
    from benchbook.persistence.tables import Schema

    stmt = select(Record.id, Record.parent_id, Record.data, Record.natural_name).where(Record.deleted_at.is_(None))
    if schema_name:
        stmt = stmt.join(Schema, Schema.id == Record.schema_id).where(Schema.name == schema_name)
    return query(project, stmt.order_by(Record.id))


def shown(project: Project, collection: str, schema: str) -> list[dict[str, Any]]:
    """The records' values as the API shows them (by field name)."""
    import json

    out = ok(project, "records", "list", collection, "--schema", schema, "--limit", "1000")
    return [item["data"] for item in json.loads(out.stdout)["items"]]


def schema(project: Project, name: str, fields: list[dict[str, Any]], **extra: str) -> None:
    import json

    args = ["schemas", "create", "--name", name, "--fields", json.dumps(fields)]
    for key, value in extra.items():
        args += [f"--{key.replace('_', '-')}", value]
    ok(project, *args)


def collection(project: Project, name: str, schemas: list[str], **extra: str) -> None:
    import json

    args = ["collections", "create", "--name", name, "--schemas", json.dumps(schemas)]
    for key, value in extra.items():
        args += [f"--{key}", value]
    ok(project, *args)
