"""Import item 7: the batch id on the last line undoes the import (``benchbook imports undo``,
``POST /imports/{batch_id}/undo``): created records deleted together, updates reverted, as one
event that can be restored."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from benchbook.settings.config import Project
from tests.api.helpers import make_collection, make_schema
from tests.import_helpers import cli, collection, ok, schema, shown


def batch_of(output: str) -> str:
    found = re.search(r"\(batch (\w+); undo: benchbook imports undo \1\)", output)
    assert found, output
    return found[1]


@pytest.fixture
def days(tmp_project: Project, tmp_path: Path) -> Project:
    schema(tmp_project, "day", [{"name": "date", "type": "date"}, {"name": "temp", "type": "float"}])
    collection(tmp_project, "w", ["day"])
    return tmp_project


def test_an_upsert_is_undone_as_one_event_and_restored(days: Project, tmp_path: Path) -> None:
    first = tmp_path / "first.csv"
    first.write_text("date,temp\n2012-01-01,1\n2012-01-02,2\n")
    ok(days, "import", str(first), "-c", "w", "-s", "day")
    second = tmp_path / "second.csv"
    second.write_text("date,temp\n2012-01-02,20\n2012-01-03,3\n2012-01-04,4\n")
    batch = batch_of(ok(days, "import", str(second), "-c", "w", "-s", "day", "--key", "date").stdout)
    undone = json.loads(ok(days, "imports", "undo", batch).stdout)
    assert (undone["deleted"], undone["reverted"], undone["already_gone"]) == (2, 1, 0)
    assert sorted((d["date"], d["temp"]) for d in shown(days, "w", "day")) == [("2012-01-01", 1.0), ("2012-01-02", 2.0)]
    event = json.loads(ok(days, "audit", "get-batch-event", undone["batch_id"]).stdout)
    assert event["count"] == 3
    # the deleted records come back with restore-all of the undo's batch
    ok(days, "audit", "restore-all", "--batch", undone["batch_id"])
    assert len(shown(days, "w", "day")) == 4
    again = cli(days, "imports", "undo", batch)  # the update was reverted; the creates are live again
    assert again.exit_code == 0, again.output


def test_what_cannot_be_undone(days: Project, tmp_path: Path) -> None:
    source = tmp_path / "one.csv"
    source.write_text("date,temp\n2012-01-01,1\n")
    batch = batch_of(ok(days, "import", str(source), "-c", "w", "-s", "day").stdout)
    ok(days, "imports", "undo", batch)
    out = cli(days, "imports", "undo", batch)
    assert out.exit_code != 0 and "nothing of batch" in out.output
    out = cli(days, "imports", "undo", "01ARZ3NDEKTSV4RRFFQ69G5FAV")
    assert out.exit_code != 0 and "not found" in out.output


def test_live_children_block_the_undo_unless_forced(api: Any) -> None:
    make_schema(api, "site", [{"name": "name", "type": "string"}], display_template="{name}")
    make_schema(api, "sample", [{"name": "depth", "type": "float"}], parent="site")
    make_collection(api, "lake", ["site", "sample"])
    body = api.post("/collections/lake/import", files={"file": ("sites.csv", b"name\nNorth\nSouth\n")},
                    data={"schema": "site"}).json()
    api.post("/collections/lake/import", files={"file": ("samples.csv", b"parent,depth\nNorth,1.5\n")},
             data={"schema": "sample"})
    refused = api.post(f"/imports/{body['batch_id']}/undo", json={})
    assert refused.status_code == 409 and "live children" in refused.json()["detail"]
    forced = api.ok("POST", f"/imports/{body['batch_id']}/undo", json={"force": True})
    assert forced["deleted"] == 3
    assert api.ok("GET", "/collections/lake")["record_count"] == 0
    not_import = api.post(f"/imports/{forced['batch_id']}/undo", json={})
    assert not_import.status_code == 422 and "only import batches" in not_import.json()["detail"]
