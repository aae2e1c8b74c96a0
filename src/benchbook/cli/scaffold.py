"""``benchbook plugins new NAME``: scaffold a working tier-1 plugin in the project's ``plugins/NAME``.

The folder gets four files:

- ``plugin.toml``: ``command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]``, ``tier = 1``,
  ``timeout = 60`` (read by :func:`benchbook.runner.plugin_host.discovery.read_manifest`);
- ``plugin.py``: a small real plugin written with the SDK (:mod:`benchbook.plugin`): input
  ``text`` (string, required) → outputs ``words`` and ``characters`` (integers), config options
  ``min_word_length`` and ``count_spaces``, a ``ctx.log`` line; its id is NAME;
- ``README.md``: how to run it, test it and use it in benchbook;
- ``test_plugin.py``: pytest tests that start the plugin as a subprocess the way the host does
  (``python -m benchbook.plugin plugin.py`` in the folder, minimal environment, scratch folder),
  play the host (``describe``, then runs) and check the answers, every frame validated against
  the protocol schema.

NAME is a slug (``[a-z][a-z0-9_-]*``, at most 100 characters, so it is also a valid plugin id).
An existing ``plugins/NAME`` is refused (exit status 1, nothing written) unless ``--force``,
which rewrites those four files and leaves anything else in the folder alone.

:func:`register` adds the command to the ``plugins`` group generated from the OpenAPI document
(tag ``plugins``), as ``benchbook plugins new``. It works on the local project folder
(``--project``, else the usual lookup) whatever ``--url`` says, since plugin folders live in the
project.
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from string import Template

import click

from benchbook.cli.sending import Settings
from benchbook.settings.config import Project

NAME_PATTERN = re.compile(r"[a-z][a-z0-9_-]{0,99}")
"""A plugin folder name: a slug that is also a valid ``describe_result`` id."""
DEFAULT_CATEGORY = "text"
DEFAULT_DESCRIPTION = "Counts the words and characters of a text."
FILES = ("plugin.toml", "plugin.py", "README.md", "test_plugin.py")

PLUGIN_TOML = """\
# How benchbook starts this plugin (read by discovery: `benchbook plugins refresh`).
command = ["{python}", "-m", "benchbook.plugin", "plugin.py"]   # argv, run in this folder; {python} = benchbook's Python
tier = 1                                                       # 1: a subprocess on this machine
timeout = 60                                                   # seconds a step may take (a workflow step may say otherwise)
# pool_size = 1                                                # warm processes kept between runs (docs/plugin-authoring.md)
"""

PLUGIN_PY = Template('''\
"""$title: a benchbook plugin (id `$id`, scaffolded by `benchbook plugins new`).

The example counts the words and characters of a text. Make it your own step: declare the
inputs, outputs and config below, do the work in run() and return a dict of the outputs.

Serve it:  python -m benchbook.plugin plugin.py     (the command in plugin.toml)
Test it:   python -m pytest -q test_plugin.py
"""
from __future__ import annotations

from typing import Any

from benchbook.plugin import Context, Plugin

plugin = Plugin(
    id=$id_literal,
    name=$title_literal,
    description=$description_literal,
    category=$category_literal,
    inputs={
        "text": {"type": "string", "description": "The text to count", "required": True},
    },
    outputs={
        "words": {"type": "integer", "description": "Number of words of at least min_word_length characters",
                  "required": True},
        "characters": {"type": "integer", "description": "Number of characters (whitespace too unless "
                       "count_spaces is false)", "required": True},
    },
    config_schema={
        "type": "object",
        "properties": {
            "min_word_length": {"type": "integer", "minimum": 1, "default": 1,
                                "description": "Shorter words are not counted"},
            "count_spaces": {"type": "boolean", "default": True,
                             "description": "Count whitespace characters too"},
        },
        "additionalProperties": False,
    },
    # capabilities=["get_context_record"],  # to call ctx.get_context_record() and friends in run()
)


@plugin.run
def run(ctx: Context, inputs: dict[str, Any], config: dict[str, Any]) -> dict[str, Any]:
    # The SDK has already checked the inputs against the declaration (a run without the
    # required "text" fails with kind invalid_input) and the config against config_schema,
    # with its defaults filled in. Raise benchbook.plugin.PluginError("some_kind", "why") to
    # fail a run with a kind of your own.
    text: str = inputs["text"]
    words = [word for word in text.split() if len(word) >= config["min_word_length"]]
    characters = len(text) if config["count_spaces"] else sum(not c.isspace() for c in text)
    ctx.log(f"{len(words)} word(s), {characters} character(s)")
    return {"words": len(words), "characters": characters}
''')

TEST_PLUGIN_PY = Template('''\
"""Tests of the $id plugin. Each test starts plugin.py as a real subprocess the way benchbook
does (`python -m benchbook.plugin plugin.py` in this folder, with a minimal environment and a
scratch folder), plays the host over the wire protocol (newline-delimited JSON frames on
standard input and output) and checks the answers. Every frame either side sends is validated
against the protocol's schema.

