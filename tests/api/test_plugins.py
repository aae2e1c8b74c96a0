"""Plugin discovery and the registry endpoints: real subprocess plugins in the project's
``plugins/`` folder, a stand-in container runtime for tier 2."""
from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.runner.rawplugin import contract, describing, fake_runtime, folder, script


@pytest.fixture
def plugins_dir(api: Any) -> Path:
    where: Path = api.project.root / "plugins"
    shutil.rmtree(where, ignore_errors=True)
    where.mkdir()
    return where


def by_id(api: Any) -> dict[str, dict[str, Any]]:
    """The project's plugins (the built-ins are always there too)."""
    return {p["id"]: p for p in api.ok("GET", "/plugins") if not p["builtin"]}


def refresh(api: Any) -> dict[str, list[str]]:
    """POST /plugins/refresh, the built-ins left out of the report."""
    report = api.ok("POST", "/plugins/refresh")
    return {key: [i for i in ids if not i.startswith("benchbook.")] for key, ids in report.items()}


def test_a_project_plugin_is_described_once_and_listed_with_its_contract(api: Any, plugins_dir: Path) -> None:
    folder(plugins_dir, "counter", describing(contract("word-count")))
    listed = by_id(api)
    plugin = listed["word-count"]
    assert plugin | {"described_at": None} == {
        "id": "word-count", "name": "Word-Count", "description": "", "category": "test",
        "capabilities": ["get_schema"], "inputs": {"text": {"type": "string", "required": True}},
        "outputs": {"words": {"type": "integer"}}, "config_schema": {}, "batch": False, "tier": "1", "builtin": False,
        "source": "project:plugins/counter", "status": "ok", "error": None, "described_at": None}
    assert api.ok("GET", "/plugins/word-count") == plugin
    # captured, never re-derived: a changed plugin shows only after a refresh
    folder(plugins_dir, "counter", describing(contract("word-count", description="now with more words")))
    assert api.ok("GET", "/plugins/word-count")["description"] == ""
    report = refresh(api)
    assert report == {"added": [], "changed": ["word-count"], "removed": [], "unchanged": [], "failed": []}
    assert api.ok("GET", "/plugins/word-count")["description"] == "now with more words"


def test_a_plugin_that_cannot_describe_itself_is_listed_with_its_error(api: Any, plugins_dir: Path) -> None:
    folder(plugins_dir, "crashes", script("""
        import sys
        sys.stderr.write("ImportError: no module named numpyy\\n"); sys.stderr.flush()
        sys.exit(1)
    """))
    folder(plugins_dir, "badtoml", describing(contract("x")), manifest="command = [\n")
    folder(plugins_dir, "nocommand", describing(contract("y")), manifest="tier = 1\n")
    folder(plugins_dir, "liar", describing({"type": "describe_result", "id": "liar"}))
    folder(plugins_dir, "refuses", script("""
        for f in frames():
            send({"type": "error", "call_id": None, "error": {"kind": "plugin_error", "message": "no licence",
                                                               "retryable": False}})
    """))
    listed = by_id(api)
    assert {k: (v["status"], v["tier"]) for k, v in listed.items()} == {
        "crashes": ("error", "1"), "badtoml": ("error", "1"), "nocommand": ("error", "1"),
        "liar": ("error", "1"), "refuses": ("error", "1")}
    assert "process_exit" in listed["crashes"]["error"] and "numpyy" in listed["crashes"]["error"]
    assert "not valid TOML" in listed["badtoml"]["error"]
    assert "command must be a non-empty list" in listed["nocommand"]["error"]
    assert listed["liar"]["error"].startswith("protocol_error: the plugin sent a frame that breaks the protocol: "
                                               "'capabilities' is a required property; 'category' is a required")
    assert listed["liar"]["error"].endswith("(and 4 more)")
    assert listed["refuses"]["error"] == "plugin_error: describe failed: no licence"


def test_two_plugins_claiming_one_id_keep_the_first_and_flag_the_second(api: Any, plugins_dir: Path) -> None:
    folder(plugins_dir, "a", describing(contract("same")))
    folder(plugins_dir, "b", describing(contract("same")))
    listed = by_id(api)
    assert listed["same"]["source"] == "project:plugins/a" and listed["same"]["status"] == "ok"
    flagged = listed["same@project:plugins/b"]
    assert flagged["status"] == "error" and "already used by the plugin from project:plugins/a" in flagged["error"]


def test_refresh_reports_added_removed_and_failed(api: Any, plugins_dir: Path) -> None:
    folder(plugins_dir, "one", describing(contract("one")))
    assert set(by_id(api)) == {"one"}
    folder(plugins_dir, "two", describing(contract("two")))
    shutil.rmtree(plugins_dir / "one")
    folder(plugins_dir, "broken", "raise SystemExit(2)\n")
    report = refresh(api)
    assert report == {"added": ["broken", "two"], "changed": [], "removed": ["one"], "unchanged": [],
                      "failed": ["broken"]}
    assert api.get("/plugins/one").status_code == 404
    assert api.get("/plugins/one").json() == {
        "detail": "plugin 'one' not found (POST /plugins/refresh discovers new ones)"}


def test_the_built_ins_are_listed_with_the_project_plugins(api: Any, plugins_dir: Path) -> None:
    builtins = {p["id"]: p for p in api.ok("GET", "/plugins") if p["builtin"]}
    assert set(builtins) == {"benchbook.file-checksum", "benchbook.text-stats", "benchbook.set-fields",
                             "benchbook.import-table", "benchbook.attach-files"}
    assert builtins["benchbook.file-checksum"]["capabilities"] == ["get_file"]
    assert {(p["tier"], p["source"], p["status"]) for p in builtins.values()} == {("builtin", "builtin", "ok")}


def test_a_tier_2_plugin_without_a_container_runtime_is_listed_as_such(
        api: Any, plugins_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHBOOK_CONTAINER_RUNTIME", "no-such-runtime-here")
    folder(plugins_dir, "boxed", "", manifest='tier = 2\nimage = "example/boxed:1"\n')
    plugin = by_id(api)["boxed"]
    assert plugin["tier"] == "2" and plugin["status"] == "no_container_runtime"
    assert plugin["error"] == "no container runtime: 'no-such-runtime-here' is not installed"


def test_a_tier_2_plugin_is_described_in_a_fresh_container_with_the_mode_as_first_argument(
        api: Any, plugins_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCHBOOK_CONTAINER_RUNTIME", str(fake_runtime(tmp_path / "docker")))
    image = tmp_path / "image"
    image.mkdir()
    (image / "plugin.py").write_text(script(f"""
        mode = sys.argv[1]
        frame = json.loads(sys.stdin.readline())
        assert frame["type"] == mode, (frame, mode)
        send(json.loads({json.dumps(json.dumps(contract("boxed")))}))
    """))
    folder(plugins_dir, "boxed", "", manifest=f'tier = 2\nimage = "{image}"\nmemory = "256m"\ncpus = "0.5"\n')
    plugin = by_id(api)["boxed"]
    assert (plugin["status"], plugin["tier"], plugin["error"]) == ("ok", "2", None)
    assert (image / "runs.log").read_text() == "256m 0.5 describe\n"
