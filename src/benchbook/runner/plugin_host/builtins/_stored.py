"""Shared by the built-ins that read a stored file: fetch it without holding a large file in
memory twice, and report problems in a bounded list."""
from __future__ import annotations

import io
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from benchbook.plugin import Context, PluginError, envelope_to_bytes


@dataclass(frozen=True)
class StoredFile:
    """A stored file fetched with ``get_file``: its ``filename``, ``size`` and where its content
    is (``content`` for a small file sent inline, ``path`` for a large one in the scratch folder)."""

    sha256: str
    filename: str
    size: int
    content: bytes | None = None
    path: Path | None = None

    def open(self) -> BinaryIO:
        """A binary stream over the content (seekable)."""
        if self.path is not None:
            return self.path.open("rb")
        return io.BytesIO(self.content or b"")

    def head(self, n: int) -> bytes:
        """The first ``n`` bytes."""
        with self.open() as stream:
            return stream.read(n)

    def read(self) -> bytes:
        """The whole content."""
        with self.open() as stream:
            return stream.read()


def fetch(ctx: Context, sha256: str) -> StoredFile:
    """The stored file ``sha256`` (RPC ``get_file``). A large file stays in the scratch file the
    host wrote instead of being read into memory. Raises ``PluginError`` kind ``protocol_error``
    for an answer that is not a binary envelope."""
    answer = ctx.rpc("get_file", {"sha256": sha256})
    filename = str(answer.get("filename") or sha256)
    size = int(answer.get("size") or 0)
    if answer.get("encoding") == "path" and isinstance(answer.get("path"), str):
        path = Path(answer["path"])
        return StoredFile(sha256, filename, size, path=path if path.is_absolute() else ctx.scratch / path)
    envelope = {key: value for key, value in answer.items() if key in ("encoding", "data")}
    try:
        content = envelope_to_bytes(envelope, ctx.scratch)
    except ValueError as exc:
        raise PluginError("protocol_error", f"get_file answer for {sha256}: {exc}") from None
    return StoredFile(sha256, filename, len(content), content=content)


def short(message: str, limit: int = 300) -> str:
    """``message`` cut to ``limit`` characters for a report."""
    return message if len(message) <= limit else message[: limit - 1] + "…"


class Problems:
    """Counted problems, the first ``keep`` of them kept for the report."""

    def __init__(self, keep: int) -> None:
        self.keep = keep
        self.count = 0
        self.items: list[dict[str, Any]] = []

    def add(self, **item: Any) -> None:
        self.count += 1
        if len(self.items) < self.keep:
            self.items.append({key: short(value) if isinstance(value, str) else value for key, value in item.items()})
