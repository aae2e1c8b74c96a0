"""``docs/plugin-authoring.md`` keeps up with the code: these tests fail when the guide falls behind.

- Frame reference: every frame type of ``frames.schema.json`` (``$defs/frame``'s ``type`` enum)
  has a ``### `type` — direction`` heading in the guide's *Frame reference*, with the right
  direction (from ``host_frame``/``plugin_frame``), and its subsection names (in backticks)
  every property the schema gives that frame — nested ones too (the error envelope, a port,
  ``call_tool``'s params) — and every value of an enum property (``stream``, ``method``).
  A heading for a type the schema does not have fails too.
- Error kinds: every kind in the table of ``benchbook.runner.plugin_host.frames``' docstring and in
  the SDK's (``benchbook.plugin.errors``) is a row of the guide's *Error kinds* tables.
- ``plugin.toml``: every key ``discovery.read_manifest`` accepts is a row of the guide's
  *The plugin folder* table (the keys are read from the function's source and checked to be
  exactly the accepted ones).
- Worked examples: the Python example (```` ```python title="plugin.py" ````) is written to a
  folder with the guide's ``plugin.toml`` and run: ``python -m benchbook.plugin plugin.py
  describe`` with a ``describe`` frame on standard input must answer the ``describe_result``
  the guide shows; then the tier-1 command of the guide's ``plugin.toml`` replays the guide's
  transcript (```` ```text title="wire: describe and run" ````): the ``host`` lines are sent, the
  ``rpc_call`` frames answered as shown, and every ``plugin`` line must come back as shown
  (``call_id`` values aside). The JavaScript example gets the same run (when ``node`` is
  installed). Every frame a plugin sends is validated against ``#/$defs/plugin_frame`` with
  jsonschema here, not with the SDK's own checks.
"""
from __future__ import annotations

import ast
import inspect
import json
import queue
import re
import shutil
import subprocess
import sys
import textwrap
import threading
from functools import cache
from pathlib import Path
from typing import Any, Self

import pytest
from jsonschema import Draft202012Validator

from benchbook.plugin import errors as sdk_errors
from benchbook.runner.plugin_host import discovery
from benchbook.runner.plugin_host import frames as host_frames
from benchbook.runner.plugin_host.host import plugin_env
from tests.waiting import HANG

ROOT = Path(__file__).resolve().parents[1]
GUIDE = ROOT / "docs" / "plugin-authoring.md"
PROTOCOL = ROOT / "plugin-protocol"
SCHEMA = PROTOCOL / "frames.schema.json"
NODE = shutil.which("node")
TIMEOUT = HANG
SDK_KINDS = ("plugin_error", "invalid_input", "invalid_config", "invalid_output", "rpc_unavailable",
             "frame_too_large", "protocol_error", "capability_denied")
"""The kinds the brief for the guide names; the SDK's docstring table is read as well."""

Frame = dict[str, Any]


# ------------------------------------------------------------------------------ the guide

@cache
def guide() -> str:
    return GUIDE.read_text(encoding="utf-8")


def section(title: str) -> str:
    """The text of the guide's ``## <title>`` section, up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", guide(), re.DOTALL | re.MULTILINE)
    assert match, f"the guide has no '## {title}' section"
    return match.group(1)


def fenced(lang: str, title: str) -> str:
    """The one fenced block opened with ```` ```<lang> title="<title>" ````."""
    blocks = re.findall(rf'^```{re.escape(lang)} title="{re.escape(title)}"\n(.*?)^```$', guide(), re.DOTALL | re.MULTILINE)
    assert len(blocks) == 1, f'the guide must have exactly one ```{lang} title="{title}" block, found {len(blocks)}'
    return str(blocks[0])


def table_rows(text: str) -> set[str]:
    """The backticked first cells of the Markdown table rows in ``text``."""
    return set(re.findall(r"^\| `([^`]+)` \|", text, re.MULTILINE))


@cache
def schema() -> dict[str, Any]:
    return json.loads(SCHEMA.read_text(encoding="utf-8"))  # type: ignore[no-any-return]


@cache
def validator(definition: str) -> Draft202012Validator:
    return Draft202012Validator({"$ref": f"#/$defs/{definition}", "$defs": schema()["$defs"]})


def assert_valid(definition: str, value: object) -> None:
    problems = [f"{e.json_path}: {e.message}" for e in validator(definition).iter_errors(value)]
    assert not problems, problems


# -------------------------------------------------------------------------- frame reference

