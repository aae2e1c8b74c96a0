"""AI settings: which provider, model and base address, and the key.

Where they live (docs/decisions.md *AI*)::

    benchbook.toml   [ai] provider, model, base_url     (shareable, edited with tomlkit: comments kept)
                     [ai] allowed_hosts                 (edited by hand: other hosts GET /ai/local/models may ask)
    .secrets.toml    [ai] api_key                       (mode 0600, never in the database or a log)
    BENCHBOOK_AI_KEY the key, when the project has none of its own

The project's key wins over the environment's, so a key set with ``PATCH /ai/config`` is the
one used. Providers: ``openai`` (any OpenAI-compatible address, default
:data:`DEFAULT_OPENAI`), ``local`` (a model server on this computer, default
:data:`DEFAULT_LOCAL`; needs no key) and ``router`` (the hosted model router, its base
address from ``BENCHBOOK_ROUTER_URL``, default :data:`DEFAULT_ROUTER`; chat at
``<router>/api/v1``).
"""
from __future__ import annotations

import logging
import os
import re
import threading
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx

from benchbook.domain.addresses import host_key, is_loopback
from benchbook.domain.errors import BenchbookError, Conflict, Invalid, error_entry
from benchbook.settings.config import CONFIG_NAME

log = logging.getLogger(__name__)

PROVIDERS = ("openai", "local", "router")
DEFAULT_PROVIDER = "openai"
DEFAULT_OPENAI = "https://api.openai.com/v1"
DEFAULT_LOCAL = "http://localhost:11434/v1"
DEFAULT_ROUTER = "https://openrouter.ai"
KEY_ENV = "BENCHBOOK_AI_KEY"
ROUTER_ENV = "BENCHBOOK_ROUTER_URL"
SECRETS_NAME = ".secrets.toml"
SETTINGS = ("provider", "model", "base_url")
MAX_KEY_LENGTH = 1000
HINT_MIN_LENGTH = 12
"""A key shorter than this gets no ``key_hint``: four characters would give too much of it away."""

_WRITE_LOCK = threading.Lock()
_KEY_CHARS = re.compile(r"[!-~]+")  # printable ASCII: a key goes into an HTTP header
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def router_url(env: Mapping[str, str] | None = None) -> str:
    """The model router's base address: ``BENCHBOOK_ROUTER_URL`` or :data:`DEFAULT_ROUTER`."""
    env = os.environ if env is None else env
    return (env.get(ROUTER_ENV) or DEFAULT_ROUTER).rstrip("/")


def default_base_url(provider: str, env: Mapping[str, str] | None = None) -> str:
    """The chat address of ``provider`` when ``base_url`` is not set."""
    if provider == "local":
        return DEFAULT_LOCAL
    if provider == "router":
        return router_url(env) + "/api/v1"
    return DEFAULT_OPENAI


@dataclass(frozen=True)
class AiSettings:
    """The settings in force. ``api_key`` is left out of ``repr`` (tracebacks, logs)."""

    provider: str
    model: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    key_source: str | None = None
    """``project`` (``.secrets.toml``), ``environment`` (``BENCHBOOK_AI_KEY``) or None."""
    project_settings: bool = False
    """The project sets at least one of provider, model, base address or key."""
    allowed_hosts: frozenset[str] = frozenset()
    """``[ai] allowed_hosts``: hosts other than this computer's that ``GET /ai/local/models``
    may ask (host names or IP addresses, lower-cased, without brackets or port)."""

    @property
    def needs_key(self) -> bool:
        return self.provider != "local"

    @property
    def configured(self) -> bool:
        """A chat can be tried: a model is named and, unless the server is local, a key is set."""
        return bool(self.model) and (bool(self.api_key) or not self.needs_key)

    @property
    def source(self) -> str:
        """Where the settings in force come from: the key's source when there is a key, else
        ``project`` when the project sets anything, else ``default``."""
        if self.key_source:
            return self.key_source
        return "project" if self.project_settings else "default"

    @property
    def key_hint(self) -> str | None:
        """The key's last four characters (None without a key or for a very short key)."""
        if not self.api_key or len(self.api_key) < HINT_MIN_LENGTH:
            return None
        return self.api_key[-4:]

    def response(self) -> dict[str, Any]:
        """AiConfigResponse: never the key, only its hint."""
        return {"configured": self.configured, "source": self.source, "provider": self.provider,
                "model": self.model, "base_url": self.base_url, "key_hint": self.key_hint}

    def require_ready(self) -> None:
        """Raise ``Conflict`` (409) saying what to set when a chat cannot be tried."""
        if not self.model:
            raise Conflict("no AI model is configured: set one with PATCH /ai/config "
                           f"{{\"model\": \"...\"}} (provider {self.provider!r})")
        if self.needs_key and not self.api_key:
            how = ("log in to the model router (GET /ai/router/auth-url) or set"
                   if self.provider == "router" else "set")
            raise Conflict(f"no API key for the {self.provider!r} provider: {how} api_key with "
                           f"PATCH /ai/config, or the {KEY_ENV} environment variable")


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        with path.open("rb") as fh:
            return tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except (OSError, tomllib.TOMLDecodeError) as exc:
        # the parser's message quotes no values, but never risk a key in a log: name the file only
        log.warning("%s cannot be read (%s); its [ai] settings are ignored", path.name, type(exc).__name__)
        return {}


