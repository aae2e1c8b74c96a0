"""The generated ``benchbook views`` commands, end to end in-process against the real app."""
from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from benchbook.cli.main import build_cli
from tests.cli_helpers import run


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return build_cli()


def test_views_commands(cli: click.Group, tmp_path: Path) -> None:
    group = cli.commands["views"]
    assert isinstance(group, click.Group)
    assert sorted(group.commands) == ["create", "delete", "get", "list", "list-schema", "update"]
    helped = CliRunner().invoke(cli, ["views", "--help"])
    assert helped.exit_code == 0 and "Saved views" in helped.output

    made = run(cli, tmp_path, "schemas", "create", "--name", "sample",
               "--fields", '[{"name": "site", "type": "string"}, {"name": "depth", "type": "float"}]')
    assert made.exit_code == 0, made.output
    assert run(cli, tmp_path, "collections", "create", "--name", "lab", "--schemas", '["sample"]').exit_code == 0
    created = run(cli, tmp_path, "views", "create", "sample", "--name", "deep", "--collection", "lab",
                  "--columns", '["site", "depth"]', "--sort", '["depth:desc"]',
                  "--filter", '{"field": "depth", "op": "gt", "value": 2}', "--page-size", "10")
    assert created.exit_code == 0, created.output
    view = json.loads(created.stdout)
    assert (view["name"], view["collection"], view["page_size"]) == ("deep", "lab", 10)
    updated = run(cli, tmp_path, "views", "update", "sample", "deep", "--search", "north")
    assert updated.exit_code == 0 and json.loads(updated.stdout)["search"] == "north"
    listed = run(cli, tmp_path, "views", "list")
    assert [v["name"] for v in json.loads(listed.stdout)] == ["deep"]
    bad = run(cli, tmp_path, "views", "create", "sample", "--name", "bad",
              "--filter", '{"field": "depth", "op": "contains", "value": 1}')
    assert bad.exit_code == 1 and bad.stderr.startswith("error 422: ") and "depth" in bad.stderr
    assert run(cli, tmp_path, "views", "delete", "sample", "deep").exit_code == 0
    assert run(cli, tmp_path, "views", "get", "sample", "deep").exit_code == 1
