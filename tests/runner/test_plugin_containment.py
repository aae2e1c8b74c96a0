"""Plugin processes end with their host and leave nothing behind (issue 33 finding 8): what a
plugin starts is gone when its run ends, whatever session it moved to; a plugin dies with a
host killed by SIGKILL; what such a host leaves (the plugin's children, its scratch folders) is
reported by ``benchbook doctor`` and cleared by ``doctor --fix``, the next server start and the
next drain; nothing is ever written to the system's temporary folder.

Real subprocesses throughout: plugins written against the raw wire protocol, the real
``benchbook plugins try`` command as the host that is killed, the real app for the server start.
The plugins write their children's pids to a file the tests wait for; waiting for a process to
end is a poll loop bounded only by :data:`HANG`."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from benchbook.http.app import create_app
from benchbook.runner.drain import Drain
from benchbook.runner.plugin_host import processes, scratch
from benchbook.runner.plugin_host.host import PluginProcess
from benchbook.settings.config import Project
from tests.runner.rawplugin import contract, folder, runnable, script
from tests.waiting import HANG, until

BENCHBOOK = [sys.executable, "-c", "from benchbook.cli.main import main; main()"]
WITHOUT_SETPRIV = [sys.executable, "-c", ("from benchbook.runner.plugin_host import processes; "
                                          "processes._setpriv = lambda: None; from benchbook.cli.main import main; "
                                          "main()")]
"""The command line, its plugins started by forking and calling prctl in the child."""


@pytest.fixture(params=["setpriv", "prctl"])
def launcher(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Plugins started through setpriv (where installed) or by prctl between fork and exec."""
    if request.param == "setpriv" and processes._setpriv() is None:
        pytest.skip("setpriv with --pdeathsig is not installed")
    if request.param == "prctl":
        monkeypatch.setattr(processes, "_setpriv", lambda: None)
    return str(request.param)
pytestmark = pytest.mark.skipif(not Path("/proc/self/environ").exists() or processes._PRCTL is None,
                                reason="containment needs Linux (prctl, /proc)")

# On a run: a child in the plugin's group, one in a new session, and one a daemon (started in a
# new session by a middle process that exits at once, so its parent is init). The pids go to
# pids.json in the plugin's folder (written whole, then renamed); then the plugin answers, or
# with BLOCK blocks for ever.
SPAWNER = """
import subprocess, threading
DESCRIBED = json.loads({described!r})
BLOCK = {block!r}
for f in frames():
    if f["type"] == "describe":
        send(DESCRIBED)
        continue
    same = subprocess.Popen(["sleep", "3000"])
    away = subprocess.Popen(["sleep", "3000"], start_new_session=True)
    middle = subprocess.run([sys.executable, "-c", "import subprocess; "
                             "print(subprocess.Popen(['sleep', '3000'], start_new_session=True, "
                             "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).pid)"],
                            capture_output=True, text=True, check=True)
    pids = {{"plugin": os.getpid(), "same_group": same.pid, "new_session": away.pid,
            "daemon": int(middle.stdout)}}
    with open("pids.json.part", "w") as fh:
        json.dump(pids, fh)
    os.rename("pids.json.part", "pids.json")
    if BLOCK:
        threading.Event().wait()
    send({{"type": "result", "outputs": {{"words": 1}}}})
"""


def spawner(block: bool) -> str:
    return script(SPAWNER.format(described=json.dumps(contract()), block=block))


