"""The hint `benchbook plugins new` prints works where it is printed (issue 36 item 5): with
pytest installed it says to run the folder's tests; on a plain install (no pytest) it says to
register the plugin and try its example step, and those very commands succeed."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from benchbook.cli import scaffold
from tests.test_cli_scaffold import cli, project

__all__ = ["project"]  # fixtures


def test_with_pytest_the_hint_runs_the_tests(project: Path) -> None:
    result = cli(project, "plugins", "new", "word-count")
    assert result.exit_code == 0, result.output
    assert "next: cd " in result.stderr and "python -m pytest -q test_plugin.py" in result.stderr


def test_without_pytest_the_hint_is_commands_that_work(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(scaffold, "has_pytest", lambda: False)
    result = cli(project, "plugins", "new", "word-count")
    assert result.exit_code == 0, result.output
    hint = result.stderr.split("next: ", 1)[1]
    assert "pytest -q" not in hint and "pip install pytest" in hint
    commands = [shlex.split(part) for part in hint.split(" (", 1)[0].split("&&")]
    assert [c[:3] for c in commands] == [["benchbook", "plugins", "refresh"], ["benchbook", "plugins", "try"]]
    outputs = [cli(project, *command[1:]) for command in commands]
    assert [o.exit_code for o in outputs] == [0, 0], [o.output for o in outputs]
    assert json.loads(outputs[1].stdout)["words"] == 3