Run: python -m pytest -q test_plugin.py
"""
from __future__ import annotations

import json
import os
import queue
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from benchbook.plugin import validate_host_frame, validate_plugin_frame

HERE = Path(__file__).resolve().parent
COMMAND = [sys.executable, "-m", "benchbook.plugin", "plugin.py"]  # plugin.toml's command
PASSED_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TZ", "PYTHONPATH", "SYSTEMROOT", "TMPDIR")
TIMEOUT = 30.0
FINAL = {"describe_result", "result", "error"}
Rpc = Callable[[str, dict[str, Any]], dict[str, Any]]


class Host:
    """Plays benchbook's host for one tier-1 plugin process."""

    def __init__(self, scratch: Path) -> None:
        env = {key: value for key in PASSED_ENV if (value := os.environ.get(key)) is not None}
        env["BENCHBOOK_SCRATCH"] = str(scratch)
        self.proc = subprocess.Popen(COMMAND, cwd=HERE, env=env, stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: list[str] = []
        threading.Thread(target=self._read_stdout, daemon=True).start()
        threading.Thread(target=self._read_stderr, daemon=True).start()

    def _read_stdout(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _read_stderr(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.decode("utf-8", "replace"))

    def send(self, frame: dict[str, Any]) -> None:
        validate_host_frame(frame)
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode("utf-8") + b"\\n")
        self.proc.stdin.flush()

    def request(self, frame: dict[str, Any], rpc: Rpc | None = None) -> tuple[dict[str, Any], list[str]]:
        """Send ``frame``; return the final answer (describe_result, result or error) and the
        messages of the log frames sent before it. An rpc_call is answered with
        ``rpc(method, params)``, or refused with kind capability_denied when ``rpc`` is None."""
        self.send(frame)
        logs: list[str] = []
        while True:
            try:
                line = self.lines.get(timeout=TIMEOUT)
            except queue.Empty:
                pytest.fail(f"no answer within {TIMEOUT}s; stderr:\\n{''.join(self.stderr)}")
            if line is None:
                self.proc.wait(timeout=TIMEOUT)
                pytest.fail(f"the plugin exited ({self.proc.returncode}); stderr:\\n{''.join(self.stderr)}")
            answer = validate_plugin_frame(json.loads(line))
            if answer["type"] in FINAL:
                return answer, logs
            if answer["type"] == "log":
                logs.append(answer["message"])
            elif rpc is None:
                self.send({"type": "error", "call_id": answer["call_id"],
                           "error": {"kind": "capability_denied", "message": "no RPC in this test",
                                     "retryable": False}})
            else:
                self.send({"type": "rpc_result", "call_id": answer["call_id"],
                           "result": rpc(answer["method"], answer["params"])})

    def run(self, inputs: dict[str, Any], config: dict[str, Any] | None = None,
            rpc: Rpc | None = None) -> tuple[dict[str, Any], list[str]]:
        """One run frame, as the host sends it."""
        frame = {"type": "run", "inputs": inputs, "config": config or {}, "capabilities": []}
        return self.request(frame, rpc)

    def close(self) -> int:
        """End of input: a tier-1 plugin then exits; returns its exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()


@pytest.fixture
def host(tmp_path: Path) -> Iterator[Host]:
    plugin = Host(tmp_path)
    yield plugin
    if plugin.proc.poll() is None:
        plugin.close()


def test_describe_gives_the_contract(host: Host) -> None:
    contract, _ = host.request({"type": "describe"})
    assert contract["type"] == "describe_result", contract
    assert contract["id"] == $id_literal
    assert contract["inputs"]["text"]["type"] == "string" and contract["inputs"]["text"]["required"]
    assert {name: port["type"] for name, port in contract["outputs"].items()} == {
        "words": "integer", "characters": "integer"}
    assert contract["config_schema"]["properties"]["min_word_length"]["default"] == 1


def test_run_counts_words_and_characters(host: Host) -> None:
    host.request({"type": "describe"})  # as benchbook does: describe first, then runs
    answer, logs = host.run({"text": "the quick  brown fox"})
    assert answer == {"type": "result", "outputs": {"words": 4, "characters": 20}}
    assert logs == ["4 word(s), 20 character(s)"]


def test_config_options_change_the_counts(host: Host) -> None:
    answer, _ = host.run({"text": "the quick  brown fox"}, {"min_word_length": 4, "count_spaces": False})
    assert answer["outputs"] == {"words": 2, "characters": 16}


def test_one_process_serves_several_runs(host: Host) -> None:
    assert host.run({"text": "one"})[0]["outputs"] == {"words": 1, "characters": 3}
    assert host.run({"text": ""})[0]["outputs"] == {"words": 0, "characters": 0}
    assert host.close() == 0


def test_a_run_without_text_fails_with_invalid_input(host: Host) -> None:
    answer, _ = host.run({})
    assert answer["type"] == "error" and answer["call_id"] is None
    assert answer["error"]["kind"] == "invalid_input", answer


def test_a_bad_config_fails_with_invalid_config(host: Host) -> None:
    answer, _ = host.run({"text": "x"}, {"min_word_length": 0})
    assert answer["type"] == "error" and answer["error"]["kind"] == "invalid_config", answer


def test_the_plugin_exits_cleanly_at_end_of_input(host: Host) -> None:
    host.request({"type": "describe"})
    assert host.close() == 0, "".join(host.stderr)
''')

README_MD = Template('''\
# $title

$description

A benchbook plugin: id `$id`, category `$category`, tier 1 (a subprocess
on this machine). Scaffolded by `benchbook plugins new $id`; the example step counts the words
and characters of a text — replace it with your own.

## Files

- `plugin.toml` — how benchbook starts the plugin: `command` (argv, run in this folder;
  `{python}` is the Python benchbook runs under), `tier = 1`, `timeout` (seconds a step may take),
  `pool_size` (warm processes kept between runs; one process serves many runs, so keep nothing
  of one run's record or files for the next).
- `plugin.py` — the plugin, written with benchbook's Python SDK (`benchbook.plugin`): its
  contract (`Plugin(...)`: id, inputs, outputs, `config_schema`, capabilities) and
  `run(ctx, inputs, config)`, which returns a dict of the outputs.
- `test_plugin.py` — tests that start the plugin as benchbook does and talk to it over the
  wire protocol.

## Contract

| | name | type | |
|---|---|---|---|
| input | `text` | string | required |
| output | `words` | integer | words of at least `min_word_length` characters |
| output | `characters` | integer | whitespace included unless `count_spaces` is false |
| config | `min_word_length` | integer ≥ 1 | default 1 |
| config | `count_spaces` | boolean | default true |

## Run it

Use the Python benchbook is installed in (the one `{python}` stands for). In this folder:

```sh
python -m benchbook.plugin plugin.py
```

serves the plugin in tier 1: it reads JSON frames, one a line, from standard input until end of
input and answers each on standard output. By hand:

```sh
printf '%s\\n' '{"type": "describe"}' \\
  '{"type": "run", "inputs": {"text": "hello plugin world"}, "config": {"count_spaces": false}}' \\
  | python -m benchbook.plugin plugin.py
```

`python -m benchbook.plugin plugin.py describe` or `... run` reads a single frame, answers and
exits (tier 2 style, no RPC). Anything the plugin prints goes to benchbook as log lines, never
into the protocol; `ctx.log(...)` is the way to report progress.

## Test it

```sh
python -m pytest -q test_plugin.py
```

Each test starts the plugin as a subprocess with the command of `plugin.toml`, sends `describe`
and `run` frames as the host would and checks the answers (every frame is validated against the
protocol schema). Add a test for each behaviour you add; `Host.run(..., rpc=...)` answers the
RPC calls a plugin with capabilities makes. Every plugin's test file is called
`test_plugin.py`, so to test several plugin folders in one go use
`python -m pytest --import-mode=importlib plugins/`.

## Use it in benchbook

```sh
benchbook plugins refresh     # discovery: describes every plugin; this one should be listed with status ok
benchbook plugins get $id     # its contract as benchbook captured it
benchbook plugins try $id --inputs '{"text": "hello plugin world"}' --config '{"count_spaces": false}' --frames
```

`benchbook plugins try` runs one step through benchbook's own plugin host, outside any
workflow, and prints the outputs (`--frames` also shows every frame both ways; `--record RID`
names the record the step is about, for plugins that use it; `--dry-run` rolls back whatever the
step wrote). See `benchbook plugins try --help`.

After changing the contract (inputs, outputs, config, capabilities), run
`benchbook plugins refresh` again: benchbook captures it once, at discovery.

## Going further

- Port types: `integer`, `float`, `string`, `boolean`, `date`, `datetime`, `file` (a stored
  file's sha256; read it with `ctx.get_file`), `json`, `bytes`, `table` (a pandas DataFrame).
- Fail a run with a kind of your own: `raise PluginError("no_data", "the record has no samples")`.
- Talk to benchbook during a run: declare `capabilities=[...]` (e.g. `get_context_record`,
  `update_record`, `find_records`) and call `ctx.get_context_record()`, `ctx.update_record(...)`,
  … A call outside the declared capabilities raises `PluginRpcError` kind `capability_denied`.
- The SDK's reference and decisions: `python -c "import benchbook.plugin as p; help(p)"`; the
  wire protocol: `plugin-protocol/README.md` in benchbook's source.
''')


def _literal(text: str) -> str:
    """``text`` as a double-quoted Python string literal (JSON string syntax is valid Python)."""
    return json.dumps(text, ensure_ascii=False)


def _title(name: str) -> str:
    """``word-count`` → ``Word count``."""
    return re.sub(r"[-_]+", " ", name).strip().capitalize()


def render(name: str, *, category: str = DEFAULT_CATEGORY, description: str = DEFAULT_DESCRIPTION) -> dict[str, str]:
    """The scaffold's files for plugin ``name``: file name → text."""
    title = _title(name)
    one_line = " ".join(description.split()) or DEFAULT_DESCRIPTION
    values = {
        "id": name, "title": title, "category": category, "description": one_line,
        "id_literal": _literal(name), "title_literal": _literal(title),
        "category_literal": _literal(category), "description_literal": _literal(one_line),
    }
    return {
        "plugin.toml": PLUGIN_TOML,
        "plugin.py": PLUGIN_PY.substitute(values),
        "README.md": README_MD.substitute(values),
        "test_plugin.py": TEST_PLUGIN_PY.substitute(values),
    }


def scaffold(plugins_dir: Path, name: str, *, category: str = DEFAULT_CATEGORY,
             description: str = DEFAULT_DESCRIPTION, force: bool = False) -> Path:
    """Write the scaffold of plugin ``name`` into ``plugins_dir/name`` and return that folder.

    Raises ``ValueError`` when ``name`` is not a slug and ``FileExistsError`` when the folder
    (or a file of that name) exists and ``force`` is false; nothing is written then. With
    ``force`` an existing folder gets the four files rewritten, the rest left alone.
    """
    if not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid plugin name: use lowercase letters, digits, '-' and '_', "
                         "starting with a letter (at most 100 characters), e.g. 'word-count'")
    folder = plugins_dir / name
    if (folder.exists() or folder.is_symlink()) and not (force and folder.is_dir()):
        what = "a folder" if folder.is_dir() else "a file"
        hint = "; --force rewrites " + ", ".join(FILES) + " in it" if folder.is_dir() else ""
        raise FileExistsError(f"{folder} already exists ({what}): nothing was written{hint}")
    files = render(name, category=category, description=description)
    folder.mkdir(parents=True, exist_ok=True)
    for file_name, text in files.items():
        (folder / file_name).write_text(text, encoding="utf-8")
    return folder