def property_names(node: object, seen: frozenset[str] = frozenset()) -> set[str]:
    """Every property name under ``node``, following ``$ref`` into ``$defs`` and every
    subschema keyword (``properties``, ``additionalProperties``, ``items``, ``if``/``then``/
    ``else``, ``allOf``/``anyOf``/``oneOf``)."""
    if isinstance(node, list):
        return set().union(*(property_names(item, seen) for item in node)) if node else set()
    if not isinstance(node, dict):
        return set()
    found: set[str] = set()
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        name = ref.rsplit("/", 1)[1]
        if name not in seen:
            found |= property_names(schema()["$defs"][name], seen | {name})
    properties = node.get("properties")
    if isinstance(properties, dict):
        found |= set(properties)
        found |= property_names(list(properties.values()), seen)
    for key in ("additionalProperties", "items", "if", "then", "else", "allOf", "anyOf", "oneOf"):
        if key in node:
            found |= property_names(node[key], seen)
    return found


def frame_reference() -> dict[str, tuple[str, str]]:
    """Frame type → (heading, the subsection's text) of the guide's *Frame reference*."""
    parts = re.split(r"^### (.*)$", section("Frame reference"), flags=re.MULTILINE)
    found: dict[str, tuple[str, str]] = {}
    for heading, body in zip(parts[1::2], parts[2::2], strict=True):
        match = re.match(r"`([a-z_]+)`", heading)
        assert match, f"a frame reference heading must start with the backticked frame type: {heading!r}"
        assert match.group(1) not in found, f"two headings for frame type {match.group(1)!r}"
        found[match.group(1)] = (heading, body)
    return found


def frame_types() -> list[str]:
    return list(schema()["$defs"]["frame"]["properties"]["type"]["enum"])


def directions() -> dict[str, str]:
    """Frame type → the direction the guide must name, from host_frame and plugin_frame."""
    defs = schema()["$defs"]
    host = set(defs["host_frame"]["allOf"][1]["properties"]["type"]["enum"])
    plugin = set(defs["plugin_frame"]["allOf"][1]["properties"]["type"]["enum"])
    return {t: "both directions" if t in host and t in plugin else "host → plugin" if t in host else "plugin → host"
            for t in frame_types()}


def test_the_schema_reading_finds_what_it_should() -> None:
    assert set(frame_types()) == {"describe", "run", "rpc_result", "error", "describe_result", "result", "log",
                                  "rpc_call"}
    assert property_names(schema()["$defs"]["error"]) == {"type", "call_id", "error", "kind", "message", "retryable"}
    assert {"tool", "args"} <= property_names(schema()["$defs"]["rpc_call"])
    assert {"required", "description"} <= property_names(schema()["$defs"]["describe_result"])


@pytest.mark.parametrize("frame_type", frame_types())
def test_every_frame_type_is_in_the_frame_reference_with_its_direction_and_every_field(frame_type: str) -> None:
    reference = frame_reference()
    assert frame_type in reference, f"no '### `{frame_type}` — …' heading in the guide's Frame reference"
    heading, body = reference[frame_type]
    assert directions()[frame_type] in heading, f"{heading!r} must say {directions()[frame_type]!r}"
    text = heading + "\n" + body
    definition = schema()["$defs"][frame_type]
    missing = sorted(name for name in property_names(definition) if f"`{name}`" not in text)
    assert not missing, f"the Frame reference of {frame_type!r} does not name {missing}"
    for name, spec in definition.get("properties", {}).items():
        values = [v for v in spec.get("enum", []) if isinstance(v, str)]
        unnamed = [v for v in values if f"`{v}`" not in text]
        assert not unnamed, f"the Frame reference of {frame_type!r} does not name the {name} values {unnamed}"


def test_the_frame_reference_has_no_frame_the_schema_lacks() -> None:
    assert set(frame_reference()) <= set(frame_types())


# ------------------------------------------------------------------------------ error kinds

def docstring_table_kinds(doc: str, first_cell: str) -> list[str]:
    """The first-column identifiers of the reStructuredText simple table in ``doc``; a row's
    first cell must match ``first_cell`` (a regex with one group)."""
    lines = doc.splitlines()
    rules = [i for i, line in enumerate(lines) if re.fullmatch(r"=+( +=+)+", line.strip())]
    assert len(rules) >= 2, "no table in the docstring"
    width = len(lines[rules[0]].strip().split()[0])
    body = lines[rules[-2] + 1:rules[-1]] if len(rules) >= 3 else lines[rules[0] + 1:rules[1]]
    kinds = []
    for line in body:
        match = re.fullmatch(first_cell, line[:width].strip())
        if match:
            kinds.append(match.group(1))
    return kinds


def host_kinds() -> list[str]:
    return docstring_table_kinds(host_frames.__doc__ or "", r"([a-z][a-z_]*)")


def sdk_kinds() -> list[str]:
    return docstring_table_kinds(sdk_errors.__doc__ or "", r"``([a-z][a-z_]*)``")


