"""A page under its table and the exact count (issue 36 item 5): ``records list --table`` says
``3 of 50``, or ``3 of more than 50 (`--count` for the exact total)`` when the page's total is a
lower bound (``total_exact: false``), and ``--count`` prints the exact total; history entry ids
are taken by their last 8 characters and unique prefixes in the CLI too (in-process)."""
from __future__ import annotations

from pathlib import Path
from typing import Any

import click
import pytest

from benchbook.cli import output
from benchbook.cli.pages import caption
from tests.test_cli_ids import cli, ok, plots, project, run

__all__ = ["cli", "project"]  # fixtures


def _record(n: int) -> dict[str, Any]:
    return {"id": f"01M8HKX1TG6Q03J4JECF9S8Y{n:02d}", "schema_name": "plot", "parent_record_id": None,
            "natural_name": f"P{n}", "data": {"code": f"P{n}"}}


@pytest.mark.parametrize(("page", "shown", "expected"), [
    ({"total": 50, "total_exact": True, "offset": 0, "limit": 3}, 3, "3 of 50"),
    ({"total": 50, "total_exact": False, "offset": 0, "limit": 3}, 3,
     "3 of more than 50 (`--count` for the exact total)"),
    ({"total": 1200, "offset": 50, "limit": 3}, 3, "51–53 of 1,200"),
    ({"total": 7, "offset": 10, "limit": 3}, 0, "0 of 7"),
    ({"total": 2, "offset": 0, "limit": 50, "next": "abc"}, 2, "2 of 2, next: abc"),
    ({"next": None, "limit": 5}, 1, "next: , limit: 5"),
])
def test_the_caption_says_where_the_page_sits(page: dict[str, Any], shown: int, expected: str) -> None:
    assert caption(page, shown) == expected


def test_a_lower_bound_reads_as_one_under_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    output.print_table({"items": [_record(n) for n in range(3)], "total": 50, "total_exact": False,
                        "offset": 0, "limit": 3})
    shown = " ".join(capsys.readouterr().out.split())
    assert "3 of more than 50 (`--count` for the exact total)" in shown and "total_exact" not in shown


def test_count_prints_the_exact_total(cli: click.Group, project: Path) -> None:
    plots(cli, project, 5)
    assert ok(cli, project, "records", "list", "field-site", "--count").strip() == "5"
    assert ok(cli, project, "records", "list", "field-site", "--count", "--where", "code=P1").strip() == "1"
    table = " ".join(ok(cli, project, "--table", "records", "list", "field-site", "--limit", "2",
                        "--sort", "code").split())
    assert "2 of 5" in table and "total:" not in table


def test_history_entry_ids_by_tail_and_prefix(cli: click.Group, project: Path) -> None:
    made = plots(cli, project, 1)[0]
    ok(cli, project, "records", "update", made["id"][-8:], "--data", '{"area": 2.5}')
    entries = ok(cli, project, "audit", "list-record", made["id"][-8:], "--sort", "timestamp:asc")["items"]
    update = entries[-1]
    assert ok(cli, project, "audit", "get-entry", update["id"][-8:])["id"] == update["id"]
    assert ok(cli, project, "audit", "get-entry", update["id"][:20])["id"] == update["id"]
    plan = ok(cli, project, "audit", "revert-plan", update["id"][-8:].lower())
    assert plan["audit_id"] == update["id"]
    ok(cli, project, "audit", "apply-revert", update["id"][-8:])
    assert ok(cli, project, "records", "get", made["id"][-8:])["data"]["area"] == 0.0
    missing = run(cli, project, "audit", "get-entry", "ZZZZZZZZ")
    assert missing.exit_code == 1 and missing.stderr.startswith("error 404: ")
