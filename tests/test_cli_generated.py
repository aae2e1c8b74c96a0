"""The generated API commands: one per operation of the real document, named by the rule,
typed from the parameter schemas, and (end to end, in-process) talking to the real app."""
from __future__ import annotations

import asyncio
import copy
import json
import socket
import subprocess
import sys
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import click
import httpx
import pytest
from click.testing import CliRunner

from benchbook.cli import generated, output
from benchbook.cli.generated import ApiCommand, build_groups, command_names, load_document
from benchbook.cli.main import build_cli
from tests.cli_helpers import run

HTTP_METHODS = {"get", "put", "post", "delete", "options", "head", "patch", "trace"}


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    return load_document()


@pytest.fixture(scope="module")
def cli() -> click.Group:
    return build_cli()


def operations(doc: dict[str, Any]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(path, method, op) for path, item in doc["paths"].items() for method, op in item.items()
            if method in HTTP_METHODS]


LOCAL_IN_API_GROUPS = {("plugins", "new"), ("plugins", "try")}
"""Local commands that live in a generated group (they work on the project, not an operation)."""


def api_commands(groups: list[click.Group]) -> dict[tuple[str, str], ApiCommand]:
    found = {}
    for group in groups:
        for name, command in group.commands.items():
            if isinstance(command, ApiCommand):
                found[(group.name or "", name)] = command
            else:
                assert (group.name, name) in LOCAL_IN_API_GROUPS, (group.name, name)
    return found


def command(cli: click.Group, tag: str, name: str) -> ApiCommand:
    group = cli.commands[tag]
    assert isinstance(group, click.Group), tag
    found = group.commands.get(name)
    assert isinstance(found, ApiCommand), f"no command `{tag} {name}`; have {sorted(group.commands)}"
    return found


# ------------------------------------------------------------------------------ the tree


def test_every_operation_has_exactly_one_command(document: dict[str, Any]) -> None:
    commands = api_commands(build_groups(document))
    by_operation = Counter(c.operation.operation_id for c in commands.values())
    expected = {op["operationId"] for _, _, op in operations(document)}
    assert set(by_operation) == expected
    assert all(n == 1 for n in by_operation.values()), [k for k, n in by_operation.items() if n > 1]
    for (tag, _), cmd in commands.items():
        path, method, op = next(o for o in operations(document) if o[2]["operationId"] == cmd.operation.operation_id)
        assert tag == op["tags"][0].replace("_", "-")  # file_access -> file-access
        assert (cmd.operation.path, cmd.operation.method) == (path, method)


def test_adding_an_operation_adds_a_command(document: dict[str, Any]) -> None:
    doc = copy.deepcopy(document)
    doc["paths"]["/collections/{name_or_id}/frobnicate"] = {"post": {
        "tags": ["collections"], "operationId": "collections.frobnicate_collection",
        "summary": "Frobnicate a collection.", "description": "Test only.",
        "parameters": [{"name": "name_or_id", "in": "path", "required": True, "schema": {"type": "string"}}],
        "responses": {"204": {"description": "Done."}}}}
    before = api_commands(build_groups(document))
    after = api_commands(build_groups(doc))
    assert set(after) - set(before) == {("collections", "frobnicate")}


def test_tag_groups_have_the_tag_descriptions(document: dict[str, Any]) -> None:
    groups = {g.name: g for g in build_groups(document)}
    for tag in document["tags"]:
        if tag["name"] in groups:
            assert groups[tag["name"]].help == tag["description"].strip()


@pytest.mark.parametrize(("operation_id", "tag", "name"), [
    ("collections.list_collections", "collections", "list"),
    ("collections.create_collection", "collections", "create"),
    ("collections.list_deleted_collections", "collections", "list-deleted"),
    ("records.bulk_delete_records", "records", "bulk-delete"),
    ("schemas.list_field_types", "schemas", "list-field-types"),
    ("audit.list_record_audit", "audit", "list-record"),
])
def test_command_names_for_the_examples(document: dict[str, Any], operation_id: str, tag: str, name: str) -> None:
    commands = api_commands(build_groups(document))
    assert commands[(tag, name)].operation.operation_id == operation_id


