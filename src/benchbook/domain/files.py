"""The content store: files kept once by sha256 under ``files/ab/abcdef…`` (docs/decisions.md
*Uploads*).

Content arrives through a :class:`Spool`: a temporary file ``files/.upload-*`` that hashes what
is written to it, so the sha256 is known the moment the last byte lands and the content is moved
into place with one ``os.replace`` (or dropped, when that content is stored already). Content is
written to disk once and never held in memory whole; a spool closed before it is kept removes its
temporary file, so an upload cut short leaves nothing behind.
"""
from __future__ import annotations

import hashlib
import mimetypes
import os
import tempfile
from pathlib import Path
from typing import BinaryIO

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from benchbook.domain.errors import Conflict, NotFound
from benchbook.domain.file_shapes import FileInfoResponse, FileResponse
from benchbook.persistence.tables import Record, RecordLink, Schema, StoredFile

CHUNK = 1 << 20
SPOOL_PREFIX = ".upload-"
"""Name prefix of the temporary files of content on its way in (``files/.upload-*``)."""


def content_path(files_dir: Path, sha256: str) -> Path:
    """Where the content of ``sha256`` lives."""
    return files_dir / sha256[:2] / sha256


class Spool:
    """A temporary file in ``files_dir`` that hashes what is written to it.

    Write the content in pieces (:meth:`write`; ``sha256`` and ``size`` follow along), then
    :meth:`keep` it, which moves it to its content path once, or :meth:`close` it, which removes
    the temporary file. Used by the streaming multipart parser of ``POST /files`` (so it also has
    the ``seek``/``read``/``tell`` of the file object Starlette's ``UploadFile`` wraps) and by
    :func:`store` for any other stream. Not thread-safe: one writer at a time.
    """

    def __init__(self, files_dir: Path) -> None:
        files_dir.mkdir(parents=True, exist_ok=True)
        self.files_dir = files_dir
        fd, name = tempfile.mkstemp(dir=files_dir, prefix=SPOOL_PREFIX)
        self.path = Path(name)
        self._file: BinaryIO | None = os.fdopen(fd, "w+b")
        self._digest = hashlib.sha256()
        self._kept = False
        self.size = 0
        """Bytes written so far."""

    @property
    def closed(self) -> bool:
        """Whether the spool is kept or discarded."""
        return self._file is None

    @property
    def sha256(self) -> str:
        """The hex sha256 of what was written so far."""
        return self._digest.hexdigest()

    def _open(self) -> BinaryIO:
        if self._file is None:
            raise ValueError("I/O operation on a closed spool")
        return self._file

    def write(self, data: bytes) -> int:
        """Append ``data`` (hashed and counted); returns its length."""
        self._open().write(data)
        self._digest.update(data)
        self.size += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        """File-object ``seek`` (reading back does not change the hash)."""
        return self._open().seek(offset, whence)

    def tell(self) -> int:
        """File-object ``tell``."""
        return self._open().tell()

    def read(self, size: int = -1) -> bytes:
        """File-object ``read``."""
        return self._open().read(size)

    def keep(self) -> Path:
        """Move the content to its content path (``os.replace``, once per content; when that
        content is stored already the temporary file is dropped instead) and close the spool.
        Returns the content path. Raises ``ValueError`` on a closed spool, ``OSError`` from the
        file system (the temporary file is removed then too)."""
        out = self._open()
        try:
            out.flush()
            os.fsync(out.fileno())
            out.close()
            self._file = None
            target = content_path(self.files_dir, self.sha256)
            target.parent.mkdir(exist_ok=True)
            if target.is_file():
                self.path.unlink()
            else:
                os.replace(self.path, target)
            self._kept = True
            return target
        finally:
            self.close()

    def close(self) -> None:
        """Discard the spool: close it and remove its temporary file (no-op once kept)."""
        if self._file is not None:
            self._file.close()
            self._file = None
        if not self._kept:  # (a kept spool's name may belong to a newer spool by now)
            self.path.unlink(missing_ok=True)


def store(session: Session, files_dir: Path, stream: BinaryIO | Spool, filename: str) -> StoredFile:
    """Keep the content of ``stream`` in the store and record it (OpenAPI: ``POST /files``). A
    :class:`Spool` of this ``files_dir`` (a streamed upload) is moved into place as it is; any other
    stream is copied into one in ``CHUNK``-sized pieces first. Returns the row (``sha256``,
    ``filename``, ``size``); storing the same content again adds nothing. The content file is in
    place before the row is added, so a committed row always has its content; a rolled-back
    transaction can leave an unrecorded content file, which ``benchbook doctor`` reports."""
    if isinstance(stream, Spool) and stream.files_dir == files_dir:
        spool = stream
    else:
        spool = Spool(files_dir)
        try:
            while chunk := stream.read(CHUNK):
                spool.write(chunk)
        except BaseException:
            spool.close()
            raise
    size, sha = spool.size, spool.sha256
    spool.keep()
    row = session.get(StoredFile, sha)
    if row is None:
        row = StoredFile(sha256=sha, filename=filename or sha, size=size,
                         content_type=mimetypes.guess_type(filename or "")[0])
        session.add(row)
    return row


def find_file(session: Session, files_dir: Path, sha256: str) -> tuple[StoredFile, Path]:
    """The stored file and its content path; raises ``NotFound``."""
    row = session.get(StoredFile, sha256.lower())
    path = content_path(files_dir, sha256.lower())
    if row is None or not path.is_file():
        raise NotFound(f"file {sha256} not found")
    return row, path


def file_response(row: StoredFile) -> FileResponse:
    """FileResponse ``{sha256, filename, size}``."""
    return {"sha256": row.sha256, "filename": row.filename, "size": row.size}


def file_info(session: Session, files_dir: Path, sha256: str) -> FileInfoResponse:
    """FileInfoResponse: the file plus the live records whose file fields hold it."""
    row, _ = find_file(session, files_dir, sha256)
    users = session.execute(select(Record.id, Schema.name, Record.natural_name)
                            .join(RecordLink, RecordLink.source_id == Record.id)
                            .join(Schema, Schema.id == Record.schema_id)
                            .where(RecordLink.target_id == row.sha256, RecordLink.kind == "file",
                                   Record.deleted_at.is_(None)).distinct()).all()
    return {**file_response(row), "content_type": row.content_type,
            "records": [{"id": i, "schema_name": n, "natural_name": nn} for i, n, nn in users]}


def delete_file(session: Session, files_dir: Path, sha256: str) -> Path:
    """Forget a file no record (live or deleted) holds; returns its content path, which the caller
    removes once the transaction has committed. Raises ``NotFound``, ``Conflict``."""
    row, path = find_file(session, files_dir, sha256)
    users = session.scalar(select(func.count(func.distinct(RecordLink.source_id))).where(
        RecordLink.target_id == row.sha256, RecordLink.kind == "file")) or 0
    if users:
        raise Conflict(f"file {row.sha256} is still held by {users} record(s); purge them first")
    session.delete(row)
    return path
