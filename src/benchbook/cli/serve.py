"""``benchbook serve``: run the service with uvicorn.

Listens on ``127.0.0.1:8000`` by default. A host that is not this computer's own needs
``--allow-remote`` (and then prints a warning): the service has no accounts, so whoever can
reach it can read and change everything. ``--ssl-certfile``/``--ssl-keyfile`` serve it over
TLS (uvicorn's own); a ``--sync-only --allow-remote`` server without them warns that device
tokens and data would cross the network in clear text (docs/sync.md, *Setting up*).
"""
from __future__ import annotations

import os
import threading
import time
import webbrowser
from pathlib import Path
from typing import Any

import click

from benchbook.cli.sending import Settings
from benchbook.domain.addresses import is_loopback
from benchbook.settings.limits import Limits

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR")


is_local_host = is_loopback
"""Whether ``--host`` names only this computer (:func:`benchbook.domain.addresses.is_loopback`)."""


def server_url(host: str, port: int, scheme: str = "http") -> str:
    """``http://host:port/`` (``scheme`` ``https`` when serving TLS) with IPv6 hosts in brackets
    (``::1`` → ``http://[::1]:8000/``)."""
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"{scheme}://{shown}:{port}/"


def check_tls(certfile: str | None, keyfile: str | None) -> dict[str, str]:
    """uvicorn's TLS options (``{ssl_certfile, ssl_keyfile}``) for ``--ssl-certfile`` and
    ``--ssl-keyfile``: both given, or neither (then ``{}``).

    The pair is loaded once here, so that a mistake is said before the server starts, in one
    line. Raises ``click.UsageError`` when only one is given and ``click.ClickException`` when
    the files cannot be read, are not PEM, do not belong together, or the key is protected by
    a passphrase (uvicorn would ask for it at the terminal).
    """
    if certfile is None and keyfile is None:
        return {}
    if certfile is None or keyfile is None:
        given, missing = ("--ssl-certfile", "--ssl-keyfile") if keyfile is None else ("--ssl-keyfile", "--ssl-certfile")
        raise click.UsageError(f"{given} needs {missing} too: TLS takes the certificate and its private key "
                               "(both, or neither)")
    import ssl

    class _Passphrase(Exception):
        pass

    def no_passphrase() -> str:
        raise _Passphrase

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(certfile, keyfile, password=no_passphrase)
    except _Passphrase:
        raise click.ClickException(f"--ssl-keyfile {keyfile} is protected by a passphrase: give the key "
                                   "unencrypted, in a file only you can read (chmod 600)") from None
    except (ssl.SSLError, OSError) as exc:
        raise click.ClickException(f"--ssl-certfile {certfile} and --ssl-keyfile {keyfile} cannot be used: {exc} "
                                   "(each must be PEM, and the key the certificate's own)") from None
    return {"ssl_certfile": certfile, "ssl_keyfile": keyfile}


def _browse_when_up(url: str, timeout: float = 30.0) -> None:
    """Open ``url`` in the browser once ``<url>api/health`` answers (gives up after ``timeout`` s).
    Whether this server's own certificate is trusted is the browser's to say, not this check's."""
    import httpx

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "api/health", timeout=1.0, verify=False).status_code < 500:
                webbrowser.open(url)
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.25)


def _warn_remote(host: str) -> None:
    from rich.console import Console
    from rich.panel import Panel

    Console(stderr=True).print(Panel(
        f"benchbook is listening on [bold]{host}[/bold], which other computers may reach.\n"
        "There are no accounts or passwords: [bold]anyone who can reach this address can read and "
        "change everything[/bold] in this project.\nOnly do this behind your own protection "
        "(a firewall, VPN or authenticating reverse proxy).",
        title="WARNING: --allow-remote", border_style="red"))


CLEAR_TEXT_WARNING = (
    "This sync-only server speaks plain HTTP: device tokens and the project's data would cross the "
    "network in clear text, readable (and a token reusable) by anyone on the way.\n"
    "Serve it over TLS with --ssl-certfile CERT.pem --ssl-keyfile KEY.pem, or keep it on this "
    "computer (drop --allow-remote) and let devices reach it through a secure tunnel, e.g. "
    "ssh -L 8765:127.0.0.1:8765 host (docs/sync.md, Setting up).")
"""What ``serve --sync-only --allow-remote`` without TLS prints (stderr)."""


def _warn_clear_text() -> None:
    from rich.console import Console
    from rich.panel import Panel

    Console(stderr=True).print(Panel(CLEAR_TEXT_WARNING, title="WARNING: sync without TLS", border_style="red"))


@click.command("serve")
@click.option("--open", "open_browser", is_flag=True, default=False,
              help="Open the web app in a browser once the server answers.")
@click.option("--port", "-p", type=click.IntRange(0, 65535), default=8000, show_default=True,
              help="Port to listen on.")
@click.option("--sync-only", is_flag=True, default=False,
              help="Serve only what syncing devices call (/api/sync/…) and /api/health: no web app, "
                   "no other API (docs/sync.md).")
@click.option("--log-level", type=click.Choice(LOG_LEVELS, case_sensitive=False), default="INFO",
              show_default=True, help="Server log level.")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="Address to listen on; one not of this computer needs --allow-remote.")
@click.option("--allow-remote", is_flag=True, default=False,
              help="Allow a non-local --host and requests addressed to other host names.")
