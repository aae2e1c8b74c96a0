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