def test_the_docstring_tables_are_read() -> None:
    assert {"process_exit", "timeout", "protocol_error", "capability_denied"} <= set(host_kinds())
    assert {"plugin_error", "invalid_input", "rpc_unavailable"} <= set(sdk_kinds())


@pytest.mark.parametrize("kind", sorted({*host_kinds(), *sdk_kinds(), *SDK_KINDS}))
def test_every_error_kind_is_a_row_of_the_error_kinds_tables(kind: str) -> None:
    assert kind in table_rows(section("Error kinds")), f"error kind {kind!r} is not a row of the guide's Error kinds"


# ------------------------------------------------------------------------------ plugin.toml

def manifest_keys() -> set[str]:
    """The keys ``read_manifest`` accepts: the set literals of strings in its source."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(discovery.read_manifest)))
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Set) and node.elts and all(
                isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            keys |= {e.value for e in node.elts}  # type: ignore[attr-defined]
    return keys


def test_the_manifest_keys_are_exactly_those_read_manifest_accepts(tmp_path: Path) -> None:
    keys = manifest_keys()
    assert "command" in keys and "tier" in keys
    values = {"command": '["{python}", "plugin.py"]', "tier": "2", "image": '"example/x:1"', "memory": '"256m"',
              "cpus": '"0.5"', "timeout": "30", "pool_size": "2"}
    assert keys <= set(values), f"read_manifest accepts keys this test cannot fill: {keys - set(values)}"
    (tmp_path / "plugin.toml").write_text("".join(f"{k} = {values[k]}\n" for k in sorted(keys)))
    discovery.read_manifest(tmp_path)  # every key accepted
    (tmp_path / "plugin.toml").write_text('command = ["x"]\nnot_a_key = 1\n')
    with pytest.raises(ValueError, match="unknown keys: not_a_key"):
        discovery.read_manifest(tmp_path)


@pytest.mark.parametrize("key", sorted(manifest_keys()))
def test_every_manifest_key_is_a_row_of_the_plugin_folder_table(key: str) -> None:
    assert key in table_rows(section("The plugin folder: `plugin.toml`")), f"plugin.toml key {key!r} is not documented"


# --------------------------------------------------------------------------- worked examples

def transcript() -> list[tuple[str, Frame]]:
    """The guide's wire transcript: (``host`` or ``plugin``, frame) per line."""
    lines = []
    for line in fenced("text", "wire: describe and run").splitlines():
        match = re.fullmatch(r"(host|plugin) +(\{.*\})", line)
        assert match, f"not a transcript line: {line!r}"
        frame = json.loads(match.group(2))
        assert_valid("host_frame" if match.group(1) == "host" else "plugin_frame", frame)
        lines.append((match.group(1), frame))
    return lines


def run_part() -> list[tuple[str, Frame]]:
    """The transcript from the ``run`` frame on."""
    lines = transcript()
    start = next(i for i, (side, frame) in enumerate(lines) if side == "host" and frame["type"] == "run")
    return lines[start:]