def _table(doc: dict[str, Any]) -> dict[str, Any]:
    ai = doc.get("ai")
    return ai if isinstance(ai, dict) else {}


def load(root: Path, env: Mapping[str, str] | None = None) -> AiSettings:
    """The settings in force for the project at ``root`` (read from disk now, so a change made
    by another process is seen)."""
    env = os.environ if env is None else env
    table = _table(_read_toml(root / CONFIG_NAME))
    stored = {k: v for k, v in table.items() if k in SETTINGS and isinstance(v, str) and v}
    project_key = _table(_read_toml(root / SECRETS_NAME)).get("api_key")
    project_key = project_key if isinstance(project_key, str) and project_key else None
    env_key = env.get(KEY_ENV) or None
    provider = stored.get("provider") or DEFAULT_PROVIDER
    provider = provider if provider in PROVIDERS else DEFAULT_PROVIDER
    return AiSettings(
        provider=provider, model=stored.get("model", ""),
        base_url=stored.get("base_url") or default_base_url(provider, env),
        api_key=project_key or env_key,
        key_source="project" if project_key else "environment" if env_key else None,
        project_settings=bool(stored) or bool(project_key),
        allowed_hosts=_allowed_hosts(table.get("allowed_hosts")))


def _allowed_hosts(value: Any) -> frozenset[str]:
    """``[ai] allowed_hosts`` read: a list of host names or addresses. Anything else is ignored
    with a warning (no other host is then allowed: the safe side)."""
    if value is None:
        return frozenset()
    if not isinstance(value, list) or not all(isinstance(v, str) and host_key(v) for v in value):
        log.warning("%s [ai] allowed_hosts is not a list of host names; no host other than this computer "
                    "is allowed", CONFIG_NAME)
        return frozenset()
    return frozenset(host_key(v) for v in value)


class HostNotAllowed(BenchbookError):
    """An address the server may not send a request to (kind ``forbidden``): ``GET
    /ai/local/models`` asks only this computer and the hosts of ``[ai] allowed_hosts`` (issue 33
    item 10)."""

    kind = "forbidden"


def check_local_server(url: str, allowed: frozenset[str]) -> None:
    """Raise :class:`HostNotAllowed` unless ``url``'s host is this computer's (:func:`is_loopback`)
    or one of ``allowed``."""
    host = urlsplit(url).hostname or ""
    if not (is_loopback(host) or host_key(host) in allowed):
        raise HostNotAllowed(
            f"{host!r} is not this computer: GET /ai/local/models asks only a model server on this computer "
            f"(localhost, 127.0.0.1, [::1]) or a host listed in {CONFIG_NAME} [ai] allowed_hosts")


def check_base_url(value: str, loc: list[str | int]) -> str:
    """``value`` without a trailing ``/`` if it is an ``http``/``https`` address with a host;
    raises ``Invalid``."""
    ok = False
    if value.isascii() and not re.search(r"[\s\x00-\x1f\x7f]", value):
        try:
            parts = urlsplit(value)
            ok = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
            httpx.URL(value)  # what the clients will parse
        except (ValueError, httpx.InvalidURL):
            ok = False
    if not ok:
        raise Invalid(f"{loc[-1]}: not an http(s) address", [
            error_entry(loc, "expected an http:// or https:// address with a host", "url", value)])
    return value.rstrip("/")


