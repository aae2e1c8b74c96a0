"""Help text, checked (issue 14, item 12): every option of every command is described, an
option's help does not describe another option, every endpoint help names exists, every
`--option` and `benchbook <command>` help names exists, HTTP parameter names are spelled the
CLI's way, and the lazy command tree lists what the built one lists."""
from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import click
import pytest
from click.testing import CliRunner

from benchbook.cli.generated import ApiCommand, load_document
from benchbook.cli.lazy import LazyCommands
from benchbook.cli.main import LOCAL_COMMANDS, build_cli

GLOBAL_OPTIONS = {"--project", "--url", "--table", "--columns", "--version", "--help", "-h"}
METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def walk(command: click.Command, path: list[str], ctx: click.Context) -> Iterator[tuple[list[str], click.Command]]:
    yield path, command
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, (path, name)
            yield from walk(sub, [*path, name], ctx)


@pytest.fixture(scope="module")
def commands() -> list[tuple[list[str], click.Command]]:
    cli = build_cli()
    return list(walk(cli, [], click.Context(cli)))


def texts(command: click.Command) -> list[tuple[str, str]]:
    out = [("help", command.help or "")]
    out += [(param.opts[0], param.help or "") for param in command.params if isinstance(param, click.Option)]
    return out


def test_every_option_is_described(commands: list[tuple[list[str], click.Command]]) -> None:
    bare = []
    for path, command in commands:
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                core = re.sub(r"\s*(\[[^]]*\]|\([^)]*\))\s*", "", param.help or "").strip()
                if not core:  # nothing but "(required…)", "[default: …]" or "(null to send null)"
                    bare.append(f"{' '.join(path)} {param.opts[0]}: {param.help!r}")
    assert bare == []


def test_every_command_has_help(commands: list[tuple[list[str], click.Command]]) -> None:
    assert [" ".join(path) for path, command in commands if not (command.help or command.short_help)] == []


def test_no_option_help_is_another_options(commands: list[tuple[list[str], click.Command]]) -> None:
    """An option's help never starts by naming a different option of the command (a copied
    description), and no two options of one command share a description."""
    wrong = []
    for path, command in commands:
        options = [p for p in command.params if isinstance(p, click.Option) and p.help]
        names = {o for p in options for o in p.opts}
        for param in options:
            lead = re.match(r"\W*(--[a-z][a-z0-9-]*)", param.help or "")
            if lead and lead.group(1) in names and lead.group(1) not in param.opts:
                wrong.append(f"{' '.join(path)} {param.opts[0]}: {param.help}")
        helps = [p.help for p in options if len(p.help or "") > 30]
        wrong += [f"{' '.join(path)}: shared help {h!r}" for h in set(helps) if helps.count(h) > 1]
    assert wrong == []


def test_the_record_data_help_is_only_on_data_options(commands: list[tuple[list[str], click.Command]]) -> None:
    """The record data's value forms describe a record's ``--data``, never another option
    (``fields create --type`` showed them, issue 36 item 5); ``--type`` says what a type holds."""
    wrong = [f"{' '.join(path)} {p.opts[0]}" for path, command in commands for p in command.params
             if isinstance(p, click.Option) and (p.help or "").startswith("Field name to value")
             and p.opts[0] != "--data"]
    assert wrong == []
    create = {" ".join(path): c for path, c in commands}["fields create"]
    help_of_type = next(p.help for p in create.params if "--type" in p.opts)
    assert help_of_type and help_of_type.startswith("The field's type") and "GET /schemas/field-types" in help_of_type


def endpoint_exists(doc: dict[str, Any], method: str, path: str) -> bool:
    for documented, item in doc["paths"].items():
        if method.lower() in item:
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(documented)) + "$"
            if documented == path or re.match(pattern, path):
                return True
    return False


