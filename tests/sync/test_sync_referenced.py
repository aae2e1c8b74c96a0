"""Sync and deletes of referenced records (issue 35 item 4, docs/deletes.md): a device's delete
is the device's decision, applied at the authority even when a record made there meanwhile
references what it deletes (as ``force``: the reference keeps pointing at the deleted record)."""
from __future__ import annotations

from tests.api.helpers import make_collection, make_record, make_schema


def test_a_pushed_delete_of_a_record_referenced_at_the_authority_is_applied_as_force(lab):
    authority = lab.project("authority")
    make_schema(authority, "plane", [{"name": "tailnum", "type": "string"}], display_template="{tailnum}")
    make_schema(authority, "flight", [{"name": "tailnum", "type": "reference", "restrictions": {"schema": "plane"}}])
    make_collection(authority, "nyc", ["plane", "flight"])
    plane = make_record(authority, "nyc", "plane", {"tailnum": "N14228"})
    laptop = lab.follow(authority, "laptop")
    flight = make_record(authority, "nyc", "flight", {"tailnum": plane["id"]})  # the laptop has not seen it
    assert authority.http.delete(f"/records/{plane['id']}").status_code == 409  # at the authority: a choice
    laptop.ok("DELETE", f"/records/{plane['id']}", 204)  # nothing references it on the laptop
    summary = laptop.sync()
    assert summary["conflicts"] == 0, summary
    for side in (authority, laptop):
        assert side.ok("GET", f"/records/{plane['id']}")["deleted_at"] is not None, side.root.name
        assert side.ok("GET", f"/records/{flight['id']}")["data"]["tailnum"] == plane["id"], side.root.name
