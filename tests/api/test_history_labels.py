"""Issue 37 item 1, the API side of the history: an entry names the reference and file values
its changes hold (``value_labels``: a record id to its natural name, a deleted record's too; a
file's sha256 to its name in the store), so the history reads in names."""
from __future__ import annotations

import hashlib
from typing import Any

from tests.api.helpers import make_collection, make_record, make_schema


def test_entries_name_their_reference_and_file_values(api: Any) -> None:
    make_schema(api, "site", [{"name": "name", "type": "string"}], display_template="{name}")
    make_schema(api, "sample", [{"name": "site", "type": "reference", "restrictions": {"schema": "site"}},
                                {"name": "scan", "type": "file"}])
    make_collection(api, "trip", ["site", "sample"])
    north = make_record(api, "trip", "site", {"name": "North ridge"})["id"]
    south = make_record(api, "trip", "site", {"name": "South bay"})["id"]
    content = b"counts 1 2 3\n"
    sha = api.ok("POST", "/files", 201, files={"file": ("scan-01.txt", content, "text/plain")})["sha256"]
    assert sha == hashlib.sha256(content).hexdigest()
    sample = make_record(api, "trip", "sample", {"site": north, "scan": sha})["id"]
    api.ok("PATCH", f"/records/{sample}", json={"data": {"site": south}})
    api.ok("DELETE", f"/records/{north}", 204)  # a deleted record keeps its name in the history

    edit, made = api.ok("GET", f"/records/{sample}/audit")["items"][:2]
    assert edit["action"] == "update" and made["action"] == "create"
    assert edit["value_labels"] == {north: "North ridge", south: "South bay"}
    assert made["value_labels"] == {north: "North ridge", sha: "scan-01.txt"}
    one = api.ok("GET", f"/audit/{edit['id']}")
    assert one["value_labels"] == edit["value_labels"]
    # an entry without such values names nothing
    assert api.ok("GET", f"/records/{south}/audit")["items"][0]["value_labels"] == {}