def test_every_endpoint_named_in_help_exists(commands: list[tuple[list[str], click.Command]]) -> None:
    doc = load_document()
    missing = []
    for path, command in commands:
        for where, text in texts(command):
            for method, target in re.findall(rf"\b({'|'.join(METHODS)}) (/[^\s`'\"),;]*)", text):
                if not endpoint_exists(doc, method, target.rstrip(".:")):
                    missing.append(f"{' '.join(path)} ({where}): {method} {target}")
    assert missing == []


def test_every_option_and_command_named_in_help_exists(commands: list[tuple[list[str], click.Command]]) -> None:
    by_path = {" ".join(path): command for path, command in commands}
    missing = []
    for path, command in commands:
        if isinstance(command, click.Group):
            continue
        flags = set(GLOBAL_OPTIONS)
        for param in command.params:
            flags.update(getattr(param, "opts", []), getattr(param, "secondary_opts", []))
        for where, text in texts(command):
            missing += [f"{' '.join(path)} ({where}): {flag}"
                        for flag in re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text) if flag not in flags]
            for named in re.findall(r"`benchbook ([a-z][a-z -]*[a-z])", text):
                words = [w for w in named.split() if not w.startswith("-")]
                if not any(" ".join(words[:n]) in by_path for n in (2, 1)):
                    missing.append(f"{' '.join(path)} ({where}): benchbook {named}")
    assert missing == []


def test_http_spellings_are_the_clis(commands: list[tuple[list[str], click.Command]]) -> None:
    """Help says `--force`, not `force=true`, and COLLECTION, not DATASET_NAME (items 9, 13)."""
    wrong = []
    for path, command in commands:
        if not isinstance(command, ApiCommand):
            continue
        names = {key.partition(".")[2] for key in command.operation.cli_names}
        for where, text in texts(command):
            wrong += [f"{' '.join(path)} ({where}): `{m}=…`" for m in re.findall(r"`([a-z_]+)=(?:true|false)`", text)
                      if m in names]
        wrong += [f"{' '.join(path)}: {p.name}" for p in command.params
                  if isinstance(p, click.Argument) and "DATASET" in str(p.metavar)]
        wrong += [f"{' '.join(path)}: {o}" for p in command.params for o in getattr(p, "opts", []) if "dataset" in o]
    assert wrong == []


def test_export_help_names_the_zip_endpoint_which_exists() -> None:
    result = CliRunner().invoke(build_cli(), ["records", "export-csv", "--help"])
    assert result.exit_code == 0
    assert "POST /file-access/zip" in " ".join(result.output.split())
    assert endpoint_exists(load_document(), "POST", "/file-access/zip")
    assert CliRunner().invoke(build_cli(), ["file-access", "export-zip", "--help"]).exit_code == 0


def test_lazy_listing_matches_the_built_commands() -> None:
    """`benchbook --help` lists each local command with the line LOCAL_COMMANDS gives, without
    importing it; once imported the command shows the same line."""
    cli = build_cli()
    lazy_help = CliRunner().invoke(cli, ["--help"]).output
    assert isinstance(cli.commands, LazyCommands)
    for parent, name, _target, line in LOCAL_COMMANDS:
        group = cli if parent is None else cli.commands[parent]
        assert isinstance(group, click.Group)
        command = group.commands[name]
        assert command.get_short_help_str(200) == line.rstrip(".") or command.short_help == line
    assert CliRunner().invoke(cli, ["--help"]).output == lazy_help


def test_help_imports_neither_the_app_nor_the_database_layer() -> None:
    """`benchbook --help` and a group's --help build no app: the start-up stays small (item 15;
    the time itself is measured by bench/cli_startup.py)."""
    code = ("import sys\nfrom click.testing import CliRunner\nfrom benchbook.cli.main import build_cli\n"
            "cli = build_cli()\n"
            "assert CliRunner().invoke(cli, ['--help']).exit_code == 0\n"
            "assert CliRunner().invoke(cli, ['records', '--help']).exit_code == 0\n"
            "heavy = sorted(m for m in ('connexion', 'sqlalchemy', 'httpx', 'alembic', 'benchbook.http.app', 'rich')"
            " if m in sys.modules)\n"
            "print(heavy)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "[]", result.stderr
