"""References by name in the CLI's tables (issue 35 item 2): a reference shows its target's
natural name (a reference_list the names joined; a target without a name its short id), the ids
are the column ``carrier.id``; ``--search`` finds records by their targets' names; the export
writes labels. In-process on a real project."""
from __future__ import annotations

import json
from typing import Any

import click
import pytest

from benchbook.cli.main import build_cli
from benchbook.settings.config import Project
from tests.cli_helpers import ok


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return build_cli()


@pytest.fixture(scope="module")
def world(cli: click.Group, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    project = Project.init(tmp_path_factory.mktemp("labels") / "p").root
    ok(cli, project, "schemas", "create", "--name", "airline", "--display-template", "{carrier}",
       "--fields", '[{"name": "carrier", "type": "string"}, {"name": "name", "type": "string"}]')
    ok(cli, project, "schemas", "create", "--name", "flight", "--display-template", "{carrier}{flight}", "--fields",
       json.dumps([{"name": "flight", "type": "integer"},
                   {"name": "carrier", "type": "reference", "restrictions": {"schema": "airline"}},
                   {"name": "partners", "type": "reference_list", "restrictions": {"schema": "airline"}}]))
    ok(cli, project, "collections", "create", "--name", "nyc", "--schemas", '["airline", "flight"]')
    made = {code: ok(cli, project, "records", "create", "nyc", "--schema-name", "airline",
                     "--data", json.dumps({"carrier": code} if code else {"name": "no code"}))
            for code in ("UA", "AA", "")}
    flight = ok(cli, project, "records", "create", "nyc", "--schema-name", "flight", "--data", json.dumps(
        {"flight": 1545, "carrier": made["UA"]["id"], "partners": [made["AA"]["id"], made[""]["id"]]}))
    return {"project": project, "airlines": made, "flight": flight}


def test_a_table_shows_references_by_name(cli: click.Group, world: dict[str, Any]) -> None:
    project, airlines, flight = world["project"], world["airlines"], world["flight"]
    assert flight["natural_name"] == "UA1545"
    table = ok(cli, project, "--table", "records", "list", "nyc", "--schema", "flight",
               "--table-columns", "natural_name,carrier,partners")
    assert "UA1545" in table and " UA " in table
    assert f"AA, {airlines['']['id'][-8:]}" in table  # a target without a name: its short id
    assert airlines["UA"]["id"] not in table and airlines["UA"]["id"][-8:] not in table
    ids = ok(cli, project, "--table", "records", "list", "nyc", "--schema", "flight", "--columns", "carrier.id",
             "--table-columns", "carrier,carrier.id")
    assert airlines["UA"]["id"] in ids  # the column of ids
    one = ok(cli, project, "--table", "records", "get", flight["id"])
    assert " UA " in one and "reference_labels" not in one
    # JSON keeps the ids (it is the API's answer)
    assert ok(cli, project, "records", "get", flight["id"])["data"]["carrier"] == airlines["UA"]["id"]


def test_search_and_export_read_references_by_name(cli: click.Group, world: dict[str, Any]) -> None:
    project = world["project"]
    found = ok(cli, project, "records", "list", "nyc", "--schema", "flight", "--search", "AA")
    assert [r["id"] for r in found["items"]] == [world["flight"]["id"]]
    exported = ok(cli, project, "records", "export-csv", "nyc", "--schema", "flight")
    header, row = exported.splitlines()[:2]
    assert header.startswith("id,schema_name,parent_record_id,natural_name")
    assert ",UA," in row and f'"AA, {world["airlines"][""]["id"]}"' in row
