"""The OpenAPI document shipped in the package (``openapi.yaml``), parsed once per content.

Parsing the 180 kB YAML document costs about 0.2 s with libyaml (0.6 s in pure Python), and
Connexion checks it against the OpenAPI 3 schema (about 0.5 s) every time an app is built:
once per ``benchbook`` command run in-process. Both results depend only on the document's
text (and the Connexion version), so both are kept in the user cache folder
(``platformdirs.user_cache_dir("benchbook")``, or ``$BENCHBOOK_CACHE_DIR``):

- ``openapi-<sha256>.json``: the parsed document as JSON (written only when JSON gives the
  same document back); :func:`load_document` reads it in a few milliseconds;
- ``openapi-<sha256>.checked-<connexion version>``: an empty file written after Connexion
  passed the document; :func:`skip_known_good_validation` makes Connexion skip the check
  for a document it already passed.

A cache that cannot be written (read-only home) is not an error: the document is then parsed
and checked each time, as before. Nothing here imports the rest of the package.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from importlib import resources
from pathlib import Path
from typing import Any

CACHE_ENV = "BENCHBOOK_CACHE_DIR"


def document_text() -> str:
    """The packaged ``openapi.yaml`` as text. Raises ``FileNotFoundError`` when it is missing."""
    return (resources.files("benchbook") / "openapi.yaml").read_text(encoding="utf-8")


def cache_dir() -> Path:
    """Where parsed documents are cached: ``$BENCHBOOK_CACHE_DIR`` or the user cache folder."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    import platformdirs

    return Path(platformdirs.user_cache_dir("benchbook"))


def digest(text: str) -> str:
    """The cache key of a document text (sha256, hex, first 32 characters)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:32]


def parse(text: str) -> dict[str, Any]:
    """``text`` parsed as YAML (libyaml when available). Raises ``yaml.YAMLError``."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)  # type: ignore[no-any-return]


def load_document(text: str | None = None) -> dict[str, Any]:
    """The packaged document (or ``text``) parsed, from the cache when it holds it; a fresh
    object on every call (callers may change it). Raises ``yaml.YAMLError`` for bad YAML."""
    import orjson

    text = document_text() if text is None else text
    path = cache_dir() / f"openapi-{digest(text)}.json"
    try:
        cached: dict[str, Any] = orjson.loads(path.read_bytes())
        return cached
    except (OSError, orjson.JSONDecodeError):
        pass
    doc = parse(text)
    try:
        encoded = orjson.dumps(doc)
        if orjson.loads(encoded) == doc:  # only JSON-clean documents (no dates, no integer keys)
            _write(path, encoded)
    except (OSError, TypeError):
        pass
    return doc


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError:
        Path(tmp).unlink(missing_ok=True)
        raise


def _checked_marker(spec: dict[str, Any]) -> Path:
    from importlib.metadata import version

    import orjson

    encoded = orjson.dumps(spec, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    key = hashlib.sha256(encoded).hexdigest()[:32]
    return cache_dir() / f"openapi-{key}.checked-{version('connexion')}"


def skip_known_good_validation() -> None:
    """Make Connexion skip its OpenAPI-schema check of a document it has already passed (same
    content, same Connexion version; see the module docstring). Idempotent. A document that
    fails the check is never marked, so it fails every time as before."""
    from connexion.spec import Specification

    current = Specification.__dict__["_validate_spec"]
    if getattr(current, "__benchbook_memo__", False):
        return
    original = current.__func__

    def _validate_spec(cls: type[Specification], spec: dict[str, Any]) -> None:
        try:
            marker = _checked_marker(spec)
        except TypeError:  # not JSON-clean: check it every time
            original(cls, spec)
            return
        if marker.exists():
            return
        original(cls, spec)
        try:
            _write(marker, b"")
        except OSError:
            pass

    _validate_spec.__benchbook_memo__ = True  # type: ignore[attr-defined]
    Specification._validate_spec = classmethod(_validate_spec)
