"""`benchbook plugins new NAME` (benchbook.cli.scaffold) through the real CLI: the scaffolded
folder's own tests pass when run with pytest in a subprocess, discovery describes the plugin
with status ok, and bad names and existing folders are refused without writing anything."""
from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from benchbook.cli.generated import ApiCommand
from benchbook.cli.main import build_cli
from benchbook.cli.scaffold import FILES, new_plugin
from benchbook.runner.plugin_host.discovery import discover, read_manifest
from tests.waiting import HANG


def cli(project: Path, *args: str) -> Result:
    return CliRunner().invoke(build_cli(), ["--project", str(project), *args], catch_exceptions=False)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    result = cli(folder, "init")
    assert result.exit_code == 0, result.output
    assert (folder / "plugins").is_dir()
    return folder


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def test_plugins_group_has_new_next_to_the_generated_commands(project: Path) -> None:
    result = cli(project, "plugins", "--help")
    assert result.exit_code == 0, result.output
    commands = result.output.split("Commands:", 1)[1].split()
    assert {"list", "get", "refresh", "new"} <= set(commands)
    group = build_cli().commands["plugins"]
    assert isinstance(group, click.Group)
    assert isinstance(group.commands["list"], ApiCommand)  # the generated group itself, not a stand-in
    assert group.commands["new"] is new_plugin
    help_text = cli(project, "plugins", "new", "--help").output
    assert "Usage: benchbook plugins new [OPTIONS] NAME" in help_text
    assert "--category" in help_text and "--description" in help_text and "--force" in help_text


def test_new_scaffolds_a_plugin_whose_tests_pass_and_that_discovery_describes(project: Path, tmp_path: Path) -> None:
    result = cli(project, "plugins", "new", "word-count", "--category", "analysis",
                 "--description", 'Counts "words" and characters')
    assert result.exit_code == 0, result.output
    folder = project.resolve() / "plugins" / "word-count"
    assert result.stdout.strip() == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == sorted(FILES)

    with (folder / "plugin.toml").open("rb") as fh:
        manifest = tomllib.load(fh)
    assert manifest == {"command": ["{python}", "-m", "benchbook.plugin", "plugin.py"], "tier": 1, "timeout": 60}
    assert read_manifest(folder)["command"] == [sys.executable, "-m", "benchbook.plugin", "plugin.py"]
    source = (folder / "plugin.py").read_text(encoding="utf-8")
    assert "from benchbook.plugin import" in source and "@plugin.run" in source and "ctx.log(" in source
    compile(source, "plugin.py", "exec")
    readme = (folder / "README.md").read_text(encoding="utf-8")
    for text in ("python -m benchbook.plugin plugin.py", "python -m pytest -q test_plugin.py",
                 "benchbook plugins try word-count", "benchbook plugins refresh"):
        assert text in readme
    test_source = (folder / "test_plugin.py").read_text(encoding="utf-8")
    assert '"-m", "benchbook.plugin", "plugin.py"' in test_source and "sys.executable" in test_source

    # the plugin author's workflow: run the scaffolded tests with pytest, from elsewhere
    command = [sys.executable, "-m", "pytest", "-q", str(folder / "test_plugin.py"), "-p", "no:cacheprovider"]
    run = subprocess.run(command, check=False, cwd=tmp_path, capture_output=True, text=True, timeout=HANG)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "7 passed" in run.stdout, run.stdout
    left = sorted(p.name for p in folder.iterdir() if p.name != "__pycache__")
    assert left == sorted(FILES)  # the tests leave nothing behind but Python's byte-code cache

    found = [d for d in discover(project / "plugins") if d.source == "project:plugins/word-count"]
    assert len(found) == 1
    described = found[0]
    assert (described.status, described.error, described.id, described.tier) == ("ok", None, "word-count", "1")
    contract = described.contract
    assert contract["name"] == "Word count"
    assert contract["category"] == "analysis"
    assert contract["description"] == 'Counts "words" and characters'
    assert contract["inputs"]["text"] == {"type": "string", "description": "The text to count", "required": True}
    assert {k: v["type"] for k, v in contract["outputs"].items()} == {"words": "integer", "characters": "integer"}
    assert described.launch["timeout"] == 60.0


def test_names_at_the_edges_of_the_slug_rule_are_described(project: Path) -> None:
    names = ["a", "my_plugin-2", "x" * 100]
    for name in names:
        result = cli(project, "plugins", "new", name)
        assert result.exit_code == 0, result.output
    described = {d.id: d for d in discover(project / "plugins") if d.source.startswith("project:")}
    assert sorted(described) == sorted(names)
    for d in described.values():
        assert d.status == "ok", d.error


@pytest.mark.parametrize("name", ["Word", "1st", "_x", "-x", "a b", "a.b", "a/b", "../up", "wörd", "", "x" * 101])
def test_a_name_that_is_not_a_slug_is_refused(project: Path, name: str) -> None:
    before = snapshot(project)
    result = cli(project, "plugins", "new", "--", name)
    assert result.exit_code == 1, result.output
    assert "not a valid plugin name" in result.output
    assert "lowercase letters, digits" in result.output
    assert snapshot(project) == before
    assert list((project / "plugins").iterdir()) == []


def test_an_existing_folder_is_refused_unless_force(project: Path) -> None:
    assert cli(project, "plugins", "new", "counter").exit_code == 0
    folder = project / "plugins" / "counter"
    (folder / "plugin.py").write_text("# my own work\n", encoding="utf-8")
    (folder / "notes.txt").write_text("keep me\n", encoding="utf-8")
    before = snapshot(folder)

    result = cli(project, "plugins", "new", "counter", "--description", "other")
    assert result.exit_code == 1
    assert "already exists" in result.output and "nothing was written" in result.output
    assert "--force" in result.output
    assert snapshot(folder) == before

    result = cli(project, "plugins", "new", "counter", "--force")
    assert result.exit_code == 0, result.output
    assert "@plugin.run" in (folder / "plugin.py").read_text(encoding="utf-8")
    assert (folder / "notes.txt").read_text(encoding="utf-8") == "keep me\n"


def test_a_folder_made_by_hand_is_refused_too(project: Path) -> None:
    folder = project / "plugins" / "mine"
    folder.mkdir()
    (folder / "plugin.toml").write_text('command = ["node", "mine.js"]\n', encoding="utf-8")
    result = cli(project, "plugins", "new", "mine")
    assert result.exit_code == 1 and "already exists" in result.output
    assert (folder / "plugin.toml").read_text(encoding="utf-8") == 'command = ["node", "mine.js"]\n'
    assert sorted(p.name for p in folder.iterdir()) == ["plugin.toml"]


def test_a_file_in_the_way_is_refused_even_with_force(project: Path) -> None:
    (project / "plugins" / "blocked").write_text("not a folder\n", encoding="utf-8")
    result = cli(project, "plugins", "new", "blocked", "--force")
    assert result.exit_code == 1 and "already exists (a file)" in result.output
    assert (project / "plugins" / "blocked").read_text(encoding="utf-8") == "not a folder\n"
