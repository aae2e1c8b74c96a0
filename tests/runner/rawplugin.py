"""Plugins written against the raw wire protocol (no SDK), for host and discovery tests."""
from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

PRELUDE = """
import json, os, sys
out = os.fdopen(os.dup(1), "w", buffering=1)
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)
def send(frame):
    out.write(json.dumps(frame) + "\\n")
    out.flush()
def frames():
    for line in sys.stdin:
        yield json.loads(line)
"""


def contract(plugin_id: str = "t", **extra: Any) -> dict[str, Any]:
    """A valid ``describe_result`` frame."""
    return {"type": "describe_result", "id": plugin_id, "name": plugin_id.title(), "description": "",
            "category": "test", "capabilities": ["get_schema"],
            "inputs": {"text": {"type": "string", "required": True}}, "outputs": {"words": {"type": "integer"}},
            "config_schema": {}, **extra}


def script(body: str) -> str:
    """A plugin script: the raw-protocol prelude (fd 1 isolated, ``send``, ``frames``) + ``body``."""
    return PRELUDE + textwrap.dedent(body)


def describing(described: dict[str, Any]) -> str:
    """A tier-1 plugin body answering describe with ``described`` and a run with its word count."""
    return script(f"""
        DESCRIBED = json.loads({json.dumps(json.dumps(described))})
        for f in frames():
            if f["type"] == "describe":
                send(DESCRIBED)
            else:
                send({{"type": "result", "outputs": {{"words": len(f["inputs"]["text"].split())}}}})
    """)


def folder(plugins_dir: Path, name: str, body: str, manifest: str | None = None) -> Path:
    """A project plugin folder ``plugins/<name>`` with ``plugin.py`` and ``plugin.toml``."""
    where = plugins_dir / name
    where.mkdir(parents=True, exist_ok=True)
    (where / "plugin.py").write_text(body)
    (where / "plugin.toml").write_text(manifest if manifest is not None else 'command = ["{python}", "plugin.py"]\n')
    return where


def fake_runtime(path: Path) -> Path:
    """A stand-in for ``docker``: ``run -i --rm --name N --memory M --cpus C IMAGE MODE`` runs
    ``<IMAGE>/plugin.py MODE`` with this interpreter (IMAGE is a folder), logging the flags it
    got to ``<IMAGE>/runs.log``; ``kill N`` is accepted."""
    path.write_text(f"""#!{sys.executable}
import os, sys
args = sys.argv[1:]
if args[0] == "kill":
    sys.exit(0)
assert args[:3] == ["run", "-i", "--rm"], args
flags = dict(zip(args[3:9:2], args[4:9:2]))
assert set(flags) == {{"--name", "--memory", "--cpus"}}, flags
image, mode = args[9], args[10]
with open(os.path.join(image, "runs.log"), "a") as log:
    log.write(" ".join([flags["--memory"], flags["--cpus"], mode]) + "\\n")
os.execv(sys.executable, [sys.executable, os.path.join(image, "plugin.py"), mode])
""")
    path.chmod(0o755)
    return path


def runnable(where: Path) -> dict[str, Any]:
    """The plugin in folder ``where`` as the registry hands it to a run (its PluginResponse's
    contract, status, tier and ``launch``), described by discovery now: no database needed."""
    from benchbook.runner.plugin_host import discovery

    found = discovery.describe_folder(where, "docker")
    assert found.status == "ok", found.error
    return {"id": found.id, "status": "ok", "tier": found.tier, "error": None, "launch": found.launch,
            "batch": bool(found.contract.get("batch")),
            **{k: found.contract[k] for k in ("capabilities", "inputs", "outputs", "config_schema")}}
