"""``benchbook serve``: the local-host rule, its refusal, the ``--reload`` app factory run for real,
a real server answering /api/health, over TLS too, and the warnings of a server others may reach."""
from __future__ import annotations

import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner
from sqlalchemy import select
from starlette.testclient import TestClient

from benchbook.cli import stopping
from benchbook.cli.http_protocol import EnvelopeH11Protocol
from benchbook.cli.main import build_cli
from benchbook.cli.serve import KEEP_ALIVE_SECONDS, is_local_host, serve, server_url
from benchbook.settings.config import Project
from tests import patient_http
from tests.live_server import Live, free_port, live_server, self_signed_certificate
from tests.waiting import HANG

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
    assert server_url("::1", 9000, "https") == "https://[::1]:9000/"


def test_options_and_defaults() -> None:
    defaults = {p.name: p.default for p in serve.params}
    assert defaults == {"open_browser": False, "port": 8000, "sync_only": False, "log_level": "INFO",
                        "host": "127.0.0.1", "allow_remote": False, "ssl_certfile": None, "ssl_keyfile": None,
                        "reload": False, "shutdown_grace": 10.0, "project_dir": None}
    assert defaults["shutdown_grace"] == stopping.DEFAULT_GRACE
    port = next(p for p in serve.params if p.name == "port")
    assert "-p" in port.opts


@pytest.mark.parametrize("host", ["0.0.0.0", "192.168.1.20", "::", "example.com"])
def test_non_local_host_without_allow_remote_is_refused(host: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stopping, "run", lambda *a, **k: pytest.fail("the server must not start"))
    result = CliRunner().invoke(build_cli(), ["serve", "--host", host])
    assert result.exit_code == 2
    assert f"--host {host} is not this computer's own address" in result.stderr
    assert "--allow-remote" in result.stderr


def _flat(text: str) -> str:
    """``text`` with rich's panel borders and line breaks taken out."""
    return " ".join(text.replace("│", " ").split())


def _serve_without_serving(monkeypatch: pytest.MonkeyPatch) -> tuple[list[tuple[tuple[object, ...], dict[str, object]]],
                                                                     list[dict[str, object]]]:
    """``stopping.run`` and ``create_app`` replaced by recorders: serve says and passes what it
    would, and starts nothing. Returns ``(uvicorn calls, apps made)``."""
    import benchbook.http.app

    calls: list[tuple[tuple[object, ...], dict[str, object]]] = []
    made: list[dict[str, object]] = []
    monkeypatch.setattr(stopping, "run", lambda *a, **k: calls.append((a, k)))
    monkeypatch.setattr(benchbook.http.app, "create_app", lambda project, **kw: made.append({"root": project.root, **kw}))
    return calls, made