class Plugin:
    """A plugin process: frames in on standard input, every output line checked as a plugin frame."""

    def __init__(self, argv: list[str], folder: Path) -> None:
        scratch = folder / "scratch"
        scratch.mkdir(exist_ok=True)
        self.proc = subprocess.Popen(argv, cwd=folder, env=plugin_env(scratch), stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: queue.Queue[bytes | None] = queue.Queue()
        self.stderr: list[bytes] = []
        self.threads = [threading.Thread(target=self._pump, daemon=True),
                        threading.Thread(target=self._drain, daemon=True)]
        for thread in self.threads:
            thread.start()
        self.real: dict[str, str] = {}  # call_id as in the guide → as the plugin chose it

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        self.stderr.extend(self.proc.stderr)

    def send(self, frame: Frame) -> None:
        if isinstance(frame.get("call_id"), str):
            frame = {**frame, "call_id": self.real[frame["call_id"]]}
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(frame).encode() + b"\n")
        self.proc.stdin.flush()

    def recv(self) -> Frame:
        """The next frame, with the ``call_id`` of an ``rpc_call`` renamed ``c1``, ``c2``, … in order."""
        try:
            line = self.lines.get(timeout=TIMEOUT)
        except queue.Empty:
            pytest.fail(f"no frame within {TIMEOUT} s; stderr: {b''.join(self.stderr).decode(errors='replace')}")
        assert line is not None, f"the plugin ended its output; stderr: {b''.join(self.stderr).decode(errors='replace')}"
        frame: Frame = json.loads(line)
        assert_valid("plugin_frame", frame)
        if frame["type"] == "rpc_call":
            alias = f"c{len(self.real) + 1}"
            self.real[alias] = frame["call_id"]
            frame["call_id"] = alias
        return frame

    def close(self) -> int:
        """End of input: the plugin must exit without sending anything more; its exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        status = self.proc.wait(timeout=TIMEOUT)
        assert self.lines.get(timeout=TIMEOUT) is None, "the plugin sent a frame nobody asked for"
        return status

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        for thread in self.threads:
            thread.join(timeout=TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


def replay(plugin: Plugin, lines: list[tuple[str, Frame]]) -> None:
    """Send the ``host`` lines and check that every ``plugin`` line comes back as shown."""
    for side, frame in lines:
        if side == "host":
            plugin.send(frame)
        else:
            assert plugin.recv() == frame


def run_with_update_denied(plugin: Plugin) -> tuple[list[str], Frame]:
    """The transcript's run, but ``update_record`` answered with ``capability_denied``: the
    log messages and the final frame."""
    lines = run_part()
    context_answer = next(f for side, f in lines if side == "host" and f["type"] == "rpc_result")
    plugin.send(lines[0][1])
    logs: list[str] = []
    while (frame := plugin.recv())["type"] in ("log", "rpc_call"):
        if frame["type"] == "log":
            logs.append(frame["message"])
        elif frame["method"] == "call_tool":
            plugin.send({**context_answer, "call_id": frame["call_id"]})
        else:
            plugin.send({"type": "error", "call_id": frame["call_id"], "error": {
                "kind": "capability_denied", "message": "'update_record' is not declared", "retryable": False}})
    return logs, frame


def python_example(folder: Path) -> Path:
    (folder / "plugin.py").write_text(fenced("python", "plugin.py"), encoding="utf-8")
    (folder / "plugin.toml").write_text(fenced("toml", "plugin.toml"), encoding="utf-8")
    return folder


def test_the_python_example_describes_itself_as_the_guide_shows(tmp_path: Path) -> None:
    folder = python_example(tmp_path)
    done = subprocess.run([sys.executable, "-m", "benchbook.plugin", "plugin.py", "describe"], cwd=folder,
                          input=b'{"type": "describe"}\n', capture_output=True, timeout=TIMEOUT,
                          env=plugin_env(tmp_path), check=False)
    assert done.returncode == 0, done.stderr.decode()
    lines = done.stdout.splitlines()
    assert len(lines) == 1, done.stdout
    described = json.loads(lines[0])
    assert_valid("plugin_frame", described)
    assert described["type"] == "describe_result"
    assert described == transcript()[1][1]


def test_the_python_example_runs_the_guide_transcript_under_its_plugin_toml(tmp_path: Path) -> None:
    folder = python_example(tmp_path)
    launch = discovery.read_manifest(folder)
    assert launch["tier"] == 1 and launch["command"] == [sys.executable, "-m", "benchbook.plugin", "plugin.py"]
    with Plugin(launch["command"], folder) as plugin:
        replay(plugin, transcript())
        logs, final = run_with_update_denied(plugin)  # the same process serves the next run
        assert "mean not saved on the record: capability_denied" in logs
        assert final == transcript()[-1][1]
        assert plugin.close() == 0


@pytest.mark.skipif(NODE is None, reason="node is not on PATH")
def test_the_javascript_example_gives_the_same_frames(tmp_path: Path) -> None:
    for source in (PROTOCOL / "js" / "benchbook-plugin.js", PROTOCOL / "js" / "validate.js", SCHEMA):
        shutil.copy(source, tmp_path / source.name)
    (tmp_path / "plugin.js").write_text(fenced("js", "plugin.js"), encoding="utf-8")
    (tmp_path / "plugin.toml").write_text(fenced("toml", "plugin.toml (JavaScript)"), encoding="utf-8")
    launch = discovery.read_manifest(tmp_path)
    assert launch["command"] == ["node", "plugin.js"]

    done = subprocess.run([str(NODE), "plugin.js", "describe"], cwd=tmp_path, input=b'{"type": "describe"}\n',
                          capture_output=True, timeout=TIMEOUT, env=plugin_env(tmp_path), check=False)
    assert done.returncode == 0, done.stderr.decode()
    described = json.loads(done.stdout)
    assert_valid("plugin_frame", described)

    def same(contract: Frame) -> Frame:
        ports = {side: {name: {"required": False, **port} for name, port in contract[side].items()}
                 for side in ("inputs", "outputs")}
        return {**contract, **ports, "id": None, "name": None}

    assert same(described) == same(transcript()[1][1])

    with Plugin(launch["command"], tmp_path) as plugin:
        replay(plugin, run_part())
        logs, final = run_with_update_denied(plugin)
        assert "mean not saved on the record: capability_denied" in logs
        assert final == transcript()[-1][1]
        assert plugin.close() == 0
