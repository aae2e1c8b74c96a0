"""A live ``benchbook serve`` (uvicorn in a subprocess) for the tests that need real HTTP: the
web page in Chromium, a generated client, limits that only the real server applies; and the
same app served by uvicorn in a thread of the test process (:func:`served_in_thread`) where the
server process itself is not what is tested."""
from __future__ import annotations

import os
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.waiting import HANG, until

SRC = Path(__file__).resolve().parents[1] / "src"
START_SECONDS = HANG
"""How long the server may take to answer ``/api/health``: only a hang reaches it."""


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on now; skips the test where none can be bound."""
    try:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            return int(sock.getsockname()[1])
    except OSError as exc:
        pytest.skip(f"this machine cannot listen on 127.0.0.1, so no server can run here: {exc}")


@dataclass
class Live:
    """A running ``benchbook serve``: its base URL, port, process and log file."""

    base: str
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path


@contextmanager
def served(project: Path, log_path: Path) -> Iterator[tuple[str, int]]:
    """``benchbook serve --project project`` on a free port (:func:`live_server`); yields ``(base
    URL, port)`` once ``/api/health`` answers 200."""
    with live_server(project, log_path) as live:
        yield live.base, live.port


@contextmanager
def live_server(project: Path, log_path: Path, *, args: Sequence[str] = (),
                env: Mapping[str, str] | None = None, https_ca: Path | None = None) -> Iterator[Live]:
    """``benchbook serve --project project`` on a free port, with ``args`` added and ``env``
    over this process's environment, this checkout's ``src`` first on the path and no
    ``BENCHBOOK_URL``/``BENCHBOOK_PROJECT`` from the caller; yields a :class:`Live` once
    ``/api/health`` answers 200, and stops it with SIGTERM (SIGKILL after 10 s) unless the test
    did. Its output goes to ``log_path`` (a file, not a pipe: nothing blocks on a long log line).
    ``https_ca``: the server serves TLS (``args`` give its ``--ssl-certfile``/``--ssl-keyfile``);
    it is reached at ``https://`` and its certificate checked against this file.

    Fails the test, with the log, when the server exits or does not answer within
    :data:`START_SECONDS`.
    """
    port = free_port()
    env = {**os.environ, **(env or {}),
           "PYTHONPATH": os.pathsep.join(filter(None, [str(SRC), os.environ.get("PYTHONPATH")]))}
    for name in ("BENCHBOOK_URL", "BENCHBOOK_PROJECT"):
        env.pop(name, None)
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "benchbook.cli.main", "serve", "--project", str(project), "--port", str(port),
             *args],
            stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    base = f"{'https' if https_ca else 'http'}://127.0.0.1:{port}"
    verify: ssl.SSLContext | bool = ssl.create_default_context(cafile=str(https_ca)) if https_ca else True
    try:
        deadline = time.monotonic() + START_SECONDS
        last: object = None
        while True:
            if proc.poll() is not None:
                pytest.fail(f"benchbook serve exited with {proc.returncode}:\n{log_path.read_text()}")
            try:
                response = httpx.get(base + "/api/health", timeout=3.0, verify=verify)
                if response.status_code == 200:
                    break
                last = response.status_code
            except httpx.HTTPError as exc:
                last = exc
            if time.monotonic() > deadline:
                pytest.fail(f"no answer from {base}/api/health within {START_SECONDS:.0f} s (last: {last!r}):\n"
                            f"{log_path.read_text()}")
            time.sleep(0.2)
        yield Live(base, port, proc, log_path)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


@contextmanager
def served_in_thread(project: Path) -> Iterator[str]:
    """The app on ``project`` as ``benchbook serve`` builds it (``create_app(..., resume_history=True)``,
    uvicorn with serve's HTTP options) served by uvicorn in a thread of this process on a free
    port; yields its base URL once uvicorn has started, and stops it afterwards. For tests where
    a browser or client is what is tested, not the server process: a subprocess costs each
    module about 2 s more to start (an interpreter, every import, coverage)."""
    import uvicorn

    from benchbook.cli.serve import http_options
    from benchbook.http.app import create_app
    from benchbook.settings.config import Project

    opened = Project.open(project)
    app = create_app(opened, resume_history=True)
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning",
                                           **http_options(opened.limits)))
    thread = threading.Thread(target=server.run, name="benchbook-test-server", daemon=True)
    thread.start()
    try:
        until(lambda: server.started or not thread.is_alive(), "uvicorn to start")
        assert server.started, "uvicorn stopped before it started (see the log above)"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(HANG)
        app.services.db.engine.dispose()


def self_signed_certificate(folder: Path) -> tuple[Path, Path]:
    """A self-signed certificate for ``127.0.0.1`` (its subjectAltName), valid one day, and its
    unencrypted key: ``(folder/cert.pem, folder/key.pem)``, made with the ``cryptography``
    package when installed, else with the ``openssl`` command. Skips the test when neither is
    there."""
    cert, key = folder / "cert.pem", folder / "key.pem"
    try:
        import datetime
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
        from cryptography.x509.oid import NameOID
    except ImportError:
        import shutil

        openssl = shutil.which("openssl")
        if openssl is None:
            pytest.skip("no self-signed certificate can be made here: neither the cryptography package "
                        "nor the openssl command is installed")
        subprocess.run([openssl, "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1", "-days", "1", "-keyout", str(key), "-out", str(cert)],
                       check=True, capture_output=True, timeout=HANG)
        return cert, key
    private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    made = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(private.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                           critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(private.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(private.public_key()), critical=False)
            .sign(private, hashes.SHA256()))
    cert.write_bytes(made.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                          serialization.NoEncryption()))
    return cert, key
