"""Files: upload once by sha256, download, file fields."""
from __future__ import annotations

import hashlib

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