def test_command_names_keep_full_names_when_empty_or_colliding() -> None:
    names = command_names(["records.delete_record", "records.delete_records", "records.records",
                           "records.get_record"], "records")
    assert names == {"records.delete_record": "delete-record", "records.delete_records": "delete-records",
                     "records.records": "records", "records.get_record": "get"}
    assert command_names(["system.health"], "system") == {"system.health": "health"}


def test_help_shows_summary_and_description(cli: click.Group, document: dict[str, Any]) -> None:
    runner = CliRunner()
    commands = api_commands([g for g in cli.commands.values() if isinstance(g, click.Group)
                             and any(isinstance(c, ApiCommand) for c in g.commands.values())])
    summaries = {op["operationId"]: op["summary"] for _, _, op in operations(document)}
    for (tag, name), cmd in commands.items():
        result = runner.invoke(cli, [tag, name, "--help"])
        assert result.exit_code == 0, result.output
        flat = " ".join(result.output.split())
        assert " ".join(summaries[cmd.operation.operation_id].split()) in flat, (tag, name)
        assert f"Usage: benchbook {tag} {name}" in result.output


def _param(cmd: click.Command, flag: str) -> click.Parameter:
    for p in cmd.params:
        if flag in getattr(p, "opts", []) or flag in getattr(p, "secondary_opts", []):
            return p
    raise AssertionError(f"{cmd.name} has no {flag}: {[getattr(p, 'opts', p.name) for p in cmd.params]}")


def test_option_types(cli: click.Group) -> None:
    records_list = command(cli, "records", "list")
    assert isinstance(records_list.params[0], click.Argument)
    assert _param(records_list, "--sort").multiple
    assert _param(records_list, "--where").multiple
    assert _param(records_list, "--limit").type is click.INT
    child_counts = _param(records_list, "--child-counts")
    assert isinstance(child_counts, click.Option) and child_counts.is_flag
    assert "--no-child-counts" in child_counts.secondary_opts
    action = _param(command(cli, "audit", "list"), "--action")
    assert isinstance(action.type, click.Choice)
    assert "create" in action.type.choices
    scope = _param(command(cli, "collections", "create"), "--scope")
    assert isinstance(scope.type, click.Choice) and list(scope.type.choices) == ["local", "global"]
    assert isinstance(_param(command(cli, "collections", "create"), "--schemas").type, generated.JsonText)
    upload = _param(command(cli, "files", "upload"), "--file")
    assert isinstance(upload.type, click.Path) and upload.required
    fields_update = command(cli, "fields", "update")
    assert [p.human_readable_name for p in fields_update.params if isinstance(p, click.Argument)] == ["NAME", "FIELD"]
    assert _param(command(cli, "records", "export-csv"), "--output")
    assert not any("--output" in getattr(p, "opts", []) for p in command(cli, "records", "list").params)