@click.command("new", short_help="Scaffold a working plugin in the project's plugins/NAME")
@click.argument("name")
@click.option("--category", default=DEFAULT_CATEGORY, show_default=True,
              help="The plugin's category in its contract.")
@click.option("--description", default=DEFAULT_DESCRIPTION, show_default=True,
              help="The plugin's description in its contract and README.")
@click.option("--force", is_flag=True, default=False,
              help="Rewrite the scaffold's files in an existing plugins/NAME (other files are kept).")
@click.pass_context
def new_plugin(ctx: click.Context, name: str, category: str, description: str, force: bool) -> None:
    """Scaffold a working plugin in the project's plugins/NAME: plugin.toml (tier 1, run with
    the Python SDK), plugin.py (an example step: text → words and characters), README.md and
    test_plugin.py (pytest tests that run the plugin as a subprocess and play the host).

    NAME is the plugin's id: lowercase letters, digits, '-' and '_', starting with a letter. An
    existing plugins/NAME is refused (exit status 1, nothing written) unless --force. Works on
    the local project folder (--project, else the usual lookup), whatever --url says.
    """
    project = Project.locate(getattr(ctx.find_object(Settings), "project", None))
    try:
        folder = scaffold(project.root / "plugins", name, category=category, description=description, force=force)
    except (ValueError, FileExistsError) as exc:
        raise click.ClickException(str(exc)) from None
    click.echo(str(folder))
    click.echo(f"created {', '.join(FILES)}; {next_step(folder, name)}", err=True)