def started(pid: int) -> str | None:
    """The start time of ``pid`` (clock ticks since boot), None once it has ended (gone or a
    zombie): with the pid it names one process for good."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None if fields[0] in ("Z", "X") else fields[19]


def running(pids: dict[str, tuple[int, str]]) -> dict[str, int]:
    """Those of ``pids`` (name → pid and start time) still running."""
    return {name: pid for name, (pid, start) in pids.items() if started(pid) == start}


def pinned(pids: dict[str, int]) -> dict[str, tuple[int, str]]:
    found = {name: (pid, started(pid)) for name, pid in pids.items()}
    assert all(start is not None for _, start in found.values()), found
    return {name: (pid, start) for name, (pid, start) in found.items() if start is not None}


def areas(root: Path) -> list[str]:
    where = scratch.root_of(root)
    return sorted(p.name for p in where.iterdir()) if where.is_dir() else []


# ------------------------------------------------------------------------ a run that ends
def test_what_a_plugin_starts_is_gone_when_its_run_ends_whatever_session_it_moved_to(tmp_path: Path,
                                                                                      launcher: str) -> None:
    (tmp_path / "plugin.py").write_text(spawner(block=False))
    with PluginProcess([sys.executable, "plugin.py"], cwd=tmp_path, project_root=tmp_path) as proc:
        assert proc.request({"type": "run", "inputs": {"text": "a"}, "config": {}}, timeout=HANG)["type"] == "result"
        pids = pinned(json.loads((tmp_path / "pids.json").read_text()))
        assert running(pids).keys() == {"plugin", "same_group", "new_session", "daemon"}
        assert proc.scratch.is_relative_to(tmp_path / ".benchbook" / "scratch")
    until(lambda: not running(pids), "the plugin and everything it started to end")
    assert not any(scratch.root_of(tmp_path).glob("*/plugin-*"))


def test_a_plugin_started_by_a_thread_that_has_ended_lives_on(tmp_path: Path, launcher: str) -> None:
    """The kernel's parent-death signal follows the thread that forked the child: a plugin started
    from a request or drain thread must not die when that thread ends."""
    (tmp_path / "plugin.py").write_text(spawner(block=False))
    box: dict[str, object] = {}

    def start() -> None:
        box["proc"] = PluginProcess([sys.executable, "plugin.py"], cwd=tmp_path, project_root=tmp_path)
        box["thread"] = threading.get_native_id()

    starter = threading.Thread(target=start)
    starter.start()
    starter.join()
    until(lambda: not Path(f"/proc/self/task/{box['thread']}").exists(),
          "the starting thread to leave the kernel's task list")
    proc = box["proc"]
    assert isinstance(proc, PluginProcess)
    with proc:
        assert proc.request({"type": "describe"}, timeout=HANG)["type"] == "describe_result"


# ---------------------------------------------------------------------- a host killed -9
def killed_host(tmp_path: Path, command: list[str] = BENCHBOOK) -> tuple[Project, dict[str, tuple[int, str]], Path]:
    """Run ``benchbook plugins try`` (the host) on a project whose plugin starts three children
    and blocks, kill it with SIGKILL once the children's pids are written, and wait for the
    plugin to die with it. Returns the project, the children (name → pid, start) and the host's
    temporary folder (``TMPDIR``)."""
    project = Project.init(tmp_path / "project")
    where = folder(project.root / "plugins", "spawner", spawner(block=True))
    temp = tmp_path / "tmp"
    temp.mkdir()
    host = subprocess.Popen([*command, "--project", str(project.root), "plugins", "try", "t",
                             "--inputs", '{"text": "a"}'], env={**os.environ, "TMPDIR": str(temp)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        until(lambda: (where / "pids.json").exists() or host.poll() is not None, "the plugin's pids")
        assert host.poll() is None, host.communicate()[1].decode()
        pids = pinned(json.loads((where / "pids.json").read_text()))
        assert areas(project.root), "the host's scratch area is under the project"
    finally:
        os.kill(host.pid, signal.SIGKILL)
        host.communicate()
    plugin = {"plugin": pids.pop("plugin")}
    until(lambda: not running(plugin), "the plugin to die with its host")
    return project, pids, temp


def cleared_by_doctor(project: Project) -> str:
    report = subprocess.run([*BENCHBOOK, "--project", str(project.root), "doctor"], capture_output=True, text=True,
                            check=False)
    fixed = subprocess.run([*BENCHBOOK, "--project", str(project.root), "doctor", "--fix"], capture_output=True,
                           text=True, check=False)
    return report.stdout + fixed.stdout


def cleared_by_a_server_start(project: Project) -> str:
    app = create_app(project, resume_history=True)
    try:
        with TestClient(app, base_url="http://127.0.0.1"):
            pass
    finally:
        app.services.db.engine.dispose()
    return ""


def cleared_by_a_drain(project: Project) -> str:
    with Drain(project_root=project.root) as drain:
        assert drain.scratch.is_dir()
    return ""


@pytest.mark.parametrize("restart", [cleared_by_doctor, cleared_by_a_server_start, cleared_by_a_drain],
                         ids=["doctor --fix", "server start", "drain start"])
def test_a_host_killed_mid_step_takes_its_plugin_along_and_a_restart_clears_the_rest(
        tmp_path: Path, restart: Callable[[Project], str]) -> None:
    project, children, temp = killed_host(tmp_path)
    left = {o.pid for o in processes.orphans(project.root)}
    assert {pid for pid, _ in children.values()} <= left  # still running: nobody is left to stop them
    dead = [a.name for a in scratch.stale(scratch.root_of(project.root))]
    assert len(dead) == 1 and dead[0] in areas(project.root)  # the host's scratch area, left by its kill

    said = restart(project)

    until(lambda: not running(children), "the plugin's children to be killed")
    assert not any(name.startswith(dead[0]) for name in areas(project.root))  # nor its lock file
    assert not scratch.stale(scratch.root_of(project.root))
    assert list(temp.iterdir()) == []  # nothing was ever written to the system's temporary folder
    if restart is cleared_by_doctor:
        for pid, _ in children.values():
            assert f"pid {pid} " in said
        assert "scratch folder(s) of benchbook processes that were killed" in said
        assert "killed 3 process(es)" in said and "removed 1 scratch folder(s)" in said


# A host holding a warm plugin process between runs (runner.plugin_host.pool): it runs one step with a
# pool, writes the pids of the pool's idle processes to warm.json and waits for ever.
WARM_HOST = """
import json, sys, threading
from pathlib import Path
from benchbook.runner.plugin_host.pool import Pool
from benchbook.runner.plugin_host.steps import StepRunner
plugin, root = json.loads(sys.argv[1]), Path(sys.argv[2])
pool = Pool(project_root=root)
with StepRunner(pool=pool, project_root=root) as runner:
    runner.run_step(plugin, {"text": "a"}, {})
