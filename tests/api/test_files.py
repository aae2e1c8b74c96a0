"""Files: upload once by sha256, download, file fields."""
from __future__ import annotations

import hashlib

from benchbook.domain.errors import BenchbookError
from tests import own_loop
from tests.api.helpers import make_collection, make_record, make_schema


def test_upload_download_and_file_field(api):
    content = b"depth,value\n1,2\n"
    sha = hashlib.sha256(content).hexdigest()
    out = api.ok("POST", "/files", 201, files={"file": ("data.csv", content, "text/csv")})
    assert out == {"sha256": sha, "filename": "data.csv", "size": len(content)}
    assert api.ok("POST", "/files", 201, files={"file": ("again.csv", content, "text/csv")})["sha256"] == sha
    r = api.get(f"/files/{sha}", params={"filename": "x.csv"})
    assert r.status_code == 200 and r.content == content and "x.csv" in r.headers["content-disposition"]
    assert (api.project.files_dir / sha[:2] / sha).read_bytes() == content
    make_schema(api, "run", [{"name": "raw", "type": "file"}])
    make_collection(api, "c", ["run"])
    rec = make_record(api, "c", "run", {"raw": sha})
    # a record names its files (the first upload's name), in a single read and in a list
    label = {"filename": "data.csv", "size": len(content), "content_type": "text/csv"}
    assert api.ok("GET", f"/records/{rec['id']}")["file_labels"] == {sha: label}
    assert api.ok("GET", "/collections/c/records")["items"][0]["file_labels"] == {sha: label}
    info = api.ok("GET", f"/files/{sha}/info")
    assert [r["id"] for r in info["records"]] == [rec["id"]]
    missing = "0" * 64
    r = api.post("/collections/c/records", json={"schema_name": "run", "data": {"raw": missing}})
    assert r.status_code == 422
    assert api.get(f"/files/{missing}").status_code == 404
    assert api.post("/files", files={"other": ("a", b"x")}).status_code == 422


def test_files_become_removable_once_unreferenced(api):
    content = b"raw bytes"
    sha = api.ok("POST", "/files", 201, files={"file": ("raw.bin", content)})["sha256"]
    make_schema(api, "run", [{"name": "raw", "type": "file"}, {"name": "note", "type": "string"}])
    make_collection(api, "c", ["run"])
    rec = make_record(api, "c", "run", {"raw": sha, "note": "n"})
    assert api.delete(f"/files/{sha}").status_code == 409
    api.ok("DELETE", f"/records/{rec['id']}", 204)
    assert api.delete(f"/files/{sha}").status_code == 409  # a deleted record can come back
    api.ok("DELETE", f"/records/{rec['id']}/purge", 204)
    api.ok("DELETE", f"/files/{sha}", 204)
    assert api.get(f"/files/{sha}").status_code == 404
    assert not (api.project.files_dir / sha[:2] / sha).exists()



BOUNDARY = "benchbook-test-boundary-7f3a9c"
CHUNK = 64 * 1024