def has_pytest() -> bool:
    """Whether pytest can be imported here (it comes with benchbook's ``test`` extra only)."""
    import importlib.util

    return importlib.util.find_spec("pytest") is not None


def next_step(folder: Path, name: str) -> str:
    """The hint printed after scaffolding: run the folder's tests when pytest is installed;
    otherwise (a plain install) register the plugin and run its example step with
    ``benchbook plugins try``, saying how to get pytest for ``test_plugin.py``."""
    if has_pytest():
        return f"next: cd {folder} && python -m pytest -q test_plugin.py, then benchbook plugins refresh"
    return (f"next: benchbook plugins refresh && benchbook plugins try {name} --inputs "
            """'{"text": "hello plugin world"}' --dry-run (test_plugin.py needs pytest: pip install pytest)""")


def register(root: click.Group) -> None:
    """Add ``new`` to the root group's ``plugins`` group (the one generated from the OpenAPI tag
    ``plugins``), creating a ``plugins`` group when the document has none. The generated group
    is a plain ``click.Group``, so ``add_command`` is all it takes; ``tests/test_cli_generated.py``
    lists the local commands that live in generated groups (``LOCAL_IN_API_GROUPS``)."""
    group = root.commands.get("plugins")
    if group is None:
        group = click.Group("plugins", help="Plugins.")
        root.add_command(group)
    if not isinstance(group, click.Group):
        raise TypeError(f"the root command 'plugins' is a {type(group).__name__}, not a group")
    if "new" in group.commands:
        raise ValueError("'plugins new' exists already (an API operation of that name?)")
    group.add_command(new_plugin)