(root / "warm.json.part").write_text(json.dumps(pool.idle(plugin["id"])))
(root / "warm.json.part").rename(root / "warm.json")
threading.Event().wait()
"""


def test_a_host_killed_between_runs_takes_its_warm_plugin_process_along(tmp_path: Path) -> None:
    project = Project.init(tmp_path / "project")
    where = folder(project.root / "plugins", "spawner", spawner(block=False))
    host = subprocess.Popen([sys.executable, "-c", WARM_HOST, json.dumps(runnable(where)), str(project.root)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        until(lambda: (project.root / "warm.json").exists() or host.poll() is not None, "the warm plugin's pid")
        assert host.poll() is None, host.communicate()[1].decode()
        children = pinned(json.loads((where / "pids.json").read_text()))
        assert json.loads((project.root / "warm.json").read_text()) == [children["plugin"][0]]  # idle, alive
    finally:
        os.kill(host.pid, signal.SIGKILL)
        host.communicate()
    plugin = {"plugin": children.pop("plugin")}
    until(lambda: not running(plugin), "the warm plugin to die with its host")
    cleared_by_a_drain(project)  # what it started (its process lives on between runs, so do they) goes next
    until(lambda: not running(children), "the plugin's children to be killed")


def test_without_setpriv_a_plugin_dies_with_its_host_all_the_same(tmp_path: Path) -> None:
    project, children, _ = killed_host(tmp_path, WITHOUT_SETPRIV)
    cleared_by_a_drain(project)
    until(lambda: not running(children), "the plugin's children to be killed")


def test_a_command_that_cannot_be_run_fails_at_once(tmp_path: Path, launcher: str) -> None:
    (tmp_path / "script.py").write_text("")  # not executable
    for argv, error in ((["no-such-command-here"], FileNotFoundError), (["./missing"], FileNotFoundError),
                        (["./script.py"], PermissionError)):
        with pytest.raises(error):
            processes.spawn(argv, cwd=tmp_path, env={"PATH": os.environ["PATH"]})


def test_a_sweep_never_touches_a_live_hosts_processes_or_scratch(tmp_path: Path) -> None:
    (tmp_path / "plugin.py").write_text(spawner(block=True))
    with PluginProcess([sys.executable, "plugin.py"], cwd=tmp_path, project_root=tmp_path) as proc:
        proc._send({"type": "run", "inputs": {"text": "a"}, "config": {}})
        until(lambda: (tmp_path / "pids.json").exists(), "the plugin's pids")
        pids = pinned(json.loads((tmp_path / "pids.json").read_text()))
        other = subprocess.run([sys.executable, "-c", textwrap.dedent(f"""
            from pathlib import Path
            from benchbook.runner.plugin_host import processes
            print(processes.clear_leftovers(Path({str(tmp_path)!r})))
        """)], capture_output=True, text=True, check=True)  # another process: this one's lock is held
        assert "killed=[], areas=0" in other.stdout
        assert running(pids).keys() == {"plugin", "same_group", "new_session", "daemon"}
        assert proc.scratch.is_dir()
    until(lambda: not running(pids), "the plugin and everything it started to end")