def _multipart(parts: int, *, filename: str = "big.bin") -> tuple[bytes, bytes, str, int]:
    """``(head, tail, sha256, size)`` of a one-file form whose content is ``parts`` chunks made by
    :func:`_chunk` (never all in memory at once)."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"{filename}\"\r\n"
            "Content-Type: application/octet-stream\r\n\r\n").encode()
    tail = f"\r\n--{BOUNDARY}--\r\n".encode()
    digest = hashlib.sha256()
    for i in range(parts):
        digest.update(_chunk(i))
    return head, tail, digest.hexdigest(), parts * CHUNK


def _chunk(i: int) -> bytes:
    return i.to_bytes(8, "big") * (CHUNK // 8)


def _post_streamed(api, messages, length):
    """POST /api/files straight into the ASGI app, the body delivered by ``messages`` (an iterator
    of ASGI messages, made lazily: the test never holds the body) and ``Content-Length`` saying
    ``length``. Returns (status, JSON body)."""
    import asyncio
    import json

    sent: list[dict] = []

    async def receive():
        try:
            return next(messages)
        except StopIteration:
            await asyncio.sleep(3600)  # a server would wait for the next message

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST",
             "scheme": "http", "path": "/api/files", "raw_path": b"/api/files", "root_path": "",
             "query_string": b"", "client": ("127.0.0.1", 5000), "server": ("127.0.0.1", 80), "state": {},
             "headers": [(b"host", b"127.0.0.1"),
                         (b"content-type", f"multipart/form-data; boundary={BOUNDARY}".encode()),
                         (b"content-length", str(length).encode())]}
    own_loop.run(lambda: api.app(scope, receive, send))  # a web test's browser may hold this thread's loop
    status = next(m["status"] for m in sent if m["type"] == "http.response.start")
    body = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return status, json.loads(body) if body else None


def _body_messages(head: bytes, parts: int, tail: bytes, *, stop_after: int | None = None, end=None):
    yield {"type": "http.request", "body": head, "more_body": True}
    for i in range(parts):
        if stop_after is not None and i == stop_after:
            if isinstance(end, BaseException):
                raise end
            yield end
            return
        yield {"type": "http.request", "body": _chunk(i), "more_body": True}
    yield {"type": "http.request", "body": tail, "more_body": False}


def _leftovers(files_dir):
    return sorted(p.name for p in files_dir.rglob("*") if p.is_file())


def _bytes_written() -> int | None:
    """Bytes this process passed to write() so far (Linux ``/proc/self/io`` ``wchar``), or None."""
    try:
        with open("/proc/self/io") as fh:
            text = fh.read()
    except OSError:
        return None
    return int(next(line.split()[1] for line in text.splitlines() if line.startswith("wchar:")))


def test_a_big_upload_streams_once_to_the_files_folder_in_flat_memory(api):
    import tracemalloc

    parts = 768  # 48 MiB
    head, tail, sha, size = _multipart(parts)
    before = set(_leftovers(api.project.files_dir))
    written = _bytes_written()
    tracemalloc.start()
    try:
        status, out = _post_streamed(api, _body_messages(head, parts, tail), len(head) + size + len(tail))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    written = None if written is None else _bytes_written() - written
    assert status == 201, out
    assert out == {"sha256": sha, "filename": "big.bin", "size": size}
    # memory: the request never held the file (peak well below its 48 MiB; it was > 48 MiB when the
    # validator kept every message of the body to replay it)
    assert peak < size // 8, f"peak {peak} bytes for a {size}-byte upload"
    # disk: exactly one copy landed, at its content path, and no temporary file is left
    assert set(_leftovers(api.project.files_dir)) - before == {sha}
    assert (api.project.files_dir / sha[:2] / sha).stat().st_size == size
    if written is not None:  # the content was written once (it was three times: two spools and a copy)
        assert written < size * 1.5, f"{written} bytes written for a {size}-byte upload"
    assert api.ok("GET", f"/files/{sha}/info")["size"] == size


class _Cut(BenchbookError):
    """What a size limit raises from ``receive`` (request_limits.py's 413 does the same)."""

    kind = "too_large"


def test_an_upload_cut_short_leaves_nothing_behind(api):
    parts = 64
    head, tail, sha, size = _multipart(parts)
    length = len(head) + size + len(tail)
    before = _leftovers(api.project.files_dir)
    # the client goes away half-way: the incomplete form is refused, its spool removed
    status, out = _post_streamed(api, _body_messages(head, parts, tail, stop_after=32,
                                                     end={"type": "http.disconnect"}), length)
    assert status == 422 and "closing boundary" in out["errors"][0]["msg"]
    assert _leftovers(api.project.files_dir) == before
    # the body ends (more_body false) in the middle of the file
    status, _ = _post_streamed(api, _body_messages(head, parts, tail, stop_after=10,
                                                   end={"type": "http.request", "body": b"", "more_body": False}), length)
    assert status == 422 and _leftovers(api.project.files_dir) == before
    # receive raises (a size limit cutting the stream): the spool is removed too
    status, _ = _post_streamed(api, _body_messages(head, parts, tail, stop_after=5, end=_Cut("over the limit")), length)
    assert status == 413 and _leftovers(api.project.files_dir) == before
    assert api.get(f"/files/{sha}").status_code == 404


def test_a_file_part_without_a_filename_is_refused(api):
    before = _leftovers(api.project.files_dir)
    r = api.post("/files", files={"file": (None, b"plain text, not a file")})
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["loc"] == ["body", "file"]
    assert _leftovers(api.project.files_dir) == before