@click.option("--ssl-certfile", type=click.Path(exists=True, dir_okay=False), default=None, metavar="PATH",
              help="Serve over TLS (https) with this PEM certificate (chain); needs --ssl-keyfile.")
@click.option("--ssl-keyfile", type=click.Path(exists=True, dir_okay=False), default=None, metavar="PATH",
              help="The PEM private key of --ssl-certfile (unencrypted; keep it readable only by you).")
@click.option("--reload", is_flag=True, default=False, help="Restart when the code changes (development).")
@click.option("--shutdown-grace", type=click.FloatRange(min=0), default=10.0, show_default=True, metavar="SECONDS",
              help="On stop, how long requests in flight (already told to stop) may take to finish; "
                   "then they are cancelled and the server exits.")
@click.option("--project", "project_dir", type=click.Path(file_okay=False), envvar="BENCHBOOK_PROJECT",
              default=None, help="Project folder (default: the global --project).")
@click.pass_context
def serve(ctx: click.Context, open_browser: bool, port: int, sync_only: bool, log_level: str, host: str,
          allow_remote: bool, ssl_certfile: str | None, ssl_keyfile: str | None, reload: bool,
          shutdown_grace: float, project_dir: str | None) -> None:
    """Run the benchbook server (API under /api, web app at /).

    Refuses (exit status 2) a --host that is not this computer's own unless --allow-remote.
    --ssl-certfile and --ssl-keyfile (both or neither) serve over TLS (https). A --sync-only
    --allow-remote server without them warns that device tokens and data would cross the
    network in clear text. On SIGTERM or Ctrl+C it tells the requests in flight to stop, waits
    at most --shutdown-grace seconds for them and exits (docs/limits.md, *Stopping the server*).
    """
    if not is_local_host(host) and not allow_remote:
        raise click.UsageError(
            f"--host {host} is not this computer's own address (127.0.0.1, ::1, localhost); the server "
            "has no accounts, so anyone who can reach it could read and change everything. "
            "Add --allow-remote if you really mean it.", ctx=ctx)
    try:
        tls = check_tls(ssl_certfile, ssl_keyfile)
    except click.UsageError as exc:
        exc.ctx = ctx
        raise
    from benchbook.cli import stopping
    from benchbook.settings.config import Project

    if project_dir is None:
        project_dir = getattr(ctx.find_object(Settings), "project", None)
    project = Project.locate(project_dir)
    try:
        http = http_options(project.limits)
    except ValueError as exc:  # a bad [limits] table: say which key, not a traceback
        raise click.ClickException(str(exc)) from None
    if sync_only and allow_remote and not tls:
        _warn_clear_text()
    elif allow_remote and not is_local_host(host) and not sync_only:
        _warn_remote(host)
    if sync_only:
        click.echo("Sync only: serving what syncing devices call (/api/sync/…) and /api/health; "
                   "no web app, no other API.", err=True)
    scheme = "https" if tls else "http"
    url = server_url(host, port, scheme)
    click.echo(f"benchbook serving project {project.root} at {url}")
    if open_browser:
        browse = url if is_local_host(host) else server_url("127.0.0.1", port, scheme)
        threading.Thread(target=_browse_when_up, args=(browse,), daemon=True).start()
    options = {"host": host, "port": port, "log_level": log_level.lower(), "timeout_graceful_shutdown": shutdown_grace,
               **http, **tls}
    if reload:
        import benchbook

        os.environ["BENCHBOOK_PROJECT"] = str(project.root)
        os.environ["BENCHBOOK_ALLOW_REMOTE"] = "1" if allow_remote else "0"
        os.environ["BENCHBOOK_SYNC_ONLY"] = "1" if sync_only else "0"
        stopping.run("benchbook.http.app:app_from_env", reload_dirs=[str(Path(benchbook.__file__).parent)], **options)
        return
    from benchbook.http.app import create_app

    stopping.run(create_app(project, allow_remote=allow_remote, sync_only=sync_only, resume_history=True), **options)


KEEP_ALIVE_SECONDS = 15
"""Seconds the server keeps an idle HTTP connection open (see :func:`http_options`)."""


def http_options(limits: Limits) -> dict[str, Any]:
    """uvicorn's HTTP settings for the server's own limits (``docs/limits.md``) to answer first,
    in the ``{detail}`` envelope: h11 (httptools cannot parse a URL of 64 KiB or more and
    answers a plain-text 400 itself) with room for a request line and headers well past
    ``url_bytes`` and ``header_bytes`` (at least 1 MiB), so that an over-long target gets
    benchbook's 414 and only a request head larger than that room gets h11's 400, which
    :class:`~benchbook.cli.http_protocol.EnvelopeH11Protocol` also gives in the envelope.

    An idle connection is kept :data:`KEEP_ALIVE_SECONDS`, longer than an ``httpx`` client
    (benchbook's own: the CLI's ``--url``, a device syncing) keeps one for reuse (5 s): with
    both at 5 s (uvicorn's default), a client could send its next request on a connection the
    server was closing at that moment and read "connection reset" (a busy machine's run met it)."""
    from benchbook.cli.http_protocol import EnvelopeH11Protocol

    room = max(1024 * 1024, 4 * (limits.url_bytes + limits.header_bytes))
    return {"http": EnvelopeH11Protocol, "h11_max_incomplete_event_size": room,
            "timeout_keep_alive": KEEP_ALIVE_SECONDS}
