"""``benchbook serve``: the local-host rule, its refusal, and a real server answering /api/health."""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from benchbook.cli.main import build_cli
from benchbook.cli.serve import is_local_host, serve, server_url

SRC = Path(__file__).resolve().parents[1] / "src"


@pytest.mark.parametrize(("host", "local"), [
    ("127.0.0.1", True),
    ("127.8.9.10", True),
    ("localhost", True),
    ("LocalHost", True),
    ("localhost.", True),
    ("::1", True),
    ("[::1]", True),
    ("::ffff:127.0.0.1", True),
    ("0.0.0.0", False),
    ("::", False),
    ("192.168.1.20", False),
    ("10.0.0.1", False),
    ("fe80::1", False),
    ("example.com", False),
    ("localhost.example.com", False),
    ("", False),
])
def test_is_local_host(host: str, local: bool) -> None:
    assert is_local_host(host) is local


def test_server_url_brackets_ipv6() -> None:
    assert server_url("127.0.0.1", 8000) == "http://127.0.0.1:8000/"
    assert server_url("::1", 9000) == "http://[::1]:9000/"


def test_options_and_defaults() -> None:
    defaults = {p.name: p.default for p in serve.params}
    assert defaults == {"open_browser": False, "port": 8000, "sync_only": False, "log_level": "INFO",
                        "host": "127.0.0.1", "allow_remote": False, "reload": False, "project_dir": None}
    port = next(p for p in serve.params if p.name == "port")
    assert "-p" in port.opts


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com"])
def test_non_local_host_without_allow_remote_is_refused(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: pytest.fail("the server must not start"))
    result = CliRunner().invoke(build_cli(), ["serve", "--host", host])
    assert result.exit_code == 2
    assert f"--host {host} is not this computer's own address" in result.stderr
    assert "--allow-remote" in result.stderr


def test_allow_remote_warns_and_passes_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import uvicorn

    import benchbook.app

    calls: list[tuple[tuple[object, ...], dict[str, object]]] = []
    made: list[dict[str, object]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: calls.append((a, k)))
    monkeypatch.setattr(benchbook.app, "create_app", lambda project, **kw: made.append({"root": project.root, **kw}))
    result = CliRunner().invoke(build_cli(), ["--project", str(tmp_path), "serve", "--host", "0.0.0.0",
                                              "--allow-remote", "--sync-only", "-p", "8123", "--log-level", "debug"])
    assert result.exit_code == 0, result.output
    flat = " ".join(result.stderr.replace("│", " ").split())
    assert "anyone who can reach this address can read and change everything" in flat
    assert "only the health route (/api/health) is served" in flat
    assert "http://0.0.0.0:8123/" in result.stdout
    assert made == [{"root": tmp_path.resolve(), "allow_remote": True, "sync_only": True, "resume_history": True}]
    assert calls[0][1] == {"host": "0.0.0.0", "port": 8123, "log_level": "debug"}


def test_reload_uses_the_env_factory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import uvicorn

    calls: list[tuple[tuple[object, ...], dict[str, object]]] = []
    monkeypatch.setattr(uvicorn, "run", lambda *a, **k: calls.append((a, k)))
    for name in ("BENCHBOOK_PROJECT", "BENCHBOOK_ALLOW_REMOTE", "BENCHBOOK_SYNC_ONLY"):
        monkeypatch.setenv(name, "")
    result = CliRunner().invoke(build_cli(), ["serve", "--reload", "--project", str(tmp_path)])
    assert result.exit_code == 0, result.output
    args, kwargs = calls[0]
    assert args == ("benchbook.app:app_from_env",)
    assert kwargs["factory"] is True and kwargs["reload"] is True
    assert kwargs["host"] == "127.0.0.1" and kwargs["port"] == 8000 and kwargs["log_level"] == "info"
    assert Path(str(kwargs["reload_dirs"][0])) == SRC / "benchbook"  # type: ignore[index]
    assert os.environ["BENCHBOOK_PROJECT"] == str(tmp_path.resolve())
    assert os.environ["BENCHBOOK_ALLOW_REMOTE"] == "0" and os.environ["BENCHBOOK_SYNC_ONLY"] == "0"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _app_not_ready(root: Path) -> str | None:
    """Why ``benchbook.app`` cannot answer /api/health in-process yet (checked without the CLI), or None."""
    import asyncio

    try:
        from benchbook.app import create_app
        from benchbook.config import Project

        async def health() -> int:
            app = create_app(Project.init(root))
            async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
                return (await c.get("/api/health")).status_code

        status = asyncio.run(health())
    except Exception as exc:  # noqa: BLE001 - any failure means "not ready": skip, with the reason
        return f"benchbook.app is not usable yet: {exc!r}"[:500]
    return None if status == 200 else f"benchbook.app answers /api/health with {status}"


def test_live_server_answers_health(tmp_path: Path) -> None:
    reason = _app_not_ready(tmp_path / "probe")
    if reason:
        pytest.skip(reason)
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    env.pop("BENCHBOOK_URL", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "benchbook.cli.main", "serve", "--port", str(port), "--project", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        deadline = time.monotonic() + 20
        last: object = None
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                pytest.fail(f"server exited with {proc.returncode}:\n{proc.stdout.read().decode() if proc.stdout else ''}")
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=3.0)
                if response.status_code == 200:
                    assert response.json()["status"] == "ok"
                    break
                last = response.status_code
            except httpx.HTTPError as exc:
                last = exc
            time.sleep(0.2)
        else:
            pytest.fail(f"no answer from /api/health within 20 s (last: {last!r})")
        # the generated commands can talk to it with --url instead of in-process
        result = CliRunner().invoke(build_cli(), ["--url", f"http://127.0.0.1:{port}", "system", "health"])
        assert result.exit_code == 0, result.output
        assert '"status": "ok"' in result.stdout
        missing = CliRunner().invoke(build_cli(), ["--url", f"http://127.0.0.1:{port}/", "collections", "get", "nope"])
        assert missing.exit_code == 1 and missing.stderr.startswith("error 404: ")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            output = proc.communicate(timeout=10)[0].decode()
        except subprocess.TimeoutExpired:
            proc.kill()
            output = proc.communicate()[0].decode()
    assert f"http://127.0.0.1:{port}/" in output