def test_default_is_shown_but_not_sent(cli: click.Group, monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(generated, "run_request", lambda settings, request, output_file=None, operation=None: sent.append(request))
    runner = CliRunner()
    assert "[default: 50]" in " ".join(runner.invoke(cli, ["records", "list", "--help"]).output.split())
    result = runner.invoke(cli, ["records", "list", "my coll/1"])
    assert result.exit_code == 0, result.output
    assert sent[-1] == {"method": "GET", "url": "/api/collections/my%20coll%2F1/records", "params": []}
    result = runner.invoke(cli, ["records", "list", "c", "--sort", "a", "--sort", "b:desc", "--limit", "5",
                                 "--no-child-counts"])
    assert result.exit_code == 0, result.output
    assert sent[-1]["params"] == [("sort", "a"), ("sort", "b:desc"), ("limit", "5"), ("child_counts", "false")]


def test_body_options(cli: click.Group, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sent: list[dict[str, Any]] = []
    monkeypatch.setattr(generated, "run_request", lambda settings, request, output_file=None, operation=None: sent.append(request))
    runner = CliRunner()
    result = runner.invoke(cli, ["collections", "create", "--name", "x", "--schemas", '["a","b"]'])
    assert result.exit_code == 0, result.output
    assert sent[-1]["json"] == {"name": "x", "schemas": ["a", "b"]}
    body = tmp_path / "body.json"
    body.write_text(json.dumps({"description": "from file", "rename": "y"}))
    result = runner.invoke(cli, ["collections", "update", "x", "--body", f"@{body}", "--description", "null"])
    assert result.exit_code == 0, result.output
    assert sent[-1]["method"] == "PATCH" and sent[-1]["json"] == {"description": None, "rename": "y"}
    result = runner.invoke(cli, ["collections", "create", "--schemas", "[oops"])
    assert result.exit_code == 2 and "not valid JSON" in result.output
    result = runner.invoke(cli, ["collections", "create", "--schemas", '{"a": 1}'])
    assert result.exit_code == 2 and "expected a JSON array" in result.output
    result = runner.invoke(cli, ["collections", "create", "--body", "[1]"])
    assert result.exit_code == 2 and "must be a JSON object" in result.output
    result = runner.invoke(cli, ["collections", "restore", "x"])
    assert result.exit_code == 0 and "json" not in sent[-1]


def test_unreachable_url_exits_1(cli: click.Group) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    result = CliRunner().invoke(cli, ["--url", f"http://127.0.0.1:{port}", "system", "health"])
    assert result.exit_code == 1
    assert f"cannot reach http://127.0.0.1:{port}" in result.stderr


def test_error_text_lists_validation_entries() -> None:
    body = {"detail": "Request validation failed", "errors": [
        {"loc": ["body", "name"], "msg": "does not match pattern", "type": "value_error", "input": "!", "ctx": {}}]}
    response = httpx.Response(422, json=body)
    assert output.error_text(response) == "error 422: Request validation failed\n  body.name: does not match pattern"
    assert output.error_text(httpx.Response(500, json={"detail": "Internal server error", "request_id": "r1"})) == (
        "error 500: Internal server error (request id r1)")
    assert output.error_text(httpx.Response(502, text="bad gateway")) == "error 502: bad gateway"


def test_table_of_a_page_has_one_row_per_item(capsys: pytest.CaptureFixture[str]) -> None:
    items = [{"id": "a1", "name": "first", "data": {"x": 1}}, {"id": "b2", "name": "second", "data": {}}]
    output.print_table({"items": items, "total": 2, "offset": 0})
    text = capsys.readouterr().out
    table, caption = text.split("2 of 2")[0], text[text.index("2 of 2"):]
    # body rows are the lines drawn with the light vertical bar (the header uses the heavy one)
    rows = [[cell.strip() for cell in line.strip().strip("\u2502").split("\u2502")]
            for line in table.splitlines() if line.strip().startswith("\u2502")]
    assert len(rows) == len(items), text
    assert rows == [["a1", "first"], ["b2", "second"]], text
    for word in ("a1", "first", "b2", "second"):
        assert text.count(word) == 1, f"{word!r} printed {text.count(word)} times:\n{text}"
    assert caption.startswith("2 of 2")  # where the page sits (tests/test_cli_pages.py)
    assert "data" not in table  # non-scalar columns are left out


# ------------------------------------------------------------------------------ end to end


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh project folder shared by the end-to-end tests (the real app, in-process)."""
    return tmp_path_factory.mktemp("project")


def test_create_then_list(cli: click.Group, project: Path) -> None:
    created = run(cli, project, "collections", "create", "--name", "x", "--description", "first")
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["name"] == "x"
    listed = run(cli, project, "collections", "list")
    assert listed.exit_code == 0, listed.output
    assert "x" in [c["name"] for c in json.loads(listed.stdout)]


def test_not_found_exits_1_with_detail_on_stderr(cli: click.Group, project: Path) -> None:
    result = run(cli, project, "collections", "get", "no-such-collection")
    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr.startswith("error 404: ")
    assert len(result.stderr.strip()) > len("error 404: ")


def test_validation_error_lists_entries(cli: click.Group, project: Path) -> None:
    result = run(cli, project, "collections", "create", "--name", "!bad name")
    assert result.exit_code == 1
    assert result.stderr.startswith("error 422: Request validation failed")
    assert len(result.stderr.strip().splitlines()) >= 2


def test_table_output(cli: click.Group, project: Path) -> None:
    run(cli, project, "collections", "create", "--name", "tabled")
    listed = run(cli, project, "--table", "collections", "list")
    assert listed.exit_code == 0, listed.output
    assert "tabled" in listed.stdout and "name" in listed.stdout and "─" in listed.stdout
    with pytest.raises(json.JSONDecodeError):
        json.loads(listed.stdout)
    one = run(cli, project, "--table", "collections", "get", "tabled")
    assert one.exit_code == 0, one.output
    assert "key" in one.stdout and "value" in one.stdout and "tabled" in one.stdout


def test_file_upload_and_download(cli: click.Group, project: Path, tmp_path: Path) -> None:
    source = tmp_path / "notes.txt"
    source.write_bytes(b"hello benchbook\n")
    uploaded = run(cli, project, "files", "upload", "--file", str(source))
    assert uploaded.exit_code == 0, uploaded.output
    sha = json.loads(uploaded.stdout)["sha256"]
    downloaded = run(cli, project, "files", "download", sha)
    assert downloaded.exit_code == 0, downloaded.output
    assert downloaded.stdout_bytes == b"hello benchbook\n"
    target = tmp_path / "copy.txt"
    assert run(cli, project, "files", "download", sha, "--output", str(target)).exit_code == 0
    assert target.read_bytes() == b"hello benchbook\n"


def test_health(cli: click.Group, project: Path) -> None:
    result = run(cli, project, "system", "health")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["status"] == "ok"


def test_errors_name_parameters_the_cli_way(cli: click.Group, project: Path) -> None:
    run(cli, project, "collections", "create", "--name", "spelled")
    result = run(cli, project, "records", "list", "spelled", "--where", "no-equals-sign")
    assert result.exit_code == 1
    assert "  --where[0]: " in result.stderr and "query.where" not in result.stderr
    result = run(cli, project, "records", "list", "spelled", "--limit", "-1")
    assert "  --limit: " in result.stderr and "limit: limit" not in result.stderr
    result = run(cli, project, "records", "list", "spelled", "--within", "ABCDEFGH")
    assert result.stderr.startswith("error 422: ") and "--within" in result.stderr and "--schema" in result.stderr


def test_one_spelling_of_errors(cli: click.Group, project: Path) -> None:
    usage = run(cli, project, "records", "list", "--no-such-option")
    assert usage.exit_code == 2 and "\nerror: No such option" in usage.stderr and "Error:" not in usage.stderr
    local = run(cli, project, "import", str(project / "benchbook.toml"), "--collection", "nope")
    assert local.exit_code != 0 and "Error:" not in local.stderr


def test_nullable_booleans_are_flags(cli: click.Group) -> None:
    required = _param(command(cli, "fields", "update"), "--required")
    assert isinstance(required, click.Option) and required.is_flag and "--no-required" in required.secondary_opts


def test_help_uses_cli_spellings(cli: click.Group) -> None:
    text = " ".join(CliRunner().invoke(cli, ["records", "delete-records", "--help"]).output.split())
    assert "`--force`" in text and "force=true" not in text
    assert "COLLECTION" in CliRunner().invoke(cli, ["records", "list", "--help"]).output
    assert "--collection" in CliRunner().invoke(cli, ["analytics", "records-counts", "--help"]).output


def test_table_names_the_columns_it_leaves_out(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(output, "_width", lambda: 80)
    wide = {f"column_{i:02d}": f"value {i}" for i in range(12)}
    output.print_table({"items": [{"nested": {"a": 1}, **wide, "blank": None}], "total": 1})
    text = capsys.readouterr().out
    assert "left out (lists or objects): nested" in text
    assert "left out (empty in every row): blank" in text
    shown = [c for c in wide if c in text.split("left out")[0]]
    room = next(line for line in text.splitlines() if line.startswith("left out (no room)"))
    assert shown and [c for c in wide if c not in shown] == room.split(": ", 1)[1].split(", ")
    assert "--columns" in text
    output.print_table({"items": [{"nested": {"a": 1}, **wide}]}, columns=["column_11", "nested"])
    chosen = capsys.readouterr().out
    assert "column_11" in chosen and '{"a": 1}' in chosen and "column_00" not in chosen and "left out" not in chosen
    with pytest.raises(click.UsageError, match="the columns are"):
        output.print_table({"items": [wide]}, columns=["nope"])


def test_history_tables_show_field_labels(cli: click.Group, project: Path) -> None:
    run(cli, project, "schemas", "create", "--name", "vial", "--fields", '[{"name": "volume_ml", "type": "float", "label": "Volume"}]')
    run(cli, project, "collections", "create", "--name", "vials", "--schemas", '["vial"]')
    made = json.loads(run(cli, project, "records", "create", "vials", "--schema-name", "vial",
                          "--data", '{"volume_ml": 1.5}').stdout)
    run(cli, project, "records", "update", made["id"], "--data", '{"volume_ml": 2.5}')
    entries = json.loads(run(cli, project, "audit", "list-record", made["id"]).stdout)["items"]
    field_id = entries[0]["changes"][0]["field"]
    assert entries[0]["new_data"]["data"] == {"Volume": 2.5} and entries[0]["old_data"]["data"] == {"Volume": 1.5}
    assert entries[-1]["new_data"]["data"] == {"Volume": 1.5}  # the create
    # the columns named: which ones fit without them depends on the terminal's width
    table = run(cli, project, "--table", "audit", "list-record", made["id"], "--columns", "action,changes").stdout
    assert "Volume: 1.5 → 2.5" in " ".join(table.split())
    assert field_id not in table


def test_limit_zero_answers_the_total(cli: click.Group, project: Path) -> None:
    run(cli, project, "collections", "create", "--name", "counted")
    result = run(cli, project, "records", "list", "counted", "--limit", "0")
    assert result.exit_code == 0 and result.stdout.strip() == "0"


def test_outside_a_project_the_default_is_named_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("BENCHBOOK_PROJECT", raising=False)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.chdir(tmp_path)
    first = CliRunner().invoke(build_cli(), ["system", "health"])
    assert first.exit_code == 0, first.output
    default = tmp_path / "data" / "benchbook" / "default"
    assert f"using the default project {default}" in first.stderr and "benchbook init" in first.stderr
    assert (default / "benchbook.toml").exists()
    again = CliRunner().invoke(build_cli(), ["system", "health"])
    assert again.exit_code == 0 and "default project" not in again.stderr


def test_an_in_process_command_imports_only_its_handlers(project: Path) -> None:
    """An in-process command routes only its own path: the other handler modules (the AI
    assistant's client library among them) are not imported (item 15)."""
    code = ("import sys\nfrom click.testing import CliRunner\nfrom benchbook.cli.main import build_cli\n"
            f"result = CliRunner().invoke(build_cli(), ['--project', {str(project)!r}, 'collections', 'list'])\n"
            "assert result.exit_code == 0, result.output\n"
            "print(sorted(m for m in sys.modules if m.startswith('benchbook.handlers.')))\n"
            "print('openai' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    handlers, openai_loaded = done.stdout.strip().splitlines()
    # forms: where the edge's multipart validator leaves a parsed form for a handler (a few lines)
    assert handlers == "['benchbook.handlers.collections', 'benchbook.handlers.forms', 'benchbook.handlers.uow']", \
        handlers
    assert openai_loaded == "False"


def test_an_in_process_command_runs_inside_a_running_event_loop(cli: click.Group, project: Path) -> None:
    """A command called where an event loop already runs (a notebook's cell; a test beside a
    browser driver) sends its request from a loop of its own: ``asyncio.run`` refuses there."""
    async def in_a_loop() -> Any:
        return run(cli, project, "collections", "create", "--name", "from-a-loop")

    with ThreadPoolExecutor(max_workers=1) as pool:  # a thread of its own: this one may run a loop already
        created = pool.submit(asyncio.run, in_a_loop()).result()
    assert created.exit_code == 0, created.output
    assert json.loads(created.stdout)["name"] == "from-a-loop"


def test_records_list_keeps_the_apis_columns_option(cli: click.Group, monkeypatch: pytest.MonkeyPatch) -> None:
    """`records list --columns` is the API's derived columns; its table chooser is --table-columns."""
    sent: list[tuple[Any, dict[str, Any]]] = []
    monkeypatch.setattr(generated, "run_request",
                        lambda settings, request, output_file=None, operation=None: sent.append((settings, request)))
    result = CliRunner().invoke(cli, ["records", "list", "c", "--columns", "site", "--table-columns", "id,site"])
    assert result.exit_code == 0, result.output
    settings, request = sent[-1]
    assert ("columns", "site") in request["params"]
    assert settings.table and settings.columns == "id,site" and settings.columns_flag == "--table-columns"
    CliRunner().invoke(cli, ["collections", "list", "--columns", "name"])
    assert sent[-1][0].columns == "name" and sent[-1][0].columns_flag == "--columns"
