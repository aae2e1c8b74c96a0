"""Short record ids in the CLI (issue 14, item 10), in-process on a real project: tables show
each record id's random tail, every command takes it, a time prefix shared by a whole import
is refused with how to pick one, and ``--limit 0`` answers the total."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import click
import pytest

from benchbook.cli.main import build_cli
from benchbook.settings.config import Project
from tests.cli_helpers import ok, run


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return build_cli()


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return Project.init(tmp_path / "p").root


def plots(cli: click.Group, project: Path, n: int = 6) -> list[dict[str, Any]]:
    ok(cli, project, "schemas", "create", "--name", "plot", "--display-template", "{code}",
       "--fields", '[{"name": "code", "type": "string"}, {"name": "area", "type": "float"}]')
    ok(cli, project, "collections", "create", "--name", "field-site", "--schemas", '["plot"]')
    return [ok(cli, project, "records", "create", "field-site", "--schema-name", "plot",
               "--data", json.dumps({"code": f"P{i}", "area": float(i)})) for i in range(n)]


def test_table_shows_tails_and_commands_take_them(cli: click.Group, project: Path) -> None:
    made = plots(cli, project)
    table = ok(cli, project, "--table", "records", "list", "field-site")
    for record in made:
        assert record["id"][-8:] in table
        assert record["id"] not in table  # the short form, not the whole id
    assert "last 8 characters" in table
    target = made[3]
    shown = ok(cli, project, "records", "get", target["id"][-8:])
    assert shown["id"] == target["id"]
    updated = ok(cli, project, "records", "update", target["id"][-8:].lower(), "--data", '{"area": 99.5}')
    assert updated["data"]["area"] == 99.5
    history = ok(cli, project, "audit", "list-record", target["id"][-8:])
    assert history["total"] == 2


def test_a_shared_time_prefix_is_refused_with_how_to_pick(cli: click.Group, project: Path) -> None:
    made = plots(cli, project)
    prefix = os.path.commonprefix([r["id"] for r in made])  # the time part they share
    assert len(prefix) >= 4
    result = run(cli, project, "records", "get", prefix)
    assert result.exit_code == 1
    assert re.match(rf"error 422: record id {prefix} is ambiguous: \d+ records match", result.stderr), result.stderr
    assert "last 8 characters" in result.stderr
    missing = run(cli, project, "records", "get", "ZZZZZZZZ")
    assert missing.exit_code == 1 and missing.stderr.startswith("error 404: ")


def test_limit_zero_prints_the_total(cli: click.Group, project: Path) -> None:
    plots(cli, project, 4)
    assert ok(cli, project, "records", "list", "field-site", "--limit", "0").strip() == "4"
    assert ok(cli, project, "records", "list", "field-site", "--limit", "0", "--where", "code=P1").strip() == "1"


def test_sort_and_inherited_where_without_schema(cli: click.Group, project: Path) -> None:
    made = plots(cli, project, 3)
    page = ok(cli, project, "records", "list", "field-site", "--sort", "area:desc")
    assert [r["id"] for r in page["items"]] == [r["id"] for r in reversed(made)]


def test_a_single_record_table_shows_its_values_and_the_rest(cli: click.Group, project: Path) -> None:
    made = plots(cli, project, 1)[0]
    table = ok(cli, project, "--table", "records", "get", made["id"][-8:])
    lines = {line.split("│")[1].strip(): line.split("│")[2].strip() for line in table.splitlines()
             if line.startswith("│")}
    assert lines["id"] == made["id"][-8:] and lines["code"] == "P0" and lines["area"] == "0.0"
    assert lines["collection"] == "field-site" and "created_at" in lines and "data" not in lines