def _check(changes: Mapping[str, str | None]) -> dict[str, str | None]:
    """The given settings, checked (``None``: unchanged, ``""``: back to the default)."""
    out: dict[str, str | None] = {}
    problems = []
    for name in (*SETTINGS, "api_key"):
        value = changes.get(name)
        if value is None:
            continue
        given, value = value, value.strip()
        loc: list[str | int] = ["body", name]
        if not value and given and name == "api_key":
            problems.append(error_entry(loc, "a key of spaces only: send \"\" to remove the key", "api_key", None))
        elif not value:
            out[name] = ""
        elif name == "provider" and value not in PROVIDERS:
            problems.append(error_entry(loc, f"one of {', '.join(PROVIDERS)}", "enum", value))
        elif name == "base_url":
            try:
                out[name] = check_base_url(value, loc)
            except Invalid as exc:
                problems += exc.errors
        elif name == "api_key" and (len(value) > MAX_KEY_LENGTH or not _KEY_CHARS.fullmatch(value)):
            # the value is not echoed: it may be a key pasted with a stray character
            problems.append(error_entry(loc, f"a key is printable ASCII without spaces, at most {MAX_KEY_LENGTH} "
                                        "characters", "api_key", None))
        elif name == "model" and _CONTROL.search(value):
            problems.append(error_entry(loc, "no control characters", "model", value))
        else:
            out[name] = value
    if problems:
        raise Invalid("the AI settings are not valid: " + "; ".join(
            f"{p['loc'][-1]}: {p['msg']}" for p in problems), problems)
    return out


def update(root: Path, changes: Mapping[str, str | None], env: Mapping[str, str] | None = None) -> AiSettings:
    """Apply ``changes`` (AiConfigUpdate: ``api_key``, ``base_url``, ``model``, ``provider``;
    omitted or null leaves a setting as it is, ``""`` clears it back to its default) and
    return the settings in force. Raises ``Invalid`` (422) naming each bad value (never the
    key)."""
    checked = _check(changes)
    with _WRITE_LOCK:
        settings = {k: v for k, v in checked.items() if k in SETTINGS}
        if settings:
            _write_settings(root / CONFIG_NAME, settings)
        if "api_key" in checked:
            _write_key(root / SECRETS_NAME, checked["api_key"] or None)
    log.info("AI settings changed: %s", ", ".join(
        f"{k} {'cleared' if not v else 'set'}" for k, v in sorted(checked.items())) or "nothing")
    return load(root, env)


def _write_settings(path: Path, settings: Mapping[str, str | None]) -> None:
    """Set or remove ``[ai]`` keys of ``benchbook.toml``, keeping the rest of the file as it
    was (``tomlkit``); the file is replaced atomically."""
    import tomlkit

    doc = tomlkit.parse(path.read_text(encoding="utf-8")) if path.exists() else tomlkit.document()
    table = doc.get("ai")
    if not isinstance(table, dict):
        table = tomlkit.table()
        table.comment("AI assistant; the key is kept in .secrets.toml, never here")
        doc["ai"] = table
    for name, value in settings.items():
        if value:
            table[name] = value
        elif name in table:
            del table[name]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    tmp.write_text(tomlkit.dumps(doc), encoding="utf-8")
    tmp.replace(path)


def _write_key(path: Path, key: str | None) -> None:
    """Set (or, with None, remove) ``[ai] api_key`` in ``.secrets.toml``. The file is written
    through a new file created with mode 0600 (owner only) and moved into place."""
    import tomlkit

    text = path.read_text(encoding="utf-8") if path.exists() else ""
    try:
        doc = tomlkit.parse(text)
    except Exception:  # noqa: BLE001  an unreadable secrets file is replaced (its text is never logged)
        doc = tomlkit.document()
    if not text.strip():
        doc.add(tomlkit.comment("benchbook secrets: keep this file private, never commit it"))
    table = doc.get("ai")
    if not isinstance(table, dict):
        table = tomlkit.table()
        doc["ai"] = table
    if key:
        table["api_key"] = key
    elif "api_key" in table:
        del table["api_key"]
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.chmod(tmp, 0o600)  # whatever the umask left
        os.write(fd, tomlkit.dumps(doc).encode("utf-8"))
    finally:
        os.close(fd)
    tmp.replace(path)