def test_allow_remote_warns_and_passes_flags(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls, made = _serve_without_serving(monkeypatch)
    result = CliRunner().invoke(build_cli(), ["--project", str(tmp_path), "serve", "--host", "0.0.0.0",
                                              "--allow-remote", "-p", "8123", "--log-level", "debug",
                                              "--shutdown-grace", "2.5"])
    assert result.exit_code == 0, result.output
    flat = _flat(result.stderr)
    assert "anyone who can reach this address can read and change everything" in flat
    assert "clear text" not in flat  # the whole service: its warning is the one above
    assert "http://0.0.0.0:8123/" in result.stdout
    assert made == [{"root": tmp_path.resolve(), "allow_remote": True, "sync_only": False, "resume_history": True}]
    assert calls[0][1] == {"host": "0.0.0.0", "port": 8123, "log_level": "debug", "http": EnvelopeH11Protocol,
                           "h11_max_incomplete_event_size": 1024 * 1024,  # room past [limits] (docs/limits.md)
                           "timeout_keep_alive": KEEP_ALIVE_SECONDS, "timeout_graceful_shutdown": 2.5}


def test_an_idle_connection_outlives_what_an_httpx_client_keeps_it_for() -> None:
    """The server closes an idle connection later than benchbook's clients (httpx, its default
    limits: the CLI's ``--url``, a device syncing) stop reusing it, so a client never sends on a
    connection the server is closing (``http_options``)."""
    expiry = httpx.Limits().keepalive_expiry
    assert expiry is not None and KEEP_ALIVE_SECONDS >= 2 * expiry


@pytest.mark.parametrize("host", ["0.0.0.0", "127.0.0.1"])
def test_sync_only_for_others_without_tls_warns_of_clear_text(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                              host: str) -> None:
    """``--sync-only --allow-remote`` without TLS: device tokens and data would cross the network
    readable; the warning names both ways out (a tunnel, or the two TLS options). The server
    still starts (a lab may have its own protection) and serves only sync."""
    calls, made = _serve_without_serving(monkeypatch)
    result = CliRunner().invoke(build_cli(), ["--project", str(tmp_path), "serve", "--host", host, "--allow-remote",
                                              "--sync-only", "-p", "8765"])
    assert result.exit_code == 0, result.output
    flat = _flat(result.stderr)
    assert "WARNING: sync without TLS" in flat
    assert "device tokens and the project's data would cross the network in clear text" in flat
    assert "ssh -L 8765:127.0.0.1:8765 host" in flat
    assert "--ssl-certfile CERT.pem --ssl-keyfile KEY.pem" in flat
    assert "anyone who can reach this address" not in flat  # sync-only: nothing is served without a token
    assert "Sync only: serving what syncing devices call (/api/sync/…) and /api/health" in flat
    assert f"http://{host}:8765/" in result.stdout
    assert made[0]["sync_only"] is True and made[0]["allow_remote"] is True
    assert "ssl_certfile" not in calls[0][1]


def test_tls_options_reach_uvicorn_and_silence_the_warning(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    cert, key = self_signed_certificate(tmp_path)
    calls, _ = _serve_without_serving(monkeypatch)
    result = CliRunner().invoke(build_cli(), ["--project", str(tmp_path / "p"), "serve", "--host", "0.0.0.0",
                                              "--allow-remote", "--sync-only", "-p", "8765",
                                              "--ssl-certfile", str(cert), "--ssl-keyfile", str(key)])
    assert result.exit_code == 0, result.output
    assert "https://0.0.0.0:8765/" in result.stdout
    assert "clear text" not in _flat(result.stderr) and "WARNING" not in result.stderr
    assert (calls[0][1]["ssl_certfile"], calls[0][1]["ssl_keyfile"]) == (str(cert), str(key))


def test_tls_options_come_together_and_must_be_usable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Only one of the two, a file that is not there, a key that is not the certificate's or
    needs a passphrase: a one-line error before anything starts (or is created)."""
    cert, key = self_signed_certificate(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    other_cert, other_key = self_signed_certificate(other)
    monkeypatch.setattr(stopping, "run", lambda *a, **k: pytest.fail("the server must not start"))
    project = tmp_path / "never-made"

    def serve_with(*args: str) -> object:
        return CliRunner().invoke(build_cli(), ["--project", str(project), "serve", *args])

    alone = serve_with("--ssl-certfile", str(cert))
    assert alone.exit_code == 2 and "error: --ssl-certfile needs --ssl-keyfile too" in alone.stderr
    alone = serve_with("--ssl-keyfile", str(key))
    assert alone.exit_code == 2 and "error: --ssl-keyfile needs --ssl-certfile too" in alone.stderr
    absent = serve_with("--ssl-certfile", str(tmp_path / "nope.pem"), "--ssl-keyfile", str(key))
    assert absent.exit_code == 2 and "does not exist" in absent.stderr and "nope.pem" in absent.stderr
    mismatched = serve_with("--ssl-certfile", str(cert), "--ssl-keyfile", str(other_key))
    assert mismatched.exit_code == 1, mismatched.output
    assert mismatched.stderr.startswith("error: --ssl-certfile") and "the key the certificate's own" in mismatched.stderr
    swapped = serve_with("--ssl-certfile", str(key), "--ssl-keyfile", str(cert))
    assert swapped.exit_code == 1 and "cannot be used" in swapped.stderr
    locked = tmp_path / "locked.pem"
    openssl = shutil.which("openssl")  # a key behind a passphrase, where openssl can make one
    if openssl and subprocess.run([openssl, "pkey", "-in", str(other_key), "-aes128", "-passout", "pass:secret",
                                   "-out", str(locked)], check=False, capture_output=True, timeout=HANG).returncode == 0:
        protected = serve_with("--ssl-certfile", str(other_cert), "--ssl-keyfile", str(locked))
        assert protected.exit_code == 1 and "protected by a passphrase" in protected.stderr, protected.output
    assert not project.exists()


def test_live_server_answers_health_over_tls(tmp_path: Path) -> None:
    """``serve --ssl-certfile --ssl-keyfile`` for real: uvicorn's TLS answers /api/health over
    https with the certificate it was given (checked against that certificate, host 127.0.0.1),
    and the start-up line says https."""
    cert, key = self_signed_certificate(tmp_path)
    with live_server(tmp_path / "project", tmp_path / "server.log", https_ca=cert,
                     args=["--ssl-certfile", str(cert), "--ssl-keyfile", str(key)]) as live:
        assert live.base.startswith("https://")
        trusted = ssl.create_default_context(cafile=str(cert))
        response = patient_http.get(f"https://127.0.0.1:{live.port}/api/health", verify=trusted)
        assert response.status_code == 200 and response.json()["status"] == "ok", response.text
        with pytest.raises(httpx.ConnectError):  # not trusted by default: it really is this certificate
            patient_http.get(f"https://127.0.0.1:{live.port}/api/health")
    log = (tmp_path / "server.log").read_text()
    assert f"at https://127.0.0.1:{live.port}/" in log, log


def test_reload_uses_the_env_factory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[tuple[tuple[object, ...], dict[str, object]]] = []
    monkeypatch.setattr(stopping, "run", lambda *a, **k: calls.append((a, k)))
    for name in ("BENCHBOOK_PROJECT", "BENCHBOOK_ALLOW_REMOTE", "BENCHBOOK_SYNC_ONLY"):
        monkeypatch.setenv(name, "")
    result = CliRunner().invoke(build_cli(), ["serve", "--reload", "--project", str(tmp_path)])
    assert result.exit_code == 0, result.output
    args, kwargs = calls[0]
    assert args == ("benchbook.http.app:app_from_env",)
    assert kwargs["host"] == "127.0.0.1" and kwargs["port"] == 8000 and kwargs["log_level"] == "info"
    assert kwargs["timeout_graceful_shutdown"] == 10.0
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
    from benchbook.http.app import app_from_env

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
    from benchbook.http.app import app_from_env
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
        deadline = time.monotonic() + HANG
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
            pytest.fail(f"no answer from /api/health within {HANG:g} s (last: {last!r})")
        # the generated commands can talk to it with --url instead of in-process
        result = CliRunner().invoke(build_cli(), ["--url", f"http://127.0.0.1:{port}", "system", "health"])
        assert result.exit_code == 0, result.output
        assert '"status": "ok"' in result.stdout
        missing = CliRunner().invoke(build_cli(), ["--url", f"http://127.0.0.1:{port}/", "collections", "get", "nope"])
        assert missing.exit_code == 1 and missing.stderr.startswith("error 404: ")
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            output = proc.communicate(timeout=HANG)[0].decode()
        except subprocess.TimeoutExpired:
            proc.kill()
            output = proc.communicate()[0].decode()
    assert f"http://127.0.0.1:{port}/" in output


# ------------------------------------------------- abandoned requests and the stop (issue 33 item 2)
# A live server with the test hook of handlers/system.py (BENCHBOOK_TEST_HOLD): a GET /api/health
# with ``x-benchbook-test-hold: NAME`` holds its handler's thread, as a long import would, writing
# NAME.started when it begins and NAME.abandoned when abandon.check() stops it. The test makes
# those files named pipes and reads them, so it waits for exactly those moments, never for time.

class Mark:
    """A named pipe ``folder/NAME.what`` the hook writes; :meth:`wait` returns once it has."""

    def __init__(self, folder: Path, name: str) -> None:
        self.path = folder / name
        os.mkfifo(self.path)
        self._written = threading.Event()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with open(self.path, "rb") as pipe:  # blocks until the server opens it for writing
            pipe.read()
        self._written.set()

    def wait(self, log: Path) -> None:
        if not self._written.wait(HANG):
            pytest.fail(f"{self.path.name} was not written within {HANG:g} s:\n{log.read_text()}")


def _hold(live: Live, name: str) -> tuple[threading.Thread, dict[str, httpx.Response]]:
    """GET /api/health held as ``name``, in a thread; its answer lands in the dict."""
    answer: dict[str, httpx.Response] = {}

    def call() -> None:
        answer["r"] = httpx.get(live.base + "/api/health", headers={"x-benchbook-test-hold": name},
                                timeout=HANG)

    thread = threading.Thread(target=call, daemon=True)
    thread.start()
    return thread, answer


def _stopped(live: Live, sig: int = signal.SIGTERM) -> int:
    live.proc.send_signal(sig)
    try:
        return live.proc.wait(timeout=HANG)
    except subprocess.TimeoutExpired:
        live.proc.kill()
        pytest.fail(f"benchbook serve was still up {HANG:g} s after the signal:\n{live.log_path.read_text()}")


def test_a_request_whose_client_left_is_abandoned_and_a_stop_abandons_the_rest(tmp_path: Path) -> None:
    """The client of a held request disconnects: its handler's abandon signal is set (the thread
    pool's handler sees the request's signal) and the server goes on serving. Then a held
    request and SIGTERM: the request is told to stop at once (503 envelope) and the server exits,
    although its grace period (600 s) would let it wait far past the hang detector."""
    holds = tmp_path / "holds"
    holds.mkdir()
    gone_started, gone_abandoned = Mark(holds, "gone.started"), Mark(holds, "gone.abandoned")
    held_started, held_abandoned = Mark(holds, "held.started"), Mark(holds, "held.abandoned")
    with live_server(tmp_path / "project", tmp_path / "server.log", args=["--shutdown-grace", "600"],
                     env={"BENCHBOOK_TEST_HOLD": str(holds)}) as live:
        with socket.create_connection(("127.0.0.1", live.port)) as client:
            client.sendall(b"GET /api/health HTTP/1.1\r\nHost: 127.0.0.1\r\nx-benchbook-test-hold: gone\r\n\r\n")
            gone_started.wait(live.log_path)
        gone_abandoned.wait(live.log_path)  # the client closed its connection: the work stopped
        assert patient_http.get(live.base + "/api/health").json()["status"] == "ok"

        thread, answer = _hold(live, "held")
        held_started.wait(live.log_path)
        status = _stopped(live)
        held_abandoned.wait(live.log_path)
        thread.join(HANG)
    assert status in (0, -signal.SIGTERM), status
    assert answer["r"].status_code == 503, answer["r"].text
    assert "abandoned" in answer["r"].json()["detail"]
    log = (tmp_path / "server.log").read_text()
    assert "1 request(s) in flight told to stop" in log
    assert "Traceback" not in log


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_request_that_never_stops_does_not_keep_the_server_up(tmp_path: Path, sig: int) -> None:
    """A handler thread that never checks (busy for good): after the grace period (1 s here) the
    request is cancelled, answered 503 in the envelope, and the process exits anyway."""
    holds = tmp_path / "holds"
    holds.mkdir()
    started = Mark(holds, "stuck.started")
    with live_server(tmp_path / "project", tmp_path / "server.log", args=["--shutdown-grace", "1"],
                     env={"BENCHBOOK_TEST_HOLD": str(holds)}) as live:
        thread, answer = _hold(live, "stuck")
        started.wait(live.log_path)
        status = _stopped(live, sig)
        thread.join(HANG)
    log = (tmp_path / "server.log").read_text()
    assert status == stopping.STUCK_EXIT_STATUS, (status, log)
    assert answer["r"].status_code == 503, answer["r"].text
    assert "grace period" in answer["r"].json()["detail"]
    assert "1 request(s) still running after the 1.0 s grace period" in log, log


def test_the_access_log_never_shows_a_key_sent_in_the_url(tmp_path: Path) -> None:
    key = "sk-test-0123456789abcdef-URLK"
    with live_server(tmp_path / "project", tmp_path / "server.log") as live:
        r = httpx.get(live.base + "/api/health", params={"api_key": key, "x": "1"})
        assert r.status_code == 422 and key not in r.text
    log = (tmp_path / "server.log").read_text()
    assert key not in log
    assert "GET /api/health?api_key=[redacted]&x=1 HTTP/1.1" in log, log
