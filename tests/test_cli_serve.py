"""``benchbook serve``: the local-host rule, its refusal, the ``--reload`` app factory run for real,
and a real server answering /api/health."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import select
from starlette.testclient import TestClient

from benchbook.cli.http_protocol import EnvelopeH11Protocol
from benchbook.cli.main import build_cli
from benchbook.cli.serve import is_local_host, serve, server_url
from benchbook.config import Project
from tests.live_server import free_port

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
    assert calls[0][1] == {"host": "0.0.0.0", "port": 8123, "log_level": "debug", "http": EnvelopeH11Protocol,
                           "h11_max_incomplete_event_size": 1024 * 1024}  # room past [limits] (docs/limits.md)


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


def _get(app: object, path: str, host: str = "127.0.0.1") -> httpx.Response:
    with TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False) as client:
        return client.get(path, headers={"host": host})


@pytest.mark.parametrize(("allow_remote", "sync_only"), [("0", "0"), ("1", "0"), ("0", "1"), ("", ""), ("1", "1")])
def test_app_from_env_reads_the_three_variables(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                allow_remote: str, sync_only: str) -> None:
    """The factory ``serve --reload`` hands to uvicorn, run for real: project, remote and sync-only
    come from the environment ("1" = on, anything else off)."""
    from benchbook.app import app_from_env

    root = tmp_path / "from-env"
    monkeypatch.chdir(tmp_path)  # the project must come from BENCHBOOK_PROJECT, not the folder we are in
    monkeypatch.setenv("BENCHBOOK_PROJECT", str(root))
    monkeypatch.setenv("BENCHBOOK_ALLOW_REMOTE", allow_remote)
    monkeypatch.setenv("BENCHBOOK_SYNC_ONLY", sync_only)
    app = app_from_env()
    try:
        assert app.services.project.root == root.resolve()
        assert (root / "benchbook.toml").is_file()
        health = _get(app, "/api/health")
        assert health.status_code == 200 and health.json()["status"] == "ok", health.text
        collections = _get(app, "/api/collections")
        page = _get(app, "/")
        if sync_only == "1":  # only the health route
            assert collections.status_code == 404, collections.text
            assert page.status_code == 404, page.text
        else:
            assert collections.status_code == 200 and collections.json() == [], collections.text
            assert page.status_code == 200 and "<title>benchbook</title>" in page.text
        foreign = _get(app, "/api/health", host="evil.example")
        if allow_remote == "1":
            assert foreign.status_code == 200 and foreign.json()["status"] == "ok", foreign.text
        else:
            assert foreign.status_code == 403 and "is not this computer" in foreign.json()["detail"]
    finally:
        app.services.db.engine.dispose()


def test_app_from_env_uses_the_project_of_the_variable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """What the app writes lands in the project BENCHBOOK_PROJECT names."""
    from benchbook.app import app_from_env
    from benchbook.persistence.db import open_database
    from benchbook.persistence.tables import Collection

    monkeypatch.chdir(tmp_path)
    for name, value in (("BENCHBOOK_PROJECT", str(tmp_path / "one")), ("BENCHBOOK_ALLOW_REMOTE", "0"),
                        ("BENCHBOOK_SYNC_ONLY", "0")):
        monkeypatch.setenv(name, value)
    app = app_from_env()
    try:
        with TestClient(app, base_url="http://127.0.0.1") as client:
            made = client.post("/api/collections", json={"name": "lake"})
            assert made.status_code == 201, made.text
    finally:
        app.services.db.engine.dispose()
    project = Project.open(tmp_path / "one")
    db = open_database(project.database_url)
    try:
        with db.session() as s:
            assert list(s.scalars(select(Collection.name))) == ["lake"]
    finally:
        db.engine.dispose()


def test_live_server_answers_health(tmp_path: Path) -> None:
    port = free_port()
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
            except httpx.TransportError as exc:  # not listening yet
                last = exc
                time.sleep(0.2)
                continue
            # the server answered: that answer must be the healthy one
            assert response.status_code == 200, f"/api/health answered {response.status_code}: {response.text}"
            assert response.json()["status"] == "ok", response.text
            break
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
