"""The CLI's deletes of referenced records (issue 35 item 4, docs/deletes.md), in-process on a
real project: the 409 counts the referrers and names the choices as the CLI spells them,
``list-referrers`` shows who they are, ``--references clear|keep`` decides."""
from __future__ import annotations

import json
from pathlib import Path

import click
import pytest

from benchbook.cli.main import build_cli
from benchbook.settings.config import Project
from tests.cli_helpers import ok, run


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return build_cli()


def test_a_referenced_record_asks_what_to_do_with_its_referrers(cli: click.Group, tmp_path: Path) -> None:
    project = Project.init(tmp_path / "p").root
    ok(cli, project, "schemas", "create", "--name", "plane", "--display-template", "{tailnum}",
       "--fields", '[{"name": "tailnum", "type": "string"}]')
    ok(cli, project, "schemas", "create", "--name", "flight", "--display-template", "F{number}", "--fields",
       '[{"name": "number", "type": "integer"}, '
       '{"name": "tailnum", "type": "reference", "restrictions": {"schema": "plane"}}]')
    ok(cli, project, "collections", "create", "--name", "nyc", "--schemas", '["plane", "flight"]')
    plane = ok(cli, project, "records", "create", "nyc", "--schema-name", "plane", "--data", '{"tailnum": "N14228"}')
    other = ok(cli, project, "records", "create", "nyc", "--schema-name", "plane", "--data", '{"tailnum": "N24211"}')
    flights = [ok(cli, project, "records", "create", "nyc", "--schema-name", "flight",
                  "--data", json.dumps({"number": n, "tailnum": p["id"]})) for n, p in ((1545, plane), (1714, other))]

    refused = run(cli, project, "records", "delete-record", plane["id"])
    assert refused.exit_code == 1
    assert "error 409: 1 live record(s) reference this 'plane' record 'N14228' (1 flight)" in refused.stderr
    assert "`--references clear`" in refused.stderr and "`--force`" in refused.stderr
    assert "--references: 1 flight record(s) reference it" in refused.stderr
    listed = run(cli, project, "records", "list-referrers", plane["id"], "--columns", "natural_name").stdout
    assert "F1545" in listed and "F1714" not in listed

    ok(cli, project, "records", "delete-record", plane["id"], "--references", "clear")
    assert ok(cli, project, "records", "get", flights[0]["id"])["data"].get("tailnum") is None
    deleted = ok(cli, project, "records", "bulk-delete", "--ids", json.dumps([other["id"]]), "--references", "keep")
    assert deleted["deleted"] == 1
    assert ok(cli, project, "records", "get", flights[1]["id"])["data"]["tailnum"] == other["id"]
